//! `--jobs auto`: choosing how many files to keep in flight by measuring.
//!
//! (Placeholder controller: a fixed starting value until the adaptive one lands.)

use std::time::Duration;

use crate::config::Jobs;

/// What the controller did, for `--stats` and `--json`.
#[derive(Clone, Debug, Default)]
pub struct TuneReport {
    /// Jobs at the start.
    pub initial: usize,
    /// Jobs at the end.
    pub final_jobs: usize,
    /// Highest value used.
    pub max: usize,
    /// (seconds since start, jobs) at each change.
    pub history: Vec<(f64, usize)>,
}

/// Default when `--jobs auto` starts.
pub const AUTO_START: usize = 64;
/// The most workers nfsync will ever run.
pub const MAX_JOBS: usize = 1024;

/// Decides the concurrency from completions and latencies.
#[derive(Debug)]
pub struct Controller {
    auto: bool,
    jobs: usize,
    report: TuneReport,
}

impl Controller {
    /// A controller pinned to `--jobs N`, or adaptive for `auto`.
    pub fn new(mode: Jobs) -> Controller {
        let (auto, jobs) = match mode {
            Jobs::Auto => (true, AUTO_START),
            Jobs::Fixed(n) => (false, n.clamp(1, MAX_JOBS)),
        };
        Controller {
            auto,
            jobs,
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

    /// The upper bound of workers to spawn.
    pub fn ceiling(&self) -> usize {
        if self.auto { MAX_JOBS } else { self.jobs }
    }

    /// One measurement interval ended at `now` with `completed` operations whose
    /// latencies summed to `busy`. Returns the new target if it changed.
    pub fn on_interval(
        &mut self,
        _now: Duration,
        _completed: u64,
        _busy: Duration,
    ) -> Option<usize> {
        None
    }

    /// What happened.
    pub fn report(&self) -> TuneReport {
        let mut r = self.report.clone();
        r.final_jobs = self.jobs;
        r
    }
}
