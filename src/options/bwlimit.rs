//! `--bwlimit`: one rate for the whole run, shared by every worker.
//!
//! rsync limits each transfer; nfsync moves many files at once, so a per-file limit
//! would multiply the rate by the job count. Every byte about to be written takes its
//! slot on one shared clock instead: a writer asks for `n` bytes, the clock advances by
//! `n / rate`, and the writer sleeps until its slot has passed. No burst is allowed
//! beyond one chunk, so the run's elapsed time is at least `bytes / rate`.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// The largest piece a limited writer should ask for at once: small enough that the
/// rate is smooth over a second even at a few KiB/s.
pub const CHUNK: u64 = 64 << 10;

/// How often a paced writer looks at the stop flag while it waits for its slot.
const STOP_POLL: Duration = Duration::from_millis(20);

/// A shared byte rate.
#[derive(Debug)]
pub struct RateLimit {
    /// Bytes per second (never 0: no limit is no `RateLimit`).
    rate: u64,
    /// When the bytes granted so far will have been sent at `rate`.
    next: Mutex<Option<Instant>>,
}

impl RateLimit {
    /// A limit of `rate` bytes per second; `None` for 0 (rsync's "no limit").
    pub fn new(rate: u64) -> Option<RateLimit> {
        (rate > 0).then(|| RateLimit {
            rate,
            next: Mutex::new(None),
        })
    }

    /// Waits until `bytes` more may be written; `false`, at once, when `stop` is raised
    /// meanwhile: at a low rate a slot can be minutes away, and Ctrl-C must not wait
    /// for it.
    pub fn take(&self, bytes: u64, stop: Option<&AtomicBool>) -> bool {
        let now = Instant::now();
        let until = {
            let mut next = self.next.lock().unwrap_or_else(|p| p.into_inner());
            // Time not used (nothing was written) is not saved up for a burst later.
            let start = next.filter(|&n| n > now).unwrap_or(now);
            let until = start + Duration::from_secs_f64(bytes as f64 / self.rate as f64);
            *next = Some(until);
            until
        };
        let stopped = || stop.is_some_and(|s| s.load(Ordering::Relaxed));
        loop {
            let left = until.saturating_duration_since(Instant::now());
            if stopped() {
                return false;
            }
            if left.is_zero() {
                return true;
            }
            std::thread::sleep(left.min(STOP_POLL));
        }
    }
}

/// rsync's `--bwlimit` value: KiB per second unless a suffix says otherwise (`1.5m`,
/// `100KB`, `500b`), 0 for no limit.
pub fn parse_rate(s: &str) -> Result<u64, String> {
    let unitless = s.ends_with(|c: char| c.is_ascii_digit() || c == '.')
        && !s.ends_with("+1")
        && !s.ends_with("-1");
    if unitless {
        crate::report::units::parse_size(&format!("{s}K"))
    } else {
        crate::report::units::parse_size(s)
    }
    .map_err(|_| format!("invalid rate {s:?} (KiB/s, or with a suffix: 500K, 1.5M, 2MB)"))
    .and_then(|r| match r {
        // rsync's floor: below it its pacing would not mean anything.
        1..512 => Err(format!(
            "--bwlimit={s} is too small (min: 512 or 0 for unlimited)"
        )),
        r => Ok(r),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_default_to_kib() {
        assert_eq!(parse_rate("1000"), Ok(1_024_000));
        assert_eq!(parse_rate("1.5m"), Ok(1_572_864));
        assert_eq!(parse_rate("100KB"), Ok(100_000));
        assert_eq!(parse_rate("0"), Ok(0));
        assert!(parse_rate("fast").is_err());
        assert!(parse_rate("100b").is_err());
        assert_eq!(parse_rate("512b"), Ok(512));
        assert!(RateLimit::new(0).is_none());
    }

    #[test]
    fn the_rate_is_shared_by_all_writers() {
        let l = RateLimit::new(1_000_000).unwrap();
        let start = Instant::now();
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for _ in 0..5 {
                        assert!(l.take(10_000, None));
                    }
                });
            }
        });
        // 200 KB at 1 MB/s.
        assert!(
            start.elapsed() >= Duration::from_millis(190),
            "{:?}",
            start.elapsed()
        );
    }

    #[test]
    fn a_stop_ends_the_wait_for_a_slot() {
        // 1 MB at 512 B/s: a slot half an hour away.
        let l = RateLimit::new(512).unwrap();
        let stop = AtomicBool::new(false);
        let start = Instant::now();
        std::thread::scope(|s| {
            s.spawn(|| {
                std::thread::sleep(Duration::from_millis(100));
                stop.store(true, Ordering::Relaxed);
            });
            assert!(!l.take(1_000_000, Some(&stop)));
        });
        assert!(
            start.elapsed() < Duration::from_secs(1),
            "{:?}",
            start.elapsed()
        );
    }
}
