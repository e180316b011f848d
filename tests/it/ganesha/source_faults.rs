//! Faults of an `nfs://` source, for both NFS versions (one `#[test]` per version, made
//! by [`protocol_tests!`](super::protocol_tests)): the source server killed mid-run
//! and restarted, stopped or killed for good, connections cut; a file growing and one
//! shrinking while they are read, a file the run may not read, entries removed
//! between the listing and the copy. Each case reads from a server of its own that
//! speaks its version alone, into a local directory, and is judged against the
//! export's backing directory with `rsync -anciH --delete`.

use std::fs::{self, OpenOptions};
use std::io::Write;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use super::faults::{
    ROUNDS, TIMEOUT, assert_clear_failure, assert_ended_alone, many_files, wait_at_most,
};
use crate::support::ganesha::{self, Export, Ganesha, Proto};
use crate::support::net::Servers;
use crate::support::{
    Scratch, Tree, assert_copied, bin, count_files, describe, json_stats, rsync_diff,
    rsync_diff_with, stat,
};

/// The URL of the contents of `rel` (`rel/`) on `export`, with `extra` query options.
fn contents_of(export: &Export, rel: &str, extra: &str) -> String {
    export.url(&format!("{rel}/"), extra)
}

/// Starts `nfsync --json ARGS URL DST`.
fn start(args: &[&str], url: &str, dst: &Path) -> Child {
    Command::new(bin())
        .arg("--json")
        .args(args)
        .arg(url)
        .arg(dst)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// `nfsync --json ARGS URL DST` to its end (at most two minutes).
fn run(args: &[&str], url: &str, dst: &Path) -> Output {
    wait_at_most(
        start(args, url, dst),
        Duration::from_secs(120),
        "nfsync hangs",
    )
}

/// Waits until `dst` holds `n` files (at most 30 s): the copy is under way.
fn copied_at_least(dst: &Path, n: usize) {
    let started = Instant::now();
    while count_files(dst) < n && started.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// A re-run straight from the server ends exact, and the one after it copies nothing.
fn rerun_is_exact(g: &Ganesha, url: &str, src: &Path, dst: &Path, args: &[&str]) {
    let out = run(args, url, dst);
    assert!(out.status.success(), "{}\n{}", describe(&out), g.log_tail());
    let diff = rsync_diff(src, dst);
    assert!(diff.is_empty(), "after a re-run:\n{diff}");
    assert_copied(&run(args, url, dst), 0);
}

/// The source server killed mid-run and restarted 2 s later (over NFSv4.1 it has
/// forgotten the client and its session): the run recovers, or fails with a clear
/// error, never a panic; a re-run is exact.
pub(super) fn source_killed_mid_run_then_restarted(proto: Proto) {
    let Some((dir, mut g)) = ganesha::own(proto.alone()) else {
        return;
    };
    let src = g.export.join("src");
    many_files(&src, 20, 150);
    let url = contents_of(&g.export(proto), "src", "");
    let dst = dir.join("dst");
    let started = Instant::now();
    let child = start(&["--timeout", "30"], &url, &dst);
    copied_at_least(&dst, 200);
    g.kill();
    std::thread::sleep(Duration::from_secs(2));
    g.restart()
        .unwrap_or_else(|e| panic!("{e}\n{}", g.log_tail()));
    let out = wait_at_most(
        child,
        Duration::from_secs(120),
        "nfsync hangs after its source restarted",
    );
    eprintln!(
        "{proto:?} source across the crash: exit {:?} after {:.1} s\n{}",
        out.status.code(),
        started.elapsed().as_secs_f64(),
        String::from_utf8_lossy(&out.stderr)
    );
    if !out.status.success() {
        assert_clear_failure(&out, "the run across the crash");
    }
    rerun_is_exact(&g, &url, &src, &dst, &[]);
}

/// The source server stopped (SIGSTOP) or killed for good mid-run: the run ends
/// `--timeout` after, with exit 30 (nothing answers) or 10 (connections refused), one
/// line naming the source path it was reading, its summary printed.
pub(super) fn source_gone_mid_run_ends_within_timeout(proto: Proto) {
    let Some((dir, mut g)) = ganesha::own(proto.alone()) else {
        return;
    };
    let src = g.export.join("src");
    many_files(&src, 20, 150);
    let url = contents_of(&g.export(proto), "src", "");
    let timeout = TIMEOUT.as_secs().to_string();
    for round in 0..ROUNDS {
        let dst = dir.join(format!("stopped{round}"));
        let child = start(&["--timeout", &timeout], &url, &dst);
        copied_at_least(&dst, 200);
        let paused = g.pause();
        let stopped = Instant::now();
        let out = wait_at_most(child, TIMEOUT * 10, "nfsync hangs on a stopped source");
        let took = stopped.elapsed();
        drop(paused);
        let what = format!("{proto:?} source stopped, round {round}");
        assert_ended_alone(&out, took, 30, &what);
        assert_names_source(&out, &what);
    }
    for round in 0..ROUNDS {
        if round > 0 {
            g.restart()
                .unwrap_or_else(|e| panic!("{e}\n{}", g.log_tail()));
        }
        let dst = dir.join(format!("killed{round}"));
        let child = start(&["--timeout", &timeout], &url, &dst);
        copied_at_least(&dst, 200);
        let killed = Instant::now();
        g.kill();
        let out = wait_at_most(child, TIMEOUT * 10, "nfsync hangs without its source");
        let took = killed.elapsed();
        let what = format!("{proto:?} source killed, round {round}");
        assert_ended_alone(&out, took, 10, &what);
        assert_names_source(&out, &what);
    }
}

/// The one line of a run that lost its source names a path on the source.
fn assert_names_source(out: &Output, what: &str) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.lines().any(|l| l.contains("nfs://127.0.0.1")),
        "{what}: no line names the source path: {err}"
    );
}

/// Connections to the source cut mid-call by a proxy in front of its NFS port: every
/// call a source makes can be sent again, so over NFSv3 the run must succeed and end
/// exact; over NFSv4.1 it may instead fail clearly. Either way a re-run is exact.
pub(super) fn source_connections_cut_mid_run_end_exact(proto: Proto) {
    let Some((dir, g)) = ganesha::own(proto.alone()) else {
        return;
    };
    let src = g.export.join("src");
    many_files(&src, 10, 100);
    Tree::new(&src)
        .symlink("link", "d1/f1")
        .hardlink("hard", "d2/f2");
    let mut servers = Servers::default();
    // More than one READ reply (at most 1 MiB) passes before each cut, or no big file
    // could ever be read.
    let (proxy, cuts) = servers.cutting_proxy(g.nfs_port, 1_500_000);
    let through_proxy = Export {
        nfs_port: proxy,
        ..g.export(proto)
    };
    let dst = dir.join("dst");
    let started = Instant::now();
    let out = run(
        &["-H", "--timeout", "20"],
        &contents_of(&through_proxy, "src", ""),
        &dst,
    );
    let cut = cuts.load(std::sync::atomic::Ordering::SeqCst);
    eprintln!(
        "{proto:?} source through cuts: exit {:?} after {:.1} s, {cut} cuts\n{}",
        out.status.code(),
        started.elapsed().as_secs_f64(),
        String::from_utf8_lossy(&out.stderr)
    );
    if out.status.success() {
        let diff = rsync_diff(&src, &dst);
        assert!(
            diff.is_empty(),
            "a copy through cuts succeeded but:\n{diff}"
        );
        assert!(cut >= 3, "the proxy cut {cut} times only");
    } else {
        assert!(proto == Proto::V41, "failed: {}", describe(&out));
        assert_clear_failure(&out, "a copy through cuts");
    }
    let url = contents_of(&g.export(proto), "src", "");
    rerun_is_exact(&g, &url, &src, &dst, &["-H"]);
}

/// A file growing and one shrinking while they are read (through a proxy that makes
/// the reads slow; changed once the server has both open): each is reported as changed, neither gets the source's mtime at
/// the destination, everything else is copied, and a re-run copies both exactly.
pub(super) fn source_file_changing_while_read_is_reported(proto: Proto) {
    let Some((dir, g)) = ganesha::own(proto.alone()) else {
        return;
    };
    let src = g.export.join("src");
    const SIZE: u64 = 12_000_000;
    Tree::new(&src)
        .random_file("grow", SIZE, 1)
        .random_file("shrink", SIZE, 2)
        .random_file("early", 5_000, 3)
        .age();
    let mut servers = Servers::default();
    let slow = servers.slow_proxy(g.nfs_port, Duration::from_millis(5), 1e9);
    let through_proxy = Export {
        nfs_port: slow,
        ..g.export(proto)
    };
    let dst = dir.join("dst");
    let started = Instant::now();
    let child = start(
        &["--timeout", "30"],
        &contents_of(&through_proxy, "src", ""),
        &dst,
    );
    while !["grow", "shrink"]
        .iter()
        .all(|name| server_reads(g.pid, &src.join(name)))
        && started.elapsed() < Duration::from_secs(30)
    {
        std::thread::sleep(Duration::from_millis(5));
    }
    let mut grow = OpenOptions::new()
        .append(true)
        .open(src.join("grow"))
        .unwrap();
    grow.write_all(&[7u8; 100_000]).unwrap();
    drop(grow);
    OpenOptions::new()
        .write(true)
        .open(src.join("shrink"))
        .unwrap()
        .set_len(SIZE / 3)
        .unwrap();
    let changed_at = started.elapsed();
    let out = wait_at_most(child, Duration::from_secs(120), "nfsync hangs");
    eprintln!(
        "{proto:?} files changed {:.1} s into a run of {:.1} s: exit {:?}\n{}",
        changed_at.as_secs_f64(),
        started.elapsed().as_secs_f64(),
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.status.code(), Some(23), "{}", describe(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    for name in ["grow", "shrink"] {
        assert!(
            err.lines()
                .any(|l| l.contains(&format!("src/{name}"))
                    && l.contains("changed while being copied")),
            "{name} is not reported as changed:\n{err}"
        );
        if let Ok(copied) = fs::metadata(dst.join(name)) {
            let now = fs::metadata(src.join(name)).unwrap();
            assert!(
                (copied.mtime(), copied.mtime_nsec()) != (now.mtime(), now.mtime_nsec()),
                "{name} got the source's mtime though it changed while read"
            );
        }
    }
    assert_eq!(
        fs::read(dst.join("early")).ok(),
        fs::read(src.join("early")).ok()
    );
    let url = contents_of(&g.export(proto), "src", "");
    rerun_is_exact(&g, &url, &src, &dst, &[]);
}

/// Whether the server process `pid` holds `path` open to read it (not `O_PATH`, which
/// it uses to look at attributes), as it does while it answers READs of it.
fn server_reads(pid: u32, path: &Path) -> bool {
    let Ok(fds) = fs::read_dir(format!("/proc/{pid}/fd")) else {
        return false;
    };
    fds.flatten().any(|fd| {
        let info = format!("/proc/{pid}/fdinfo/{}", fd.file_name().to_string_lossy());
        let flags = fs::read_to_string(info).ok().and_then(|info| {
            let f = info.lines().find_map(|l| l.strip_prefix("flags:"))?;
            u32::from_str_radix(f.trim(), 8).ok()
        });
        fs::read_link(fd.path()).is_ok_and(|p| p == path)
            && flags.is_some_and(|f| f & libc::O_PATH as u32 == 0)
    })
}

/// A mode-000 file of another user, read as nobody (`uid=65534&gid=65534`): its error
/// names it, the run ends 23, and every other file is copied.
pub(super) fn source_file_permission_denied_is_named(proto: Proto) {
    let Some((dir, g)) = ganesha::own(proto.alone()) else {
        return;
    };
    let src = g.export.join("src");
    many_files(&src, 3, 20);
    Tree::new(&src)
        .file("d1/secret", "not for nobody")
        .chmod("d1/secret", 0o000);
    let dst = dir.join("dst");
    let url = contents_of(&g.export(proto), "src", "uid=65534&gid=65534");
    let out = run(&["--timeout", "20"], &url, &dst);
    assert_eq!(out.status.code(), Some(23), "{}", describe(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "one line, for the one file:\n{err}");
    assert!(
        lines[0].contains("src/d1/secret") && lines[0].contains("ermission denied"),
        "{err}"
    );
    assert!(!dst.join("d1/secret").exists());
    let diff = rsync_diff_with(&src, &dst, &["--exclude=/d1/secret"]);
    assert!(diff.is_empty(), "the others:\n{diff}");
    assert_eq!(stat(&json_stats(&out), "errors"), 1, "{}", describe(&out));
}

/// What [`copy_changing_half`] leaves: the run's output, where it read and wrote, and
/// the names it changed.
struct HalfChanged {
    /// Holds the export and the destination.
    _dir: Scratch,
    g: Ganesha,
    src: PathBuf,
    dst: PathBuf,
    out: Output,
    changed: Vec<String>,
}

/// A copy of 1,500 small files through a slow proxy, the second half of them given to
/// `change` once the copy is under way (after the listing, before most files are
/// read); `None` when ganesha cannot run here.
fn copy_changing_half(proto: Proto, what: &str, change: impl Fn(&Path)) -> Option<HalfChanged> {
    let (dir, g) = ganesha::own(proto.alone())?;
    let src = g.export.join("src");
    const FILES: usize = 1500;
    let t = Tree::new(&src);
    for f in 0..FILES {
        t.random_file(format!("f{f:04}"), 2_000, f as u64);
    }
    let mut servers = Servers::default();
    let slow = servers.slow_proxy(g.nfs_port, Duration::from_millis(3), 1e9);
    let through_proxy = Export {
        nfs_port: slow,
        ..g.export(proto)
    };
    let dst = dir.join("dst");
    let started = Instant::now();
    let child = start(
        &["--timeout", "30"],
        &contents_of(&through_proxy, "src", ""),
        &dst,
    );
    copied_at_least(&dst, 20);
    let changed: Vec<String> = (FILES / 2..FILES).map(|f| format!("f{f:04}")).collect();
    for name in &changed {
        change(&src.join(name));
    }
    let changed_at = started.elapsed();
    let out = wait_at_most(child, Duration::from_secs(120), "nfsync hangs");
    eprintln!(
        "{proto:?} {} files {what} {:.1} s into a run of {:.1} s: exit {:?}\n{}",
        changed.len(),
        changed_at.as_secs_f64(),
        started.elapsed().as_secs_f64(),
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
            .lines()
            .take(5)
            .collect::<Vec<_>>()
            .join("\n")
    );
    Some(HalfChanged {
        _dir: dir,
        g,
        src,
        dst,
        out,
        changed,
    })
}

/// Files deleted from the source after the listing and before their copy: each one not
/// copied by then is reported as vanished, the run ends 24 as rsync's does, and every
/// other file is copied.
pub(super) fn source_files_vanishing_mid_run_end_24(proto: Proto) {
    let Some(run) = copy_changing_half(proto, "deleted", |p| fs::remove_file(p).unwrap()) else {
        return;
    };
    let (src, dst, out, deleted) = (&run.src, &run.dst, &run.out, &run.changed);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(24), "{}", describe(out));
    let mut vanished = 0;
    for name in deleted {
        let reported = err
            .lines()
            .any(|l| l.contains("vanished") && l.ends_with(&format!("src/{name}")));
        match dst.join(name).exists() {
            true => assert!(!reported, "{name} copied and reported as vanished"),
            false => {
                assert!(reported, "{name} neither copied nor reported:\n{err}");
                vanished += 1;
            }
        }
    }
    assert!(vanished > 0, "the deletion came too late to test anything");
    let lines = err.lines().filter(|l| !l.trim().is_empty()).count();
    assert_eq!(
        lines, vanished,
        "one line per vanished file, nothing else:\n{err}"
    );
    for left in fs::read_dir(src).unwrap() {
        let name = left.unwrap().file_name();
        assert_eq!(
            fs::read(dst.join(&name)).ok(),
            fs::read(src.join(&name)).ok(),
            "{name:?}"
        );
    }
}

/// Files replaced on the source (a new file renamed over each, as editors save) after
/// the listing and before their copy: each one not copied by then is reported as
/// changed while being copied, the run ends 23, and a re-run is exact.
pub(super) fn source_files_replaced_mid_run_are_reported(proto: Proto) {
    let replace = |p: &Path| {
        let new = p.with_extension("new");
        fs::write(&new, [9u8; 3_000]).unwrap();
        fs::rename(&new, p).unwrap();
    };
    let Some(run) = copy_changing_half(proto, "replaced", replace) else {
        return;
    };
    let (g, src, dst, out, replaced) = (&run.g, &run.src, &run.dst, &run.out, &run.changed);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(23), "{}", describe(out));
    let reported: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty()).collect();
    assert!(
        !reported.is_empty(),
        "the change came too late to test anything"
    );
    for line in reported {
        assert!(
            line.contains("changed while being copied")
                && replaced.iter().any(|n| line.contains(&format!("src/{n}:"))),
            "not a replaced file's change: {line}"
        );
    }
    let url = contents_of(&g.export(proto), "src", "");
    rerun_is_exact(g, &url, src, dst, &[]);
}

/// Directories removed from the source after their parent's listing (once the copy
/// made the first of them; a slow proxy keeps the walk going): each one not listed by
/// then is reported as vanished, as the files of those listed and not yet copied are;
/// the run ends 24 and every other directory is copied exactly.
pub(super) fn source_dirs_vanishing_mid_run_end_24(proto: Proto) {
    let Some((dir, g)) = ganesha::own(proto.alone()) else {
        return;
    };
    let src = g.export.join("src");
    const DIRS: usize = 60;
    many_small_dirs(&src, DIRS);
    let mut servers = Servers::default();
    let slow = servers.slow_proxy(g.nfs_port, Duration::from_millis(10), 1e9);
    let through_proxy = Export {
        nfs_port: slow,
        ..g.export(proto)
    };
    let dst = dir.join("dst");
    let started = Instant::now();
    let child = start(
        &["--timeout", "30"],
        &contents_of(&through_proxy, "src", ""),
        &dst,
    );
    while !dst.join("d00").exists() && started.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(1));
    }
    let deleted: Vec<String> = (DIRS / 2..DIRS).map(|d| format!("d{d:02}")).collect();
    for name in &deleted {
        fs::remove_dir_all(src.join(name)).unwrap();
    }
    let deleted_at = started.elapsed();
    let out = wait_at_most(child, Duration::from_secs(120), "nfsync hangs");
    let err = String::from_utf8_lossy(&out.stderr);
    eprintln!(
        "{proto:?} {} directories deleted {:.1} s into a run of {:.1} s: exit {:?}\n{}",
        deleted.len(),
        deleted_at.as_secs_f64(),
        started.elapsed().as_secs_f64(),
        out.status.code(),
        err.lines().take(5).collect::<Vec<_>>().join("\n")
    );
    assert_eq!(out.status.code(), Some(24), "{}", describe(&out));
    assert!(
        err.lines().all(|l| l.contains("file has vanished: ")),
        "only vanished entries are reported:\n{err}"
    );
    // A directory listed while it was being removed lists what was left of it: its
    // files are judged by what the run reported, not one by one.
    for line in err.lines() {
        assert!(
            deleted.iter().any(|d| line.contains(&format!("src/{d}"))),
            "{line}: not in a removed directory"
        );
    }
    let dirs_vanished = deleted
        .iter()
        .filter(|d| err.lines().any(|l| l.ends_with(&format!("src/{d}"))))
        .count();
    assert!(
        dirs_vanished > 0,
        "the directories were removed too late to test anything:\n{err}"
    );
    for d in 0..DIRS / 2 {
        let rel = format!("d{d:02}");
        let diff = rsync_diff(&src.join(&rel), &dst.join(&rel));
        assert!(diff.is_empty(), "{rel}:\n{diff}");
    }
}

/// Files per directory of [`many_small_dirs`].
const PER_DIR: usize = 25;

/// `dirs` directories `dNN` of [`PER_DIR`] files `fNN` of 2,000 bytes.
fn many_small_dirs(root: &Path, dirs: usize) {
    let t = Tree::new(root);
    for d in 0..dirs {
        for f in 0..PER_DIR {
            t.random_file(format!("d{d:02}/f{f:02}"), 2_000, (d * 100 + f) as u64);
        }
    }
}
