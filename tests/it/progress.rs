//! The progress bar as a user sees it: nfsync run in a real terminal (tmux) at 120 and
//! at 40 columns over a slow wire, the screen read back with `capture-pane` while it
//! runs.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::support::inproc::{Server, url_for};
use crate::support::net::Servers;
use crate::support::{Scratch, Tree, bin};

/// One tmux server of this test's own (`-L`), killed when dropped.
struct Tmux {
    socket: String,
}

impl Tmux {
    fn new(name: &str) -> Tmux {
        let t = Tmux {
            socket: format!("nfsync-test-{name}-{}", std::process::id()),
        };
        let ok = Command::new("tmux").arg("-V").output();
        assert!(
            ok.is_ok_and(|o| o.status.success()),
            "tmux is needed for this test (apt-get install tmux)"
        );
        t
    }

    fn tmux(&self, args: &[&str]) -> std::process::Output {
        Command::new("tmux")
            .arg("-u")
            .arg("-L")
            .arg(&self.socket)
            .args(args)
            .env("LANG", "C.UTF-8")
            .output()
            .expect("run tmux")
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.tmux(&["kill-server"]);
    }
}

/// Runs `cmd` in a detached `width`-column tmux window and returns every distinct screen
/// line that mentions files, captured every 100 ms until `done` exists (at most 60 s).
fn bar_lines(tmux: &Tmux, width: usize, cmd: &str, done: &Path) -> Vec<String> {
    let w = width.to_string();
    let out = tmux.tmux(&[
        "new-session",
        "-d",
        "-x",
        &w,
        "-y",
        "12",
        "-s",
        "t",
        "sh",
        "-c",
        &format!("{cmd}; sleep 60"),
    ]);
    assert!(out.status.success(), "tmux: {out:?}");
    let start = Instant::now();
    let mut lines: Vec<String> = Vec::new();
    while !done.exists() {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "no end: {lines:?}"
        );
        let out = tmux.tmux(&["capture-pane", "-p", "-t", "t"]);
        for l in String::from_utf8_lossy(&out.stdout).lines() {
            let l = l.trim_end().to_string();
            // The summary replaces the bar; at 40 columns it wraps onto a second line.
            if l.starts_with("nfsync:") && l.contains("copied") {
                break;
            }
            if l.contains("files") && !lines.contains(&l) {
                lines.push(l);
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    lines
}

#[test]
fn the_bar_says_true_things_at_120_and_40_columns() {
    let scratch = Scratch::new();
    // Enough directories that the walk is still going when the bar first draws, and
    // one big file that is still being written when it has finished.
    let src = Tree::new(scratch.join("src"));
    for d in 0..40 {
        for f in 0..8 {
            src.file(format!("d{d:02}/f{f}"), vec![b'x'; 2000]);
        }
    }
    src.random_file("big", 24 << 20, 7);
    let shape = regex::Regex::new(
        r"^[0-9,]+/[0-9,]+\+? files(  [0-9.]+ [KMGT]?i?B/[0-9.]+ [KMGT]?i?B\+?)?(  [0-9,.]+ files/s)?(  [0-9.]+ [KMGT]?i?B/s)?(  (counting|ETA [0-9]+:[0-9]{2}(:[0-9]{2})?))?$",
    )
    .unwrap();
    for (width, name) in [(120usize, "w120"), (40, "w40")] {
        let server = Server::memfs();
        let mut servers = Servers::default();
        let port = servers.slow_proxy(server.port, Duration::from_millis(1), 6e6);
        let done = scratch.join(format!("{name}.done"));
        // stderr, where the bar goes, is the terminal.
        let cmd = format!(
            "{} --progress --jobs 4 {}/ '{}'; echo $? > {}",
            bin().display(),
            src.root().display(),
            url_for(port, &format!("/{name}")),
            done.display()
        );
        let tmux = Tmux::new(name);
        let lines = bar_lines(&tmux, width, &cmd, &done);
        let rc = std::fs::read_to_string(&done).unwrap();
        assert_eq!(rc.trim(), "0", "nfsync failed; screen: {lines:?}");
        let mut bars = Vec::new();
        for l in &lines {
            assert!(
                l.chars().count() <= width,
                "{width} columns: too wide: {l:?}"
            );
            // What follows the spinner.
            let Some(i) = l.find(|c: char| c.is_ascii_digit()) else {
                continue;
            };
            let b = &l[i..];
            assert!(shape.is_match(b), "{width} columns: {b:?} in {lines:?}");
            let counting = b.contains("+ files");
            assert!(
                !(counting && b.contains("ETA")),
                "an ETA while counting: {b:?}"
            );
            assert!(
                counting == b.contains("counting") || width < 60,
                "'+' and 'counting' disagree: {b:?}"
            );
            bars.push(b);
        }
        assert!(bars.len() >= 3, "{width} columns: too few bars: {lines:?}");
        assert!(
            bars.iter().any(|b| b.contains("files/s")),
            "{width} columns: no rate: {lines:?}"
        );
        if width == 120 {
            assert!(
                bars.iter().any(|b| b.contains("counting")),
                "never counting: {lines:?}"
            );
            assert!(
                bars.iter().any(|b| b.contains("ETA")),
                "never an ETA: {lines:?}"
            );
            assert!(
                bars.iter().any(|b| b.contains("MiB/s")),
                "no byte rate: {lines:?}"
            );
        }
    }
}

/// On a terminal too, SIGUSR1 prints the progress line at once, above the bar, which
/// goes on (dd's habit); the run ends as usual.
#[test]
fn sigusr1_prints_a_line_above_the_bar() {
    let scratch = Scratch::new();
    let src = Tree::new(scratch.join("src"));
    for i in 0..4 {
        src.random_file(format!("f{i}"), 384 << 10, i + 1);
    }
    let done = scratch.join("done");
    let cmd = format!(
        "{} -a --bwlimit=1m {}/ '{}' & p=$!; sleep 0.6; kill -USR1 $p; wait $p; echo $? > {}",
        bin().display(),
        src.root().display(),
        scratch.join("dst").display(),
        done.display()
    );
    let tmux = Tmux::new("usr1");
    let bars = bar_lines(&tmux, 200, &cmd, &done);
    let rc = std::fs::read_to_string(&done).unwrap();
    assert_eq!(rc.trim(), "0", "nfsync failed; screen: {bars:?}");
    let screen = tmux.tmux(&["capture-pane", "-p", "-t", "t"]);
    let screen = String::from_utf8_lossy(&screen.stdout);
    let asked: Vec<&str> = screen
        .lines()
        .filter(|l| l.starts_with("nfsync: elapsed 0:0"))
        .collect();
    assert_eq!(asked.len(), 1, "screen:\n{screen}");
    assert!(asked[0].contains("/4 files, "), "{}", asked[0]);
    assert!(
        bars.iter().any(|l| !l.starts_with("nfsync:")),
        "no bar besides the line: {bars:?}"
    );
    assert!(screen.contains(" files copied ("), "screen:\n{screen}");
}
