//! Command lines taken from public deploy, backup and mirror scripts, where nfsync gave
//! another result than rsync: each run by rsync and nfsync side by side from the same
//! trees, the results compared with `rsync -anciH --delete` and the exit codes with
//! each other.

use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};

use crate::support::sides::{Sides, Via};
use crate::support::{Tree, describe};

/// Runs `flags SRC/ DEST` from `start` on both sides; asserts the same exit code and
/// the same tree.
fn same_as_rsync(s: &Sides, flags: &[&str]) {
    s.copy_start("start");
    let src = crate::support::slash(&s.join("src"));
    let ran = s.run("", b"", &|_, cmd| {
        cmd.args(flags).arg(&src);
    });
    assert_eq!(
        ran.nfsync.status.code(),
        ran.rsync.status.code(),
        "{flags:?}: rsync {}\nnfsync {}",
        describe(&ran.rsync),
        describe(&ran.nfsync)
    );
    let d = s.diff(&[]);
    assert!(d.is_empty(), "{flags:?}: nfsync differs from rsync:\n{d}");
}

/// `-H --ignore-existing`: a name DEST has is left as it is, neither linked to the
/// others of its group nor the copy they link to (its bytes are DEST's, not the
/// source's); the new names are copied and linked among themselves.
#[test]
fn hard_links_with_ignore_existing_leave_existing_names() {
    let s = Sides::new(Via::Mount);
    Tree::new(s.join("src"))
        .file("a", "source\n")
        .hardlink("b", "a")
        .hardlink("c", "a")
        .age();
    Tree::new(s.join("start"))
        .file("a", "DEST's own, longer\n")
        .age();
    same_as_rsync(&s, &["-aH", "--ignore-existing"]);
    assert_eq!(fs::read(s.nfsync("b")).unwrap(), b"source\n");
    assert_eq!(
        fs::metadata(s.nfsync("b")).unwrap().ino(),
        fs::metadata(s.nfsync("c")).unwrap().ino()
    );
}

/// `--ignore-existing` with a file in DEST where the source has a directory: the file
/// stays, nothing goes inside it, exit 23; the rest is copied (and deleted).
#[test]
fn ignore_existing_keeps_a_file_where_the_source_has_a_directory() {
    let s = Sides::new(Via::Mount);
    Tree::new(s.join("src"))
        .file("x/f", "in\n")
        .file("other", "o\n")
        .age();
    Tree::new(s.join("start"))
        .file("x", "a file\n")
        .file("extra", "e\n")
        .age();
    for flags in [
        &["-a", "--ignore-existing"][..],
        &["-a", "--ignore-existing", "--delete"],
    ] {
        same_as_rsync(&s, flags);
        assert!(s.nfsync("x").is_file());
    }
}

/// Without `-p`, fixing an up-to-date file's owner leaves its mode as DEST has it.
#[test]
fn owner_fixed_without_perms_keeps_dests_mode() {
    if !crate::support::root_or_skip("owner tests") {
        return;
    }
    let s = Sides::new(Via::Mount);
    Tree::new(s.join("src"))
        .file("f", "same\n")
        .chmod("f", 0o755)
        .age();
    let start = Tree::new(s.join("start"));
    start.file("f", "same\n").chmod("f", 0o640).age();
    start.chown("f", 1234, 2345);
    for flags in [&["-rt", "-o"][..], &["-rt", "-og"], &["-rt", "--chown=0:0"]] {
        same_as_rsync(&s, flags);
        let mode = fs::metadata(s.nfsync("f")).unwrap().permissions().mode() & 0o7777;
        assert_eq!(mode, 0o640, "{flags:?}");
    }
}

/// `rsync -a --link-dest=PREV` over a stale snapshot: a DEST file out of date whose
/// basis matches is replaced by a hard link to the basis (`--compare-dest`: removed,
/// the basis stands for it; `--copy-dest`: copied as usual).
#[test]
fn basis_dirs_replace_a_stale_dest_file() {
    let s = Sides::new(Via::Mount);
    Tree::new(s.join("src"))
        .file("same", "source\n")
        .file("changed", "new\n")
        .mtime("same", 1_600_000_000, 0)
        .mtime("changed", 1_700_000_000, 0);
    Tree::new(s.join("prev"))
        .file("same", "source\n")
        .file("changed", "old\n")
        .mtime("same", 1_600_000_000, 0)
        .mtime("changed", 1_600_000_000, 0);
    Tree::new(s.join("start"))
        .file("same", "stale\n")
        .file("changed", "stale\n");
    for kind in ["--link-dest", "--compare-dest", "--copy-dest"] {
        let flag = format!("{kind}={}", s.join("prev").display());
        same_as_rsync(&s, &["-a", &flag]);
        let linked = fs::metadata(s.nfsync("same")).map(|m| m.ino()).ok();
        let prev = fs::metadata(s.join("prev/same")).unwrap().ino();
        assert_eq!(linked == Some(prev), kind == "--link-dest", "{kind}");
    }
}

/// `-d` alone copies the top level with nothing else preserved (no times, no modes
/// beyond the umask), as rsync's `-d`; it is not nfsync's default `-a`.
#[test]
fn dirs_alone_is_only_dirs() {
    let s = Sides::new(Via::Mount);
    Tree::new(s.join("src"))
        .file("f", "x\n")
        .file("sub/g", "y\n")
        .chmod("f", 0o600)
        .age();
    Tree::new(s.join("start")).dir("");
    s.copy_start("start");
    let src = crate::support::slash(&s.join("src"));
    let ran = s.run("", b"", &|_, cmd| {
        cmd.arg("-d").arg(&src);
    });
    assert_eq!(ran.nfsync.status.code(), ran.rsync.status.code());
    // Without -t both give `f` the time of their own run: not the source's, and the
    // two runs may fall in different seconds, so their times are made one before the
    // trees are compared. The same holds for DEST and `sub/`, whose times are those
    // of the last entry each tool made in them.
    let aged = fs::metadata(s.join("src/f")).unwrap().mtime();
    let same = filetime::FileTime::from_unix_time(aged, 0);
    for p in ["f", "sub", ""] {
        for e in [s.rsync(p), s.nfsync(p)] {
            assert!(fs::metadata(&e).unwrap().mtime() > aged, "{}", e.display());
            filetime::set_file_mtime(&e, same).unwrap();
        }
    }
    let d = s.diff(&[]);
    assert!(d.is_empty(), "-d: nfsync differs from rsync:\n{d}");
    assert!(!s.nfsync("sub/g").exists());
}

/// `-R` through a source directory that is a symlink: the directories on the way are
/// sent as real directories (what the link points to), so the file named below it is
/// copied, as rsync does.
#[test]
fn relative_paths_through_a_symlinked_directory() {
    let s = Sides::new(Via::Mount);
    let t = Tree::new(s.join("src"));
    t.file("real/sub/file", "f\n").symlink("link", "real").age();
    Tree::new(s.join("start")).dir("");
    for operand in ["src/./link/sub/file", "src/link/sub/file"] {
        s.copy_start("start");
        let src = s.join(operand);
        let ran = s.run("", b"", &|_, cmd| {
            cmd.args(["-aR"]).arg(&src);
        });
        assert_eq!(
            ran.nfsync.status.code(),
            ran.rsync.status.code(),
            "{operand}: {}",
            describe(&ran.nfsync)
        );
        // DEST itself is no source directory's copy here: both keep the start's time.
        s.set_dest_mtimes(filetime::FileTime::from_unix_time(1, 0));
        let d = s.diff(&[]);
        assert!(d.is_empty(), "{operand}: nfsync differs from rsync:\n{d}");
        let copied = match operand.split_once("/./") {
            Some((_, below)) => s.nfsync(below),
            None => s.nfsync(src.strip_prefix("/").unwrap().to_str().unwrap()),
        };
        assert!(copied.is_file(), "{operand}: {} missing", copied.display());
    }
}

/// DEST (and its missing parents) are made `0777` less the caller's umask, as rsync
/// makes DEST (and a setgid parent's group bit comes from the kernel).
#[test]
fn dest_and_its_parents_are_made_with_the_umask() {
    use std::os::unix::process::CommandExt;
    let s = Sides::new(Via::Mount);
    Tree::new(s.join("src")).file("sub/f", "x\n").age();
    Tree::new(s.join("start")).dir("");
    s.copy_start("start");
    let src = crate::support::slash(&s.join("src"));
    let ran = s.run("dst/", b"", &|_, cmd| {
        // SAFETY: umask(2) is async-signal-safe.
        unsafe {
            cmd.pre_exec(|| {
                libc::umask(0o077);
                Ok(())
            });
        }
        cmd.arg("-r").arg(&src);
    });
    assert_eq!(
        ran.nfsync.status.code(),
        Some(0),
        "{}",
        describe(&ran.nfsync)
    );
    assert_eq!(ran.rsync.status.code(), Some(0), "{}", describe(&ran.rsync));
    for rel in ["dst", "dst/sub"] {
        let mode = |p: std::path::PathBuf| fs::metadata(p).unwrap().permissions().mode() & 0o7777;
        assert_eq!(mode(s.nfsync(rel)), mode(s.rsync(rel)), "{rel}");
        assert_eq!(mode(s.nfsync(rel)), 0o700, "{rel}");
    }
}
