//! An `nfs://` source's files stream from the server's READs into DEST's writes (one
//! `#[test]` per version, made by [`protocol_tests!`](super::protocol_tests)): nothing
//! is staged locally, so a missing, read-only or tiny `$TMPDIR` changes nothing; no
//! memfd or `O_TMPFILE` is made per file; memory stays bounded with many large files
//! in flight; and `--bwlimit` paces the reads themselves, not only the writes.

use std::fs;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::faults::wait_at_most;
use crate::support::ganesha::{self, Export, Proto};
use crate::support::net::Servers;
use crate::support::tmpfs::Tmpfs;
use crate::support::{Scratch, Tree, bin, describe, prerequisite_missing, rsync_diff};

/// A directory of its own on `export` for one test, made empty.
fn fresh(export: &Export, what: &str) -> (String, PathBuf) {
    let rel = format!("{what}-{}", std::process::id());
    let src = export.path.join(&rel);
    let _ = fs::remove_dir_all(&src);
    (rel, src)
}

/// Files of 1 KiB … 200 MiB, each staged before in memory or `$TMPDIR`, copied with
/// `$TMPDIR` missing, on a read-only filesystem, and on one of 64 KiB: each copy exact,
/// exit 0.
pub(super) fn any_tmpdir_copies_exact(proto: Proto) {
    let Some(export) = ganesha::shared(proto) else {
        return;
    };
    let (rel, src) = fresh(&export, "any-tmpdir");
    Tree::new(&src)
        .random_file("1k", 1 << 10, 1)
        .random_file("64k", 64 << 10, 2)
        .random_file("just-over-1m", (1 << 20) + 1, 3)
        .random_file("d/8m", 8 << 20, 4)
        .random_file("d/200m", 200 << 20, 5);
    let dir = Scratch::new();
    let Some(ro) = Tmpfs::mount(&dir.join("ro"), "ro,size=1m") else {
        return prerequisite_missing("cannot mount a tmpfs here");
    };
    let Some(tiny) = Tmpfs::mount(&dir.join("tiny"), "size=64k") else {
        return prerequisite_missing("cannot mount a tmpfs here");
    };
    let places = [
        ("missing", dir.join("no-such-dir")),
        ("read-only", ro.0.clone()),
        ("tiny", tiny.0.clone()),
    ];
    for (what, tmp) in places {
        let dst = dir.join(format!("dst-{what}"));
        let out = wait_at_most(
            Command::new(bin())
                .env("TMPDIR", &tmp)
                .args(["-a", &export.url(&format!("{rel}/"), "")])
                .arg(&dst)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap(),
            Duration::from_secs(300),
            "nfsync hangs",
        );
        assert_eq!(
            out.status.code(),
            Some(0),
            "TMPDIR {what}: {}",
            describe(&out)
        );
        let diff = rsync_diff(&src, &dst);
        assert!(diff.is_empty(), "TMPDIR {what}:\n{diff}");
        let _ = fs::remove_dir_all(&dst);
    }
    let _ = fs::remove_dir_all(&src);
}

/// A copy of 3,000 small files, traced: no `memfd_create` and no `O_TMPFILE` at all
/// (each file was one of them before), and the copy is exact.
pub(super) fn no_local_file_is_made_per_file(proto: Proto) {
    let Some(export) = ganesha::shared(proto) else {
        return;
    };
    let (rel, src) = fresh(&export, "no-staging");
    let t = Tree::new(&src);
    for i in 0..3_000u64 {
        t.random_file(format!("d{:02}/f{i:04}", i % 30), 100 + i % 900, i);
    }
    let dir = Scratch::new();
    let (dst, trace) = (dir.join("dst"), dir.join("trace"));
    let out = wait_at_most(
        Command::new("strace")
            .args([
                "-f",
                "-qq",
                "-e",
                "trace=memfd_create,open,openat,openat2",
                "-o",
            ])
            .arg(&trace)
            .arg(bin())
            .args(["-a", &export.url(&format!("{rel}/"), "")])
            .arg(&dst)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("strace (apt-get install strace)"),
        Duration::from_secs(300),
        "nfsync hangs under strace",
    );
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    let diff = rsync_diff(&src, &dst);
    assert!(diff.is_empty(), "{diff}");
    let trace = fs::read_to_string(&trace).unwrap();
    let staged: Vec<&str> = trace
        .lines()
        .filter(|l| l.contains("memfd_create(") || l.contains("O_TMPFILE"))
        .collect();
    // The trace must have seen the run: DEST's files are opened (created) by name.
    assert!(
        trace.lines().filter(|l| l.contains("O_CREAT")).count() >= 3_000,
        "the trace saw no copy:\n{}",
        &trace[..trace.len().min(2_000)]
    );
    assert!(
        staged.is_empty(),
        "{} memfds or O_TMPFILEs, e.g. {:?}",
        staged.len(),
        &staged[..staged.len().min(3)]
    );
    let _ = fs::remove_dir_all(&src);
}

/// The most a copy of eight 256 MiB files with `--jobs 64` may hold resident: the
/// client's budget for READs ahead of the copy (64 MiB, each READ counted twice: the
/// reply and the data taken from it), a 1 MiB piece per file being written, and the
/// process itself (its threads, the runtime, the listing). Measured (debug build):
/// 102–105 MiB; with files staged as before, 143–193 MiB.
const RSS_BOUND: u64 = 128 << 20;

/// Eight 256 MiB files copied at once with `--jobs 64`: peak RSS (the kernel's
/// `ru_maxrss` of the process) stays under [`RSS_BOUND`], and the copy is exact.
#[allow(clippy::zombie_processes, reason = "reaped by wait4, for its rusage")]
pub(super) fn memory_stays_bounded_with_large_files(proto: Proto) {
    let Some(export) = ganesha::shared(proto) else {
        return;
    };
    let (rel, src) = fresh(&export, "rss");
    fs::create_dir_all(&src).unwrap();
    for i in 0..8u64 {
        // Mostly holes (fast to make, read back as zeros), with data at both ends.
        Tree::new(&src).random_file(format!("f{i}"), 1 << 20, i);
        let f = fs::OpenOptions::new()
            .append(true)
            .open(src.join(format!("f{i}")))
            .unwrap();
        f.set_len(256 << 20).unwrap();
        use std::os::unix::fs::FileExt;
        f.write_all_at(b"the end", (256 << 20) - 7).unwrap();
    }
    let dir = Scratch::new();
    let dst = dir.join("dst");
    let child = Command::new(bin())
        .args(["-a", "--jobs", "64", &export.url(&format!("{rel}/"), "")])
        .arg(&dst)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id() as libc::pid_t;
    let (mut status, mut usage) = (0, unsafe { std::mem::zeroed::<libc::rusage>() });
    // The child is waited for here (not by `Child::wait`) to have its rusage.
    let waited = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(waited, pid, "wait4: {}", std::io::Error::last_os_error());
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "nfsync ended with {status:#x}"
    );
    let rss = usage.ru_maxrss as u64 * 1024;
    eprintln!("peak RSS {} MiB", rss >> 20);
    assert!(
        rss < RSS_BOUND,
        "peak RSS {} MiB, more than {} MiB",
        rss >> 20,
        RSS_BOUND >> 20
    );
    let diff = rsync_diff(&src, &dst);
    assert!(diff.is_empty(), "{diff}");
    let _ = fs::remove_dir_all(&src);
}

/// `--bwlimit=1024` (KiB/s) on a 6 MiB file read from the server: the READ replies,
/// timed where they pass a relay, arrive at 1 MiB/s within 10 % (before, the whole
/// file was read at once and only the writes were paced).
pub(super) fn bwlimit_paces_the_reads(proto: Proto) {
    let Some(export) = ganesha::shared(proto) else {
        return;
    };
    let (rel, src) = fresh(&export, "bwlimit");
    Tree::new(&src).random_file("six", 6 << 20, 9);
    let seen: Arc<Mutex<Vec<(Instant, usize)>>> = Arc::default();
    let noted = seen.clone();
    let mut servers = Servers::default();
    let relayed = Export {
        nfs_port: servers.rewriting_relay(
            export.nfs_port,
            Arc::new(move |_call: &[u8], rep: &mut Vec<u8>| {
                noted.lock().unwrap().push((Instant::now(), rep.len()));
            }),
        ),
        ..export.clone()
    };
    let dir = Scratch::new();
    let dst = dir.join("dst");
    let out = wait_at_most(
        Command::new(bin())
            .args(["-a", "--bwlimit=1024", &relayed.url(&format!("{rel}/"), "")])
            .arg(&dst)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
        Duration::from_secs(60),
        "nfsync hangs",
    );
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    assert!(rsync_diff(&src, &dst).is_empty());
    // The data replies (not the small ones around them), from the first to the last:
    // the bytes after the first over the time between them.
    let seen = seen.lock().unwrap();
    let data: Vec<&(Instant, usize)> = seen.iter().filter(|(_, n)| *n >= 16 << 10).collect();
    assert!(data.len() >= 8, "{} data replies", data.len());
    let bytes: usize = data[1..].iter().map(|(_, n)| n).sum();
    let secs = data[data.len() - 1]
        .0
        .duration_since(data[0].0)
        .as_secs_f64();
    let rate = bytes as f64 / secs / f64::from(1 << 20);
    assert!(
        (0.9..=1.1).contains(&rate),
        "read at {rate:.3} MiB/s ({bytes} bytes in {secs:.3} s), not 1 MiB/s within 10 %"
    );
    let _ = fs::remove_dir_all(&src);
}
