//! Faults both NFS versions meet, each case a function of the version its `#[test]`s
//! speak (one per version, made by [`protocol_tests!`](super::protocol_tests)): the
//! server killed mid-run and restarted, stopped or killed for good, connections cut
//! mid-call. Each case gets a server of its own that speaks its version alone.

use std::io::Read;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use crate::support::ganesha::{self, Export, Proto};
use crate::support::net::Servers;
use crate::support::{
    Tree, assert_copied, bin, count_files, describe, rsync_diff, rsync_diff_with, run_nfsync, slash,
};

/// `dirs` directories of `per_dir` files of up to 5,000 bytes, and two big files (9 MB):
/// a copy long enough to crash or cut.
pub(super) fn many_files(root: &Path, dirs: usize, per_dir: usize) {
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
/// under way (200 files in `dst`, where the export holds what URL names).
pub(super) fn copy_under_way(dst: &Path, src: &Path, url: &str, timeout: &str) -> Child {
    let child = Command::new(bin())
        .args(["--json", "--timeout", timeout])
        .arg(slash(src))
        .arg(url)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while count_files(dst) < 200 && started.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(10));
    }
    child
}

/// Waits for `child` to end, reading its output meanwhile (a run that reports many
/// files must not block on a full pipe), failing with `hangs` if it takes longer than
/// `limit`.
pub(super) fn wait_at_most(mut child: Child, limit: Duration, hangs: &str) -> Output {
    let drain = |from: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            if let Some(mut from) = from {
                let _ = from.read_to_end(&mut bytes);
            }
            bytes
        })
    };
    let stdout = drain(child.stdout.take().map(|s| Box::new(s) as _));
    let stderr = drain(child.stderr.take().map(|s| Box::new(s) as _));
    let since = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if since.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{hangs}");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    Output {
        status,
        stdout: stdout.join().unwrap(),
        stderr: stderr.join().unwrap(),
    }
}

/// A run that did not succeed ended clearly: an NFS or I/O exit code (10 unreachable,
/// 11 I/O, 23 some files failed, 30 timeout), no panic, and something on stderr; when
/// the run ended as a whole (not 23, where each failed file has its line), one line says
/// why.
pub(super) fn assert_clear_failure(out: &Output, what: &str) {
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

/// The server killed mid-run and restarted 2 s later (over NFSv4.1 it has forgotten the
/// client and its session): the run recovers, or fails with a clear one-line error,
/// never a panic; a re-run is exact, and the next one has nothing left to copy.
pub(super) fn server_killed_mid_run_then_restarted(proto: Proto) {
    let Some((dir, mut g)) = ganesha::own(proto.alone()) else {
        return;
    };
    let src = dir.join("src");
    many_files(&src, 20, 150);
    let url = g.export(proto).url("dst", "");
    let started = Instant::now();
    let child = copy_under_way(&g.export.join("dst"), &src, &url, "30");
    g.kill();
    std::thread::sleep(Duration::from_secs(2));
    g.restart()
        .unwrap_or_else(|e| panic!("{e}\n{}", g.log_tail()));
    let out = wait_at_most(
        child,
        Duration::from_secs(120),
        "nfsync hangs after restart",
    );
    let err = String::from_utf8_lossy(&out.stderr);
    eprintln!(
        "{proto:?} run across the crash: exit {:?} after {:.1} s\n{err}",
        out.status.code(),
        started.elapsed().as_secs_f64()
    );
    assert!(!err.contains("panicked"), "{}", describe(&out));
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

/// Connections cut mid-call (replies lost after the server acted) by a proxy in front
/// of the NFS port, for a copy with -H and then for --delete. Over NFSv3 the retries
/// resolve the ambiguous answers (CREATE → EXIST, REMOVE → NOENT): each run through the
/// cuts must succeed and end exact. Over NFSv4.1 one may instead fail clearly. Either
/// way a re-run straight to the server is exact, and the next one has nothing to copy.
pub(super) fn connections_cut_mid_run_end_exact(proto: Proto) {
    let Some((dir, g)) = ganesha::own(proto.alone()) else {
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
        ..g.export(proto)
    };
    let cut_url = through_proxy.url("dst", "");
    let dst = g.export.join("dst");
    let through_cuts = |extra: &[&str], what: &str| {
        let args = [&["-H", "--json", "--timeout", "20"][..], extra].concat();
        let started = Instant::now();
        let out = run_nfsync(&args, &src, &cut_url);
        eprintln!(
            "{proto:?} {what}: exit {:?} after {:.1} s, {} cuts so far\n{}",
            out.status.code(),
            started.elapsed().as_secs_f64(),
            cuts.load(Ordering::SeqCst),
            String::from_utf8_lossy(&out.stderr)
        );
        if out.status.success() {
            let diff = rsync_diff_with(&src, &dst, &["--omit-link-times"]);
            assert!(diff.is_empty(), "{what} succeeded but:\n{diff}");
        } else {
            assert!(proto == Proto::V41, "{what} failed: {}", describe(&out));
            assert_clear_failure(&out, what);
        }
    };
    through_cuts(&[], "copy through cuts");
    // A run that must succeed meets many cuts; one that may fail can end at the first.
    let least = match proto {
        Proto::V3 => 6,
        Proto::V41 => 1,
    };
    let cut = cuts.load(Ordering::SeqCst);
    assert!(
        cut >= least,
        "the proxy cut {cut} times, fewer than {least}"
    );
    std::fs::remove_dir_all(src.join("d3")).unwrap();
    through_cuts(&["--delete"], "--delete through cuts");

    let url = g.export(proto).url("dst", "");
    let out = run_nfsync(&["-H", "--delete", "--json"], &src, &url);
    assert!(out.status.success(), "{}\n{}", describe(&out), g.log_tail());
    let diff = rsync_diff_with(&src, &dst, &["--omit-link-times"]);
    assert!(diff.is_empty(), "after a re-run:\n{diff}");
    let out = run_nfsync(&["-H", "--delete", "--json"], &src, &url);
    assert_copied(&out, 0);
}

/// `--timeout` of the runs that lose their server: short, so that the bound is tight.
pub(super) const TIMEOUT: Duration = Duration::from_secs(3);
/// What a run that lost its server may take beyond `--timeout` to end: every worker
/// stops, the summary is printed, the process exits, and the test notices (it polls
/// every 50 ms). That is well under half a second alone; the rest is for a loaded
/// two-core machine, where a process may wait that long for a core.
pub(super) const SLACK: Duration = Duration::from_millis(1500);
/// Runs per case: the same server state must end with the same code every time.
pub(super) const ROUNDS: usize = 3;

/// The server stopped mid-run (SIGSTOP: its connections stay up, nothing answers): the
/// run ends `--timeout` after the stop with exit 30, with the default connections and
/// jobs, its summary printed.
pub(super) fn server_stopped_mid_run_ends_within_timeout(proto: Proto) {
    let Some((dir, g)) = ganesha::own(proto.alone()) else {
        return;
    };
    let src = dir.join("src");
    many_files(&src, 20, 150);
    for round in 0..ROUNDS {
        // A directory per round: the server still acts on calls it read before it
        // stopped, after it goes on.
        let dst = format!("dst{round}");
        let url = g.export(proto).url(&dst, "");
        let child = copy_under_way(
            &g.export.join(&dst),
            &src,
            &url,
            &TIMEOUT.as_secs().to_string(),
        );
        let paused = g.pause();
        let stopped = Instant::now();
        let out = wait_at_most(child, TIMEOUT * 10, "nfsync hangs on a stopped server");
        let took = stopped.elapsed();
        drop(paused);
        assert_ended_alone(&out, took, 30, &format!("{proto:?} stopped, round {round}"));
    }
}

/// The server stopped mid-run for less than `--timeout`: the run waits for it and ends
/// exact, on the same connections.
pub(super) fn server_stopped_briefly_is_waited_for(proto: Proto) {
    let Some((dir, g)) = ganesha::own(proto.alone()) else {
        return;
    };
    let src = dir.join("src");
    many_files(&src, 20, 150);
    let url = g.export(proto).url("dst", "");
    let child = copy_under_way(
        &g.export.join("dst"),
        &src,
        &url,
        &TIMEOUT.as_secs().to_string(),
    );
    let paused = g.pause();
    std::thread::sleep(TIMEOUT - Duration::from_millis(800));
    drop(paused);
    let out = wait_at_most(
        child,
        Duration::from_secs(120),
        "nfsync hangs after a pause",
    );
    assert!(out.status.success(), "{}\n{}", describe(&out), g.log_tail());
    let diff = rsync_diff(&src, &g.export.join("dst"));
    assert!(diff.is_empty(), "after the pause:\n{diff}");
}

/// The server killed mid-run (connections reset, new ones refused): the run tries to
/// reconnect for `--timeout`, so a server back by then is used again, and ends with
/// exit 10, its summary printed.
pub(super) fn server_killed_mid_run_ends_within_timeout(proto: Proto) {
    let Some((dir, mut g)) = ganesha::own(proto.alone()) else {
        return;
    };
    let src = dir.join("src");
    many_files(&src, 20, 150);
    for round in 0..ROUNDS {
        if round > 0 {
            g.restart()
                .unwrap_or_else(|e| panic!("{e}\n{}", g.log_tail()));
        }
        let dst = format!("dst{round}");
        let url = g.export(proto).url(&dst, "");
        let child = copy_under_way(
            &g.export.join(&dst),
            &src,
            &url,
            &TIMEOUT.as_secs().to_string(),
        );
        let killed = Instant::now();
        g.kill();
        let out = wait_at_most(child, TIMEOUT * 10, "nfsync hangs without its server");
        let took = killed.elapsed();
        assert_ended_alone(&out, took, 10, &format!("{proto:?} killed, round {round}"));
    }
}

/// A run whose server went away `took` ago ended with `code`, no sooner than
/// `--timeout` (it waited for the server) and within [`SLACK`] after it; one line on
/// stderr names the server, and the summary was printed.
pub(super) fn assert_ended_alone(out: &Output, took: Duration, code: i32, what: &str) {
    let err = String::from_utf8_lossy(&out.stderr);
    eprintln!(
        "{what}: exit {:?} {:.2} s after --timeout {} s\n{err}",
        out.status.code(),
        took.as_secs_f64(),
        TIMEOUT.as_secs()
    );
    assert_eq!(out.status.code(), Some(code), "{what}: {}", describe(out));
    assert_clear_failure(out, what);
    assert!(err.contains("127.0.0.1"), "{what}: names the server: {err}");
    assert!(
        took >= TIMEOUT - Duration::from_millis(500),
        "{what}: gave up after {took:?}, before --timeout"
    );
    assert!(
        took < TIMEOUT + SLACK,
        "{what}: ended {took:?} after the server went, more than --timeout + {SLACK:?}"
    );
    let summary = String::from_utf8_lossy(&out.stdout);
    assert!(
        summary.contains(&format!("\"exit_code\":{code}")),
        "{what}: no summary: {summary}"
    );
}
