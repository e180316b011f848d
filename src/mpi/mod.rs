//! `--mpi` (feature `mpi`): `mpirun -n N nfsync --mpi SRC DEST`.
//!
//! Every rank walks the whole tree and takes its work as it goes: a directory's
//! files come in units, and each unit goes to the first rank that asks rank 0 for it
//! ([`crate::shard::claim`], [`claims`]). A rank on a slower client or link asks less
//! often and so copies less; none waits for another until all are done. This is
//! sharing by claims rather than libcircle's queues of directories stolen between
//! ranks (mpifileutils' dsync): with every rank walking the tree, every option that
//! depends on the path from the top (filters merged per directory, `-x`, `-R`, the
//! basis directories) works as in one run, and what moves between ranks is the right
//! to copy a unit, one small message per directory.
//!
//! When all are done (a barrier), the ranks add up their totals, and rank 0 runs the
//! finalize step — the same sync without a share, which sets directory attributes and
//! copies whatever no rank did — and reports the totals of all ranks (`ranks: N`,
//! and each rank's part in `per_rank`).
//!
//! An MPI library without `MPI_THREAD_MULTIPLE` (the ranks' workers ask at once) gets
//! the static deal of `--shard` instead, said once by rank 0.

mod claims;

use std::sync::Arc;
use std::time::Instant;

use mpi::Threading;
use mpi::collective::SystemOperation;
use mpi::traits::{Communicator, CommunicatorCollectives, Root};

use crate::config::Config;
use crate::exit::{Error, ExitCode};
use crate::report::{RankTotals, Summary};
use crate::shard::Shard;
use crate::shard::claim::{Claims, Ledger};

/// Runs `sync` as this rank's share, then (rank 0) the finalize step. Returns the
/// summary this process reports — on rank 0 the totals of all ranks — and whether
/// this is rank 0 (the only one that reports).
pub fn run(
    cfg: &Config,
    sync: impl Fn(&Config) -> Result<Summary, Error>,
) -> Result<(Summary, bool), Error> {
    let start = Instant::now();
    let (universe, threading) = mpi::initialize_with_threading(Threading::Multiple)
        .ok_or_else(|| Error::Usage("--mpi: MPI could not be initialized".into()))?;
    let world = universe.world();
    let (rank, size) = (world.rank() as u64, world.size() as u64);
    let mut share = cfg.clone();
    // N progress bars on one terminal would only garble each other.
    share.progress = false;
    let dynamic = threading == Threading::Multiple;
    if let Some(why) = pinned() {
        eprintln!("nfsync: rank {rank}: {why}");
    }
    if size > 1 && !dynamic && rank == 0 {
        eprintln!(
            "nfsync: --mpi: this MPI library cannot take calls from several threads: static shares"
        );
    }
    // A rank that fails still takes part in the reduction, or the others would wait.
    let run_share = |share: &Config| {
        sync(share).unwrap_or_else(|e| {
            let line = format!("nfsync: rank {rank}: {e:#}");
            eprintln!("{}", crate::report::escape_text(&line));
            Summary::failed(&e, cfg.dry_run)
        })
    };
    let (mut mine, took) = if size == 1 {
        (run_share(&share), start.elapsed())
    } else if !dynamic {
        share.shard = Some(Shard {
            index: rank,
            count: size,
        });
        (run_share(&share), start.elapsed())
    } else if rank == 0 {
        let ledger = Arc::new(Ledger::default());
        share.claims = Some(Claims(ledger.clone()));
        std::thread::scope(|s| {
            s.spawn(|| claims::serve(&ledger, size as usize - 1));
            let mine = run_share(&share);
            if walked(&mine) {
                ledger.walked();
            }
            (mine, start.elapsed())
        })
    } else {
        share.claims = Some(Claims(Arc::new(claims::Remote::default())));
        let mine = run_share(&share);
        claims::done(walked(&mine));
        (mine, start.elapsed())
    };
    let mine_s = took.as_secs_f64();
    // Ranks done early wait here without spinning (see claims' module doc).
    let barrier = world.immediate_barrier();
    let mut barrier = Some(barrier);
    claims::poll(|| match barrier.take()?.test() {
        Ok(_) => Some(()),
        Err(req) => {
            barrier = Some(req);
            None
        }
    });
    let mine_sums = summed(&mut mine);
    let mut sums = vec![0u64; mine_sums.len()];
    world.all_reduce_into(&mine_sums[..], &mut sums[..], SystemOperation::sum());
    let mut worst = 0u64;
    world.all_reduce_into(
        &(mine.exit_code.severity() as u64),
        &mut worst,
        SystemOperation::max(),
    );
    let part = [
        mine.files_copied,
        mine.links_created,
        mine.bytes_copied,
        mine.dirs_scanned - mine.dirs_not_walked,
        (mine_s * 1e6) as u64,
    ];
    let root = world.process_at_rank(0);
    if rank != 0 {
        root.gather_into(&part[..]);
        return Ok((mine, false));
    }
    let mut parts = vec![0u64; PART * size as usize];
    root.gather_into_root(&part[..], &mut parts[..]);
    let mut total = mine;
    set_summed(&mut total, &sums);
    if size > 1 {
        let mut fin = cfg.clone();
        fin.progress = false;
        let f = sync(&fin)?;
        add_changes(&mut total, &f);
        worst = worst.max(f.exit_code.severity() as u64);
    }
    total.exit_code = exit_code(worst);
    total.shard = None;
    total.ranks = Some(size);
    total.per_rank = Some(
        parts
            .chunks(PART)
            .enumerate()
            .map(|(r, p)| RankTotals {
                rank: r as u64,
                files_copied: p[0],
                links_created: p[1],
                bytes_copied: p[2],
                dirs_walked: p[3],
                elapsed_s: p[4] as f64 / 1e6,
            })
            .collect(),
    );
    total.elapsed_s = start.elapsed().as_secs_f64();
    drop(universe);
    Ok((total, true))
}

/// Whether a rank's run walked the whole tree: it ended neither failed nor
/// interrupted (per-file errors do not stop the walk).
fn walked(s: &Summary) -> bool {
    s.fatal.is_none() && !s.interrupted
}

/// Why this rank runs on fewer CPUs than the machine has, if it does: Open MPI binds
/// each rank to one core when there are at most two ranks on a machine (one rank per
/// machine included), which leaves nfsync's workers one core.
fn pinned() -> Option<String> {
    // SAFETY: CPU_* only touch the local set; sched_getaffinity writes into it.
    let mine = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return None;
        }
        libc::CPU_COUNT(&set) as i64
    };
    // SAFETY: sysconf has no preconditions.
    let online = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) } as i64;
    (mine < online).then(|| {
        format!("bound to {mine} of {online} CPUs (Open MPI binds by default): run mpirun --bind-to none")
    })
}

/// How many numbers each rank's part in `per_rank` is.
const PART: usize = 5;

/// The counters that add up over ranks. Directories are walked by every rank, so
/// `dirs_scanned` is one rank's (all see the same tree): it is taken from rank 0.
fn counters(s: &mut Summary) -> [&mut u64; 14] {
    [
        &mut s.files_scanned,
        &mut s.bytes_scanned,
        &mut s.files_copied,
        &mut s.links_created,
        &mut s.files_skipped,
        &mut s.attrs_updated,
        &mut s.files_deleted,
        &mut s.dirs_created,
        &mut s.bytes_copied,
        &mut s.errors,
        &mut s.vanished,
        &mut s.specials_skipped,
        &mut s.times_clamped,
        &mut s.deletes_skipped,
    ]
}

/// What one rank adds to the totals: its [`counters`], then its RPCs and whether it
/// was interrupted.
fn summed(s: &mut Summary) -> Vec<u64> {
    let mut v: Vec<u64> = counters(s).into_iter().map(|c| *c).collect();
    v.extend([s.rpcs.unwrap_or(0), u64::from(s.interrupted)]);
    v
}

/// Puts the totals of [`summed`] into `s`.
fn set_summed(s: &mut Summary, v: &[u64]) {
    let (rpcs, interrupted) = (v[v.len() - 2], v[v.len() - 1]);
    for (c, &x) in counters(s).into_iter().zip(v) {
        *c = x;
    }
    s.rpcs = s.rpcs.map(|_| rpcs);
    s.interrupted = interrupted > 0;
}

/// Adds what the finalize step changed (its scans and up-to-date entries are the
/// shards' again, not added twice).
fn add_changes(t: &mut Summary, f: &Summary) {
    t.files_copied += f.files_copied;
    t.links_created += f.links_created;
    t.bytes_copied += f.bytes_copied;
    t.attrs_updated += f.attrs_updated;
    t.files_deleted += f.files_deleted;
    t.dirs_created += f.dirs_created;
    t.errors += f.errors;
    t.vanished += f.vanished;
    t.times_clamped += f.times_clamped;
    t.deletes_skipped += f.deletes_skipped;
    if let (Some(a), Some(b)) = (t.rpcs, f.rpcs) {
        t.rpcs = Some(a + b);
    }
    t.interrupted |= f.interrupted;
    if t.fatal.is_none() {
        t.fatal = f.fatal.clone();
    }
}

/// The code whose [`ExitCode::severity`] is `severity` (the ranks' worst, reduced as a
/// number because MPI reduces numbers).
fn exit_code(severity: u64) -> ExitCode {
    ExitCode::worst(
        ExitCode::ALL
            .iter()
            .copied()
            .filter(|c| u64::from(c.severity()) == severity),
    )
}
