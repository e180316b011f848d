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

use std::pin::pin;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use tokio::sync::watch;

use super::error::Gone;

/// How many timeouts one call may take while the server keeps answering (a NULL on
/// the same connection, if nothing else).
const SLOW_CALL_LIMIT: u64 = 20;

/// How waiting for one reply ended.
pub(super) enum Waited<T> {
    /// The reply (or the connection's end).
    Reply(T),
    /// Nothing from the server for the timeout: given up on, for this reason.
    Gone(Gone),
    /// Nothing on this connection for the timeout, while others were answered.
    ConnSilent,
    /// The server answers, but not this call, for [`SLOW_CALL_LIMIT`] timeouts.
    TooSlow,
}

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

    /// Milliseconds since `epoch` now.
    pub(super) fn now(&self) -> u64 {
        self.epoch.elapsed().as_millis() as u64
    }

    /// The instant `ms` after `epoch`.
    fn at(&self, ms: u64) -> Instant {
        self.epoch + Duration::from_millis(ms)
    }

    /// The server sent something: it is there, whatever failed before.
    pub(super) fn heard(&self) {
        self.heard.store(self.now(), Ordering::Relaxed);
        // Read first: every reply comes here, a failure seldom.
        if self.failing.load(Ordering::Relaxed) != 0 {
            self.failing.store(0, Ordering::Relaxed);
        }
    }

    /// When the server last sent anything (ms since `epoch`).
    fn last_heard(&self) -> u64 {
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

    /// Waits for `reply`, a call's on a connection whose last record arrived at
    /// `conn_heard`, as long as the server is there. A call may legitimately take long
    /// (a COMMIT of a big file on a slow disk): while anything comes back on its
    /// connection it is waited for, up to [`SLOW_CALL_LIMIT`] timeouts; after half a
    /// timeout of quiet there, `probe` sends a NULL to ask (one per half timeout, as
    /// `probed` keeps). Nothing from the server at all, on any connection, for a
    /// timeout since the call went out gives the server up.
    pub(super) async fn wait_reply<F: Future>(
        &self,
        reply: F,
        conn_heard: &AtomicU64,
        probed: &AtomicU64,
        probe: impl Fn(),
        resend: impl Fn(),
    ) -> Waited<F::Output> {
        let mut reply = pin!(reply);
        let t = self.timeout.as_millis().min(u128::from(u64::MAX / 64)) as u64;
        let sent = self.now();
        let mut last_sent = sent;
        loop {
            let now = self.now();
            if now - last_sent >= t {
                resend();
                last_sent = now;
            }
            let quiet = now.saturating_sub(self.last_heard().max(sent));
            let conn_quiet = now.saturating_sub(conn_heard.load(Ordering::Relaxed).max(sent));
            if quiet >= t {
                return Waited::Gone(self.decide(Gone::Silent));
            }
            if conn_quiet >= t {
                return Waited::ConnSilent;
            }
            if now - sent >= t.saturating_mul(SLOW_CALL_LIMIT) {
                return Waited::TooSlow;
            }
            let mut wake = (now - quiet + t)
                .min(now - conn_quiet + t)
                .min(last_sent + t);
            if conn_quiet < t / 2 {
                wake = wake.min(now - conn_quiet + t / 2);
            } else {
                let last = probed.load(Ordering::Relaxed);
                if (last == 0 || now - last.min(now) >= t / 2)
                    && probed
                        .compare_exchange(last, now.max(1), Ordering::Relaxed, Ordering::Relaxed)
                        .is_ok()
                {
                    probe();
                }
            }
            tokio::select! {
                r = &mut reply => return Waited::Reply(r),
                _ = tokio::time::sleep_until(self.at(wake).into()) => {}
                _ = self.decided() => {
                    return Waited::Gone(self.verdict().unwrap_or(Gone::Silent));
                }
            }
        }
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

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap()
    }

    /// A call on a stopped server gives the server up a timeout after it went out,
    /// and then a call waiting elsewhere, and one that starts later, at once.
    #[test]
    fn a_silent_server_is_given_up_once_for_every_call() {
        let l = Liveness::new(Duration::from_millis(400));
        let (heard, probed) = (AtomicU64::new(0), AtomicU64::new(0));
        let probes = AtomicU64::new(0);
        let probe = || {
            probes.fetch_add(1, Ordering::Relaxed);
        };
        runtime().block_on(async {
            let t = Instant::now();
            let never = std::future::pending::<()>();
            let other = async {
                tokio::time::sleep(Duration::from_millis(300)).await;
                let w = l.wait_reply(std::future::pending::<()>(), &heard, &probed, || {}, || {});
                matches!(w.await, Waited::Gone(Gone::Silent))
            };
            let (first, other) =
                tokio::join!(l.wait_reply(never, &heard, &probed, probe, || {}), other);
            assert!(matches!(first, Waited::Gone(Gone::Silent)));
            assert!(other, "the later call ends with the first");
            let took = t.elapsed();
            assert!(took >= Duration::from_millis(400), "{took:?}");
            // Not at 700 ms, the later call's own timeout.
            assert!(took < Duration::from_millis(650), "{took:?}");
            let late = l.wait_reply(std::future::pending::<()>(), &heard, &probed, || {}, || {});
            assert!(matches!(late.await, Waited::Gone(Gone::Silent)));
        });
        assert_eq!(
            probes.load(Ordering::Relaxed),
            1,
            "one NULL after half the timeout"
        );
    }

    /// A connection that stays quiet while the server answers on others is left (its
    /// calls go elsewhere); the server is not given up.
    #[test]
    fn a_quiet_connection_is_left_while_others_answer() {
        let l = Liveness::new(Duration::from_millis(200));
        let (heard, probed) = (AtomicU64::new(0), AtomicU64::new(0));
        runtime().block_on(async {
            let others = async {
                for _ in 0..6 {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    l.heard();
                }
            };
            let never = std::future::pending::<()>();
            let (w, ()) = tokio::join!(l.wait_reply(never, &heard, &probed, || {}, || {}), others);
            assert!(matches!(w, Waited::ConnSilent));
        });
        assert_eq!(l.verdict(), None);
    }

    /// A slow call whose connection answers the NULLs is waited for past the timeout.
    #[test]
    fn a_slow_call_is_waited_for_while_its_connection_answers() {
        let l = Liveness::new(Duration::from_millis(100));
        let (heard, probed) = (AtomicU64::new(0), AtomicU64::new(0));
        let answer = || {
            heard.store(l.now(), Ordering::Relaxed);
            l.heard();
        };
        let resent = AtomicU64::new(0);
        let resend = || {
            resent.fetch_add(1, Ordering::Relaxed);
        };
        runtime().block_on(async {
            let slow = tokio::time::sleep(Duration::from_millis(350));
            let w = l.wait_reply(slow, &heard, &probed, answer, resend).await;
            assert!(matches!(w, Waited::Reply(())));
        });
        assert_eq!(l.verdict(), None);
        // Sent again after each timeout without its reply (100, 200, 300 ms): a
        // request the server dropped is not waited for in vain.
        let n = resent.load(Ordering::Relaxed);
        assert!((2..=4).contains(&n), "sent again {n} times in 350 ms");
    }

    #[test]
    fn back_off_ends_at_the_timeout_and_at_a_verdict() {
        let l = Liveness::new(Duration::from_millis(100));
        runtime().block_on(async {
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
