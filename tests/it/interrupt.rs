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
    let child = Command::new(bin())
        .args(["--jobs", "1", "--json"])
        .arg(slash(&src))
        .arg(&dst)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
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
