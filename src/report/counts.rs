//! What a run counts: the live counters every worker bumps, and the summary made of
//! them at the end (one line, `--stats`, `--json`).

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::Relaxed, Ordering::SeqCst};

use serde::Serialize;

use super::stats::KindCounts;
use crate::exit::ExitCode;
use crate::meta::{Kind, Meta};
use crate::tune::TuneReport;

/// Live counters, shared by all workers.
#[derive(Default, Debug)]
pub struct Stats {
    /// Non-directory source entries seen.
    pub files_scanned: AtomicU64,
    /// Source directories seen.
    pub dirs_scanned: AtomicU64,
    /// Bytes of regular files seen.
    pub bytes_scanned: AtomicU64,
    /// Regular files whose content was written.
    pub files_copied: AtomicU64,
    /// Symlinks, hard links and special files created.
    pub links_created: AtomicU64,
    /// Entries already up to date.
    pub files_skipped: AtomicU64,
    /// Entries whose attributes only were fixed.
    pub attrs_updated: AtomicU64,
    /// Destination entries removed (`--delete`, or in the way of another type).
    pub files_deleted: AtomicU64,
    /// Directories created.
    pub dirs_created: AtomicU64,
    /// Bytes written (of the files finished).
    pub bytes_copied: AtomicU64,
    /// Bytes written of the files under way (progress only).
    pub bytes_in_flight: AtomicU64,
    /// Entries that failed (each printed).
    pub errors: AtomicU64,
    /// Source entries that vanished during the run.
    pub vanished: AtomicU64,
    /// Special files skipped for lack of `--specials`/`--devices`.
    pub specials_skipped: AtomicU64,
    /// Deletions `--max-delete` did not allow.
    pub deletes_skipped: AtomicU64,
    /// Entries given the nearest time the destination can store instead of their own.
    pub times_clamped: AtomicU64,
    /// Source directories whose listing is done (or failed): with `dirs_scanned` and
    /// `roots_planned`, whether the walk can still find more.
    pub dirs_listed: AtomicU64,
    /// The operands have been listed and their children queued.
    pub roots_planned: AtomicBool,
    // rsync's --stats
    /// Non-directory entries found, by rsync's types (directories: `dirs_scanned`).
    pub kinds_scanned: KindCounts,
    /// The target lengths of the symlinks found (rsync counts them in the total size).
    pub link_bytes: AtomicU64,
    /// `--mpi`: directories found but not walked, every unit in them being taken.
    pub dirs_not_walked: AtomicU64,
    /// The jobs allowed at once now (what `--jobs auto` last chose).
    pub jobs: AtomicUsize,
}

impl Stats {
    /// Adds one to a counter.
    pub fn bump(c: &AtomicU64) {
        c.fetch_add(1, Relaxed);
    }

    /// Counts a non-directory entry found in the source by its type, for `--stats`.
    pub fn found(&self, m: &Meta) {
        self.kinds_scanned.add(m.kind);
        if m.kind == Kind::Symlink {
            self.link_bytes.fetch_add(m.size, Relaxed);
        }
    }

    /// What rsync's `Number of files` counts: each type found, directories included.
    pub fn found_by_kind(&self) -> [u64; 5] {
        let mut k = self.kinds_scanned.get();
        k[1] = self.dirs_scanned.load(Relaxed);
        k
    }

    /// Whether every directory found has been listed: the totals are final.
    ///
    /// A directory is counted as found before its parent's listing is counted as done,
    /// so reading the listed count first and then the found count can only see them
    /// equal when nothing is left to list.
    pub fn walk_finished(&self) -> bool {
        if !self.roots_planned.load(SeqCst) {
            return false;
        }
        let listed = self.dirs_listed.load(SeqCst);
        listed == self.dirs_scanned.load(SeqCst)
    }
}

/// The end-of-run totals, as printed by `--json`.
#[derive(Debug, Serialize)]
pub struct Summary {
    pub files_scanned: u64,
    pub dirs_scanned: u64,
    pub bytes_scanned: u64,
    pub files_copied: u64,
    pub links_created: u64,
    pub files_skipped: u64,
    pub attrs_updated: u64,
    pub files_deleted: u64,
    pub dirs_created: u64,
    pub bytes_copied: u64,
    pub errors: u64,
    pub vanished: u64,
    pub specials_skipped: u64,
    pub times_clamped: u64,
    pub deletes_skipped: u64,
    pub elapsed_s: f64,
    /// Concurrency at the end of the run (the fixed value with `--jobs N`).
    pub jobs: usize,
    pub jobs_initial: usize,
    pub jobs_final: usize,
    pub jobs_max: usize,
    /// Controller decisions: (seconds since start, jobs).
    pub jobs_history: Vec<(f64, usize)>,
    pub dry_run: bool,
    pub interrupted: bool,
    pub exit_code: ExitCode,
    /// The NFS version spoken ("3" or "4.1"; absent on the mount path).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nfs_version: Option<&'static str>,
    /// NFS calls sent (procedures on NFSv3, COMPOUNDs on NFSv4.1), retries included.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rpcs: Option<u64>,
    /// Why the run stopped early (exit 10, 11 or 30), so scripts see how far it got.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fatal: Option<String>,
    /// `--shard`: the share these totals are of ("K/N"), so a job script can add them up.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shard: Option<String>,
    /// `--mpi`: how many ranks these totals add up (rank 0's report).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ranks: Option<u64>,
    /// `--mpi`: what each rank copied, so a job script sees how the work was shared.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub per_rank: Option<Vec<RankTotals>>,
    /// Entries found by kind, for `--stats`' "Number of files" line.
    #[serde(skip)]
    pub found_by_kind: [u64; 5],
    /// Bytes of the symlinks found (rsync counts them in "Total file size").
    #[serde(skip)]
    pub link_bytes: u64,
    /// `--mpi`: directories found but not walked (see [`Stats::dirs_not_walked`]).
    #[serde(skip)]
    pub dirs_not_walked: u64,
}

/// One rank's part of a `--mpi` run (the finalize step is rank 0's, not in it).
#[derive(Clone, Debug, Serialize)]
pub struct RankTotals {
    pub rank: u64,
    pub files_copied: u64,
    pub links_created: u64,
    pub bytes_copied: u64,
    /// The directories it walked: fewer than the tree's when another rank walked all
    /// of it first.
    pub dirs_walked: u64,
    pub elapsed_s: f64,
}

impl Summary {
    /// Snapshot of the counters.
    pub fn new(s: &Stats, elapsed_s: f64, tune: TuneReport, dry_run: bool) -> Summary {
        let g = |c: &AtomicU64| c.load(Relaxed);
        Summary {
            files_scanned: g(&s.files_scanned),
            dirs_scanned: g(&s.dirs_scanned),
            bytes_scanned: g(&s.bytes_scanned),
            files_copied: g(&s.files_copied),
            links_created: g(&s.links_created),
            files_skipped: g(&s.files_skipped),
            attrs_updated: g(&s.attrs_updated),
            files_deleted: g(&s.files_deleted),
            dirs_created: g(&s.dirs_created),
            bytes_copied: g(&s.bytes_copied),
            errors: g(&s.errors),
            vanished: g(&s.vanished),
            specials_skipped: g(&s.specials_skipped),
            times_clamped: g(&s.times_clamped),
            deletes_skipped: g(&s.deletes_skipped),
            elapsed_s,
            jobs: tune.final_jobs,
            jobs_initial: tune.initial,
            jobs_final: tune.final_jobs,
            jobs_max: tune.max,
            jobs_history: tune.history,
            dry_run,
            interrupted: false,
            exit_code: ExitCode::Success,
            nfs_version: None,
            rpcs: None,
            fatal: None,
            shard: None,
            ranks: None,
            per_rank: None,
            found_by_kind: s.found_by_kind(),
            link_bytes: g(&s.link_bytes),
            dirs_not_walked: g(&s.dirs_not_walked),
        }
    }

    /// The summary of a run that ended before it copied anything (the server could not
    /// be reached, DEST is unusable): zero counts, the exit code and why.
    pub fn failed(f: &crate::exit::Error, dry_run: bool) -> Summary {
        Summary {
            exit_code: f.exit_code(),
            fatal: Some(format!("{f:#}")),
            ..Summary::new(&Stats::default(), 0.0, TuneReport::default(), dry_run)
        }
    }

    /// The one-line summary printed at the end unless `-q`.
    pub fn one_line(&self) -> String {
        let secs = self.elapsed_s.max(1e-9);
        let files = self.files_copied + self.links_created;
        // Big files: their bytes say how fast it went (one 1 GiB file is not
        // "0 files/s").
        let rate = if self.bytes_copied >= BIG_FILE.saturating_mul(files.max(1)) {
            format!(
                "{}/s",
                indicatif::HumanBytes((self.bytes_copied as f64 / secs) as u64)
            )
        } else {
            format!("{:.0} files/s", files as f64 / secs)
        };
        format!(
            "{} files copied ({}), {} up to date, {} deleted, {} dirs created, {} errors in {:.2}s ({rate}, jobs {}){}",
            files,
            indicatif::HumanBytes(self.bytes_copied),
            self.files_skipped + self.attrs_updated,
            self.files_deleted,
            self.dirs_created,
            self.errors,
            self.elapsed_s,
            self.jobs,
            if self.dry_run { " (DRY RUN)" } else { "" },
        )
    }
}

/// The mean size of a copied file from which the summary gives bytes per second.
const BIG_FILE: u64 = 1 << 20;
