//! Links and attributes: `-L`, `--copy-unsafe-links`, `--safe-links`, `-k`,
//! `-K`, `--chmod`, `--chown`, `-X`, `-A`, each run by rsync and nfsync side by side
//! and the results compared with `rsync -anciH --delete` (plus `-XA` where attributes
//! count); and the symlink-race refusals for `--exclude-from` and DEST.

use std::fs;
use std::path::Path;
use std::process::{Command, Output};

use crate::support::sides::{Side, Sides, Via, against_rsync, against_rsync_via};
use crate::support::{Scratch, Tree, describe, nfsync, root_or_skip, rsync_diff_with, slash};

/// A tree with every kind of symlink: internal (to a file, to a directory, one level
/// up from a subdirectory), external (`../`), absolute, and dangling (inside and out).
/// `outside/` sits beside `src/`, so the external links have referents.
fn link_source(s: &Path, dangling: bool) -> Tree {
    Tree::new(s.join("outside")).file("o", "outside\n");
    Tree::new(s.join("outside/dir")).file("od", "outside dir\n");
    let t = Tree::new(s.join("src"));
    t.file("a", "a\n")
        .file("sub/s", "s\n")
        .symlink("int", "a")
        .symlink("dirl", "sub")
        .symlink("sub/up", "../a")
        .symlink("ext", "../outside/o")
        .symlink("extdir", "../outside/dir")
        .symlink("abs", s.join("outside/o"));
    if dangling {
        t.symlink("dang", "nope").symlink("dangext", "../nowhere");
    }
    t.age();
    t
}

/// A destination with an older copy of `a`, an extra file, a link where the
/// source's `int` is and a file where its unsafe `ext` is (so each option must replace
/// or keep them as rsync does: `--safe-links --delete` keeps `ext`).
fn link_start(root: &Path) {
    Tree::new(root)
        .file("a", "old\n")
        .file("extra", "extra\n")
        .file("ext", "DEST's own\n")
        .symlink("int", "elsewhere")
        .age()
        .mtime("a", 1_500_000_000, 0);
}

/// Runs rsync and nfsync with `flags` on `operand` (below the scratch directory) onto
/// two copies of `start`'s tree; returns both outputs and the difference between the
/// results (`rsync -anciH --delete` plus `extra`).
fn side_by_side(
    s: &Sides,
    flags: &[&str],
    operand: &str,
    extra: &[&str],
) -> (Output, Output, String) {
    s.copy_start("start");
    let src = s.join(operand.trim_end_matches('/'));
    let src = if operand.ends_with('/') {
        slash(&src)
    } else {
        src.into_os_string()
    };
    let ran = s.run("", b"", &|_, cmd| {
        cmd.args(flags).arg(&src);
    });
    // DEST's own time is the time of the run when SRC has no slash: the same for both.
    if !operand.ends_with('/') {
        s.set_dest_mtimes(filetime::FileTime::from_unix_time(1, 0));
    }
    s.assert_rsync_changed("start", extra, &format!("{flags:?}"));
    (ran.rsync, ran.nfsync, s.diff(extra))
}

/// Each link option, on `src/` and on `src` (whose name then counts in the unsafe
/// test), with and without dangling links: the same tree and the same exit code as
/// rsync (23 where a followed link points nowhere; nothing deleted then).
#[test]
fn link_options_same_as_rsync() {
    let cases: &[&[&str]] = &[
        &["-a"],
        &["-a", "-L"],
        &["-a", "--copy-unsafe-links"],
        &["-a", "--safe-links"],
        &["-a", "-k"],
        &["-a", "-k", "--safe-links"],
        &["-a", "-L", "--delete"],
        &["-a", "--copy-unsafe-links", "--delete"],
        &["-a", "--safe-links", "--delete"],
    ];
    for dangling in [false, true] {
        let s = Sides::new(Via::Mount);
        link_source(s.path(), dangling);
        link_start(&s.join("start"));
        for flags in cases {
            for operand in ["src/", "src"] {
                let (r, n, d) = side_by_side(&s, flags, operand, &[]);
                let what = format!("{flags:?} {operand} (dangling links: {dangling})");
                assert!(d.is_empty(), "nfsync {what} differs from rsync:\n{d}");
                assert_eq!(
                    n.status.code(),
                    r.status.code(),
                    "{what}: rsync {}\nnfsync {}",
                    describe(&r),
                    describe(&n)
                );
            }
        }
        // The message rsync gives for a followed link that points nowhere.
        let (_, n, _) = side_by_side(&s, &["-a", "-L"], "src/", &[]);
        let err = String::from_utf8_lossy(&n.stderr);
        assert_eq!(
            err.contains("symlink has no referent: \"") && err.contains("/src/dang\""),
            dangling,
            "{err}"
        );
    }
}

/// `-v` names the unsafe links it copies or leaves out, in rsync's words.
#[test]
fn unsafe_links_are_named_under_verbose() {
    let s = Sides::new(Via::Mount);
    link_source(s.path(), false);
    link_start(&s.join("start"));
    for (flag, says) in [
        (
            "--copy-unsafe-links",
            "copying unsafe symlink \"ext\" -> \"../outside/o\"",
        ),
        (
            "--safe-links",
            "ignoring unsafe symlink \"ext\" -> \"../outside/o\"",
        ),
    ] {
        let (r, n, d) = side_by_side(&s, &["-av", flag], "src/", &[]);
        assert!(d.is_empty(), "{flag}:\n{d}");
        for out in [&r, &n] {
            let text = String::from_utf8_lossy(&out.stdout);
            assert!(
                text.lines().any(|l| l == says),
                "{flag}: {says:?} in\n{text}"
            );
        }
    }
}

/// `-K`: a destination symlink to a directory is written through (the link stays);
/// without it the link is replaced by a directory. Both as rsync, but for the times
/// (see below).
#[test]
fn keep_dirlinks_writes_through_a_destination_symlink() {
    let s = Sides::new(Via::Mount);
    Tree::new(s.join("src"))
        .file("sub/f", "f\n")
        .file("sub/g", "g\n")
        .age();
    Tree::new(s.join("start"))
        .file("real/old", "old\n")
        .symlink("sub", "real")
        .age();
    for flags in [&["-aK"][..], &["-a"], &["-a", "--delete"]] {
        // rsync 3.5.0 gives the source directory's mtime to the symlink (and leaves
        // the directory's as its new entries made it); nfsync gives it to the
        // directory: times of directories and links are left out of the comparison.
        let (r, n, d) = side_by_side(&s, flags, "src/", &["-O", "-J"]);
        assert!(d.is_empty(), "{flags:?}:\n{d}");
        assert_eq!(
            n.status.code(),
            r.status.code(),
            "{flags:?}: {}",
            describe(&n)
        );
        let link = fs::symlink_metadata(s.join("by_nfsync/sub")).unwrap();
        assert_eq!(
            link.file_type().is_symlink(),
            flags[0] == "-aK",
            "{flags:?}"
        );
    }
    // With --delete, rsync removes `real` first (it is not in the source), then
    // makes `sub` a directory; nfsync writes through the link first, then keeps
    // `real` rather than delete what it just copied there.
    let (_, n, _) = side_by_side(&s, &["-aK", "--delete"], "src/", &["-O", "-J"]);
    assert!(n.status.success(), "{}", describe(&n));
    assert!(
        fs::symlink_metadata(s.join("by_nfsync/sub"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    for f in ["f", "g"] {
        assert!(s.join("by_nfsync/real").join(f).exists(), "{f}");
    }
    assert!(
        !s.join("by_nfsync/real/old").exists(),
        "deleted through the link"
    );
}

/// `--chmod` in its several forms, with `-p` (every entry takes it) and without
/// (only new entries, less the umask), on the common side-by-side tree.
#[test]
fn chmod_same_as_rsync() {
    for spec in [
        "D755,F644",
        "u+w",
        "Dg+s",
        "a-x",
        "ugo=rwX",
        "o=,g-w",
        "+x",
        "Fu+s,Dg-x",
    ] {
        let chmod = format!("--chmod={spec}");
        for flags in [&["-a", chmod.as_str()][..], &["-rlt", chmod.as_str()]] {
            let d = against_rsync(flags, &[""], &[]);
            assert!(d.is_empty(), "nfsync {flags:?} differs from rsync:\n{d}");
        }
    }
    let d = against_rsync(&["-a", "--chmod=D700", "--chmod=F600"], &[""], &[]);
    assert!(d.is_empty(), "two --chmod options:\n{d}");
}

/// `--chmod` reaches the NFS path too.
#[test]
fn chmod_over_nfs_same_as_rsync() {
    let d = against_rsync_via(Via::InProc, &["-rlpt", "--chmod=D750,Fo-r"], &[""], &[]);
    assert!(d.is_empty(), "{d}");
}

/// `--chown` with numbers, names and either half alone, `--usermap`/`--groupmap`
/// with ranges, wildcards and nameless ids (root only: owners), with and without
/// -o/-g (they imply them).
#[test]
fn chown_same_as_rsync() {
    if !root_or_skip("rsync_links::chown_same_as_rsync (sets owners)") {
        return;
    }
    for spec in ["1234:2345", "nobody:nogroup", ":2345", "1234", "1234:"] {
        let chown = format!("--chown={spec}");
        for flags in [&["-a", chown.as_str()][..], &["-rlpt", chown.as_str()]] {
            let d = against_rsync(flags, &[""], &[]);
            assert!(d.is_empty(), "nfsync {flags:?} differs from rsync:\n{d}");
        }
    }
    for flags in [
        &["-a", "--usermap=0-99:nobody,*:4321"][..],
        &[
            "-a",
            "--usermap=ro?t:77,1234:nobody",
            "--groupmap=*:nogroup",
        ],
        &["-rlpt", "--groupmap=0:2345,2345:0"],
        &["-a", "--numeric-ids", "--usermap=root:5,:6"],
        &["-a", "--usermap=:6,*:7"],
    ] {
        let d = against_rsync(flags, &[""], &[]);
        assert!(d.is_empty(), "nfsync {flags:?} differs from rsync:\n{d}");
    }
    let out = nfsync()
        .args(["--chown=no-such-user-x:", "a", "b"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
}

/// A POSIX ACL granting `uid` read, as the kernel stores it
/// (`system.posix_acl_access`: version 2, then tag/perm/id entries).
pub(crate) fn acl_granting(uid: u32) -> Vec<u8> {
    let mut v = 2u32.to_le_bytes().to_vec();
    for (tag, perm, id) in [
        (0x01u16, 6u16, u32::MAX),
        (0x02, 4, uid),
        (0x04, 4, u32::MAX),
        (0x10, 4, u32::MAX),
        (0x20, 4, u32::MAX),
    ] {
        v.extend(tag.to_le_bytes());
        v.extend(perm.to_le_bytes());
        v.extend(id.to_le_bytes());
    }
    v
}

pub(crate) fn setxattr(p: &Path, name: &str, value: &[u8]) -> std::io::Result<()> {
    rustix::fs::lsetxattr(p, name, value, rustix::fs::XattrFlags::empty()).map_err(Into::into)
}

pub(crate) fn xattrs_of(p: &Path) -> Vec<(String, Vec<u8>)> {
    let mut buf = vec![0u8; 4096];
    let n = rustix::fs::llistxattr(p, &mut buf[..]).unwrap();
    let mut out: Vec<_> = buf[..n]
        .split(|&b| b == 0)
        .filter(|n| !n.is_empty() && !n.starts_with(b"security."))
        .map(|name| {
            let name = String::from_utf8_lossy(name).into_owned();
            let mut v = vec![0u8; 4096];
            let k = rustix::fs::lgetxattr(p, name.as_str(), &mut v[..]).unwrap();
            v.truncate(k);
            (name, v)
        })
        .collect();
    out.sort();
    out
}

/// A source with user xattrs and ACLs, and a destination whose files are up to date
/// by the quick check but lack them or hold stale ones: `None` when this filesystem
/// has no user xattrs (the test then says so and passes).
fn xattr_trees(s: &Path) -> Option<()> {
    let t = Tree::new(s.join("src"));
    t.file("plain", "p\n")
        .file("x", "x\n")
        .file("acl", "acl\n")
        .file("both", "both\n")
        .file("new", "new\n")
        .file("d/f", "f\n");
    if let Err(e) = setxattr(&t.path("x"), "user.one", b"1") {
        crate::support::prerequisite_missing(&format!(
            "{} holds no user xattrs ({e})",
            s.display()
        ));
        return None;
    }
    setxattr(&t.path("x"), "user.two", b"").unwrap();
    setxattr(&t.path("both"), "user.b", b"b").unwrap();
    setxattr(&t.path("new"), "user.n", b"n").unwrap();
    setxattr(&t.path("d"), "user.dir", b"d").unwrap();
    setxattr(
        &t.path("acl"),
        "system.posix_acl_access",
        &acl_granting(65534),
    )
    .unwrap();
    setxattr(
        &t.path("both"),
        "system.posix_acl_access",
        &acl_granting(1234),
    )
    .unwrap();
    t.age();
    let st = Tree::new(s.join("start"));
    st.file("plain", "p\n")
        .file("x", "x\n")
        .file("acl", "acl\n")
        .file("both", "both\n")
        .file("d/f", "f\n");
    setxattr(&st.path("plain"), "user.stale", b"s").unwrap();
    setxattr(&st.path("x"), "user.one", b"old").unwrap();
    st.age();
    Some(())
}

/// `-X`, `-A` and both: the same attributes as rsync, also on files the quick check
/// finds up to date (itemized `.f........x` / `.f.......a.` as rsync does), and stale
/// ones removed.
#[test]
fn xattrs_and_acls_same_as_rsync() {
    let s = Sides::new(Via::Mount);
    if xattr_trees(s.path()).is_none() {
        return;
    }
    for flags in [&["-aiX"][..], &["-aiA"], &["-aiXA"]] {
        let (r, n, d) = side_by_side(&s, flags, "src/", &["-X", "-A"]);
        assert!(d.is_empty(), "nfsync {flags:?} differs from rsync:\n{d}");
        assert_eq!(n.status.code(), Some(0), "{flags:?}: {}", describe(&n));
        assert_eq!(r.status.code(), Some(0), "{flags:?}: {}", describe(&r));
        let lines = |o: &Output| {
            let mut l: Vec<String> = String::from_utf8_lossy(&o.stdout)
                .lines()
                .filter(|l| l.starts_with(".f") || l.starts_with(">f"))
                .map(str::to_owned)
                .collect();
            l.sort();
            l
        };
        assert_eq!(lines(&n), lines(&r), "{flags:?}: -i lines");
        for f in ["plain", "x", "acl", "both", "new", "d", "d/f"] {
            assert_eq!(
                xattrs_of(&s.join("by_nfsync").join(f)),
                xattrs_of(&s.join("by_rsync").join(f)),
                "{flags:?}: {f}"
            );
        }
    }
    // And the second run has nothing left to do.
    let out = nfsync()
        .args(["-aiXA"])
        .arg(slash(&s.join("src")))
        .arg(slash(&s.join("by_nfsync")))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", describe(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "", "second run");
}

/// nfs:// holds no extended attributes: one warning for the whole run (not one per
/// file), exit 23 as rsync gives where the receiver cannot set them, and every file
/// still copied.
#[test]
fn xattrs_over_nfs_warn_once_and_copy_everything() {
    let s = Sides::new(Via::InProc);
    if xattr_trees(s.path()).is_none() {
        return;
    }
    fs::create_dir(s.join("by_nfsync")).unwrap();
    for flags in [&["-aX"][..], &["-rltA"]] {
        let out = nfsync()
            .args(flags)
            .arg(slash(&s.join("src")))
            .arg(s.dest("by_nfsync"))
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(23), "{flags:?}: {}", describe(&out));
        let warnings: Vec<_> = err.lines().filter(|l| l.contains("warning")).collect();
        assert_eq!(warnings.len(), 1, "{flags:?}: {err}");
        assert!(
            warnings[0].contains("cannot hold extended attributes or ACLs"),
            "{err}"
        );
        assert_eq!(
            err.lines().count(),
            2,
            "{flags:?}: the warning and the summary: {err}"
        );
        let d = rsync_diff_with(
            &s.join("src"),
            &s.join("by_nfsync"),
            &["--no-o", "--no-g", "--no-p"],
        );
        assert!(d.is_empty(), "{flags:?}: not everything copied:\n{d}");
    }
}

/// A symlink owned by another user in `--exclude-from FILE`'s path or in DEST's is
/// not followed (refused, exit 1, the link named); ours and root's are.
#[test]
fn foreign_symlinks_in_exclude_from_or_dest_are_refused() {
    if !root_or_skip("rsync_links::foreign_symlinks_in_exclude_from_or_dest_are_refused") {
        return;
    }
    let s = Scratch::new();
    Tree::new(s.join("src"))
        .file("f", "f\n")
        .file("skip", "s\n");
    Tree::new(s.join("theirs"))
        .file("rules", "skip\n")
        .dir("dest");
    let t = Tree::new(s.path());
    t.symlink("mine", "theirs").symlink("foreign", "theirs");
    rustix::fs::chownat(
        rustix::fs::CWD,
        s.join("foreign"),
        Some(rustix::fs::Uid::from_raw(4321)),
        None,
        rustix::fs::AtFlags::SYMLINK_NOFOLLOW,
    )
    .unwrap();
    let run = |args: &[&std::ffi::OsStr]| nfsync().args(["-a"]).args(args).output().unwrap();
    let src = slash(&s.join("src"));
    let rules = |l: &str| s.join(l).join("rules").into_os_string();
    let dest = |l: &str| slash(&s.join(l).join("dest"));
    let (mine_rules, mine_dest) = (rules("mine"), dest("mine"));
    let ok = run(&["--exclude-from".as_ref(), &mine_rules, &src, &mine_dest]);
    assert!(ok.status.success(), "{}", describe(&ok));
    assert!(s.join("theirs/dest/f").exists() && !s.join("theirs/dest/skip").exists());
    for (args, what) in [
        (
            vec![
                "--exclude-from".into(),
                rules("foreign"),
                src.clone(),
                dest("mine"),
            ],
            "--exclude-from",
        ),
        (vec![src.clone(), dest("foreign")], "DEST"),
    ] {
        let args: Vec<&std::ffi::OsStr> = args.iter().map(|a| a.as_os_str()).collect();
        let out = run(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{what}: {}", describe(&out));
        assert!(
            err.contains(&format!(
                "{}: symlink owned by uid 4321",
                s.join("foreign").display()
            )) && err.contains(what),
            "{what}: {err}"
        );
    }
}

/// A mounted filesystem answering `ENOTSUP` (ramfs holds no user xattrs): the same
/// single warning and exit 23 as over nfs://, everything else copied. Root only.
#[test]
fn xattrs_on_a_filesystem_without_them_warn_once() {
    if !root_or_skip("rsync_links::xattrs_on_a_filesystem_without_them_warn_once (mounts ramfs)") {
        return;
    }
    let s = Scratch::new();
    if xattr_trees(s.path()).is_none() {
        return;
    }
    let dst = s.join("ramfs");
    fs::create_dir(&dst).unwrap();
    let mounted = Command::new("mount")
        .args(["-t", "ramfs", "nfsync-test"])
        .arg(&dst)
        .status()
        .expect("run mount");
    assert!(mounted.success(), "mount -t ramfs failed");
    struct Unmount<'a>(&'a Path);
    impl Drop for Unmount<'_> {
        fn drop(&mut self) {
            let _ = Command::new("umount").arg(self.0).status();
        }
    }
    let _unmount = Unmount(&dst);
    let out = nfsync()
        .args(["-aXA"])
        .arg(slash(&s.join("src")))
        .arg(slash(&dst))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(23), "{}", describe(&out));
    let warnings: Vec<_> = err.lines().filter(|l| l.contains("warning")).collect();
    assert_eq!(warnings.len(), 1, "{err}");
    assert!(
        warnings[0].contains("cannot hold extended attributes or ACLs"),
        "{err}"
    );
    let d = rsync_diff_with(&s.join("src"), &dst, &[]);
    assert!(d.is_empty(), "not everything copied:\n{d}");
}

/// A symlink named as SRC: `-L` copies its referent (a file onto DEST's new name, a
/// directory as a directory), `-k` a directory's, and a dangling one is rsync's
/// error (exit 23).
#[test]
fn linked_sources_on_the_command_line_follow_rsync() {
    let s = Sides::new(Via::Mount);
    link_source(s.path(), true);
    Tree::new(s.join("empty"));
    for (flags, operand, dest) in [
        (&["-aL"][..], "src/int", "renamed"),
        (&["-aL"], "src/int", "into/"),
        (&["-a"], "src/int", "renamed"),
        (&["-aL"], "src/dirl", "newdir"),
        (&["-ak"], "src/dirl", "newdir"),
        (&["-a", "--copy-unsafe-links"], "src/ext", "renamed"),
        (&["-aL"], "src/dang", "renamed"),
    ] {
        s.copy_start("empty");
        let ran = s.run(dest, b"", &|_, cmd| {
            cmd.args(flags).arg(s.join(operand));
        });
        // The times of the directory holding DEST, and of a DEST directory (no operand
        // here ends in `/`, so no source directory's copy), are when each tool last
        // created something in them: the same for both.
        for side in [Side::Rsync, Side::Nfsync] {
            let named = s.join(side.dir()).join(dest.trim_end_matches('/'));
            let own = fs::symlink_metadata(&named).is_ok_and(|m| m.is_dir());
            for dir in std::iter::once(s.join(side.dir())).chain(own.then_some(named)) {
                filetime::set_file_mtime(dir, filetime::FileTime::from_unix_time(1, 0)).unwrap();
            }
        }
        let what = format!("{flags:?} {operand} {dest}");
        assert_eq!(
            ran.rsync.status.code(),
            ran.nfsync.status.code(),
            "{what}: exit codes"
        );
        let d = s.diff(&[]);
        assert!(d.is_empty(), "{what}:\n{d}");
    }
}
