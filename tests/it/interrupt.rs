//! Ctrl-C stops cleanly: exit 20, a summary, and a re-run ends exact.

use std::fs;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::{bin, rsync_diff, slash};

#[test]
fn sigint_stops_cleanly_and_a_rerun_finishes() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    for d in 0..60 {
        let dir = src.join(format!("d{d:03}"));
        fs::create_dir_all(&dir).unwrap();
        for f in 0..200 {
            fs::write(dir.join(format!("f{f:03}")), vec![b'x'; 100 + f]).unwrap();
        }
    }
    let dst = tmp.path().join("dst");
    let child = spawn_run(&["--jobs", "1", "--json"], &slash(&src), &dst);
    // Wait until the copy is under way, then interrupt it.
    let start = Instant::now();
    while fs::read_dir(&dst).map(|d| d.count()).unwrap_or(0) < 2
        && start.elapsed() < Duration::from_secs(10)
    {
        std::thread::sleep(Duration::from_millis(5));
    }
    rustix::process::kill_process(
        rustix::process::Pid::from_raw(child.id() as i32).unwrap(),
        rustix::process::Signal::INT,
    )
    .unwrap();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(20), "stderr: {stderr}");
    assert!(stderr.contains("interrupted"), "stderr: {stderr}");
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).expect("a JSON summary");
    assert_eq!(summary["interrupted"], true);
    let copied = summary["files_copied"].as_u64().unwrap();
    assert!(
        copied < 12_000,
        "the run was not interrupted mid-way ({copied} copied)"
    );
    assert!(
        !rsync_diff(&src, &dst).is_empty(),
        "an interrupted run cannot be complete"
    );

    let rerun = Command::new(bin())
        .arg("-q")
        .arg(slash(&src))
        .arg(&dst)
        .status()
        .unwrap();
    assert_eq!(rerun.code(), Some(0));
    assert_eq!(rsync_diff(&src, &dst), "");
}

/// A worker stuck waiting on a server that stopped answering does not hold a stopped
/// run: 5 s after SIGTERM it exits 20 anyway (it used to wait for the NFS timeout,
/// here 120 s), and the same command, once the server answers, finishes the copy.
#[test]
fn sigterm_ends_a_run_whose_worker_is_stuck() {
    use crate::support::inproc::Server;
    use crate::support::net::Servers;
    use crate::support::{Tree, assert_copied, sync_ok};
    use std::sync::atomic::Ordering;

    let server = Server::memfs();
    let mut servers = Servers::default();
    let (proxy, stalled) = servers.stalling_proxy(server.port);
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    let tree = Tree::new(&src);
    for f in 0..300 {
        tree.file(format!("f{f:03}"), vec![b'x'; 10_000]);
    }
    let url = format!(
        "nfs://127.0.0.1/d?nfsport={proxy}&mountport={}",
        server.port
    );
    let child = spawn_run(
        &["--jobs", "2", "--timeout", "120", "--bwlimit", "500"],
        &slash(&src),
        &url,
    );
    // Under way (about 6 s at 500 KB/s), then the server goes quiet.
    std::thread::sleep(Duration::from_millis(1500));
    stalled.store(true, Ordering::SeqCst);
    std::thread::sleep(Duration::from_millis(500));
    let (took, out) = signal_and_wait(child, rustix::process::Signal::TERM, 40);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        took < Duration::from_secs(10),
        "still running {took:?} after SIGTERM; stderr: {stderr}"
    );
    assert_eq!(out.status.code(), Some(20), "stderr: {stderr}");
    assert!(stderr.contains("run the same command again"), "{stderr}");

    let direct = server.url("/d");
    sync_ok(&[], &src, &direct);
    assert_copied(&sync_ok(&["--json"], &src, &direct), 0);
}

/// How long a stopped run may take to end with large files in flight: a piece of a
/// file (64 KiB under `--bwlimit`), the summary, the exit. Before, a large file was
/// finished first, or the run was cut off 5 s later.
const PROMPT: Duration = Duration::from_millis(1500);

/// Two large files in flight (a new one, written at its name, and an update, written
/// to a temporary) when SIGINT comes: the run ends within [`PROMPT`] with exit 20,
/// leaves neither the partial new file nor the temporary, keeps the old copy whole,
/// and the same command run again (at full speed) makes DEST exact.
fn sigint_stops_large_files_at_once(dest_arg: &std::ffi::OsStr, dst: &std::path::Path) {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    fs::create_dir_all(&src).unwrap();
    fs::create_dir_all(dst).unwrap();
    const BIG: u64 = 100 << 20;
    for name in ["new.img", "old.img"] {
        let f = fs::File::create(src.join(name)).unwrap();
        // Sparse is enough: without -S the copy reads and writes every byte.
        f.set_len(BIG).unwrap();
        std::os::unix::fs::FileExt::write_all_at(&f, name.as_bytes(), BIG / 2).unwrap();
    }
    fs::write(src.join("small"), b"small").unwrap();
    let old = vec![b'o'; 1 << 20];
    fs::write(dst.join("old.img"), &old).unwrap();
    let child = spawn_run(&["--jobs", "2", "--bwlimit", "10M"], &slash(&src), dest_arg);
    // Both under way: the new file growing at its name, the update in its temporary.
    let in_flight = || {
        let (mut new, mut temp) = (false, false);
        for e in fs::read_dir(dst).unwrap().flatten() {
            let big = e.metadata().map(|m| m.len() >= 1 << 20).unwrap_or(false);
            let name = e.file_name().to_string_lossy().into_owned();
            new |= name == "new.img" && big;
            temp |= name.starts_with(".old.img") && big;
        }
        new && temp
    };
    let start = Instant::now();
    while !in_flight() {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "the copy never got under way"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let (took, out) = signal_and_wait(child, rustix::process::Signal::INT, 30);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        took < PROMPT,
        "ended {took:?} after SIGINT; stderr: {stderr}"
    );
    assert_eq!(out.status.code(), Some(20), "stderr: {stderr}");
    assert!(stderr.contains("run the same command again"), "{stderr}");
    let mut left: Vec<_> = fs::read_dir(dst)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n != "small")
        .collect();
    left.sort();
    assert_eq!(
        left,
        ["old.img"],
        "a partial new file or a temporary was left"
    );
    assert_eq!(
        fs::read(dst.join("old.img")).unwrap(),
        old,
        "the old copy was touched"
    );

    let rerun = Command::new(bin())
        .arg("-q")
        .arg(slash(&src))
        .arg(dest_arg)
        .output()
        .unwrap();
    assert_eq!(
        rerun.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&rerun.stderr)
    );
    assert_eq!(rsync_diff(&src, dst), "");
}

#[test]
fn sigint_stops_large_files_at_once_on_a_mount() {
    let tmp = tempfile::tempdir().unwrap();
    let dst = tmp.path().join("dst");
    sigint_stops_large_files_at_once(dst.as_os_str(), &dst);
}

#[test]
fn sigint_stops_large_files_at_once_over_nfs() {
    use crate::support::dirfs::DirFs;
    use crate::support::inproc::Server;
    let tmp = tempfile::tempdir().unwrap();
    let export = tmp.path().join("export");
    let server = Server::start(None, DirFs::new(&export));
    let url = server.url("/d");
    sigint_stops_large_files_at_once(url.as_ref(), &export.join("d"));
}

/// Without `--bwlimit` the mount path lets the kernel copy (`copy_file_range`): a
/// large file there stops as promptly. The source is sparse and large enough (8 GiB)
/// that no disk copies it before the signal.
#[test]
fn sigint_stops_a_kernel_copy_at_once() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    fs::create_dir_all(&src).unwrap();
    fs::File::create(src.join("big"))
        .unwrap()
        .set_len(8 << 30)
        .unwrap();
    let dst = tmp.path().join("dst");
    let child = spawn_run(&[], &slash(&src), &dst);
    let start = Instant::now();
    while fs::metadata(dst.join("big")).map_or(0, |m| m.len()) < 16 << 20 {
        assert!(start.elapsed() < Duration::from_secs(20), "never under way");
        std::thread::sleep(Duration::from_millis(5));
    }
    let (took, out) = signal_and_wait(child, rustix::process::Signal::INT, 30);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        took < PROMPT,
        "ended {took:?} after SIGINT; stderr: {stderr}"
    );
    assert_eq!(out.status.code(), Some(20), "stderr: {stderr}");
    assert!(!dst.join("big").exists(), "the partial copy was left");
}

/// Starts nfsync with `flags SRC DEST`, its output piped, to be signalled.
fn spawn_run(
    flags: &[&str],
    src: &std::ffi::OsStr,
    dest: impl AsRef<std::ffi::OsStr>,
) -> std::process::Child {
    Command::new(bin())
        .args(flags)
        .arg(src)
        .arg(dest)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Sends `signal` to the run and waits for it to end, at most `bound_s` seconds (then
/// it is killed, so a run that does not stop fails its test instead of hanging it).
/// Returns how long it took after the signal, and what it printed.
fn signal_and_wait(
    child: std::process::Child,
    signal: rustix::process::Signal,
    bound_s: u64,
) -> (Duration, std::process::Output) {
    let pid = rustix::process::Pid::from_raw(child.id() as i32).unwrap();
    rustix::process::kill_process(pid, signal).unwrap();
    let stopped = Instant::now();
    let waiter = std::thread::spawn(move || child.wait_with_output().unwrap());
    while !waiter.is_finished() && stopped.elapsed() < Duration::from_secs(bound_s) {
        std::thread::sleep(Duration::from_millis(10));
    }
    if !waiter.is_finished() {
        let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
    }
    (stopped.elapsed(), waiter.join().unwrap())
}
