//! Times a destination's filesystem cannot hold (years 1600 and 2500 on ext4), copied
//! from a source that holds them (tmpfs keeps signed 64-bit seconds).

use std::ffi::OsStr;
use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use filetime::FileTime;

use super::{Scratch, Tree, json_stats, stat, sync_ok};

/// 1600-01-01 and 2500-01-01 (UTC), as the warnings print them.
const CASES: [(&str, i64, &str); 3] = [
    ("y1600", -11_676_096_000, "1600-01-01 00:00:00 UTC"),
    ("y2500", 16_725_225_600, "2500-01-01 00:00:00 UTC"),
    ("dir1600", -11_676_096_000, "1600-01-01 00:00:00 UTC"),
];

/// What the filesystem at `dir` keeps when given `sec`, read back from a file of its own.
fn kept_by(dir: &Path, sec: i64) -> i64 {
    let p = dir.join(".kept-by-probe");
    fs::write(&p, "").unwrap();
    let t = FileTime::from_unix_time(sec, 0);
    filetime::set_file_times(&p, t, t).unwrap();
    let kept = fs::metadata(&p).unwrap().mtime();
    fs::remove_file(&p).unwrap();
    kept
}

/// Copies files and a directory dated 1600 and 2500 into `dest` (a path or an
/// `nfs://` URL) whose files land at `stored` on this machine: each entry gets the time
/// the filesystem keeps, one warning naming it with both times where that is not its
/// own, `times_clamped` counts them, and a re-run copies, fixes and warns about nothing.
/// Returns the scratch directory whose `src` was copied; `None` when the source cannot
/// hold such times here (no tmpfs at /dev/shm).
pub fn copy_out_of_range_times(dest: impl AsRef<OsStr>, stored: &Path) -> Option<Scratch> {
    let shm = Path::new("/dev/shm");
    if !shm.is_dir() {
        super::prerequisite_missing("no /dev/shm for a source that keeps years 1600 and 2500");
        return None;
    }
    let s = Scratch::new_in(shm);
    let src = s.join("src");
    let t = Tree::new(&src);
    t.file("y1600", "old\n")
        .file("y2500", "new\n")
        .file("dir1600/f", "f\n");
    for (name, sec, _) in CASES {
        t.mtime(name, sec, 0);
        if fs::metadata(src.join(name)).unwrap().mtime() != sec {
            super::prerequisite_missing(&format!("/dev/shm does not keep {sec}"));
            return None;
        }
    }

    let dest = dest.as_ref();
    let out = sync_ok(&["--json"], &src, dest);
    let stats = json_stats(&out);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let mut clamped = 0;
    for (name, sec, printed) in CASES {
        // Asked beside DEST, on the same filesystem: a probe inside DEST would give DEST
        // a new mtime, which the re-run below rightly sets back (once a second has
        // turned, whole-second compare sees it).
        let kept = kept_by(stored.parent().unwrap(), sec);
        let got = fs::symlink_metadata(stored.join(name)).unwrap().mtime();
        assert_eq!(got, kept, "{name} holds what its filesystem keeps");
        let warned = stderr.lines().find(|l| l.contains(&format!("/{name}:")));
        if kept == sec {
            assert!(warned.is_none(), "{name} kept its time, yet: {stderr}");
            continue;
        }
        clamped += 1;
        let line = warned.unwrap_or_else(|| panic!("no warning for {name}:\n{stderr}"));
        let shown = kept_display(kept);
        assert!(
            line.contains("cannot be stored") && line.contains(printed) && line.contains(&shown),
            "the warning for {name} gives both times ({printed}, {shown}): {line}"
        );
        assert_eq!(
            stderr.matches(&format!("/{name}:")).count(),
            1,
            "one warning for {name}:\n{stderr}"
        );
    }
    assert_eq!(stat(&stats, "times_clamped"), clamped, "{stats}");

    let root_mtime = || {
        let m = fs::metadata(stored).unwrap();
        (m.mtime(), m.mtime_nsec())
    };
    let before = root_mtime();
    let out = sync_ok(&["--json"], &src, dest);
    let stats = json_stats(&out);
    assert_eq!(
        root_mtime(),
        before,
        "the re-run left DEST's own mtime alone"
    );
    assert_rerun_did_nothing(&stats);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !stderr.contains("cannot be stored"),
        "re-run warned: {stderr}"
    );
    let left: Vec<_> = fs::read_dir(stored)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|n| n.to_string_lossy().contains("nfsync-"))
        .collect();
    assert!(left.is_empty(), "scratch files left in DEST: {left:?}");
    Some(s)
}

/// `sec` as nfsync prints a time, computed by `date` so that the test does not share
/// the code it checks.
/// A re-run's `--json` totals: nothing copied, fixed or clamped again.
pub fn assert_rerun_did_nothing(stats: &serde_json::Value) {
    for key in [
        "files_copied",
        "bytes_copied",
        "attrs_updated",
        "times_clamped",
    ] {
        assert_eq!(stat(stats, key), 0, "re-run {key}: {stats}");
    }
}

fn kept_display(sec: i64) -> String {
    let out = std::process::Command::new("date")
        .args(["-u", "-d", &format!("@{sec}"), "+%Y-%m-%d %H:%M:%S UTC"])
        .output()
        .expect("run date");
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}
