//! Progress for logs: where no bar can be drawn (a log file, a pipe, `kubectl logs`), a
//! line every interval, as text or as one JSON object, so a run of hours says how far
//! it is without a terminal.
//!
//! Each line stands on its own: the totals so far, the rates since the line before it
//! (what the run does now) and since the start (what to expect), and an ETA only once
//! the walk has found everything, as on the bar.

use std::time::Duration;

use serde::Serialize;

use super::{Snapshot, clock, human_bytes, per_sec, time_left};
use crate::report::units::HumanLevel;

/// The counters when the line before was written, for the rates over the interval.
#[derive(Clone, Copy, Debug, Default)]
pub struct Mark {
    at: Duration,
    files: u64,
    bytes: u64,
}

/// One progress line; in JSON, one object with these fields (`type` is `progress`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Line {
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub elapsed_s: f64,
    /// Entries dealt with (copied, linked, up to date, fixed, failed).
    pub files_done: u64,
    /// Entries found so far (all of them once `walk_done`).
    pub files_found: u64,
    pub bytes_done: u64,
    pub bytes_found: u64,
    pub walk_done: bool,
    /// The time the interval rates are over: since the line before.
    pub interval_s: f64,
    pub files_per_s: f64,
    pub bytes_per_s: f64,
    pub files_per_s_overall: f64,
    pub bytes_per_s_overall: f64,
    /// Seconds left, once the walk is done and something moved in the interval.
    pub eta_s: Option<f64>,
    pub jobs: usize,
    pub errors: u64,
}

impl Line {
    /// The line for `snap` at `now` into the run, `prev` being the line before (or the
    /// start), and the mark for the next one.
    pub fn new(snap: &Snapshot, now: Duration, prev: Mark) -> (Line, Mark) {
        let per = |n: u64, d: Duration| {
            let s = d.as_secs_f64();
            if s > 0.0 { n as f64 / s } else { 0.0 }
        };
        let interval = now.saturating_sub(prev.at);
        let fr = per(snap.files.saturating_sub(prev.files), interval);
        let br = per(snap.bytes.saturating_sub(prev.bytes), interval);
        let eta = (!snap.counting).then(|| time_left(snap, fr, br)).flatten();
        let line = Line {
            kind: "progress",
            elapsed_s: round(now.as_secs_f64(), 1000.0),
            files_done: snap.files,
            files_found: snap.files_total,
            bytes_done: snap.bytes,
            bytes_found: snap.bytes_total,
            walk_done: !snap.counting,
            interval_s: round(interval.as_secs_f64(), 1000.0),
            files_per_s: round(fr, 10.0),
            bytes_per_s: br.round(),
            files_per_s_overall: round(per(snap.files, now), 10.0),
            bytes_per_s_overall: per(snap.bytes, now).round(),
            eta_s: eta.map(|d| d.as_secs_f64().ceil()),
            jobs: snap.jobs,
            errors: snap.errors,
        };
        let mark = Mark {
            at: now,
            files: snap.files,
            bytes: snap.bytes,
        };
        (line, mark)
    }

    /// One JSON object, no newline.
    pub fn json(&self) -> String {
        serde_json::to_string(self).expect("a line serializes")
    }

    /// The text line: `elapsed 1:30 | 1,234/5,678+ files, 12.0 MiB/45.0 MiB+ | last 30s:
    /// 41 files/s, 1.0 MiB/s | overall: 40 files/s, 1.1 MiB/s | counting | jobs 16 | 0 errors`.
    pub fn text(&self) -> String {
        let plus = if self.walk_done { "" } else { "+" };
        let num = |n: u64| HumanLevel::Separated.num(n);
        let state = match (self.walk_done, self.eta_s) {
            (false, _) => "counting".to_string(),
            (true, Some(s)) => format!("ETA {}", clock(Duration::from_secs_f64(s))),
            (true, None) => "ETA unknown".to_string(),
        };
        let errors = match self.errors {
            1 => "1 error".to_string(),
            n => format!("{} errors", num(n)),
        };
        format!(
            "elapsed {} | {}/{}{plus} files, {}/{}{plus} | last {}: {} files/s, {}/s | overall: {} files/s, {}/s | {state} | jobs {} | {errors}",
            // Whole seconds gone (clock() rounds up, as an ETA should).
            clock(Duration::from_secs(self.elapsed_s as u64)),
            num(self.files_done),
            num(self.files_found),
            human_bytes(self.bytes_done as f64),
            human_bytes(self.bytes_found as f64),
            span(Duration::from_secs_f64(self.interval_s)),
            per_sec(self.files_per_s),
            human_bytes(self.bytes_per_s),
            per_sec(self.files_per_s_overall),
            human_bytes(self.bytes_per_s_overall),
            self.jobs,
        )
    }
}

/// The run's totals as the last JSON line: `--json`'s object with `"type": "totals"`.
pub fn totals_json(summary: &crate::report::Summary) -> String {
    #[derive(Serialize)]
    struct Totals<'a> {
        #[serde(rename = "type")]
        kind: &'static str,
        #[serde(flatten)]
        summary: &'a crate::report::Summary,
    }
    serde_json::to_string(&Totals {
        kind: "totals",
        summary,
    })
    .expect("the totals serialize")
}

fn round(v: f64, per: f64) -> f64 {
    (v * per).round() / per
}

/// An interval as a person says it: `200ms`, `4.5s`, `30s`, `5:00`.
fn span(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s < 1.0 {
        format!("{}ms", d.as_millis())
    } else if s < 10.0 {
        format!("{s:.1}s")
    } else if s < 120.0 {
        format!("{s:.0}s")
    } else {
        clock(d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snap(files: u64, bytes: u64, counting: bool) -> Snapshot {
        Snapshot {
            files,
            files_total: 5678,
            bytes,
            bytes_total: 450 << 20,
            counting,
            jobs: 16,
            errors: 2,
        }
    }

    #[test]
    fn rates_are_over_the_interval_and_over_the_run() {
        let (_, mark) = Line::new(
            &snap(1000, 100 << 20, true),
            Duration::from_secs(60),
            Mark::default(),
        );
        let (line, _) = Line::new(&snap(1300, 130 << 20, true), Duration::from_secs(90), mark);
        assert_eq!(line.files_per_s, 10.0);
        assert_eq!(line.bytes_per_s, 1048576.0);
        assert_eq!(line.files_per_s_overall, 14.4);
        assert_eq!(line.interval_s, 30.0);
        assert_eq!(line.eta_s, None, "no ETA while counting");
        assert_eq!(
            line.text(),
            "elapsed 1:30 | 1,300/5,678+ files, 130.0 MiB/450.0 MiB+ | last 30s: 10 files/s, \
             1.0 MiB/s | overall: 14 files/s, 1.4 MiB/s | counting | jobs 16 | 2 errors"
        );
    }

    #[test]
    fn an_eta_once_the_walk_is_done_from_the_slower_of_files_and_bytes() {
        let (_, mark) = Line::new(
            &snap(1000, 100 << 20, false),
            Duration::from_secs(60),
            Mark::default(),
        );
        let (line, _) = Line::new(&snap(1300, 130 << 20, false), Duration::from_secs(90), mark);
        // 4,378 files left at 10/s: 438 s, longer than 320 MiB at 1 MiB/s.
        assert_eq!(line.eta_s, Some(438.0));
        assert!(line.text().contains(" | ETA 7:18 | "), "{}", line.text());
        // Bytes moved but no file finished (a large file): its bytes give the ETA.
        let (big, _) = Line::new(&snap(1000, 130 << 20, false), Duration::from_secs(90), mark);
        assert_eq!(big.eta_s, Some(320.0));
        // Nothing moved in the interval: no ETA to give.
        let (stuck, _) = Line::new(&snap(1000, 100 << 20, false), Duration::from_secs(90), mark);
        assert!(
            stuck.text().contains(" | ETA unknown | "),
            "{}",
            stuck.text()
        );
    }

    #[test]
    fn json_lines_carry_every_field() {
        let (line, _) = Line::new(
            &snap(10, 0, false),
            Duration::from_millis(200),
            Mark::default(),
        );
        let v: serde_json::Value = serde_json::from_str(&line.json()).unwrap();
        assert_eq!(v["type"], "progress");
        assert_eq!(v["files_done"], 10);
        assert_eq!(v["files_found"], 5678);
        assert_eq!(v["walk_done"], true);
        assert_eq!(v["files_per_s"], 50.0);
        assert_eq!(v["jobs"], 16);
        assert_eq!(v["errors"], 2);
        assert!(
            line.text().contains("last 200ms: 50 files/s"),
            "{}",
            line.text()
        );
    }
}
