//! Attributes a root-less receiver keeps: `-X` through a `--copy-dest` basis, and
//! `--fake-super` (ownership, modes and device numbers kept in the `user.rsync.%stat`
//! extended attribute), each run by rsync and nfsync side by side on the mount path.

use std::path::Path;

use crate::rsync_links::{setxattr, xattrs_of};
use crate::support::sides::{Sides, Via};
use crate::support::{Tree, describe};

/// Whether the filesystem under `p` holds user extended attributes (else the test says
/// so and passes).
fn holds_xattrs(p: &Path) -> bool {
    let probe = p.join(".probe");
    std::fs::write(&probe, b"").unwrap();
    let ok = setxattr(&probe, "user.probe", b"1");
    std::fs::remove_file(&probe).unwrap();
    if let Err(e) = &ok {
        eprintln!("skipping: {} holds no user xattrs ({e})", p.display());
    }
    ok.is_ok()
}

/// A `--copy-dest` basis that holds a file unchanged gives its bytes, but the copy
/// gets the source's extended attributes, as rsync gives it (the basis has none, or
/// other ones).
#[test]
fn copy_dest_basis_copy_gets_the_sources_xattrs() {
    let s = Sides::new(Via::Mount);
    if !holds_xattrs(s.path()) {
        return;
    }
    let src = Tree::new(s.join("src"));
    src.file("a", "a\n").file("d/f", "f\n").file("plain", "p\n");
    setxattr(&src.path("a"), "user.a", b"source a").unwrap();
    setxattr(&src.path("d/f"), "user.f", b"source f").unwrap();
    src.age();
    let basis = Tree::new(s.join("basis"));
    basis
        .file("a", "a\n")
        .file("d/f", "f\n")
        .file("plain", "p\n");
    setxattr(&basis.path("a"), "user.a", b"basis a").unwrap();
    setxattr(&basis.path("plain"), "user.stale", b"basis").unwrap();
    basis.age();
    let copy_dest = format!("--copy-dest={}", s.join("basis").display());
    let ran = s.run("", b"", &|_, cmd| {
        cmd.args(["-aiX", &copy_dest])
            .arg(crate::support::slash(&s.join("src")));
    });
    assert!(ran.nfsync.status.success(), "{}", describe(&ran.nfsync));
    assert!(ran.rsync.status.success(), "{}", describe(&ran.rsync));
    for f in ["a", "d/f", "plain", "d"] {
        let want = xattrs_of(&s.rsync(f));
        assert_eq!(xattrs_of(&s.nfsync(f)), want, "{f}");
    }
    assert_eq!(
        xattrs_of(&s.rsync("a"))[0].1,
        b"source a",
        "rsync's own copy"
    );
    let d = s.diff(&["-X"]);
    assert!(d.is_empty(), "nfsync differs from rsync:\n{d}");
}

/// `--link-dest -X`: a basis file with the same bytes but other extended attributes
/// is not linked (linking would give the copy the basis's attributes, or change the
/// basis's): it is copied and given the source's, itemized `cf........x` as rsync
/// does; one whose attributes match is linked.
#[test]
fn link_dest_links_only_a_basis_with_the_same_xattrs() {
    use std::os::unix::fs::MetadataExt;
    let s = Sides::new(Via::Mount);
    if !holds_xattrs(s.path()) {
        return;
    }
    let src = Tree::new(s.join("src"));
    src.file("changed", "c\n").file("same", "s\n");
    setxattr(&src.path("changed"), "user.n", b"new").unwrap();
    setxattr(&src.path("same"), "user.n", b"kept").unwrap();
    src.age();
    let basis = Tree::new(s.join("basis"));
    basis.file("changed", "c\n").file("same", "s\n");
    setxattr(&basis.path("changed"), "user.n", b"old").unwrap();
    setxattr(&basis.path("same"), "user.n", b"kept").unwrap();
    basis.age();
    let link_dest = format!("--link-dest={}", s.join("basis").display());
    let ran = s.run("", b"", &|_, cmd| {
        cmd.args(["-aiX", &link_dest])
            .arg(crate::support::slash(&s.join("src")));
    });
    assert!(ran.nfsync.status.success(), "{}", describe(&ran.nfsync));
    assert!(ran.rsync.status.success(), "{}", describe(&ran.rsync));
    let items = |o: &std::process::Output| {
        let mut l: Vec<String> = String::from_utf8_lossy(&o.stdout)
            .lines()
            .filter(|l| !l.starts_with("created"))
            .map(str::to_owned)
            .collect();
        l.sort();
        l
    };
    assert_eq!(items(&ran.nfsync), items(&ran.rsync), "-i lines");
    for f in ["changed", "same"] {
        assert_eq!(xattrs_of(&s.nfsync(f)), xattrs_of(&s.rsync(f)), "{f}");
        let links = |p: &Path| std::fs::symlink_metadata(p).unwrap().nlink();
        // rsync's run linked `same` once already: the basis counts both runs' links.
        assert_eq!(links(&s.nfsync(f)), links(&s.rsync(f)), "{f}: link count");
    }
    assert_eq!(
        xattrs_of(&s.join("basis/changed")),
        vec![("user.n".to_owned(), b"old".to_vec())],
        "the basis is left alone"
    );
}
