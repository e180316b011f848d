//! One `--timeout` clock per client, shared by all its connections and calls.
//!
//! rsync's `--timeout` is an I/O timeout: nothing from the other side for that long
//! ends the run. A deadline per call does not say that once calls are many and
//! retried: a call sent just before the server stopped gives up a timeout later, its
//! retry on a new connection (the kernel still accepts those) waits a timeout more,
//! and each worker's next call as much again; and the calls that give up first tell
//! different stories (one saw silence, the next a connection we closed), so the same
//! server state ended with different exit codes. So the client keeps one clock: when
//! the server last sent anything, and since when every attempt to reach it failed.
//! The first call that finds the server away for `--timeout` decides why ([`Gone`]),
//! once; every call, waiting or new, then fails with that at once, and the whole run
//! ends within the timeout.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use tokio::sync::watch;

use super::error::Gone;

/// When the server was last heard from, and the verdict once it has been away too long.
pub(super) struct Liveness {
    epoch: Instant,
    timeout: Duration,
    /// When the server last sent a record, on any connection (ms since `epoch`).
    heard: AtomicU64,
    /// When the current run of failed attempts began (ms since `epoch`, plus one;
    /// zero: none since the server was last heard from).
    failing: AtomicU64,
    verdict: OnceLock<Gone>,
    decided: watch::Sender<bool>,
}

impl Liveness {
    pub(super) fn new(timeout: Duration) -> Liveness {
        Liveness {
            epoch: Instant::now(),
            timeout,
            heard: AtomicU64::new(0),
            failing: AtomicU64::new(0),
            verdict: OnceLock::new(),
            decided: watch::Sender::new(false),
        }
    }

    pub(super) fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Milliseconds since `epoch` now.
    pub(super) fn now(&self) -> u64 {
        self.epoch.elapsed().as_millis() as u64
    }

    /// The instant `ms` after `epoch`.
    pub(super) fn at(&self, ms: u64) -> Instant {
        self.epoch + Duration::from_millis(ms)
    }

    /// The server sent something: it is there, whatever failed before.
    pub(super) fn heard(&self) {
        self.heard.store(self.now(), Ordering::Relaxed);
        self.failing.store(0, Ordering::Relaxed);
    }

    /// When the server last sent anything (ms since `epoch`).
    pub(super) fn last_heard(&self) -> u64 {
        self.heard.load(Ordering::Relaxed)
    }

    /// The verdict, once there is one.
    pub(super) fn verdict(&self) -> Option<Gone> {
        self.verdict.get().copied()
    }

    /// Gives the server up for `why`, unless it already was (for whatever reason was
    /// found first); returns the verdict.
    pub(super) fn decide(&self, why: Gone) -> Gone {
        let v = *self.verdict.get_or_init(|| why);
        self.decided.send_replace(true);
        v
    }

    /// An attempt to reach the server failed (a connection closed, refused or not
    /// made in time): the verdict when every attempt has failed for the timeout.
    pub(super) fn failed(&self, why: Gone) -> Option<Gone> {
        let now = self.now();
        let since =
            match self
                .failing
                .compare_exchange(0, now + 1, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => now,
                Err(start) => start - 1,
            };
        if now.saturating_sub(since) >= self.timeout.as_millis() as u64 {
            return Some(self.decide(why));
        }
        self.verdict()
    }

    /// When the current run of failed attempts reaches the timeout, if one is under way.
    pub(super) fn failing_until(&self) -> Option<Instant> {
        match self.failing.load(Ordering::Relaxed) {
            0 => None,
            start => Some(self.at(start - 1) + self.timeout),
        }
    }

    /// Returns once there is a verdict.
    pub(super) async fn decided(&self) {
        let mut rx = self.decided.subscribe();
        let _ = rx.wait_for(|&d| d).await;
    }

    /// Sleeps `d` before trying again, but not past the moment the failures so far
    /// reach the timeout (the next attempt then decides), and not past a verdict.
    pub(super) async fn back_off(&self, d: Duration) {
        let mut until = Instant::now() + d;
        if let Some(end) = self.failing_until() {
            until = until.min(end);
        }
        tokio::select! {
            _ = tokio::time::sleep_until(until.into()) => {}
            _ = self.decided() => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_decide_only_once_they_last_the_timeout() {
        let l = Liveness::new(Duration::from_millis(50));
        assert_eq!(l.failed(Gone::Refused), None);
        std::thread::sleep(Duration::from_millis(60));
        assert_eq!(l.failed(Gone::Refused), Some(Gone::Refused));
        // The first reason found stands, for every later call.
        assert_eq!(l.failed(Gone::Silent), Some(Gone::Refused));
        assert_eq!(l.decide(Gone::Silent), Gone::Refused);
    }

    #[test]
    fn hearing_from_the_server_starts_the_failures_over() {
        let l = Liveness::new(Duration::from_millis(50));
        assert_eq!(l.failed(Gone::Refused), None);
        std::thread::sleep(Duration::from_millis(60));
        l.heard();
        assert_eq!(l.failing_until(), None);
        assert_eq!(l.failed(Gone::Refused), None);
        assert_eq!(l.verdict(), None);
    }

    #[test]
    fn back_off_ends_at_the_timeout_and_at_a_verdict() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        let l = Liveness::new(Duration::from_millis(100));
        rt.block_on(async {
            l.failed(Gone::Refused);
            let t = Instant::now();
            l.back_off(Duration::from_secs(10)).await;
            assert!(t.elapsed() < Duration::from_secs(1), "{:?}", t.elapsed());
            assert_eq!(l.failed(Gone::Refused), Some(Gone::Refused));
            let t = Instant::now();
            l.back_off(Duration::from_secs(10)).await;
            assert!(t.elapsed() < Duration::from_millis(50), "{:?}", t.elapsed());
        });
    }
}
