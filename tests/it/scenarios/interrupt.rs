//! Runs interrupted by SIGKILL or SIGINT, then re-run.

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::support::{Scratch, Target, Tree, assert_target_same, count_files, describe, nf};

/// A run killed with SIGKILL midway, then re-run, ends exact.
pub fn sigkill_then_rerun(t: &dyn Target) {
    let s = Scratch::new();
    let tree = Tree::new(s.join("src"));
    let mut n = 0;
    for d in 0..40 {
        for f in 0..50 {
            tree.random_file(format!("d{d:02}/f{f:02}"), 4096 + (f * 331) as u64, n);
            n += 1;
        }
    }
    for i in 0..4 {
        tree.random_file(format!("big{i}"), 4 << 20, 10_000 + i);
    }
    tree.age();
    let total = count_files(tree.root());
    let dst = t.dest_path("dst");

    let mut child = t
        .command()
        .args(["--jobs", "4"])
        .arg(t.src_arg(tree.root(), true))
        .arg(t.dest_arg("dst"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn nfsync");
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            panic!(
                "nfsync finished ({status}) before it could be killed; {} of {total} files \
                 in DEST after {:?}: make the tree bigger",
                count_files(&dst),
                start.elapsed()
            );
        }
        if count_files(&dst) >= 20 || start.elapsed() > Duration::from_secs(20) {
            break;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    child.kill().expect("SIGKILL nfsync");
    let status = child.wait().unwrap();
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(status.signal(), Some(libc::SIGKILL), "not killed: {status}");
    let copied = count_files(&dst);
    assert!(
        copied < total,
        "kill landed after the copy ended ({copied} of {total})"
    );

    let out = nf(t)
        .args(["--jobs", "4", "--json"])
        .arg(t.src_arg(tree.root(), true))
        .arg(t.dest_arg("dst"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "re-run after SIGKILL: {}",
        describe(&out)
    );
    assert_target_same(t, tree.root(), "dst");
}

/// SIGINT midway: exit 20 after stopping cleanly, and a re-run ends exact.
pub fn sigint_then_rerun(t: &dyn Target) {
    // The signal must land mid-copy; on a fast or a loaded machine a small tree may be
    // done before it arrives, so the tree grows until one attempt is interrupted.
    let s = Scratch::new();
    let tree = Tree::new(s.join("src"));
    let mut n = 0;
    let mut dirs = 0;
    for attempt in 0..3 {
        let more = [30, 90, 240][attempt];
        for d in dirs..dirs + more {
            for f in 0..50 {
                tree.random_file(format!("d{d:03}/f{f:02}"), 2048 + (f * 97) as u64, n);
                n += 1;
            }
        }
        dirs += more;
        tree.random_file("big", 8 << 20, 77).age();
        let total = count_files(tree.root());
        let sub = format!("dst{attempt}");
        let dst = t.dest_path(&sub);

        let child = t
            .command()
            .args(["--jobs", "4"])
            .arg(t.src_arg(tree.root(), true))
            .arg(t.dest_arg(&sub))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn nfsync");
        let start = Instant::now();
        while count_files(&dst) < 20 && start.elapsed() < Duration::from_secs(20) {
            std::thread::sleep(Duration::from_millis(2));
        }
        // SAFETY: kill(2) on our own child's pid.
        let rc = unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
        assert_eq!(rc, 0, "kill -INT: {}", std::io::Error::last_os_error());
        let out = child.wait_with_output().unwrap();
        let copied = count_files(&dst);
        if copied == total && attempt < 2 {
            // Every file was in before the signal (exit 0, or 20 during the final
            // directory pass): try a bigger tree.
            continue;
        }
        assert!(
            copied < total,
            "SIGINT landed after the copy ended ({copied} of {total})"
        );
        assert_eq!(
            out.status.code(),
            Some(20),
            "after SIGINT: {}",
            describe(&out)
        );
        rerun_after_sigint(t, tree.root(), &sub);
        return;
    }
}

fn rerun_after_sigint(t: &dyn Target, src: &Path, sub: &str) {
    let out = nf(t)
        .args(["--jobs", "4"])
        .arg(t.src_arg(src, true))
        .arg(t.dest_arg(sub))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "re-run after SIGINT: {}",
        describe(&out)
    );
    assert_target_same(t, src, sub);
}
