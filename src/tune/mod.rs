//! `--jobs auto`: choosing how many files to keep in flight by measuring.
//!
//! The right concurrency depends on latency, server capacity and file sizes, none of
//! them known in advance, and a wrong guess costs several times the run time: too few
//! jobs leave the wire idle between round trips, too many queue at a saturated server
//! (or at the kernel's per-directory lock) and only add latency.
//!
//! # Algorithm
//! Throughput is measured in *work units* per second (one per finished job plus one per
//! 256 KiB written, so a phase of large files is judged by bytes, not by file count),
//! latency as the mean time a job took. Each measurement *epoch* lasts at least
//! [`EPOCH_MIN`] and [`EPOCH_OPS`] completions (at most [`EPOCH_MAX`]); slow start's
//! epochs need only [`SLOW_START_EPOCH`].
//!
//! 0. **Bounds** ([`Bounds`], from the destination). Never fewer than 1 job, never
//!    more than a ceiling: [`MAX_JOBS`] threads on a mount; on nfs:// twice the RPC
//!    window (4 connections × 64 calls by default: 512). A small file holds one call at
//!    a time, so jobs beyond the window only wait in this process: a few keep the
//!    window full while the client's CPU is busy elsewhere, many cost threads and CPU
//!    (benches/README.md has the measurements behind these rules).
//! 1. **Slow start** (mount). Start at [`AUTO_START`] (64) and double every epoch
//!    while doubling pays: throughput rose by at least [`SLOW_START_GAIN`] (20 %).
//!    Its epochs are one engine tick ([`SLOW_START_EPOCH`]), not [`EPOCH_MIN`]: a
//!    user's run is often one package tree of a second or two, and at 0.3 s an epoch
//!    the climb from 64 to 256 took most of it (a step below the right value costs its
//!    whole epoch at a fraction of the speed). A doubling far below the knee shows
//!    about 2× in any tick; near the knee, where a tick's noise could hide a real
//!    gain, stopping early costs little.
//!    AzCopy keeps a doubling only for ≥ 1.5×; we keep going for less, because a
//!    sublinear gain is what a high-latency link shows once the client's CPU starts to
//!    count. A doubling that gained less than that ends slow start at the better of
//!    the last two values (the doubled one if it still brought ≥ 10 %). nfs:// skips
//!    slow start: its window is a known good value (every call slot busy), which a
//!    slow start from below cannot tell from twice it in 0.3 s on a CPU-bound client.
//!    Without slow start the first epoch, which measures the start-up ramp
//!    (connections, listings, the pipeline filling) rather than the jobs, is a
//!    warm-up, not a reference.
//! 2. **Steady state with probes.** Every probe period the controller tries, in turn,
//!    1.5× the jobs (kept if throughput rose ≥ 5 %: on the nfs:// path the curve often
//!    pays little per step at first and more later, and a higher bar stops at its
//!    foot) and 2/3 of them (kept if throughput stays
//!    within 5 % of the value before the cut and 10 % of the best seen since the last
//!    workload shift, so needless jobs are shed without drifting away from the best).
//!    Probes are judged against a running mean of the epochs spent at the current
//!    value, not the last one, which lowers the noise they are judged on. A kept probe
//!    is followed at once by another in the same direction, so a change of regime is
//!    followed quickly; a cut that follows a cut is judged against the throughput
//!    before the first of them, so cuts that each lose a little do not add up. Once a
//!    probe in each direction has been rejected in a row the value is settled and the
//!    probe period doubles (2 s up to 8 s); one rejected probe alone does not, so a
//!    noisy epoch early in a run does not postpone the next try.
//! 3. **Latency guard** (in the spirit of TCP Vegas and Netflix's Gradient limiter):
//!    when the mean latency is over twice its recent floor (which starts, when slow
//!    start ends, from the latency of the highest value it tried), jobs are queueing rather
//!    than working; the controller tries 2/3 of the jobs and keeps the cut if
//!    throughput stays within 5 %. A cut that loses throughput shows the latency is
//!    the price of the throughput (a busy CPU, say): the floor restarts from it, so
//!    the guard does not try the same losing cut again every other epoch. A kept guard
//!    cut and a workload shift restart the floor too, and only epochs with at least the
//!    current jobs count towards it: a floor from a faster moment (a server directory
//!    still empty) or from fewer jobs would otherwise fire the guard again and again
//!    on a flat curve, each cut losing a little, all the way down.
//! 4. **Workload shift.** When steady throughput moves by more than a third for two
//!    epochs in a row (one is noise on a busy machine), probing restarts at the short
//!    period.
//!
//! The controller does no I/O and reads no clock: the engine feeds it timestamps and
//! counters, which is what lets the unit tests below drive it with a simulated server.

use std::time::Duration;

/// How many files to keep in flight.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Jobs {
    /// Measure and adapt (`--jobs auto`, the default).
    Auto,
    /// A fixed count (`--jobs N`).
    Fixed(usize),
}

/// What the controller did, for `--stats` and `--json`.
#[derive(Clone, Debug, Default)]
pub struct TuneReport {
    /// Jobs at the start.
    pub initial: usize,
    /// Jobs at the end.
    pub final_jobs: usize,
    /// Highest value used.
    pub max: usize,
    /// (seconds since start, jobs) at each change, capped at [`HISTORY_MAX`] entries.
    pub history: Vec<(f64, usize)>,
}

/// A change of the target and the measurement behind it, for `-v`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Change {
    /// The new target.
    pub jobs: usize,
    /// The epoch that decided it: work units per second (a unit is a finished job or
    /// 256 KiB written)…
    pub per_sec: f64,
    /// …and mean seconds per job.
    pub latency: f64,
    /// Which rule moved it.
    pub why: &'static str,
}

impl std::fmt::Display for Change {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "jobs -> {} ({}: {:.0} units/s at {:.2} ms per job)",
            self.jobs,
            self.why,
            self.per_sec,
            self.latency * 1000.0
        )
    }
}

/// Where `--jobs auto` starts on the mount path: enough to hide a millisecond of latency
/// from the first second, few enough not to swamp a small server. (The NFS path starts
/// at its RPC window, see [`Bounds::nfs`].)
pub const AUTO_START: usize = 64;
/// The most jobs nfsync will ever run (threads on the mount path).
pub const MAX_JOBS: usize = 1024;

/// Where `--jobs auto` starts and how far it may go: each destination knows its own.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Bounds {
    /// The first value.
    pub start: usize,
    /// The ceiling.
    pub max: usize,
    /// Whether to double from `start` while doubling pays. Without it the first epoch
    /// is a warm-up and probes take over.
    pub slow_start: bool,
}

impl Bounds {
    /// A mount: the right value is unknown (1 on a local disk, hundreds on EFS), so
    /// slow start from [`AUTO_START`].
    pub const MOUNT: Bounds = Bounds {
        start: AUTO_START,
        max: MAX_JOBS,
        slow_start: true,
    };

    /// nfs:// with `window` calls in flight at most. A small file holds one call at a
    /// time, so `window` jobs fill the wire: start there. Jobs beyond it can only wait
    /// in this process, ready when a slot frees while the client's CPU is busy
    /// elsewhere; up to one window of them may pay, many more only cost threads.
    pub fn nfs(window: usize) -> Bounds {
        let window = window.clamp(1, MAX_JOBS);
        Bounds {
            start: window,
            max: (2 * window).min(MAX_JOBS),
            slow_start: false,
        }
    }
}

/// Shortest epoch.
pub const EPOCH_MIN: Duration = Duration::from_millis(300);
/// Shortest epoch during slow start: one engine tick (100 ms), less a margin so a tick
/// that ends a hair early does not stretch the epoch to two.
pub const SLOW_START_EPOCH: Duration = Duration::from_millis(90);
/// Longest epoch, for phases where jobs finish rarely (huge files).
pub const EPOCH_MAX: Duration = Duration::from_secs(3);
/// Completions an epoch needs before it counts (unless it reached [`EPOCH_MAX`]).
pub const EPOCH_OPS: u64 = 40;
/// History entries kept for the report.
pub const HISTORY_MAX: usize = 64;
/// The throughput gain (as a fraction) a doubling must bring for slow start to go on.
pub const SLOW_START_GAIN: f64 = 0.2;
/// Bytes that count as one unit of work.
const BYTES_PER_UNIT: f64 = 256.0 * 1024.0;

const PROBE_MIN: Duration = Duration::from_secs(2);
const PROBE_MAX: Duration = Duration::from_secs(8);
/// How many epochs the latency floor remembers.
const FLOOR_EPOCHS: usize = 12;

#[derive(Clone, Copy, Debug)]
struct Sample {
    jobs: usize,
    tput: f64,
    lat: f64,
}

#[derive(Clone, Copy, Debug)]
enum Phase {
    /// The first epoch without slow start: not measured.
    WarmUp,
    SlowStart {
        prev: Option<Sample>,
    },
    Steady,
    /// Trying `trial` jobs against `base`; `guard` when the latency guard cut.
    Probe {
        base: Sample,
        up: bool,
        guard: bool,
    },
}

/// Decides the concurrency from completions and latencies.
#[derive(Debug)]
pub struct Controller {
    auto: bool,
    jobs: usize,
    /// The most jobs `auto` may choose.
    max: usize,
    phase: Phase,
    /// The current epoch's start and sums.
    epoch_start: Duration,
    epoch_ops: u64,
    epoch_bytes: u64,
    epoch_busy: Duration,
    /// Recent epochs' jobs and mean latencies (seconds), for the floor.
    recent_lat: Vec<(usize, f64)>,
    /// Steady-state reference.
    base: Option<Sample>,
    /// Best steady throughput since the last workload shift: cuts must stay near it.
    best: f64,
    /// Direction of the next scheduled probe (they alternate).
    probe_up_next: bool,
    /// The direction of a throughput shift seen in the last epoch, waiting for a second.
    shift_seen: Option<bool>,
    /// Scheduled probes rejected in a row; two (one each way) mean "settled".
    rejected: u8,
    /// Why the last decision moved the target.
    why: &'static str,
    probe_every: Duration,
    next_probe: Duration,
    report: TuneReport,
}

impl Controller {
    /// A controller pinned to `--jobs N`, or adaptive for `auto` starting at `start`.
    pub fn new(mode: Jobs, bounds: Bounds) -> Controller {
        let max = bounds.max.clamp(1, MAX_JOBS);
        let (auto, jobs) = match mode {
            Jobs::Auto => (true, bounds.start.clamp(1, max)),
            Jobs::Fixed(n) => (false, n.clamp(1, MAX_JOBS)),
        };
        Controller {
            auto,
            jobs,
            max,
            phase: if bounds.slow_start {
                Phase::SlowStart { prev: None }
            } else {
                Phase::WarmUp
            },
            epoch_start: Duration::ZERO,
            epoch_ops: 0,
            epoch_bytes: 0,
            epoch_busy: Duration::ZERO,
            recent_lat: Vec::new(),
            base: None,
            best: 0.0,
            probe_up_next: true,
            shift_seen: None,
            rejected: 0,
            why: "",
            probe_every: PROBE_MIN,
            next_probe: Duration::ZERO,
            report: TuneReport {
                initial: jobs,
                final_jobs: jobs,
                max: jobs,
                history: vec![(0.0, jobs)],
            },
        }
    }

    /// Whether the controller may change the value.
    pub fn is_auto(&self) -> bool {
        self.auto
    }

    /// The current target.
    pub fn jobs(&self) -> usize {
        self.jobs
    }

    /// One measurement interval ended at `now` (time since the run started): `completed`
    /// jobs finished, writing `bytes`, and their latencies summed to `busy`.
    /// Returns the new target, and why, if it changed.
    pub fn on_interval(
        &mut self,
        now: Duration,
        completed: u64,
        bytes: u64,
        busy: Duration,
    ) -> Option<Change> {
        if !self.auto {
            return None;
        }
        self.epoch_ops += completed;
        self.epoch_bytes += bytes;
        self.epoch_busy += busy;
        let elapsed = now.saturating_sub(self.epoch_start);
        let min = match self.phase {
            Phase::SlowStart { .. } => SLOW_START_EPOCH,
            _ => EPOCH_MIN,
        };
        let enough = elapsed >= min && self.epoch_ops >= EPOCH_OPS;
        if !(enough || (elapsed >= EPOCH_MAX && self.epoch_ops > 0)) {
            return None;
        }
        let work = self.epoch_ops as f64 + self.epoch_bytes as f64 / BYTES_PER_UNIT;
        let sample = Sample {
            jobs: self.jobs,
            tput: work / elapsed.as_secs_f64(),
            lat: self.epoch_busy.as_secs_f64() / self.epoch_ops as f64,
        };
        self.epoch_start = now;
        self.epoch_ops = 0;
        self.epoch_bytes = 0;
        self.epoch_busy = Duration::ZERO;
        self.recent_lat.push((sample.jobs, sample.lat));
        if self.recent_lat.len() > FLOOR_EPOCHS {
            self.recent_lat.remove(0);
        }
        let next = self.decide(now, sample);
        let why = self.why;
        self.set(now, next).map(|jobs| Change {
            jobs,
            per_sec: sample.tput,
            latency: sample.lat,
            why,
        })
    }

    /// The lowest recent latency at `jobs` or more. Epochs with fewer jobs do not
    /// count: on a flat curve latency grows with the jobs (Little's law), so a floor
    /// taken at 113 jobs is under half the latency of 256 jobs with no queueing at all.
    fn floor(&self, jobs: usize) -> f64 {
        self.recent_lat
            .iter()
            .filter(|e| e.0 >= jobs)
            .fold(f64::INFINITY, |m, e| m.min(e.1))
    }

    /// Restarts the floor from `s`.
    fn renew_floor(&mut self, s: Sample) {
        self.recent_lat.clear();
        self.recent_lat.push((s.jobs, s.lat));
    }

    fn decide(&mut self, now: Duration, s: Sample) -> usize {
        match self.phase {
            Phase::WarmUp => {
                // This first epoch measured the start-up ramp (listing, connections,
                // the pipeline filling), not the jobs, and would make a low reference
                // that any cut looks good against. The next epoch is the first one.
                self.recent_lat.clear();
                self.phase = Phase::Steady;
                self.next_probe = now + PROBE_MIN;
                s.jobs
            }
            Phase::SlowStart { prev } => {
                if let Some(p) = prev {
                    // NaN (no throughput at all) counts as no gain.
                    let paid = s.tput >= p.tput * (1.0 + SLOW_START_GAIN);
                    if !paid {
                        // The last doubling did not pay: settle on the better of the two.
                        let at = if s.tput > p.tput * 1.1 { s } else { p };
                        self.settle(now, at, s);
                        self.why = "slow start ends";
                        return at.jobs;
                    }
                }
                if s.jobs >= self.max {
                    self.settle(now, s, s);
                    return s.jobs;
                }
                self.phase = Phase::SlowStart { prev: Some(s) };
                self.why = "slow start";
                s.jobs * 2
            }
            Phase::Probe { base, up, guard } => {
                let kept = if up {
                    s.tput >= base.tput * 1.05
                } else {
                    s.tput >= base.tput * 0.95 && s.tput >= self.best * 0.9
                };
                if kept {
                    self.base = Some(s);
                    self.best = self.best.max(s.tput);
                    self.phase = Phase::Steady;
                    self.rejected = 0;
                    // Keep moving the same way while it pays.
                    self.probe_every = PROBE_MIN;
                    self.next_probe = now + self.probe_every;
                    self.why = "probe kept";
                    if guard {
                        // The floor that fired the guard is history now; one stale
                        // floor (taken while the pipeline filled, or a directory on the
                        // server was still small) may cost one cut, not a walk down.
                        self.renew_floor(s);
                    }
                    // A cut is judged against the throughput before the first cut of a
                    // run of them, not the last: each cut may lose up to 5 % to noise,
                    // and several in a row would otherwise walk down a flat curve
                    // and off its edge.
                    let reference = if up {
                        s
                    } else {
                        Sample {
                            tput: s.tput.max(base.tput),
                            ..s
                        }
                    };
                    self.start_probe(reference, up, false)
                } else {
                    self.phase = Phase::Steady;
                    if guard {
                        // The latency bought throughput: it is the price of these jobs,
                        // not queueing. Measure the floor from here, or the guard would
                        // try the same losing cut every other epoch.
                        self.renew_floor(base);
                    } else {
                        self.rejected += 1;
                        if self.rejected >= 2 {
                            self.probe_every = (self.probe_every * 2).min(PROBE_MAX);
                        }
                    }
                    self.next_probe = now + self.probe_every;
                    self.why = "probe undone";
                    base.jobs
                }
            }
            Phase::Steady => {
                let base = self.base.unwrap_or(s);
                // A workload shift: measure afresh and probe soon. Two epochs in a row
                // must agree, so one noisy epoch on a busy machine does not reset it.
                let shift = if s.tput > base.tput * 1.33 {
                    Some(true)
                } else if s.tput < base.tput * 0.67 {
                    Some(false)
                } else {
                    None
                };
                if shift.is_some() && shift == self.shift_seen {
                    self.probe_every = PROBE_MIN;
                    self.next_probe = now;
                    self.probe_up_next = true;
                    self.rejected = 0;
                    self.best = 0.0;
                    self.base = Some(s);
                    self.shift_seen = None;
                    // Latencies from before the shift say nothing about queueing now.
                    self.renew_floor(s);
                } else {
                    self.shift_seen = shift;
                    // The reference is a running mean of the epochs at this value (each
                    // new one weighs half), not the last epoch alone: probes are judged
                    // against something less noisy.
                    if shift.is_none() && base.jobs == s.jobs {
                        self.base = Some(Sample {
                            jobs: s.jobs,
                            tput: (base.tput + s.tput) / 2.0,
                            lat: (base.lat + s.lat) / 2.0,
                        });
                    } else if shift.is_none() {
                        self.base = Some(s);
                    }
                }
                let s = self.base.unwrap_or(s);
                self.best = self.best.max(s.tput);
                if s.jobs > 1 && s.lat > 2.0 * self.floor(s.jobs) {
                    self.why = "latency guard";
                    return self.start_probe(s, false, true);
                }
                if now >= self.next_probe {
                    let up = self.probe_up_next;
                    self.probe_up_next = !up;
                    self.why = if up { "probe up" } else { "probe down" };
                    return self.start_probe(s, up, false);
                }
                s.jobs
            }
        }
    }

    /// Ends slow start at `at`; `last` is the epoch just measured (the higher jobs).
    fn settle(&mut self, now: Duration, at: Sample, last: Sample) {
        // Slow start raised the latency with the jobs (and its first epoch, with the
        // pipeline still filling, is unusually fast): the guard's floor starts from the
        // latency of the highest value tried, so it only reacts to queueing that builds
        // up later, not to the price of the jobs slow start chose.
        self.renew_floor(last);
        self.base = Some(at);
        self.best = at.tput;
        self.phase = Phase::Steady;
        self.rejected = 0;
        self.probe_every = PROBE_MIN;
        self.next_probe = now + PROBE_MIN;
    }

    fn start_probe(&mut self, base: Sample, up: bool, guard: bool) -> usize {
        self.shift_seen = None;
        let trial = if up {
            (base.jobs * 3).div_ceil(2).max(base.jobs + 1).min(self.max)
        } else {
            (base.jobs * 2 / 3).max(1)
        };
        if trial == base.jobs {
            return base.jobs;
        }
        self.phase = Phase::Probe { base, up, guard };
        trial
    }

    fn set(&mut self, now: Duration, jobs: usize) -> Option<usize> {
        let jobs = jobs.clamp(1, self.max);
        if jobs == self.jobs {
            return None;
        }
        self.jobs = jobs;
        self.report.max = self.report.max.max(jobs);
        if self.report.history.len() < HISTORY_MAX {
            self.report
                .history
                .push(((now.as_secs_f64() * 1000.0).round() / 1000.0, jobs));
        }
        Some(jobs)
    }

    /// What happened.
    pub fn report(&self) -> TuneReport {
        let mut r = self.report.clone();
        r.final_jobs = self.jobs;
        r
    }
}

#[cfg(test)]
mod tests;
