//! The NFSv4.1 path (`nfs://host:port/path?version=4.1`) against nfs-ganesha serving
//! NFSv4.1/4.2 only (`ganesha.sh --nfs4-only`: no MOUNT, no NFSv3, so nothing can go the
//! v3 way unnoticed): every shared scenario and fault case
//! ([`protocol_tests!`](super::protocol_tests)), and what NFSv4.1 alone meets: times
//! before 1970 and after 2106, a server that grants few session slots, COMPOUNDs counted
//! in `--json`, and NFSv4.0 refused. The servers themselves are checked without nfsync
//! in [`super::servers`].

use std::os::unix::fs::MetadataExt;

use crate::support::ganesha::{self, Ganesha, Options, Proto};
use crate::support::{
    Scratch, Tree, assert_copied, describe, json_stats, rsync_diff, run_nfsync, stat, sync_ok,
};

super::protocol_tests!(Proto::V41);

/// An NFSv4-only server of one's own that grants at most `slots` session slots; `None`
/// when ganesha cannot run here.
fn own_server(slots: Option<u32>) -> Option<(Scratch, Ganesha)> {
    ganesha::own(Options {
        slots,
        ..Proto::V41.alone()
    })
}

/// NFSv4 carries times as signed 64-bit seconds: 1960 and 2200, with and without
/// nanoseconds, files and directories, are stored exactly (NFSv3 clamps them), with no
/// warning and nothing counted as clamped; a re-run finds them equal and copies nothing.
#[test]
fn times_before_1970_and_after_2106_stored_exactly() {
    let Some(export) = ganesha::shared(Proto::V41) else {
        return;
    };
    let s = Scratch::new();
    let src = s.join("src");
    let cases: [(&str, i64, u32); 6] = [
        ("y1960", -315_619_200, 0),
        ("y1960ns", -315_619_200, 123_456_789),
        ("y2200", 7_258_118_400, 0),
        ("y2200ns", 7_258_118_400, 999_999_999),
        ("dir1960", -315_619_200, 7),
        ("dir2200", 7_258_118_400, 500_000_000),
    ];
    let t = Tree::new(&src);
    t.dir("dir1960/sub").file("dir2200/f", "f\n");
    for (name, sec, nsec) in cases {
        if !name.starts_with("dir") {
            t.file(name, name);
        }
        t.mtime(name, sec, nsec);
    }
    let url = export.url("times", "");
    let out = sync_ok(&["--json"], &src, &url);
    let stats = json_stats(&out);
    assert_eq!(stat(&stats, "times_clamped"), 0, "{stats}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("cannot be stored"), "{err}");
    for (name, sec, nsec) in cases {
        let m = std::fs::metadata(export.path.join("times").join(name)).unwrap();
        assert_eq!(
            (m.mtime(), m.mtime_nsec() as u32),
            (sec, nsec),
            "mtime of {name}"
        );
    }
    assert!(rsync_diff(&src, &export.path.join("times")).is_empty());

    let out = sync_ok(&["--json"], &src, &url);
    let stats = json_stats(&out);
    crate::support::times::assert_rerun_did_nothing(&stats);
}

/// NFSv4.1 carries 1600 and 2500, but ganesha's ext4 export keeps 1901-12-13 to
/// 2446-05-10: each entry holds what ext4 kept, is warned about once, and a re-run
/// copies nothing.
#[test]
fn times_the_servers_filesystem_cannot_hold_are_warned_once_and_not_recopied() {
    let Some(export) = ganesha::shared(Proto::V41) else {
        return;
    };
    let url = export.url("clamped", "");
    crate::support::times::copy_out_of_range_times(&url, &export.path.join("clamped"));
}

/// A server that grants 8 session slots (`Slot_Table_Size = 8`) however many are asked
/// for: a few thousand small files in few directories arrive exactly, with nfsync's
/// default slots and with `?slots=64` and 64 jobs (it must keep to the 8 it got).
#[test]
fn eight_slot_server_gets_exact_copies() {
    let Some((dir, g)) = own_server(Some(8)) else {
        return;
    };
    let src = dir.join("src");
    let t = Tree::new(&src);
    for d in 0..3 {
        for f in 0..1000 {
            t.random_file(
                format!("d{d}/f{f}"),
                (f as u64 * 37 + d) % 3000,
                (d * 10_000 + f as u64) + 1,
            );
        }
    }
    let out = sync_ok(&["--json"], &src, g.url41("dst", ""));
    assert_copied(&out, 3000);
    let diff = rsync_diff(&src, &g.export.join("dst"));
    assert!(diff.is_empty(), "default slots:\n{diff}");

    let out = sync_ok(&["--json", "-j", "64"], &src, g.url41("dst64", "slots=64"));
    assert_copied(&out, 3000);
    let diff = rsync_diff(&src, &g.export.join("dst64"));
    assert!(
        diff.is_empty(),
        "?slots=64 against 8 granted:\n{diff}\n{}",
        g.log_tail()
    );
}

/// `--json` says which protocol was spoken (`"nfs_version": "4.1"`) and how many calls
/// it took (`rpcs`, COMPOUNDs): N new small files in a directory that exists already
/// take about one COMPOUND each (OPEN+WRITE+SETATTR+CLOSE), plus a few per directory
/// (session, lookups, listings): at most N + 20 here, for DEST and its one directory.
#[test]
fn json_reports_version_and_one_compound_per_new_small_file() {
    const N: u64 = 300;
    let Some(export) = ganesha::shared(Proto::V41) else {
        return;
    };
    let s = Scratch::new();
    let src = s.join("src");
    let t = Tree::new(&src);
    t.file("d/first", "first\n");
    let url = export.url("rpcs", "");
    let stats = json_stats(&sync_ok(&["--json"], &src, &url));
    assert_eq!(stats["nfs_version"], "4.1", "{stats}");
    assert!(stat(&stats, "rpcs") > 0, "{stats}");

    for f in 0..N {
        t.random_file(format!("d/new{f}"), 100 + f * 13, f + 1);
    }
    let out = sync_ok(&["--json"], &src, &url);
    let stats = json_stats(&out);
    assert_eq!(stat(&stats, "files_copied"), N, "{stats}");
    assert_eq!(stats["nfs_version"], "4.1", "{stats}");
    let rpcs = stat(&stats, "rpcs");
    eprintln!("{N} new small files: {rpcs} COMPOUNDs");
    assert!(
        rpcs <= N + 20,
        "{rpcs} COMPOUNDs for {N} new files: {stats}"
    );
    assert!(rsync_diff(&src, &export.path.join("rpcs")).is_empty());
}

/// `?version=4.0` is refused as a usage error (exit 1) that says why: NFSv4.0 has no
/// sessions (a call retried after a lost connection may run twice). Nothing is written.
#[test]
fn version_4_0_refused_for_lack_of_sessions() {
    let Some(export) = ganesha::shared(Proto::V41) else {
        return;
    };
    let s = Scratch::new();
    Tree::new(s.join("src")).file("a", "a\n");
    let url = format!(
        "nfs://127.0.0.1:{}{}/v40?version=4.0",
        export.nfs_port,
        export.path.display()
    );
    let out = run_nfsync(&[], &s.join("src"), &url);
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("session"), "{err}");
    assert!(!export.path.join("v40").exists());
}

/// Small files read as a source share compounds when the slots are busy: 400 files
/// read with 2 slots asked for and 32 jobs take fewer COMPOUNDs than files, and with
/// `?batch=0` at least one each (so the count tells batching happened). Every 40th
/// file is mode 000 and read as nobody: each fails alone, named, in whichever batch
/// it fell (a compound stops at its failing READ; the files after it are read again
/// on their own), and every other file arrives exactly.
#[test]
fn source_reads_share_compounds_and_a_denied_file_fails_alone() {
    const N: usize = 400;
    let Some((dir, g)) = own_server(None) else {
        return;
    };
    let src = g.export.join("src");
    let t = Tree::new(&src);
    let mut denied = Vec::new();
    for f in 0..N {
        t.random_file(format!("d/f{f:03}"), (f as u64 * 53) % 4000, f as u64 + 1);
        if f % 40 == 7 {
            t.chmod(format!("d/f{f:03}"), 0o000);
            denied.push(format!("d/f{f:03}"));
        }
    }
    let excludes: Vec<String> = denied.iter().map(|d| format!("--exclude=/{d}")).collect();
    let excludes: Vec<&str> = excludes.iter().map(String::as_str).collect();
    for (batch, label) in [("", "batched"), ("&batch=0", "one each")] {
        let dst = dir.join(format!("dst-{}", batch.len()));
        let url = g.url41("src/", &format!("uid=65534&gid=65534&slots=2{batch}"));
        let out = std::process::Command::new(crate::support::bin())
            .env("NFSYNC_RPC_STATS", "1")
            .args(["--json", "-a", "-j", "32", "--timeout", "20", &url])
            .arg(&dst)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(23), "{label}: {}", describe(&out));
        let err = String::from_utf8_lossy(&out.stderr);
        for d in &denied {
            assert!(
                err.lines()
                    .any(|l| l.contains(&format!("src/{d}")) && l.contains("ermission denied")),
                "{label}: {d} not named:\n{err}"
            );
            assert!(!dst.join(d).exists(), "{label}: {d}");
        }
        assert_eq!(
            stat(&json_stats(&out), "errors"),
            denied.len() as u64,
            "{label}"
        );
        let diff = crate::support::rsync_diff_with(&src, &dst, &excludes);
        assert!(diff.is_empty(), "{label}, the others:\n{diff}");
        let calls: u64 = err
            .split("COMPOUND=")
            .nth(1)
            .and_then(|s| s.split_whitespace().next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("{label}: no call count:\n{err}"));
        eprintln!("{label}: {calls} COMPOUNDs for {N} files");
        match batch {
            "" => assert!(calls < N as u64, "{label}: {calls} COMPOUNDs for {N} files"),
            _ => assert!(
                calls >= N as u64,
                "{label}: {calls} COMPOUNDs for {N} files"
            ),
        }
    }
}
