//! Progress: what is done of what has been found, the speed, and an ETA only once
//! there is something to base it on — as a bar on a terminal, as a line every interval
//! where stderr is a log ([`lines`]), and as one line whenever SIGUSR1 asks ([`Mode`]).
//!
//! The source is walked while it is copied, so until the walk has finished the totals
//! are a lower bound: they are shown with a `+` and the line says "counting" instead of
//! an ETA that would only keep slipping. The bar's rates are over the last few seconds,
//! not the whole run, so a phase of large files after many small ones shows its own
//! speed. One thread does the drawing and the writing; it sleeps on a channel, so the
//! end of the run or a SIGUSR1 wakes it at once.

use std::collections::VecDeque;
use std::io::{IsTerminal, Write};
use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::config::Config;
use crate::report::Stats;
use crate::report::units::HumanLevel;

pub mod lines;

use lines::{Line, Mark};

/// How often the bar is redrawn.
const TICK: Duration = Duration::from_millis(200);
/// The window the bar's rates are measured over.
const RATE_WINDOW: Duration = Duration::from_secs(3);
/// No rate before this much of the run: the first fraction of a second measures the
/// start-up, not the copy.
const RATE_AFTER: Duration = Duration::from_millis(500);
/// No ETA before this much of the run, even when the walk has finished.
const ETA_AFTER: Duration = Duration::from_secs(2);
/// The interval of the progress lines when progress is asked for without
/// `--stats-every` (rclone's `--stats` is a minute; a log line every 30 s stays short).
pub const DEFAULT_EVERY: Duration = Duration::from_secs(30);

/// What a run shows of its progress.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Mode {
    /// The bar, on a terminal.
    Bar,
    /// A line every `every` (JSON objects with `json`).
    Lines { every: Duration, json: bool },
    /// Nothing, unless SIGUSR1 asks.
    Silent { json: bool },
}

impl Mode {
    /// The mode for `cfg` where stderr is (or is not) a `terminal`: the bar where it
    /// can be drawn and is wanted; lines where progress is asked for and no bar is
    /// drawn (a log), or where `--stats-every` or `--progress=json` asks for them.
    /// `-q` silences progress, except the lines `--stats-every` asks for by name.
    pub fn of(cfg: &Config, terminal: bool) -> Mode {
        let json = cfg.progress_json;
        let lines = cfg.stats_every.is_some()
            || (!cfg.quiet && (json || (cfg.progress_asked && !terminal)));
        if cfg.progress && terminal && !json {
            Mode::Bar
        } else if lines {
            Mode::Lines {
                every: cfg.stats_every.unwrap_or(DEFAULT_EVERY),
                json,
            }
        } else {
            Mode::Silent { json }
        }
    }

    /// The mode of this process's stderr.
    pub fn here(cfg: &Config) -> Mode {
        Mode::of(cfg, std::io::stderr().is_terminal())
    }

    /// Whether the lines are JSON and end with the run's totals.
    pub fn json_lines(self) -> bool {
        matches!(self, Mode::Lines { json: true, .. })
    }
}

/// What wakes the progress thread before its next tick.
enum Wake {
    /// SIGUSR1: print the line now.
    Asked,
    /// The run is over.
    Stop,
}

/// A running progress display (the bar, or lines); stops when dropped. Whatever the
/// mode, SIGUSR1 prints the current line at once (dd's habit), above the bar on a
/// terminal.
pub struct Progress {
    bar: Option<ProgressBar>,
    wake: Sender<Wake>,
    signals: Option<signal_hook::iterator::Handle>,
    threads: Vec<JoinHandle<()>>,
}

impl Progress {
    /// Starts the display of `mode` on stderr.
    pub fn start(mode: Mode, stats: Arc<Stats>) -> Progress {
        let bar = (mode == Mode::Bar).then(|| {
            let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr_with_hz(5));
            bar.set_style(ProgressStyle::with_template("{spinner} {msg}").expect("valid template"));
            bar
        });
        let (wake, woken) = mpsc::channel();
        let mut threads = Vec::new();
        let signals = signal_hook::iterator::Signals::new([signal_hook::consts::SIGUSR1]).ok();
        let handle = signals.as_ref().map(|s| s.handle());
        if let Some(mut signals) = signals {
            let w = wake.clone();
            let t = std::thread::Builder::new()
                .name("nfsync-sigusr1".into())
                .spawn(move || {
                    for _ in signals.forever() {
                        let _ = w.send(Wake::Asked);
                    }
                });
            threads.extend(t.ok());
        }
        let b = bar.clone();
        let t = std::thread::Builder::new()
            .name("nfsync-progress".into())
            .spawn(move || show(mode, b, &stats, &woken));
        threads.extend(t.ok());
        Progress {
            bar,
            wake,
            signals: handle,
            threads,
        }
    }

    /// The bar, so messages can be printed above it.
    pub fn bar(&self) -> Option<ProgressBar> {
        self.bar.clone()
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        if let Some(h) = &self.signals {
            h.close();
        }
        let _ = self.wake.send(Wake::Stop);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

/// The progress thread: redraws the bar or writes a line each tick, and a line when
/// SIGUSR1 asks, until told to stop.
fn show(mode: Mode, bar: Option<ProgressBar>, stats: &Stats, woken: &mpsc::Receiver<Wake>) {
    let start = Instant::now();
    let tick = match mode {
        Mode::Bar => TICK,
        Mode::Lines { every, .. } => every,
        // Only SIGUSR1 wakes it.
        Mode::Silent { .. } => Duration::from_secs(86_400),
    };
    let json = matches!(
        mode,
        Mode::Lines { json: true, .. } | Mode::Silent { json: true }
    );
    let mut rates = Rates::default();
    let mut mark = Mark::default();
    let mut next = start + tick;
    let line = |mark: &mut Mark| {
        let (l, m) = Line::new(&Snapshot::of(stats), start.elapsed(), *mark);
        *mark = m;
        let text = if json {
            l.json()
        } else {
            format!("nfsync: {}", l.text())
        };
        match &bar {
            Some(b) => b.println(text),
            None => {
                let _ = writeln!(std::io::stderr().lock(), "{text}");
            }
        }
    };
    loop {
        match woken.recv_timeout(next.saturating_duration_since(Instant::now())) {
            Ok(Wake::Asked) => line(&mut mark),
            Ok(Wake::Stop) | Err(RecvTimeoutError::Disconnected) => return,
            Err(RecvTimeoutError::Timeout) => {
                next += tick;
                match &bar {
                    Some(b) => {
                        let now = start.elapsed();
                        let snap = Snapshot::of(stats);
                        rates.add(now, snap.files, snap.bytes);
                        // The spinner and its space take two columns.
                        let width = terminal_width().saturating_sub(2);
                        b.set_message(render(&snap, &rates, now, width));
                        b.tick();
                    }
                    None if matches!(mode, Mode::Lines { .. }) => line(&mut mark),
                    None => {}
                }
                // Ticks missed (a suspended process) are not made up for.
                let now = Instant::now();
                if next <= now {
                    next = now + tick;
                }
            }
        }
    }
}

/// The terminal's width in columns (80 when it cannot be read).
fn terminal_width() -> usize {
    rustix::termios::tcgetwinsize(std::io::stderr())
        .ok()
        .map(|w| w.ws_col as usize)
        .filter(|&w| w > 0)
        .unwrap_or(80)
}

/// The counters the line is drawn from.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Snapshot {
    /// Entries dealt with (copied, linked, already up to date, fixed, failed).
    pub files: u64,
    /// Entries found so far.
    pub files_total: u64,
    /// Bytes written, of files under way too.
    pub bytes: u64,
    /// Bytes of the regular files found so far.
    pub bytes_total: u64,
    /// Whether the walk may still find more.
    pub counting: bool,
    /// Jobs allowed at once.
    pub jobs: usize,
    /// Entries that failed.
    pub errors: u64,
}

impl Snapshot {
    fn of(s: &Stats) -> Snapshot {
        // Read the walk's state first: totals read after it are at least as complete.
        let counting = !s.walk_finished();
        Snapshot {
            counting,
            files: s.files_copied.load(Relaxed)
                + s.links_created.load(Relaxed)
                + s.files_skipped.load(Relaxed)
                + s.attrs_updated.load(Relaxed)
                + s.errors.load(Relaxed),
            files_total: s.files_scanned.load(Relaxed),
            bytes: s.bytes_copied.load(Relaxed) + s.bytes_in_flight.load(Relaxed),
            bytes_total: s.bytes_scanned.load(Relaxed),
            jobs: s.jobs.load(Relaxed),
            errors: s.errors.load(Relaxed),
        }
    }
}

/// rsync's progress line for a file of `size` bytes sent whole in `took`, the `n`th
/// sent: its size, 100%, its rate, its time, and how many entries are left to check
/// of those found (`ir-chk` while the walk may find more, `to-chk` once it is done).
pub fn file_line(human: HumanLevel, size: u64, took: Duration, n: u64, stats: &Stats) -> String {
    let snap = Snapshot::of(stats);
    let dirs = stats.dirs_scanned.load(Relaxed);
    let total = snap.files_total + dirs;
    let left = total.saturating_sub(snap.files + dirs);
    let secs = took.as_secs_f64();
    let kib = if secs > 0.0 {
        size as f64 / 1024.0 / secs
    } else {
        0.0
    };
    let (rate, units) = if kib > 1024.0 * 1024.0 {
        (kib / (1024.0 * 1024.0), "GB/s")
    } else if kib > 1024.0 {
        (kib / 1024.0, "MB/s")
    } else {
        (kib, "kB/s")
    };
    let t = took.as_secs();
    format!(
        "{:>15} 100% {rate:>7.2}{units} {:>4}:{:02}:{:02} (xfr#{n}, {}-chk={left}/{total})",
        human.num(size),
        t / 3600,
        t / 60 % 60,
        t % 60,
        if snap.counting { "ir" } else { "to" },
    )
}

/// Files and bytes per second over the last `RATE_WINDOW`.
#[derive(Default)]
pub struct Rates {
    samples: VecDeque<(Duration, u64, u64)>,
}

impl Rates {
    /// Records the counters at `now`.
    pub fn add(&mut self, now: Duration, files: u64, bytes: u64) {
        self.samples.push_back((now, files, bytes));
        while self
            .samples
            .front()
            .is_some_and(|s| now.saturating_sub(s.0) > RATE_WINDOW)
        {
            self.samples.pop_front();
        }
    }

    /// (files/s, bytes/s), once the run is past its start-up.
    fn get(&self) -> Option<(f64, f64)> {
        let (first, last) = (self.samples.front()?, self.samples.back()?);
        let dt = last.0.saturating_sub(first.0).as_secs_f64();
        if last.0 < RATE_AFTER || dt <= 0.0 {
            return None;
        }
        Some((
            last.1.saturating_sub(first.1) as f64 / dt,
            last.2.saturating_sub(first.2) as f64 / dt,
        ))
    }
}

/// The line for `snap` at `now` into the run, at most `width` columns.
///
/// Parts are dropped, least useful first, until the line fits: bytes per second, the
/// byte totals, the state (ETA or counting), the files per second.
pub fn render(snap: &Snapshot, rates: &Rates, now: Duration, width: usize) -> String {
    let plus = if snap.counting { "+" } else { "" };
    let files = format!(
        "{}/{}{plus} files",
        HumanLevel::Separated.num(snap.files),
        HumanLevel::Separated.num(snap.files_total)
    );
    let bytes = format!(
        "{}/{}{plus}",
        human_bytes(snap.bytes as f64),
        human_bytes(snap.bytes_total as f64)
    );
    let rate = rates.get();
    let files_rate = rate.map(|r| format!("{} files/s", per_sec(r.0)));
    let bytes_rate = rate.map(|r| format!("{}/s", human_bytes(r.1)));
    let state = if snap.counting {
        Some("counting".to_string())
    } else {
        eta(snap, rate, now).map(|d| format!("ETA {}", clock(d)))
    };
    // In display order, each with its priority (lower is kept longer).
    let parts: [(Option<String>, u8); 5] = [
        (Some(files), 0),
        (Some(bytes), 3),
        (files_rate, 1),
        (bytes_rate, 4),
        (state, 2),
    ];
    for keep in (0..=4).rev() {
        let line = parts
            .iter()
            .filter(|p| p.1 <= keep)
            .filter_map(|p| p.0.as_deref())
            .collect::<Vec<_>>()
            .join("  ");
        if line.chars().count() <= width || keep == 0 {
            return line.chars().take(width).collect();
        }
    }
    unreachable!("keep == 0 returns")
}

/// Time left: the slower of what the files left and the bytes left need at the
/// current rates, once the totals are final and the rates have had time to settle.
fn eta(snap: &Snapshot, rate: Option<(f64, f64)>, now: Duration) -> Option<Duration> {
    let (fr, br) = rate?;
    if snap.counting || now < ETA_AFTER {
        return None;
    }
    time_left(snap, fr, br)
}

/// Time left for what `snap` has not done yet at `fr` files and `br` bytes per second:
/// the slower of the two where both are known.
fn time_left(snap: &Snapshot, fr: f64, br: f64) -> Option<Duration> {
    let files_left = snap.files_total.saturating_sub(snap.files) as f64;
    let bytes_left = snap.bytes_total.saturating_sub(snap.bytes) as f64;
    let need = |left: f64, r: f64| {
        if left <= 0.0 {
            Some(0.0)
        } else if r > 0.0 {
            Some(left / r)
        } else {
            None
        }
    };
    // Within a large file no file finishes, but its bytes say how long it takes.
    let secs = match (need(files_left, fr), need(bytes_left, br)) {
        (Some(f), b) => f.max(b.unwrap_or(0.0)),
        (None, Some(b)) if b > 0.0 => b,
        (None, _) => return None,
    };
    Some(Duration::from_secs_f64(secs.min(1e7)))
}

/// A rate of things per second: whole numbers with separators, one decimal below 10.
fn per_sec(r: f64) -> String {
    if r < 10.0 {
        format!("{r:.1}")
    } else {
        HumanLevel::Separated.num(r.round() as u64)
    }
}

/// Bytes with a binary unit and one decimal (`12.3 MiB`), whole bytes below 1 KiB.
pub fn human_bytes(b: f64) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut v = b.max(0.0);
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{v:.0} B")
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

/// `h:mm:ss`, or `m:ss` under an hour.
fn clock(d: Duration) -> String {
    let s = d.as_secs_f64().ceil() as u64;
    let (h, m, s) = (s / 3600, s / 60 % 60, s % 60);
    if h > 0 {
        format!("{h}:{m:02}:{s:02}")
    } else {
        format!("{m}:{s:02}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rates_at(secs: f64, files_per_s: f64, bytes_per_s: f64) -> Rates {
        let mut r = Rates::default();
        let mut t = 0.0;
        while t <= secs + 1e-9 {
            r.add(
                Duration::from_secs_f64(t),
                (t * files_per_s) as u64,
                (t * bytes_per_s) as u64,
            );
            t += 0.2;
        }
        r
    }

    #[test]
    fn a_file_line_is_rsyncs() {
        let stats = Stats::default();
        stats.files_scanned.store(3, Relaxed);
        stats.dirs_scanned.store(1, Relaxed);
        stats.files_copied.store(1, Relaxed);
        let took = Duration::from_millis(500);
        assert_eq!(
            file_line(HumanLevel::Separated, 5_000_000, took, 1, &stats),
            "      5,000,000 100%    9.54MB/s    0:00:00 (xfr#1, ir-chk=2/4)"
        );
    }

    #[test]
    fn counting_shows_lower_bounds_and_no_eta() {
        let snap = Snapshot {
            files: 1234,
            files_total: 5678,
            bytes: 12 << 20,
            bytes_total: 45 << 20,
            counting: true,
            ..Snapshot::default()
        };
        let r = rates_at(5.0, 3124.0, 25.0 * 1048576.0);
        let line = render(&snap, &r, Duration::from_secs(5), 118);
        assert_eq!(
            line,
            "1,234/5,678+ files  12.0 MiB/45.0 MiB+  3,124 files/s  25.0 MiB/s  counting"
        );
    }

    #[test]
    fn a_finished_walk_gives_an_eta_from_the_slower_of_files_and_bytes() {
        let snap = Snapshot {
            files: 1000,
            files_total: 2000,
            bytes: 10 << 20,
            bytes_total: 110 << 20,
            counting: false,
            ..Snapshot::default()
        };
        // 1,000 files left at 100/s: 10 s; 100 MiB left at 1 MiB/s: 100 s.
        let r = rates_at(4.0, 100.0, 1048576.0);
        let line = render(&snap, &r, Duration::from_secs(4), 118);
        assert!(line.ends_with("  ETA 1:40"), "{line}");
        assert!(
            line.contains("/110.0 MiB  100 files/s  1.0 MiB/s"),
            "{line}"
        );
    }

    #[test]
    fn no_rate_or_eta_at_the_start() {
        let snap = Snapshot {
            files: 10,
            files_total: 20,
            counting: false,
            ..Snapshot::default()
        };
        let r = rates_at(0.4, 100.0, 0.0);
        let line = render(&snap, &r, Duration::from_millis(400), 118);
        assert_eq!(line, "10/20 files  0 B/0 B");
        let r = rates_at(1.0, 100.0, 0.0);
        let line = render(&snap, &r, Duration::from_secs(1), 118);
        assert_eq!(line, "10/20 files  0 B/0 B  100 files/s  0 B/s");
    }

    #[test]
    fn narrow_terminals_drop_the_least_useful_parts_first() {
        let snap = Snapshot {
            files: 123_456,
            files_total: 400_000,
            bytes: 3 << 30,
            bytes_total: 9 << 30,
            counting: false,
            ..Snapshot::default()
        };
        let r = rates_at(10.0, 4321.0, 50.0 * 1048576.0);
        let now = Duration::from_secs(10);
        for width in [20, 38, 50, 60, 80, 118] {
            let line = render(&snap, &r, now, width);
            assert!(line.chars().count() <= width, "{width}: {line}");
        }
        assert_eq!(
            render(&snap, &r, now, 38),
            "123,456/400,000 files  4,321 files/s"
        );
        assert!(render(&snap, &r, now, 60).contains("ETA "));
        assert!(render(&snap, &r, now, 118).contains("MiB/s"));
    }

    #[test]
    fn numbers_read_as_people_write_them() {
        assert_eq!(per_sec(3123.5978), "3,124");
        assert_eq!(per_sec(1_234_567.0), "1,234,567");
        assert_eq!(per_sec(2.345), "2.3");
        assert_eq!(human_bytes(512.0), "512 B");
        assert_eq!(human_bytes(1536.0), "1.5 KiB");
        assert_eq!(human_bytes(5.0 * 1073741824.0), "5.0 GiB");
        assert_eq!(clock(Duration::from_secs(42)), "0:42");
        assert_eq!(clock(Duration::from_secs(3 * 3600 + 61)), "3:01:01");
    }
}
