//! Integration tests of the NFSv4.1 path (`nfs://host:port/path?version=4.1`) against a
//! real server: nfs-ganesha serving NFSv4.1/4.2 only (`ganesha.sh --nfs4-only`: no
//! MOUNT, no NFSv3, so nothing can go the v3 way unnoticed), on free loopback ports,
//! started and stopped by the tests. Ganesha needs root: other users skip these tests
//! (one line says so). The harness itself is checked without nfsync in
//! [`super::servers`].
//!
//! As for NFSv3 ([`super::v3`]), every shared scenario runs against one shared
//! server (each in its own directory of the export) and is judged by reading the
//! exported directory back locally; crash, cut and slot-table cases get servers of their
//! own.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use super::v3::{copy_under_way, many_files, wait_at_most};
use crate::scenarios::scenario_tests;
use crate::support::ganesha::{self, Export, Ganesha, Options, Proto};
use crate::support::net::Servers;
use crate::support::{
    Scratch, Target, Tree, assert_copied, describe, json_stats, rsync_diff, rsync_diff_with,
    run_nfsync, stat, sync_ok,
};

/// One scenario's corner of the shared export.
struct Ganesha41Target {
    export: Export,
    prefix: String,
}

static NEXT: AtomicUsize = AtomicUsize::new(0);

impl Ganesha41Target {
    /// `None` when ganesha cannot run here.
    fn new() -> Option<Ganesha41Target> {
        let export = ganesha::shared(Proto::V41)?;
        let prefix = format!("t{}", NEXT.fetch_add(1, Ordering::SeqCst));
        std::fs::create_dir_all(export.path.join(&prefix)).unwrap();
        Some(Ganesha41Target { export, prefix })
    }
}

impl Target for Ganesha41Target {
    fn dest_arg(&self, sub: &str) -> String {
        self.export.url(&format!("{}/{sub}", self.prefix), "")
    }

    fn dest_path(&self, sub: &str) -> PathBuf {
        self.export.path.join(&self.prefix).join(sub)
    }

    /// ganesha's VFS backend ignores a SETATTR of a symlink's times, over NFSv4.1 as
    /// over NFSv3 (FSAL_VFS/file.c): compare everything else.
    fn diff(&self, src: &Path, sub: &str) -> String {
        rsync_diff_with(src, &self.dest_path(sub), &["--omit-link-times"])
    }

    fn keeps_symlink_times(&self) -> bool {
        false
    }
}

scenario_tests!(files, Ganesha41Target::new());
scenario_tests!(symlinks, Ganesha41Target::new());
scenario_tests!(read_only_dirs, Ganesha41Target::new());
scenario_tests!(hard_links, Ganesha41Target::new());
scenario_tests!(specials, Ganesha41Target::new());
scenario_tests!(owners, Ganesha41Target::new());

/// An NFSv4-only server of one's own (`slots`: the most session slots it grants), for
/// tests that crash, cut or starve it; `None` when ganesha cannot run here.
fn own_server(slots: Option<u32>) -> Option<(Scratch, Ganesha)> {
    ganesha::own(Options {
        slots,
        ..Proto::V41.alone()
    })
}

/// A run that did not succeed ended clearly: an NFS or I/O exit code (10 unreachable,
/// 11 I/O, 23 some files failed, 30 timeout), no panic, and something on stderr; when
/// the run ended as a whole (not 23, where each failed file has its line), one line says
/// why.
fn assert_clear_failure(out: &Output, what: &str) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("panicked"), "{what}: {}", describe(out));
    let code = out.status.code();
    assert!(
        matches!(code, Some(10 | 11 | 23 | 30)),
        "{what}: unexpected exit: {}",
        describe(out)
    );
    let lines: Vec<&str> = err
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.contains("warning"))
        .collect();
    assert!(!lines.is_empty(), "{what}: fails without a word");
    if code != Some(23) {
        assert_eq!(lines.len(), 1, "{what}: one line says why:\n{err}");
    }
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
    for key in [
        "files_copied",
        "bytes_copied",
        "attrs_updated",
        "times_clamped",
    ] {
        assert_eq!(stat(&stats, key), 0, "re-run {key}: {stats}");
    }
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

/// Connections cut mid-call (replies lost after the server acted) in front of the NFSv4
/// port: a run through the cuts ends exact or fails clearly (also with --delete), and
/// a re-run straight to the server is exact and then has nothing left to copy.
#[test]
fn connections_cut_mid_run_end_exact_or_clearly() {
    let Some((dir, g)) = own_server(None) else {
        return;
    };
    let src = dir.join("src");
    many_files(&src, 10, 100);
    Tree::new(&src)
        .symlink("link", "d1/f1")
        .hardlink("hard", "d2/f2");
    let mut servers = Servers::default();
    let (proxy, cuts) = servers.cutting_proxy(g.nfs_port, 30_000);
    let through_proxy = Export {
        nfs_port: proxy,
        ..g.export(Proto::V41)
    };
    let cut_url = through_proxy.url("dst", "");
    let dst = g.export.join("dst");
    let through_cuts = |extra: &[&str], what: &str| {
        let args = [&["-H", "--json", "--timeout", "20"][..], extra].concat();
        let started = Instant::now();
        let out = run_nfsync(&args, &src, &cut_url);
        eprintln!(
            "{what}: exit {:?} after {:.1} s, {} cuts so far\n{}",
            out.status.code(),
            started.elapsed().as_secs_f64(),
            cuts.load(Ordering::SeqCst),
            String::from_utf8_lossy(&out.stderr)
        );
        if out.status.success() {
            let diff = rsync_diff_with(&src, &dst, &["--omit-link-times"]);
            assert!(diff.is_empty(), "{what} succeeded but:\n{diff}");
        } else {
            assert_clear_failure(&out, what);
        }
    };
    through_cuts(&[], "copy through cuts");
    assert!(cuts.load(Ordering::SeqCst) > 0, "the proxy cut nothing");
    std::fs::remove_dir_all(src.join("d3")).unwrap();
    through_cuts(&["--delete"], "--delete through cuts");

    let url = g.url41("dst", "");
    let out = run_nfsync(&["-H", "--delete", "--json"], &src, &url);
    assert!(out.status.success(), "{}\n{}", describe(&out), g.log_tail());
    let diff = rsync_diff_with(&src, &dst, &["--omit-link-times"]);
    assert!(diff.is_empty(), "after a re-run:\n{diff}");
    let out = run_nfsync(&["-H", "--delete", "--json"], &src, &url);
    assert_copied(&out, 0);
}

/// The server killed mid-run and restarted 2 s later (it has forgotten the client and
/// its session): the run recovers, or fails with a clear one-line error; a re-run is
/// exact.
#[test]
fn server_killed_mid_run_then_restarted() {
    let Some((dir, mut g)) = own_server(None) else {
        return;
    };
    let src = dir.join("src");
    many_files(&src, 20, 150);
    let url = g.url41("dst", "");
    let started = Instant::now();
    let child = copy_under_way(&g, &src, &url, "30");
    g.kill();
    std::thread::sleep(Duration::from_secs(2));
    g.restart()
        .unwrap_or_else(|e| panic!("{e}\n{}", g.log_tail()));
    let out = wait_at_most(
        child,
        Duration::from_secs(120),
        "nfsync hangs after restart",
    );
    eprintln!(
        "run across the crash: exit {:?} after {:.1} s\n{}",
        out.status.code(),
        started.elapsed().as_secs_f64(),
        String::from_utf8_lossy(&out.stderr)
    );
    if !out.status.success() {
        assert_clear_failure(&out, "the run across the crash");
    }
    let out = run_nfsync(&["--json"], &src, &url);
    assert!(out.status.success(), "{}\n{}", describe(&out), g.log_tail());
    let diff = rsync_diff(&src, &g.export.join("dst"));
    assert!(diff.is_empty(), "after re-run:\n{diff}");
    let out = run_nfsync(&["--json"], &src, &url);
    assert_copied(&out, 0);
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
