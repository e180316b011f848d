//! Attributes beyond the bytes: `-X` through a `--copy-dest`/`--link-dest` basis,
//! `--fake-super` (ownership, modes and device numbers kept in the `user.rsync.%stat`
//! extended attribute), a default ACL standing for the umask, a device made again with
//! other numbers; each run by rsync and nfsync side by side on the mount path.

use std::path::Path;

use crate::rsync_links::{setxattr, xattrs_of};
use crate::support::sides::{Sides, Via};
use crate::support::{Tree, describe};

/// Whether the filesystem under `p` holds user extended attributes (else the test says
/// so and passes, or fails as root: see `prerequisite_missing`).
fn holds_xattrs(p: &Path) -> bool {
    let probe = p.join(".probe");
    std::fs::write(&probe, b"").unwrap();
    let ok = setxattr(&probe, "user.probe", b"1");
    std::fs::remove_file(&probe).unwrap();
    if let Err(e) = &ok {
        crate::support::prerequisite_missing(&format!(
            "{} holds no user xattrs ({e})",
            p.display()
        ));
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

/// Every entry below `root`, as `ls -ln` and `getfattr` would show it: kind, mode,
/// owner, device number, content or target, and extended attributes.
fn listing(root: &Path) -> Vec<String> {
    use std::os::unix::fs::MetadataExt;
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(p) = stack.pop() {
        let m = std::fs::symlink_metadata(&p).unwrap();
        let what = if m.is_dir() {
            for e in std::fs::read_dir(&p).unwrap() {
                stack.push(e.unwrap().path());
            }
            String::new()
        } else if m.file_type().is_symlink() {
            std::fs::read_link(&p).unwrap().display().to_string()
        } else if m.is_file() {
            String::from_utf8_lossy(&std::fs::read(&p).unwrap()).into_owned()
        } else {
            String::new()
        };
        let rel = p.strip_prefix(root).unwrap().display().to_string();
        out.push(format!(
            "{rel} {:o} {}:{} {} {what:?} {:?}",
            m.mode(),
            m.uid(),
            m.gid(),
            m.rdev(),
            xattrs_of(&p)
        ));
    }
    out.sort();
    out
}

/// What only root can make: a setuid file, another user's file, a read-only
/// directory, a FIFO, a device, a symlink.
fn privileged_source(s: &Sides) -> Tree {
    let src = Tree::new(s.join("src"));
    src.file("setuid", "s\n")
        .file("theirs", "t\n")
        .file("ro/f", "f\n")
        .fifo("fifo")
        .device("char", libc::S_IFCHR, 41, 67)
        .symlink("link", "setuid");
    src.chmod("setuid", 0o4755)
        .chown("theirs", 5000, 5002)
        .chmod("ro", 0o555)
        .age();
    src
}

/// `--fake-super` (both sides of a local copy) and `-M--fake-super` (DEST only): the
/// same regular files and `user.rsync.%stat` values as rsync gives (devices, FIFOs
/// and symlinks as regular files, no setuid bit, no chown), and a second run finds
/// everything up to date by what the attribute says.
#[test]
fn fake_super_keeps_roots_attributes_in_an_xattr_as_rsync_does() {
    if !crate::support::root_or_skip("rsync_fake_super::fake_super_keeps_roots_attributes") {
        return;
    }
    let s = Sides::new(Via::Mount);
    if !holds_xattrs(s.path()) {
        return;
    }
    privileged_source(&s);
    let src = crate::support::slash(&s.join("src"));
    for flags in [&["-aiX", "--fake-super"][..], &["-ai", "-M--fake-super"]] {
        let _ = std::fs::remove_dir_all(s.rsync(""));
        let _ = std::fs::remove_dir_all(s.nfsync(""));
        let ran = s.run("", b"", &|_, cmd| {
            cmd.args(flags).arg(&src);
        });
        assert!(ran.rsync.status.success(), "{}", describe(&ran.rsync));
        assert!(
            ran.nfsync.status.success(),
            "{flags:?}: {}",
            describe(&ran.nfsync)
        );
        let theirs = listing(&s.rsync(""));
        assert!(
            theirs.iter().any(|l| l.contains("user.rsync.%stat")),
            "rsync kept nothing in the attribute: {theirs:#?}"
        );
        assert_eq!(listing(&s.nfsync("")), theirs, "{flags:?}");
        let again = s.run("", b"", &|_, cmd| {
            cmd.args(flags).arg(&src);
        });
        assert_eq!(
            String::from_utf8_lossy(&again.nfsync.stdout),
            String::from_utf8_lossy(&again.rsync.stdout),
            "{flags:?}: second run"
        );
    }
}

/// A source whose entries carry `user.rsync.%stat` (what a fake-super copy left) is
/// read as the attribute says: with `--fake-super` into a fake-super DEST the values
/// carry over; with `--fake-super -M--super` (the source side only) DEST gets the real
/// owner, device and symlink, as rsync gives them.
#[test]
fn fake_super_source_is_read_as_its_xattr_says() {
    if !crate::support::root_or_skip("rsync_fake_super::fake_super_source_is_read") {
        return;
    }
    let s = Sides::new(Via::Mount);
    if !holds_xattrs(s.path()) {
        return;
    }
    let src = Tree::new(s.join("src"));
    src.file("owned", "o\n")
        .file("dev", "")
        .file("link", "owned")
        .file("plain", "p\n");
    setxattr(
        &src.path("owned"),
        "user.rsync.%stat",
        b"100640 0,0 5000:5002",
    )
    .unwrap();
    setxattr(&src.path("dev"), "user.rsync.%stat", b"20644 41,67 0:0").unwrap();
    setxattr(&src.path("link"), "user.rsync.%stat", b"120777 0,0 0:0").unwrap();
    src.age();
    let from = crate::support::slash(&s.join("src"));
    for flags in [
        &["-ai", "--fake-super"][..],
        &["-ai", "--fake-super", "-M--super"],
    ] {
        let _ = std::fs::remove_dir_all(s.rsync(""));
        let _ = std::fs::remove_dir_all(s.nfsync(""));
        let ran = s.run("", b"", &|_, cmd| {
            cmd.args(flags).arg(&from);
        });
        assert!(ran.rsync.status.success(), "{}", describe(&ran.rsync));
        assert!(
            ran.nfsync.status.success(),
            "{flags:?}: {}",
            describe(&ran.nfsync)
        );
        let items = |o: &std::process::Output| {
            let mut l: Vec<String> = String::from_utf8_lossy(&o.stdout)
                .lines()
                .filter(|l| !l.starts_with("created directory"))
                .map(str::to_owned)
                .collect();
            l.sort();
            l
        };
        assert_eq!(items(&ran.nfsync), items(&ran.rsync), "{flags:?}: -i lines");
        assert_eq!(listing(&s.nfsync("")), listing(&s.rsync("")), "{flags:?}");
    }
}

/// An NFS server keeps no extended attributes for nfsync: `--fake-super` there is
/// refused before anything is copied, saying why; `-M` takes only the two options
/// a local copy's receiver understands.
#[test]
fn fake_super_is_refused_over_nfs_and_m_takes_only_super_options() {
    let s = Sides::new(Via::InProc);
    Tree::new(s.join("src")).file("f", "f\n");
    let run = |args: &[&str], dest: std::ffi::OsString| {
        crate::support::nfsync()
            .args(args)
            .arg(crate::support::slash(&s.join("src")))
            .arg(dest)
            .output()
            .unwrap()
    };
    for flags in [&["-a", "--fake-super"][..], &["-a", "-M--fake-super"]] {
        let out = run(flags, s.dest("d"));
        assert_eq!(out.status.code(), Some(1), "{flags:?}: {}", describe(&out));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("--fake-super is kept on the mount path only"),
            "{flags:?}: {err}"
        );
        assert!(!s.join("d").exists(), "{flags:?}: nothing copied");
    }
    let out = run(&["-a", "-M--delete"], s.join("d2").into_os_string());
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("-M --delete"),
        "{}",
        describe(&out)
    );
}

/// An ACL of `(tag, perm, id)` entries (in the kernel's order), as the kernel
/// stores one.
fn kernel_acl(entries: &[(u16, u16, u32)]) -> Vec<u8> {
    let mut v = 2u32.to_le_bytes().to_vec();
    for &(tag, perm, id) in entries {
        v.extend(tag.to_le_bytes());
        v.extend(perm.to_le_bytes());
        v.extend(id.to_le_bytes());
    }
    v
}

/// A default ACL of the owner, group and other `(tag, perm)` entries.
fn default_acl(entries: &[(u16, u16)]) -> Vec<u8> {
    let e: Vec<_> = entries.iter().map(|&(t, p)| (t, p, u32::MAX)).collect();
    kernel_acl(&e)
}

/// Without `-p`, under a umask of 077: in a directory with a default ACL, DEST (made
/// by the run) and what is created in it get the source's bits as the ACL allows
/// them, the umask ignored (rsync and the kernel's rule); without one, the umask's.
#[test]
fn default_acl_stands_for_the_umask_without_p() {
    use std::os::unix::fs::PermissionsExt;
    use std::os::unix::process::CommandExt;
    let s = Sides::new(Via::Mount);
    let src = Tree::new(s.join("src"));
    src.file("file", "f\n")
        .file("program", "#!/bin/sh\n")
        .dir("dir");
    src.chmod("file", 0o666)
        .chmod("program", 0o777)
        .chmod("dir", 0o777);
    for (acl, want) in [
        (
            Some(0o5),
            ["rwxrwxr-x", "rwxrwxr-x", "rw-rw-r--", "rwxrwxr-x"],
        ),
        (None, ["rwx------", "rwx------", "rw-------", "rwx------"]),
    ] {
        for side in ["by_rsync", "by_nfsync"] {
            let _ = std::fs::remove_dir_all(s.join(side));
            std::fs::create_dir(s.join(side)).unwrap();
            if let Some(other) = acl {
                let v = default_acl(&[(0x01, 7), (0x04, 7), (0x20, other)]);
                if let Err(e) = setxattr(&s.join(side), "system.posix_acl_default", &v) {
                    crate::support::prerequisite_missing(&format!(
                        "{} holds no ACLs ({e})",
                        s.path().display()
                    ));
                    return;
                }
            }
        }
        let ran = s.run("to/", b"", &|_, cmd| {
            // SAFETY: umask is async-signal-safe.
            unsafe {
                cmd.pre_exec(|| {
                    libc::umask(0o077);
                    Ok(())
                });
            }
            cmd.arg("-r");
            for f in ["dir", "file", "program"] {
                cmd.arg(s.join("src").join(f));
            }
        });
        assert!(ran.rsync.status.success(), "{}", describe(&ran.rsync));
        assert!(ran.nfsync.status.success(), "{}", describe(&ran.nfsync));
        let perms = |side: fn(&Sides, &str) -> std::path::PathBuf| {
            ["to", "to/dir", "to/file", "to/program"].map(|f| {
                let m = std::fs::metadata(side(&s, f)).unwrap().permissions().mode();
                (0..9)
                    .rev()
                    .map(|b| match m & (1 << b) != 0 {
                        true => ['x', 'w', 'r'][b % 3],
                        false => '-',
                    })
                    .collect::<String>()
            })
        };
        assert_eq!(perms(Sides::rsync), want, "rsync, default ACL {acl:?}");
        assert_eq!(perms(Sides::nfsync), want, "nfsync, default ACL {acl:?}");
    }
}

/// `-A -M--fake-super`: a file's ACL and a directory's default ACL are kept in
/// `user.rsync.%aacl` and `%dacl` with rsync's bytes (so rsync reads nfsync's), and a
/// default ACL the source drops is dropped there too.
#[test]
fn fake_super_keeps_acls_in_rsyncs_xattrs() {
    let s = Sides::new(Via::Mount);
    let src = Tree::new(s.join("src"));
    src.file("f", "f\n").file("d/g", "g\n").file("plain", "p\n");
    src.chmod("f", 0o674);
    // u::rw-, u:1000:rwx, g::r--, g:7:r-x, m::rwx, o::r--
    let none = u32::MAX;
    let access = kernel_acl(&[
        (0x01, 6, none),
        (0x02, 7, 1000),
        (0x04, 4, none),
        (0x08, 5, 7),
        (0x10, 7, none),
        (0x20, 4, none),
    ]);
    if let Err(e) = setxattr(&src.path("f"), "system.posix_acl_access", &access) {
        crate::support::prerequisite_missing(&format!(
            "{} holds no ACLs ({e})",
            s.path().display()
        ));
        return;
    }
    let dflt = default_acl(&[(0x01, 7), (0x04, 5), (0x20, 5)]);
    setxattr(&src.path("d"), "system.posix_acl_default", &dflt).unwrap();
    let from = crate::support::slash(&s.join("src"));
    for leg in ["first", "default ACL dropped"] {
        if leg != "first" {
            rustix::fs::removexattr(src.path("d"), "system.posix_acl_default").unwrap();
        }
        let ran = s.run("", b"", &|_, cmd| {
            // -o -g: without them rsync stores an owner it did not read.
            cmd.args(["-rogA", "-M--fake-super"]).arg(&from);
        });
        assert!(ran.rsync.status.success(), "{}", describe(&ran.rsync));
        assert!(
            ran.nfsync.status.success(),
            "{leg}: {}",
            describe(&ran.nfsync)
        );
        let theirs = listing(&s.rsync(""));
        assert_eq!(
            theirs.iter().any(|l| l.contains("user.rsync.%dacl")),
            leg == "first",
            "{leg}: rsync's own copy: {theirs:#?}"
        );
        assert!(
            theirs.iter().any(|l| l.contains("user.rsync.%aacl")),
            "{theirs:#?}"
        );
        assert_eq!(listing(&s.nfsync("")), theirs, "{leg}");
    }
}

/// `--fake-super --backup-dir` on another filesystem: the backup of a FIFO kept as a
/// regular file is copied there (no rename across filesystems) and keeps the
/// attribute that says it is a FIFO, as rsync's backup does.
#[test]
fn fake_super_backup_across_filesystems_keeps_the_attribute() {
    use std::os::unix::fs::MetadataExt;
    let s = Sides::new(Via::Mount);
    let shm = Path::new("/dev/shm");
    let dev = |p: &Path| std::fs::metadata(p).map(|m| m.dev()).ok();
    if dev(shm).is_none() || dev(shm) == dev(s.path()) || !holds_xattrs(s.path()) {
        crate::support::prerequisite_missing("no other filesystem with user xattrs at /dev/shm");
        return;
    }
    let backups = crate::support::Scratch::new_in(shm);
    if !holds_xattrs(backups.path()) {
        return;
    }
    let src = Tree::new(s.join("src"));
    src.fifo("p").file("f", "f\n");
    let from = crate::support::slash(&s.join("src"));
    s.run("", b"", &|_, cmd| {
        cmd.args(["-a", "--fake-super"]).arg(&from);
    });
    std::fs::remove_file(src.path("p")).unwrap();
    src.file("p", "now a file\n");
    let ran = s.run("", b"", &|side, cmd| {
        let dir = backups.join(side.dir());
        cmd.args(["-a", "--fake-super", "--backup"])
            .arg(format!("--backup-dir={}", dir.display()))
            .arg(&from);
    });
    assert!(ran.rsync.status.success(), "{}", describe(&ran.rsync));
    assert!(ran.nfsync.status.success(), "{}", describe(&ran.nfsync));
    let theirs = listing(&backups.join("by_rsync"));
    assert!(
        theirs
            .iter()
            .any(|l| l.starts_with("p ") && l.contains("user.rsync.%stat")),
        "rsync's backup: {theirs:#?}"
    );
    assert_eq!(listing(&backups.join("by_nfsync")), theirs);
}

/// A device DEST has with other numbers is made again and itemized as rsync does:
/// `cDc.t......` (`c`: the numbers, `t`: the time), `cDc........` when only the
/// numbers differ, and `T` without `-t`; with `--fake-super` too (the numbers then
/// read from the attribute).
#[test]
fn device_with_other_numbers_is_itemized_as_changed() {
    if !crate::support::root_or_skip("rsync_fake_super::device_with_other_numbers") {
        return;
    }
    let s = Sides::new(Via::Mount);
    let src = Tree::new(s.join("src"));
    src.device("same_time", libc::S_IFBLK, 42, 73)
        .device("other_time", libc::S_IFCHR, 42, 69);
    let start = Tree::new(s.join("start"));
    start
        .device("same_time", libc::S_IFBLK, 42, 69)
        .device("other_time", libc::S_IFCHR, 105, 73);
    src.age();
    start.age();
    let t = filetime::FileTime::from_unix_time(1_000_000, 0);
    filetime::set_symlink_file_times(start.path("other_time"), t, t).unwrap();
    let from = crate::support::slash(&s.join("src"));
    let lines = |o: &std::process::Output| {
        let mut l: Vec<String> = String::from_utf8_lossy(&o.stdout)
            .lines()
            .filter(|l| !l.starts_with(".d"))
            .map(str::to_owned)
            .collect();
        l.sort();
        l
    };
    for flags in [&["-ai"][..], &["-rDi"], &["-aiX", "--fake-super"]] {
        s.copy_start("start");
        if flags.contains(&"--fake-super") {
            // The start as a fake-super copy holds it: regular files and attributes.
            for side in ["by_rsync", "by_nfsync"] {
                let _ = std::fs::remove_dir_all(s.join(side));
            }
            s.run("", b"", &|_, cmd| {
                cmd.args(["-a", "--fake-super"])
                    .arg(crate::support::slash(&s.join("start")));
            });
        }
        let ran = s.run("", b"", &|_, cmd| {
            cmd.args(flags).arg(&from);
        });
        assert!(ran.rsync.status.success(), "{}", describe(&ran.rsync));
        assert!(
            ran.nfsync.status.success(),
            "{flags:?}: {}",
            describe(&ran.nfsync)
        );
        let theirs = lines(&ran.rsync);
        assert!(theirs.iter().any(|l| l.starts_with("cDc")), "{theirs:?}");
        assert_eq!(lines(&ran.nfsync), theirs, "{flags:?}");
        assert_eq!(listing(&s.nfsync("")), listing(&s.rsync("")), "{flags:?}");
    }
}

/// A file DEST that a fake-super copy made of a device is that device to
/// `--fake-super`: one device copied onto it is itemized as a changed device
/// (`cDc.T......`), not as a new one, as rsync itemizes it.
#[test]
fn fake_device_dest_of_a_lone_file_is_read_as_its_xattr_says() {
    if !crate::support::root_or_skip("rsync_fake_super::fake_device_dest_of_a_lone_file") {
        return;
    }
    let s = Sides::new(Via::Mount);
    if !holds_xattrs(s.path()) {
        return;
    }
    let src = Tree::new(s.join("src"));
    src.device("block3", libc::S_IFBLK, 105, 73);
    let start = Tree::new(s.join("start"));
    start.device("block", libc::S_IFBLK, 42, 69);
    src.age();
    start.age();
    for side in ["by_rsync", "by_nfsync"] {
        let _ = std::fs::remove_dir_all(s.join(side));
    }
    s.run_ok("", b"", &|_, cmd| {
        cmd.args(["-a", "--fake-super"])
            .arg(crate::support::slash(&s.join("start")));
    });
    let ran = s.run_ok("block", b"", &|_, cmd| {
        cmd.args(["-Di", "--fake-super"]).arg(src.path("block3"));
    });
    let lines = |o: &std::process::Output| String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        lines(&ran.rsync).starts_with("cDc"),
        "{}",
        lines(&ran.rsync)
    );
    assert_eq!(lines(&ran.nfsync), lines(&ran.rsync));
}
