//! Integration tests of the NFSv3 path against a real server: nfs-ganesha (VFS FSAL,
//! no root squash) on free loopback ports, started and stopped by the tests. Ganesha
//! needs root: other users skip these tests (one line says so).
//!
//! Every shared scenario runs against one shared server (each in its own directory of
//! the export) and is judged by reading the exported directory back locally with
//! `rsync -anciH --delete`. Crash/restart and refusal cases get servers of their own.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crate::scenarios::scenario_tests;
use crate::support::ganesha::{self, Export, Ganesha, Options, Proto};
use crate::support::net::Servers;
use crate::support::{
    Scratch, Target, Tree, assert_copied, bin, count_files, describe, nobody, rsync_diff,
    rsync_diff_with, run_nfsync, slash, sync_ok,
};

/// One scenario's corner of the shared export.
struct GaneshaTarget {
    export: Export,
    prefix: String,
}

static NEXT: AtomicUsize = AtomicUsize::new(0);

impl GaneshaTarget {
    /// `None` when ganesha cannot run here.
    fn new() -> Option<GaneshaTarget> {
        let export = ganesha::shared(Proto::V3)?;
        let prefix = format!("t{}", NEXT.fetch_add(1, Ordering::SeqCst));
        std::fs::create_dir_all(export.path.join(&prefix)).unwrap();
        Some(GaneshaTarget { export, prefix })
    }
}

impl Target for GaneshaTarget {
    fn dest_arg(&self, sub: &str) -> String {
        self.export.url(&format!("{}/{sub}", self.prefix), "")
    }

    fn dest_path(&self, sub: &str) -> PathBuf {
        self.export.path.join(&self.prefix).join(sub)
    }

    /// nfs-ganesha's VFS backend answers SETATTR of a symlink's times with OK and
    /// changes nothing ("Setting time on symlinks is illegal", FSAL_VFS/file.c), so
    /// symlink mtimes cannot be stored there: compare everything else.
    fn diff(&self, src: &Path, sub: &str) -> String {
        rsync_diff_with(src, &self.dest_path(sub), &["--omit-link-times"])
    }

    fn keeps_symlink_times(&self) -> bool {
        false
    }

    fn clamps_times(&self) -> bool {
        true
    }
}

scenario_tests!(files, GaneshaTarget::new());
scenario_tests!(symlinks, GaneshaTarget::new());
scenario_tests!(read_only_dirs, GaneshaTarget::new());
scenario_tests!(hard_links, GaneshaTarget::new());
scenario_tests!(specials, GaneshaTarget::new());
scenario_tests!(owners, GaneshaTarget::new());

/// A server of one's own, for tests that crash or reconfigure it; `None` when ganesha
/// cannot run here.
fn own_server(privileged: bool) -> Option<(Scratch, Ganesha)> {
    ganesha::own(Options {
        privileged,
        ..Proto::V3.alone()
    })
}

/// `dirs` directories of `per_dir` files of up to 5,000 bytes, and two big files (9 MB):
/// a copy long enough to crash or cut (also used by the NFSv4.1 tests).
pub(crate) fn many_files(root: &Path, dirs: usize, per_dir: usize) {
    let t = Tree::new(root);
    for d in 0..dirs {
        for f in 0..per_dir {
            t.random_file(
                format!("d{d}/f{f}"),
                ((f * 131 + d) % 5000) as u64,
                (d * 10_000 + f) as u64,
            );
        }
    }
    t.random_file("big/a", 6_000_000, 7)
        .random_file("big/b", 3_000_001, 8);
}

/// Starts `nfsync --json --timeout TIMEOUT SRC/ URL` and returns it once the copy is
/// under way (200 files in the export).
pub(crate) fn copy_under_way(g: &Ganesha, src: &Path, url: &str, timeout: &str) -> Child {
    let child = Command::new(bin())
        .args(["--json", "--timeout", timeout])
        .arg(slash(src))
        .arg(url)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while count_files(&g.export) < 200 && started.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(10));
    }
    child
}

/// Waits for `child` to end, failing with `hangs` if it takes longer than `limit`.
pub(crate) fn wait_at_most(mut child: Child, limit: Duration, hangs: &str) -> Output {
    let since = Instant::now();
    while child.try_wait().unwrap().is_none() {
        assert!(since.elapsed() < limit, "{hangs}");
        std::thread::sleep(Duration::from_millis(50));
    }
    child.wait_with_output().unwrap()
}

#[test]
fn server_killed_mid_run_then_restarted() {
    let Some((dir, mut g)) = own_server(false) else {
        return;
    };
    let src = dir.join("src");
    many_files(&src, 20, 150);
    let url = g.url("dst", "");
    let started = Instant::now();
    let child = copy_under_way(&g, &src, &url, "30");
    g.kill();
    std::thread::sleep(Duration::from_secs(2));
    g.restart().unwrap();
    let out = wait_at_most(
        child,
        Duration::from_secs(120),
        "nfsync hangs after restart",
    );
    let err = String::from_utf8_lossy(&out.stderr);
    eprintln!(
        "run across the crash: exit {:?} after {:.1} s\n{err}",
        out.status.code(),
        started.elapsed().as_secs_f64()
    );
    assert!(!err.contains("panicked"), "{}", describe(&out));
    // Either it recovered, or it failed with a clear message and an NFS/I-O exit code.
    if !out.status.success() {
        let code = out.status.code();
        assert!(
            matches!(code, Some(10 | 11 | 23 | 30)),
            "unexpected exit: {}",
            describe(&out)
        );
        assert!(!err.trim().is_empty());
    }
    // A re-run finishes exactly.
    let out = run_nfsync(&["--json"], &src, &url);
    assert!(out.status.success(), "{}\n{}", describe(&out), g.log_tail());
    let diff = rsync_diff(&src, &g.export.join("dst"));
    assert!(diff.is_empty(), "after re-run:\n{diff}");
    let out = run_nfsync(&["--json"], &src, &url);
    assert_copied(&out, 0);
}

#[test]
fn server_gone_for_good_fails_in_bounded_time() {
    let Some((dir, mut g)) = own_server(false) else {
        return;
    };
    let src = dir.join("src");
    many_files(&src, 20, 150);
    let child = copy_under_way(&g, &src, &g.url("dst", ""), "5");
    g.kill();
    let killed = Instant::now();
    let out = wait_at_most(
        child,
        Duration::from_secs(60),
        "nfsync hangs without its server",
    );
    let err = String::from_utf8_lossy(&out.stderr);
    eprintln!(
        "server gone: exit {:?} {:.1} s after the kill\n{err}",
        out.status.code(),
        killed.elapsed().as_secs_f64()
    );
    assert!(!out.status.success(), "{}", describe(&out));
    assert!(!err.contains("panicked"), "{}", describe(&out));
    assert!(err.contains("127.0.0.1"), "names the server: {err}");
}

#[test]
fn privileged_export_refuses_noresvport_clearly() {
    let Some((_dir, g)) = own_server(true) else {
        return;
    };
    let s = nobody::scratch();
    let src = s.join("src");
    Tree::new(&src).file("a", "x");
    let start = Instant::now();
    let out = run_nfsync(&["--timeout", "10"], &src, g.url("dst", "noresvport"));
    assert_eq!(out.status.code(), Some(10), "{}", describe(&out));
    assert!(start.elapsed() < Duration::from_secs(20));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("PrivilegedPort") && err.contains("root"),
        "{err}"
    );
    // Not root: an unprivileged port, refused with the same advice.
    let out = as_nobody(&src, &g.url("dst_nobody", ""));
    assert_eq!(out.status.code(), Some(10), "{}", describe(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("PrivilegedPort") && err.contains("root"),
        "{err}"
    );
    // As root, the default binds a privileged port and is let in.
    sync_ok(&[], &src, g.url("dst", ""));
    assert!(rsync_diff(&src, &g.export.join("dst")).is_empty());
}

#[test]
fn wrong_export_and_closed_port_fail_in_bounded_time() {
    let Some(export) = ganesha::shared(Proto::V3) else {
        return;
    };
    let s = Scratch::new();
    Tree::new(s.join("src")).file("a", "x");
    let start = Instant::now();
    let no_such = Export {
        path: "/no/such/export".into(),
        ..export.clone()
    };
    let out = run_nfsync(&["--timeout", "10"], &s.join("src"), no_such.url("", ""));
    assert_eq!(out.status.code(), Some(10), "{}", describe(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("/no/such/export"), "{err}");
    assert!(
        err.contains(&export.path.display().to_string()),
        "lists the exports: {err}"
    );

    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let closed = Export {
        nfs_port: closed,
        ..export
    };
    let out = run_nfsync(&["--timeout", "10"], &s.join("src"), closed.url("x", ""));
    assert_eq!(out.status.code(), Some(10), "{}", describe(&out));
    assert!(start.elapsed() < Duration::from_secs(30));
}

/// Throughput figure for the report: 2,000 small files into a fresh directory.
#[test]
fn two_thousand_files_throughput() {
    let Some(export) = ganesha::shared(Proto::V3) else {
        return;
    };
    let s = Scratch::new();
    let src = s.join("src");
    let t = Tree::new(&src);
    for d in 0..20 {
        for f in 0..100 {
            t.random_file(
                format!("d{d}/f{f}"),
                1000 + (f as u64 * 7),
                (d * 1000 + f) as u64,
            );
        }
    }
    let url = export.url("perf2000", "");
    let start = Instant::now();
    let out = run_nfsync(&["--json"], &src, &url);
    let secs = start.elapsed().as_secs_f64();
    assert!(out.status.success(), "{}", describe(&out));
    assert_copied(&out, 2000);
    eprintln!(
        "nfs:// 2000 files in {secs:.2} s = {:.0} files/s",
        2000.0 / secs
    );
    assert!(rsync_diff(&src, &export.path.join("perf2000")).is_empty());
}

/// Runs `nfsync --timeout 10 SRC/ URL` as `nobody` (ganesha tests run as root), SRC
/// handed to nobody first: SRC must be in a [`nobody::scratch`] directory.
fn as_nobody(src: &Path, url: &str) -> Output {
    nobody::hand_over(src);
    let src = slash(src);
    nobody::run(&["--timeout".as_ref(), "10".as_ref(), &src, url.as_ref()])
}

#[test]
fn unprivileged_user_copies_through_an_insecure_export() {
    let Some(export) = ganesha::shared(Proto::V3) else {
        return;
    };
    let s = nobody::scratch();
    let src = s.join("src");
    Tree::new(&src).file("a", "as nobody\n").file("d/b", "b\n");
    let dst = export.path.join("nobody_dst");
    std::fs::create_dir_all(&dst).unwrap();
    let _ = std::process::Command::new("chmod")
        .arg("777")
        .arg(&dst)
        .status();
    let out = as_nobody(&src, &export.url("nobody_dst/x", ""));
    assert!(out.status.success(), "{}", describe(&out));
    let diff = rsync_diff(&src, &dst.join("x"));
    assert!(diff.is_empty(), "{diff}");
}

/// A root-squashed export cannot take owners: the copy still delivers content, modes
/// and mtimes, warns once, and a re-run copies nothing.
#[test]
fn root_squashed_export_warns_once_and_copies_the_rest() {
    let Some((dir, mut g)) = own_server(false) else {
        return;
    };
    g.reconfigure("Squash = No_Root_Squash;", "Squash = Root_Squash;")
        .unwrap_or_else(|e| panic!("{e}"));
    let _ = std::process::Command::new("chmod")
        .arg("777")
        .arg(&g.export)
        .status();
    let src = dir.join("src");
    let t = Tree::new(&src);
    t.file("a", "a\n")
        .file("d/b", "b\n")
        .chmod("d/b", 0o640)
        .mtime("a", 1_500_000_000, 5);
    let url = g.url("dst", "");
    let out = sync_ok(&[], &src, &url);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.matches("root squashed").count(), 1, "{err}");
    let diff = rsync_diff_with(&src, &g.export.join("dst"), &["--no-owner", "--no-group"]);
    assert!(diff.is_empty(), "{diff}");
    let out = sync_ok(&["--json"], &src, &url);
    assert_copied(&out, 0);
}

/// Connections cut mid-call (replies lost after the server acted): retries resolve the
/// ambiguous answers (CREATE → EXIST, REMOVE → NOENT) and the tree ends exact.
#[test]
fn connections_cut_mid_run_end_exact() {
    let Some((dir, g)) = own_server(false) else {
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
        ..g.export(Proto::V3)
    };
    let url = through_proxy.url("dst", "");
    sync_ok(&["-H", "--timeout", "20"], &src, &url);
    assert!(cuts.load(Ordering::SeqCst) > 5, "the proxy cut too little");
    let diff = rsync_diff_with(&src, &g.export.join("dst"), &["--omit-link-times"]);
    assert!(diff.is_empty(), "{diff}");
    // --delete through the same cuts.
    std::fs::remove_dir_all(src.join("d3")).unwrap();
    sync_ok(&["-H", "--delete", "--timeout", "20"], &src, &url);
    let diff = rsync_diff_with(&src, &g.export.join("dst"), &["--omit-link-times"]);
    assert!(diff.is_empty(), "{diff}");
}

/// `?uid=&gid=` in the URL are the AUTH_SYS identity the server creates files as.
#[test]
fn url_uid_and_gid_are_the_identity_used() {
    use std::os::unix::fs::MetadataExt;
    let Some(export) = ganesha::shared(Proto::V3) else {
        return;
    };
    let s = Scratch::new();
    let src = s.join("src");
    Tree::new(&src).file("a", "a\n");
    let dst = export.path.join("as_1234");
    std::fs::create_dir_all(&dst).unwrap();
    let _ = std::process::Command::new("chmod")
        .arg("777")
        .arg(&dst)
        .status();
    let url = export.url("as_1234/x", "uid=1234&gid=5678");
    sync_ok(&["--no-owner", "--no-group"], &src, &url);
    let m = std::fs::metadata(dst.join("x/a")).unwrap();
    assert_eq!((m.uid(), m.gid()), (1234, 5678));
}
