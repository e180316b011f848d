//! Progress for logs: where stderr is no terminal (a log file, `kubectl logs`), a
//! progress line every `--stats-every`, as text or JSON; the JSON ends with `--json`'s
//! totals; SIGUSR1 asks for a line at once; a run that asked for nothing says nothing.
//!
//! Every run copies a few files under `--bwlimit` so it lasts long enough (about
//! 1.5 s) for several short intervals.

use std::process::{Command, Output, Stdio};
use std::time::Duration;

use crate::support::{Scratch, Tree, bin, describe, json_stats, nfsync, slash};

/// Source bytes and `--bwlimit`: 1.5 MiB at 1 MiB/s.
const FILES: u64 = 4;
const SIZE: u64 = 384 << 10;
const BWLIMIT: &str = "--bwlimit=1m";

fn source(s: &Scratch) -> Tree {
    let src = Tree::new(s.join("src"));
    for i in 0..FILES {
        src.random_file(format!("f{i}"), SIZE, i + 1);
    }
    src
}

fn run(s: &Scratch, flags: &[&str], dst: &str) -> Output {
    let src = source(s);
    let out = nfsync()
        .args(flags)
        .arg(slash(src.root()))
        .arg(s.join(dst))
        .output()
        .unwrap();
    assert!(out.status.success(), "{flags:?}: {}", describe(&out));
    out
}

fn stderr_lines(out: &Output) -> Vec<String> {
    String::from_utf8_lossy(&out.stderr)
        .lines()
        .map(str::to_owned)
        .collect()
}

/// The text lines come at the interval, each with the totals so far, rates over the
/// interval and overall, the ETA once the walk is done, jobs and errors; bytes move
/// within a file, not only when it ends.
#[test]
fn lines_at_the_interval_without_a_terminal() {
    let s = Scratch::new();
    let out = run(&s, &["-a", "--stats-every", "200ms", BWLIMIT], "dst");
    let lines = stderr_lines(&out);
    let progress: Vec<&String> = lines
        .iter()
        .filter(|l| l.starts_with("nfsync: elapsed "))
        .collect();
    // About seven in 1.5 s; a loaded machine may stretch the run, never shorten it.
    assert!(progress.len() >= 4, "{}", describe(&out));
    let total = format!("/{FILES} files, ");
    for l in &progress {
        for part in [
            total.as_str(),
            " | last ",
            " files/s, ",
            " | overall: ",
            " | jobs ",
            " errors",
        ] {
            assert!(l.contains(part), "{part:?} missing: {l}");
        }
        assert!(
            l.contains(" | ETA "),
            "the walk of 4 files is long done: {l}"
        );
    }
    assert!(
        progress[0].contains("| last ") && progress[0].contains("ms: "),
        "first interval: {}",
        progress[0]
    );
    // Bytes done, the part before "/1.5 MiB", grow from line to line before any file ends.
    let done: Vec<&str> = progress
        .iter()
        .map(|l| {
            l.split(" files, ")
                .nth(1)
                .unwrap()
                .split('/')
                .next()
                .unwrap()
        })
        .collect();
    assert_ne!(done[0], "0 B", "{}", describe(&out));
    assert_ne!(done[0], done[2], "{}", describe(&out));
    // --stats-every asked for output: the summary line ends it.
    assert!(
        lines.last().unwrap().contains(" files copied ("),
        "{}",
        describe(&out)
    );
}

/// `--progress=json`: every line on stderr is a JSON object, the progress ones
/// growing, the last one the totals, equal to what `--json` prints on stdout.
#[test]
fn json_lines_parse_and_end_with_the_totals_of_json() {
    let s = Scratch::new();
    let out = run(
        &s,
        &[
            "-a",
            "--progress=json",
            "--stats-every=200ms",
            "--json",
            BWLIMIT,
        ],
        "dst",
    );
    let values: Vec<serde_json::Value> = stderr_lines(&out)
        .iter()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    let (last, progress) = values.split_last().expect("lines");
    assert!(progress.len() >= 4, "{}", describe(&out));
    let mut bytes = 0;
    for p in progress {
        assert_eq!(p["type"], "progress", "{p}");
        assert_eq!(p["files_found"], FILES, "{p}");
        assert_eq!(p["bytes_found"], FILES * SIZE, "{p}");
        assert_eq!(p["walk_done"], true, "{p}");
        for key in [
            "elapsed_s",
            "interval_s",
            "files_per_s",
            "bytes_per_s",
            "files_per_s_overall",
            "bytes_per_s_overall",
        ] {
            assert!(p[key].is_f64(), "{key}: {p}");
        }
        assert!(p["jobs"].as_u64().unwrap() >= 1, "{p}");
        assert_eq!(p["errors"], 0, "{p}");
        let b = p["bytes_done"].as_u64().unwrap();
        assert!(b >= bytes && b <= FILES * SIZE, "{p}");
        bytes = b;
    }
    assert!(
        progress.iter().any(|p| p["eta_s"].is_f64()),
        "{}",
        describe(&out)
    );
    assert_eq!(last["type"], "totals", "{last}");
    let mut totals = last.clone();
    totals.as_object_mut().unwrap().remove("type");
    assert_eq!(totals, json_stats(&out));
    assert_eq!(totals["bytes_copied"], FILES * SIZE);

    // Without --stats-every a short run has only the totals (and no text summary).
    let out = run(&s, &["-a", "--progress=json", "--json", "-c"], "dst");
    let lines = stderr_lines(&out);
    assert_eq!(lines.len(), 1, "{}", describe(&out));
    let mut last: serde_json::Value = serde_json::from_str(&lines[0]).unwrap();
    assert_eq!(last["type"], "totals");
    last.as_object_mut().unwrap().remove("type");
    assert_eq!(last, json_stats(&out));
}

/// Where stderr is no terminal, a run that asked for nothing (or for progress and
/// `-q`) and had no errors writes nothing on stderr, however long it takes.
#[test]
fn quiet_without_a_terminal_even_when_slow() {
    let s = Scratch::new();
    for (i, flags) in [&["-a", BWLIMIT][..], &["-aq", "--progress", BWLIMIT]]
        .iter()
        .enumerate()
    {
        let out = run(&s, flags, &format!("d{i}"));
        assert!(out.stderr.is_empty(), "{flags:?}: {}", describe(&out));
        assert!(out.stdout.is_empty(), "{flags:?}: {}", describe(&out));
    }
}

/// SIGUSR1 prints the current line at once (dd's habit), in a run that prints no
/// progress otherwise, and the run goes on to its end.
#[test]
fn sigusr1_prints_a_line() {
    let s = Scratch::new();
    let src = source(&s);
    let child = Command::new(bin())
        .args(["-a", BWLIMIT])
        .arg(slash(src.root()))
        .arg(s.join("dst"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(500));
    // SAFETY: kill(2) on our own child's pid, which has not been waited for.
    let sent = unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGUSR1) };
    assert_eq!(sent, 0);
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", describe(&out));
    let lines = stderr_lines(&out);
    assert_eq!(lines.len(), 1, "{}", describe(&out));
    assert!(lines[0].starts_with("nfsync: elapsed 0:0"), "{}", lines[0]);
    assert!(
        lines[0].contains(&format!("/{FILES} files, ")),
        "{}",
        lines[0]
    );
    for i in 0..FILES {
        assert_eq!(
            std::fs::read(s.join(format!("dst/f{i}"))).unwrap(),
            std::fs::read(src.root().join(format!("f{i}"))).unwrap()
        );
    }
}

/// A large file's bytes count as they are written, also where the kernel copies them
/// (no --bwlimit): a line in the middle of it has bytes done and no file done.
#[test]
fn a_large_file_moves_the_bytes_before_it_ends() {
    let s = Scratch::new();
    let src = Tree::new(s.join("src"));
    let size: u64 = 256 << 20;
    // Quick to make, and copied as data all the same (no -S).
    let f = std::fs::File::create(src.root().join("big")).unwrap();
    f.set_len(size).unwrap();
    drop(f);
    let out = nfsync()
        .args(["-a", "--progress=json", "--stats-every=10ms"])
        .arg(slash(src.root()))
        .arg(s.join("dst"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", describe(&out));
    let values: Vec<serde_json::Value> = stderr_lines(&out)
        .iter()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    let midway = values.iter().any(|v| {
        let b = v["bytes_done"].as_u64().unwrap_or(0);
        v["files_done"] == 0 && b > 0 && b < size
    });
    assert!(midway, "{}", describe(&out));
}

/// A run that ends before it copies anything (a missing source) still ends its JSON
/// lines with the totals, after its error line, equal to --json's.
#[test]
fn json_lines_end_with_the_totals_when_the_run_cannot_start() {
    let s = Scratch::new();
    let out = nfsync()
        .args(["-a", "--progress=json", "--json"])
        .arg(s.join("missing/"))
        .arg(s.join("dst"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", describe(&out));
    let lines = stderr_lines(&out);
    assert_eq!(lines.len(), 2, "{}", describe(&out));
    assert!(
        lines[0].starts_with("nfsync: ") && lines[0].contains("missing"),
        "{}",
        lines[0]
    );
    let mut last: serde_json::Value = serde_json::from_str(&lines[1]).unwrap();
    assert_eq!(last["type"], "totals");
    last.as_object_mut().unwrap().remove("type");
    assert_eq!(last, json_stats(&out));
    assert_eq!(last["exit_code"], 3);
}
