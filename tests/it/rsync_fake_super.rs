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
