//! The mount path: every shared scenario against a local destination directory, plus
//! command-line and local-only checks.

mod races;
mod source_races;
mod times;

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use predicates::prelude::*;

use crate::scenarios::scenario_tests;
use crate::support::{
    LocalTarget, Scratch, Tree, assert_errors_name, assert_same, describe, is_root, nfsync, nobody,
    root_or_skip, rsync_diff_with, run_nfsync, slash, sync_ok,
};

scenario_tests!(files, Some(LocalTarget::new()));
scenario_tests!(symlinks, Some(LocalTarget::new()));
scenario_tests!(read_only_dirs, Some(LocalTarget::new()));
scenario_tests!(hard_links, Some(LocalTarget::new()));
scenario_tests!(specials, Some(LocalTarget::new()));
scenario_tests!(owners, Some(LocalTarget::new()));
scenario_tests!(wide_times, Some(LocalTarget::new()));

#[test]
fn help_mentions_exit_codes() {
    nfsync()
        .arg("--help")
        .assert()
        .success()
        .stdout(predicate::str::contains("Exit codes"))
        .stdout(predicate::str::contains("23"))
        .stdout(predicate::str::contains("--dry-run"))
        .stdout(predicate::str::contains("--exclude"));
}

#[test]
fn version() {
    nfsync()
        .arg("--version")
        .assert()
        .success()
        .stdout(predicate::str::contains(env!("CARGO_PKG_VERSION")));
}

#[test]
fn usage_errors_exit_1() {
    let s = Scratch::new();
    fs::create_dir(s.join("src")).unwrap();
    let src = s.join("src");
    let dst = s.join("dst");
    let with = |opts: &[&str]| -> Vec<std::ffi::OsString> {
        let mut v: Vec<std::ffi::OsString> = opts.iter().map(Into::into).collect();
        v.push(src.clone().into());
        v.push(dst.clone().into());
        v
    };
    let cases = vec![
        vec![],
        // (A lone SRC is listed, as rsync does: see rsync_paths.)
        with(&["--no-such-option"]),
        with(&["--jobs", "lots"]),
        with(&["--modify-window", "-x"]),
    ];
    for args in cases {
        let out = nfsync().args(&args).output().unwrap();
        assert_eq!(out.status.code(), Some(1), "{args:?}: {}", describe(&out));
        assert!(!out.stderr.is_empty(), "{args:?}: no message on stderr");
    }
    assert!(!dst.exists(), "a usage error created DEST");
}

#[test]
fn missing_source_exit_3() {
    let s = Scratch::new();
    let missing = s.join("no-such-source");
    let dst = s.join("dst");
    let out = nfsync().arg(&missing).arg(&dst).output().unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", describe(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("no-such-source"),
        "stderr does not name the source: {err}"
    );
}

#[test]
fn source_with_leading_dash_after_double_dash() {
    let s = Scratch::new();
    let tree = Tree::new(s.join("-src"));
    tree.file("f", "f\n");
    nfsync()
        .current_dir(s.path())
        .args(["--", "-src/", "dst"])
        .assert()
        .success();
    assert_same(tree.root(), &s.join("dst"));
}

/// An unreadable source file: exit 23, its path on stderr, everything else copied.
#[test]
fn unreadable_source_file() {
    let s = nobody::scratch();
    let tree = Tree::new(s.join("src"));
    tree.file("a.txt", "a\n")
        .random_file("sub/b.bin", 100_000, 5)
        .file("sub/secret", "secret\n")
        .file("z/last", "last\n");
    nobody::hand_over(tree.root());
    tree.chmod("sub/secret", 0o000);

    let dst = s.join("dst");
    let out = nobody::run(&[slash(tree.root()).as_os_str(), dst.as_os_str()]);
    assert_eq!(out.status.code(), Some(23), "{}", describe(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("sub/secret"),
        "stderr does not name the file: {err}"
    );

    // Everything else is exact; nothing (not even a partial file) stands for secret.
    assert!(
        !dst.join("sub/secret").exists(),
        "sub/secret exists in DEST"
    );
    let diff = rsync_diff_with(tree.root(), &dst, &["--exclude", "/sub/secret"]);
    assert!(diff.is_empty(), "trees differ:\n{diff}");
}

/// An update whose new source cannot be read keeps the old copy (the source is opened
/// before anything at the destination is touched).
#[test]
fn unreadable_update_keeps_the_old_copy() {
    let s = nobody::scratch();
    let tree = Tree::new(s.join("src"));
    tree.file("doc", "version 1\n").file("other", "o\n");
    nobody::hand_over(tree.root());
    let dst = s.join("dst");
    let args = [slash(tree.root()), dst.clone().into_os_string()];
    let args: Vec<&std::ffi::OsStr> = args.iter().map(|a| a.as_os_str()).collect();
    let first = nobody::run(&args);
    assert!(first.status.success(), "{}", describe(&first));

    tree.file("doc", "version 2, longer\n");
    nobody::hand_over(tree.root());
    tree.chmod("doc", 0o000);
    let out = nobody::run(&args);
    assert_eq!(out.status.code(), Some(23), "{}", describe(&out));
    assert_eq!(fs::read(dst.join("doc")).unwrap(), b"version 1\n");
    let names: Vec<_> = fs::read_dir(&dst)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names.len(), 2, "left behind: {names:?}");
}

/// A destination that fills up: an update that does not fit keeps the old copy whole,
/// a new file that does not fit leaves nothing, each is named with its cause (exit 23),
/// and what fits is copied. Needs root (a 1 MiB tmpfs).
#[test]
fn a_full_disk_keeps_old_copies_and_leaves_no_partial_files() {
    if !root_or_skip(
        "mount::a_full_disk_keeps_old_copies_and_leaves_no_partial_files (mounts a tmpfs)",
    ) {
        return;
    }
    let s = Scratch::new();
    let dst = s.join("dst");
    fs::create_dir(&dst).unwrap();
    let mounted = std::process::Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=1m", "nfsync-test"])
        .arg(&dst)
        .status()
        .expect("run mount");
    assert!(mounted.success(), "mount -t tmpfs failed");
    // Unmounted even when an assertion fails.
    struct Unmount<'a>(&'a Path);
    impl Drop for Unmount<'_> {
        fn drop(&mut self) {
            let _ = std::process::Command::new("umount").arg(self.0).status();
        }
    }
    let _unmount = Unmount(&dst);

    let tree = Tree::new(s.join("src"));
    tree.random_file("grows", 400_000, 1)
        .file("small", "small\n");
    sync_ok(&[], tree.root(), &dst);
    let old = fs::read(dst.join("grows")).unwrap();

    // 700 kB more for `grows` does not fit beside its old copy; neither does new_big.
    tree.random_file("grows", 700_000, 2)
        .random_file("new_big", 2_000_000, 3)
        .file("new_small", "fits\n");
    // One job, so a partial new_big cannot crowd out new_small while it exists.
    let out = run_nfsync(&["--jobs", "1"], tree.root(), &dst);
    assert_eq!(out.status.code(), Some(23), "{}", describe(&out));
    assert_errors_name(
        &out,
        &[
            ("grows", "No space left on device"),
            ("new_big", "No space left on device"),
        ],
    );
    assert!(
        fs::read(dst.join("grows")).unwrap() == old,
        "the old copy changed"
    );
    let mut names: Vec<_> = fs::read_dir(&dst)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, ["grows", "new_small", "small"], "partial files left");
    assert_eq!(fs::read(dst.join("new_small")).unwrap(), b"fits\n");
}

/// An unreadable source directory: exit 23, its path on stderr, everything else copied.
#[test]
fn unreadable_source_dir() {
    let s = nobody::scratch();
    let tree = Tree::new(s.join("src"));
    tree.file("a.txt", "a\n")
        .file("locked/inner", "inner\n")
        .file("open/b.txt", "b\n");
    nobody::hand_over(tree.root());
    tree.chmod("locked", 0o000);

    let dst = s.join("dst");
    let out = nobody::run(&[slash(tree.root()).as_os_str(), dst.as_os_str()]);
    assert_eq!(out.status.code(), Some(23), "{}", describe(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("locked"),
        "stderr does not name the directory: {err}"
    );
    assert!(!dst.join("locked/inner").exists());
    let diff = rsync_diff_with(tree.root(), &dst, &["--exclude", "/locked/"]);
    assert!(diff.is_empty(), "trees differ:\n{diff}");
}

/// CI runs as root, which hides every permission problem (root writes into read-only
/// directories, reads mode-000 files). So when root, run this module's tests once more
/// as `nobody`, where those problems are real, with copies of the binaries where nobody
/// cannot reach them (a checkout under a private home directory). Not root, the run
/// itself is that run.
#[test]
fn all_tests_as_non_root() {
    const MARK: &str = "NFSYNC_TESTS_AS_NOBODY";
    if std::env::var_os(MARK).is_some() || !is_root() {
        return;
    }
    let exe = nobody::runnable(&std::env::current_exe().expect("test binary path"));
    let mut cmd = assert_cmd::Command::new("setpriv");
    cmd.timeout(std::time::Duration::from_secs(600));
    let out = cmd
        .args(nobody::SETPRIV)
        .arg(&exe)
        .args(["mount::", "--skip", "mount::all_tests_as_non_root"])
        .env(MARK, "1")
        .env(nobody::BIN_VAR, nobody::bin())
        .env("TMPDIR", "/tmp")
        .current_dir("/tmp")
        .output()
        .expect("run setpriv (util-linux)");
    assert!(
        out.status.success(),
        "tests run as nobody failed:\n{}",
        describe(&out)
    );
}

/// An unreadable source directory with --delete: what DEST already holds below it is
/// kept (rsync skips deletions after an I/O error), and the rest is still synced.
#[test]
fn unreadable_source_dir_with_delete_keeps_dest() {
    let s = nobody::scratch();
    let tree = Tree::new(s.join("src"));
    tree.file("locked/inner", "inner\n")
        .file("open/b.txt", "b\n");
    nobody::hand_over(tree.root());
    let dst = s.join("dst");
    let args = [slash(tree.root()), dst.clone().into_os_string()];
    let args: Vec<&std::ffi::OsStr> = args.iter().map(|a| a.as_os_str()).collect();
    let out = nobody::run(&args);
    assert!(out.status.success(), "first run: {}", describe(&out));

    tree.chmod("locked", 0o000);
    tree.file("open/new.txt", "new\n");
    let mut with_delete: Vec<&std::ffi::OsStr> = vec!["--delete".as_ref()];
    with_delete.extend(&args);
    let out = nobody::run(&with_delete);
    assert_eq!(out.status.code(), Some(23), "{}", describe(&out));
    // DEST's copy of `locked` may have taken the source's mode 000: open it up to look.
    let _ = fs::set_permissions(dst.join("locked"), fs::Permissions::from_mode(0o755));
    assert_eq!(
        fs::read(dst.join("locked/inner")).ok().as_deref(),
        Some(&b"inner\n"[..]),
        "--delete removed DEST files below an unreadable source directory"
    );
    assert_eq!(fs::read(dst.join("open/new.txt")).unwrap(), b"new\n");
}

/// Mtimes before 1970 (negative seconds) survive (local filesystems store them; NFSv3
/// cannot, so this is not a shared scenario).
#[test]
fn negative_mtimes() {
    let s = Scratch::new();
    let tree = Tree::new(s.join("src"));
    tree.file("old", "old\n")
        .file("d/older", "older\n")
        .mtime("old", -1, 500)
        .mtime("d/older", -86_400 * 365 * 30, 999_999_999)
        .mtime("d", -12_345, 0);
    nfsync()
        .arg(slash(tree.root()))
        .arg(s.join("dst"))
        .assert()
        .success();
    assert_same(tree.root(), &s.join("dst"));
    for rel in ["old", "d/older", "d"] {
        let a = fs::symlink_metadata(tree.path(rel)).unwrap();
        let b = fs::symlink_metadata(s.join("dst").join(rel)).unwrap();
        use std::os::unix::fs::MetadataExt;
        assert_eq!(
            (a.mtime(), a.mtime_nsec()),
            (b.mtime(), b.mtime_nsec()),
            "{rel}"
        );
    }
}

/// SRC and DEST arguments that are not UTF-8.
#[test]
fn non_utf8_arguments() {
    let s = Scratch::new();
    let tree = Tree::new(s.join(crate::support::bytes_path(b"src \xff\xfe")));
    tree.file("f", "f\n")
        .file(crate::support::bytes_path(b"g\xe9"), "g\n");
    let dst = s.join(crate::support::bytes_path(b"dst \xe9\n"));
    nfsync()
        .arg(slash(tree.root()))
        .arg(&dst)
        .assert()
        .success();
    assert_same(tree.root(), &dst);
    // Without the slash, the odd name itself is created inside DEST.
    let dst2 = s.join("dst2");
    nfsync().arg(tree.root()).arg(&dst2).assert().success();
    assert_same(
        tree.root(),
        &dst2.join(crate::support::bytes_path(b"src \xff\xfe")),
    );
}

/// DEST inside SRC: the directory being written (DEST for `SRC/`, DEST/NAME for `SRC`),
/// recognised by its identity, is skipped with a warning and everything else is copied,
/// as rsync does: `nfsync S S/sub` makes `S/sub/S/f` and `S/sub/S/sub/g`, `nfsync S S`
/// makes `S/S/f`, and `nfsync S/ S/backup` copies all but `backup`. (rsync also leaves
/// empty `S/sub/S/sub/S/sub` directories from walking its own output; nfsync does not.)
#[test]
fn dest_inside_source() {
    let fresh = |s: &Scratch| {
        let tree = Tree::new(s.join("S"));
        tree.file("f", "f\n").file("sub/g", "g\n");
        tree
    };
    let files = |root: &Path| -> Vec<String> {
        let mut v: Vec<String> = crate::support::snapshot(root)
            .into_iter()
            .map(|l| l.split_whitespace().next().unwrap_or("").to_string())
            .collect();
        v.sort();
        v
    };
    // (operands relative to the scratch dir, files expected under S afterwards)
    let cases: [(&[&str], &[&str]); 3] = [
        (&["S", "S/sub"], &["sub/S/f", "sub/S/sub/g"]),
        (&["S", "S"], &["S/f", "S/sub/g"]),
        (&["S/", "S/backup"], &["backup/f"]),
    ];
    for (args, expect) in cases {
        let s = Scratch::new();
        let tree = fresh(&s);
        let out = nfsync().current_dir(s.path()).args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", describe(&out));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("it is the destination being written"),
            "{args:?}: no warning: {stderr}"
        );
        let have = files(tree.root());
        for e in expect {
            assert!(
                tree.path(e).is_file(),
                "{args:?}: {e} missing; have {have:?}"
            );
        }
        // Nothing nested twice: the written directory was not copied into itself.
        assert!(
            !have
                .iter()
                .any(|p| p.matches("S/").count() > 1 || p.contains("backup/backup")),
            "{args:?}: copied into itself: {have:?}"
        );
    }
}

/// A source file deleted after the directory was listed but before it was copied:
/// a warning naming it, exit 24, everything else copied. The deletion races the copy,
/// so the test retries a few times and is satisfied by one clean observation.
#[test]
fn vanished_source_file() {
    for attempt in 0..5 {
        let s = Scratch::new();
        let tree = Tree::new(s.join("src"));
        for i in 0..6 {
            tree.random_file(format!("a{i}_big"), 8 << 20, i);
        }
        tree.file("zz_vanish", "soon gone\n");
        let dst = s.join("dst");
        let child = std::process::Command::new(crate::support::bin())
            .args(["--jobs", "1"])
            .arg(slash(tree.root()))
            .arg(&dst)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let start = std::time::Instant::now();
        while crate::support::count_files(&dst) == 0
            && start.elapsed() < std::time::Duration::from_secs(20)
        {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        // The removal moves the source directory's mtime after nfsync read it; put it
        // back, or the check below would see that (legitimate) difference whenever the
        // removal crosses a second boundary.
        let root_mtime = fs::metadata(tree.root()).unwrap().modified().unwrap();
        fs::remove_file(tree.path("zz_vanish")).unwrap();
        filetime::set_file_mtime(
            tree.root(),
            filetime::FileTime::from_system_time(root_mtime),
        )
        .unwrap();
        let out = child.wait_with_output().unwrap();
        if dst.join("zz_vanish").exists() {
            eprintln!("vanished_source_file: attempt {attempt} copied the file before it vanished");
            continue;
        }
        assert_eq!(out.status.code(), Some(24), "{}", describe(&out));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("zz_vanish"),
            "stderr does not name the file: {err}"
        );
        assert_same(tree.root(), &dst);
        return;
    }
    eprintln!("vanished_source_file: the file was always copied before it vanished");
}

/// DEST given as a symlink to a directory is followed (like rsync): the copy lands in
/// the directory and the link stays a link.
#[test]
fn dest_is_symlink_to_dir() {
    let s = Scratch::new();
    let tree = Tree::new(s.join("src"));
    tree.file("a", "a\n").file("d/b", "b\n").age();
    fs::create_dir(s.join("real")).unwrap();
    std::os::unix::fs::symlink("real", s.join("link")).unwrap();
    nfsync()
        .arg(slash(tree.root()))
        .arg(s.join("link"))
        .assert()
        .success();
    assert!(
        fs::symlink_metadata(s.join("link"))
            .unwrap()
            .file_type()
            .is_symlink(),
        "DEST symlink was replaced"
    );
    assert_same(tree.root(), &s.join("real"));
}

/// Every option of the CLI contract is accepted (each run on its own, exit 0).
#[test]
fn contract_options_accepted() {
    let s = Scratch::new();
    let tree = Tree::new(s.join("src"));
    tree.file("a", "a\n").age();
    let rules = s.join("rules");
    fs::write(&rules, "*.tmp\n").unwrap();
    let rules = rules.to_str().unwrap();
    let sets: &[&[&str]] = &[
        &["-n"],
        &["--dry-run"],
        &["--delete"],
        &["--exclude", "x"],
        &["--include", "a", "--exclude", "*"],
        &["--exclude-from", rules],
        &["-c"],
        &["--checksum"],
        &["--size-only"],
        &["--modify-window", "1"],
        &["-j", "3"],
        &["--jobs", "auto"],
        &["--jobs=2"],
        &["-H"],
        &["--hard-links"],
        &["--specials"],
        &["--devices"],
        &["--owner", "--group"],
        &["--no-owner", "--no-group"],
        &["--numeric-ids"],
        &["-v"],
        &["-vv"],
        &["-q"],
        &["--progress"],
        &["--no-progress"],
        &["--stats"],
        &["-i"],
        &["--itemize-changes"],
        &["--json"],
    ];
    for (i, opts) in sets.iter().enumerate() {
        let out = nfsync()
            .args(*opts)
            .arg(slash(tree.root()))
            .arg(s.join(format!("dst{i}")))
            .output()
            .unwrap();
        assert!(out.status.success(), "{opts:?}: {}", describe(&out));
    }
}

/// DEST that cannot be created (its parent is not writable): exit 3 naming it.
#[test]
fn dest_not_creatable() {
    let s = nobody::scratch();
    let tree = Tree::new(s.join("src"));
    tree.file("a", "a\n");
    nobody::hand_over(tree.root());
    let parent = s.join("readonly_parent");
    fs::create_dir(&parent).unwrap();
    fs::set_permissions(&parent, fs::Permissions::from_mode(0o555)).unwrap();
    let dst = parent.join("cannot_create");
    let out = nobody::run(&[slash(tree.root()).as_os_str(), dst.as_os_str()]);
    assert_eq!(out.status.code(), Some(3), "{}", describe(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("cannot_create"),
        "stderr does not name DEST: {err}"
    );
}

#[test]
fn a_dest_the_run_creates_takes_the_source_directory_mode() {
    // `root_dir` creates DEST (and missing parents) with a default mode; the source's
    // own mode (here 0700, which mkdir could have given at once) must still land on it.
    for mode in [0o700, 0o750, 0o2755] {
        let s = Scratch::new();
        let tree = Tree::new(s.join("src"));
        tree.file("sub/f", "f\n");
        fs::set_permissions(s.join("src"), fs::Permissions::from_mode(mode)).unwrap();
        let dst = s.join("new/dst");
        let out = nfsync()
            .arg("-a")
            .arg(slash(&s.join("src")))
            .arg(&dst)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
        let got = fs::metadata(&dst).unwrap().permissions().mode() & 0o7777;
        assert_eq!(got, mode, "DEST's mode");
        assert_same(&s.join("src"), &dst);
    }
}
