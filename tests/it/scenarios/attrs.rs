//! Attributes: modes, mtimes, owners.

use std::fs;
use std::os::unix::fs::MetadataExt;

use super::{assert_rerun_is_noop, assert_same_mtime_ns, run, sync};
use crate::support::{
    Scratch, Target, Tree, assert_snapshots_eq, assert_target_same, describe, json_stats,
    root_or_skip, snapshot, stat,
};

/// setuid/setgid/sticky bits and read-only files and directories, including updating
/// files inside a read-only directory on a second run.
pub fn modes(t: &dyn Target) {
    let s = Scratch::new();
    let tree = Tree::new(s.join("src"));
    tree.file("suid", "#!/bin/sh\n")
        .file("sgid", "#!/bin/sh\n")
        .file("both", "#!/bin/sh\n")
        .file("ro", "read only\n")
        .file("private", "private\n")
        .file("exec", "#!/bin/sh\n")
        .file("sgid_dir/child", "child\n")
        .file("sticky/child", "child\n")
        .file("ro_dir/a", "a\n")
        .file("ro_dir/sub/b", "b\n")
        .dir("ro_dir/empty_ro")
        .age()
        .chmod("suid", 0o4755)
        .chmod("sgid", 0o2755)
        .chmod("both", 0o6750)
        .chmod("ro", 0o444)
        .chmod("private", 0o600)
        .chmod("exec", 0o711)
        .chmod("sgid_dir", 0o2775)
        .chmod("sticky", 0o1777)
        .chmod("ro_dir/empty_ro", 0o555)
        .chmod("ro_dir/sub", 0o555)
        .chmod("ro_dir", 0o555);

    sync(t, &[], tree.root(), "dst");
    assert_target_same(t, tree.root(), "dst");
    let dst = t.dest_path("dst");
    let mode = |rel: &str| fs::symlink_metadata(dst.join(rel)).unwrap().mode() & 0o7777;
    assert_eq!(mode("suid"), 0o4755);
    assert_eq!(mode("sgid"), 0o2755);
    assert_eq!(mode("both"), 0o6750);
    assert_eq!(mode("ro"), 0o444);
    assert_eq!(mode("sgid_dir"), 0o2775);
    assert_eq!(mode("sticky"), 0o1777);
    assert_eq!(mode("ro_dir"), 0o555);
    assert_eq!(mode("ro_dir/sub"), 0o555);
    assert_rerun_is_noop(t, &[], tree.root(), "dst");

    // Change files below read-only directories and a read-only file; re-run.
    tree.chmod("ro_dir", 0o755).chmod("ro_dir/sub", 0o755);
    tree.file("ro_dir/a", "a changed, longer\n")
        .file("ro_dir/sub/new", "new\n")
        .chmod("ro_dir/sub", 0o555)
        .chmod("ro_dir", 0o555)
        .chmod("ro", 0o644)
        .file("ro", "read only, changed\n")
        .chmod("ro", 0o444);
    sync(t, &[], tree.root(), "dst");
    assert_target_same(t, tree.root(), "dst");
}

/// Nanosecond mtimes on files, directories and symlinks survive exactly.
pub fn nanosecond_mtimes(t: &dyn Target) {
    let s = Scratch::new();
    let tree = Tree::new(s.join("src"));
    let cases: &[(&str, i64, u32)] = &[
        ("f_123456789", 1_600_000_000, 123_456_789),
        ("f_1ns", 1_600_000_001, 1),
        ("f_999999999", 1_600_000_002, 999_999_999),
        ("f_0ns", 1_600_000_003, 0),
        ("f_old", 1, 500_000_000),
        ("f_future", 4_000_000_000, 7),
        ("d/f_nested", 1_234_567_890, 987_654_321),
    ];
    for (name, _, _) in cases {
        tree.file(name, format!("{name}\n"));
    }
    tree.symlink("link", "f_1ns").dir("emptydir");
    for (name, secs, ns) in cases {
        tree.mtime(name, *secs, *ns);
    }
    tree.mtime("link", 1_111_111_111, 222_222_222)
        .mtime("emptydir", 1_333_333_333, 444_444_444)
        .mtime("d", 1_555_555_555, 666_666_666);

    sync(t, &[], tree.root(), "dst");
    assert_target_same(t, tree.root(), "dst");
    let dst = t.dest_path("dst");
    for (name, _, _) in cases {
        assert_same_mtime_ns(tree.root(), &dst, name);
    }
    for name in ["emptydir", "d"] {
        assert_same_mtime_ns(tree.root(), &dst, name);
    }
    if t.keeps_symlink_times() {
        assert_same_mtime_ns(tree.root(), &dst, "link");
    }
    assert_rerun_is_noop(t, &[], tree.root(), "dst");
}

/// Directory mtimes (set after their contents are written), including DEST itself.
pub fn dir_mtimes(t: &dyn Target) {
    let s = Scratch::new();
    let tree = Tree::new(s.join("src"));
    tree.file("a/b/c/file", "deep\n")
        .file("a/file", "shallow\n")
        .random_file("a/b/big", 300_000, 3)
        .dir("a/empty")
        .dir("x/y");
    // Deepest first, so that no later change bumps them.
    let dirs = ["a/b/c", "a/b", "a/empty", "a", "x/y", "x", ""];
    for (i, d) in dirs.iter().enumerate() {
        tree.mtime(d, 1_200_000_000 + i as i64 * 86_400, 100 + i as u32);
    }

    sync(t, &[], tree.root(), "dst");
    assert_target_same(t, tree.root(), "dst");
    for d in dirs {
        assert_same_mtime_ns(tree.root(), &t.dest_path("dst"), d);
    }
}

/// Owners and groups are kept when running as root (files, directories, symlinks).
pub fn owners(t: &dyn Target) {
    if !root_or_skip("the owners scenario") {
        return;
    }
    let s = Scratch::new();
    let tree = Tree::new(s.join("src"));
    tree.file("d/f", "f\n")
        .file("g", "g\n")
        .symlink("l", "g")
        .chown("d/f", 1234, 4321)
        .chown("d", 2345, 5432)
        .chown("l", 3456, 6543)
        .chown("g", 0, 4321)
        .file("suid_other", "#!/bin/sh\n")
        .chown("suid_other", 1234, 4321)
        .chmod("suid_other", 0o6755)
        .file("sgid_dir/x", "x\n")
        .chown("sgid_dir", 2345, 5432)
        .chmod("sgid_dir", 0o2775)
        .age();

    sync(t, &[], tree.root(), "dst");
    assert_target_same(t, tree.root(), "dst");
    let dst = t.dest_path("dst");
    for (p, u, g) in [
        ("d/f", 1234, 4321),
        ("d", 2345, 5432),
        ("l", 3456, 6543),
        ("g", 0, 4321),
    ] {
        let m = fs::symlink_metadata(dst.join(p)).unwrap();
        assert_eq!((m.uid(), m.gid()), (u, g), "owner of {p}");
    }
    // chown clears setuid/setgid: they must be set after it.
    let m = fs::metadata(dst.join("suid_other")).unwrap();
    assert_eq!((m.uid(), m.mode() & 0o7777), (1234, 0o6755), "suid_other");

    // --no-owner --no-group: new files belong to the user running nfsync.
    sync(t, &["--no-owner", "--no-group"], tree.root(), "plain");
    let m = fs::symlink_metadata(t.dest_path("plain").join("d/f")).unwrap();
    assert_eq!(
        (m.uid(), m.gid()),
        (0, 0),
        "--no-owner --no-group kept owners"
    );
}

/// Times NFSv3 cannot carry (before 1970, after 2106): over NFSv3 each such entry gets
/// the nearest storable time and a warning naming it, the two times, and a count in
/// `--json`; a re-run finds them equal and copies nothing. A mount and NFSv4.1 keep them
/// all.
pub fn out_of_range_times(t: &dyn Target) {
    const LATEST: i64 = u32::MAX as i64;
    let s = Scratch::new();
    let tree = Tree::new(s.join("src"));
    // (name, seconds, nanoseconds, printed as)
    let cases: [(&str, i64, u32, &str); 6] = [
        ("y1960", -315_619_200, 0, "1960-01-01 00:00:00 UTC"),
        ("y1901", -2_147_483_648, 0, "1901-12-13 20:45:52 UTC"),
        (
            "minus1.5",
            -2,
            500_000_000,
            "1969-12-31 23:59:58.500000000 UTC",
        ),
        ("y2107", 4_323_283_200, 0, "2107-01-01 00:00:00 UTC"),
        (
            "y2200",
            7_258_118_400,
            250,
            "2200-01-01 00:00:00.000000250 UTC",
        ),
        (
            "dir1960",
            -315_619_200,
            7,
            "1960-01-01 00:00:00.000000007 UTC",
        ),
    ];
    tree.file("in_range", "ok\n").dir("dir1960/sub");
    for (name, sec, nsec, _) in cases {
        if !name.starts_with("dir") {
            tree.file(name, name);
        }
        tree.mtime(name, sec, nsec);
    }
    tree.mtime("in_range", 1_600_000_000, 123);

    let out = run(t, &[], tree.root(), "dst");
    assert!(out.status.success(), "nfsync failed:\n{}", describe(&out));
    let stats = json_stats(&out);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let dst = t.dest_path("dst");
    let clamps = t.clamps_times();
    for (name, sec, nsec, printed) in cases {
        let m = fs::symlink_metadata(dst.join(name)).unwrap();
        let got = (m.mtime(), m.mtime_nsec() as u32);
        if !clamps {
            assert_eq!(got, (sec, nsec), "{name}'s time is kept");
            continue;
        }
        let (want, shown) = if sec < 0 {
            ((0, 0), "1970-01-01 00:00:00 UTC")
        } else {
            ((LATEST, 999_999_999), "2106-02-07 06:28:15.999999999 UTC")
        };
        assert_eq!(got, want, "{name} gets the nearest storable time");
        let line = stderr
            .lines()
            .find(|l| l.contains(&format!("dst/{name}:")))
            .unwrap_or_else(|| panic!("no warning for {name}:\n{stderr}"));
        assert!(
            line.contains("warning") && line.contains(printed) && line.contains(shown),
            "warning for {name} must give both times: {line}"
        );
    }
    let in_range = fs::symlink_metadata(dst.join("in_range")).unwrap();
    assert_eq!(
        (in_range.mtime(), in_range.mtime_nsec()),
        (1_600_000_000, 123)
    );
    let clamped = if clamps { cases.len() as u64 } else { 0 };
    assert_eq!(stat(&stats, "times_clamped"), clamped, "{stats}");
    if !clamps {
        assert_target_same(t, tree.root(), "dst");
        assert!(!stderr.contains("cannot be stored"), "{stderr}");
    }

    // Again: everything matches as stored, so nothing is copied, fixed or warned about.
    let before = snapshot(&dst);
    let out = run(t, &[], tree.root(), "dst");
    assert!(out.status.success(), "re-run failed:\n{}", describe(&out));
    let stats = json_stats(&out);
    for key in ["files_copied", "attrs_updated", "times_clamped", "errors"] {
        assert_eq!(stat(&stats, key), 0, "re-run {key}: {stats}");
    }
    assert!(
        !String::from_utf8_lossy(&out.stderr).contains("cannot be stored"),
        "re-run warned again:\n{}",
        describe(&out)
    );
    assert_snapshots_eq(&before, &snapshot(&dst), "re-run changed the destination");
}
