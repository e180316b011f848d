//! `--mpi` (feature `mpi`): `mpirun -n N nfsync --mpi SRC DEST`.
//!
//! Every rank runs the sync of share rank/size (see [`crate::shard`]: the same static
//! deal as `--shard`, so no rank waits for another during the copy); the ranks then
//! add up their totals (one all-reduce, which is also the barrier), and rank 0 runs
//! the finalize step — the same sync without a share, which sets directory attributes
//! — and reports the totals of all ranks with `ranks: N`.
//!
//! Not done: dynamic sharing (libcircle-style work stealing on directories, as
//! mpifileutils' dsync does). The shares are balanced by files and bytes before the
//! copy, so a rank only falls behind when its client or link is slower.

use std::time::Instant;

use mpi::Threading;
use mpi::collective::SystemOperation;
use mpi::traits::{Communicator, CommunicatorCollectives};

use crate::config::Config;
use crate::exit::{Error, ExitCode};
use crate::report::Summary;
use crate::shard::Shard;

/// Runs `sync` as this rank's share, then (rank 0) the finalize step. Returns the
/// summary this process reports — on rank 0 the totals of all ranks — and whether
/// this is rank 0 (the only one that reports).
pub fn run(
    cfg: &Config,
    sync: impl Fn(&Config) -> Result<Summary, Error>,
) -> Result<(Summary, bool), Error> {
    let start = Instant::now();
    let (universe, _) = mpi::initialize_with_threading(Threading::Funneled)
        .ok_or_else(|| Error::Usage("--mpi: MPI could not be initialized".into()))?;
    let world = universe.world();
    let (rank, size) = (world.rank() as u64, world.size() as u64);
    let mut share = cfg.clone();
    // N progress bars on one terminal would only garble each other.
    share.progress = false;
    if size > 1 {
        share.shard = Some(Shard {
            index: rank,
            count: size,
        });
    }
    // A rank that fails still takes part in the reduction, or the others would wait.
    let mine = sync(&share).unwrap_or_else(|e| {
        eprintln!("nfsync: rank {rank}: {e}");
        Summary::failed(&e, cfg.dry_run)
    });
    let mut sums = vec![0u64; SUMMED];
    world.all_reduce_into(&summed(&mine)[..], &mut sums[..], SystemOperation::sum());
    let mut worst = 0u64;
    world.all_reduce_into(
        &(mine.exit_code.code() as u64),
        &mut worst,
        SystemOperation::max(),
    );
    if rank != 0 {
        return Ok((mine, false));
    }
    let mut total = mine;
    set_summed(&mut total, &sums);
    if size > 1 {
        let mut fin = cfg.clone();
        fin.progress = false;
        let f = sync(&fin)?;
        add_changes(&mut total, &f);
        worst = worst.max(f.exit_code.code() as u64);
    }
    total.exit_code = exit_code(worst);
    total.shard = None;
    total.ranks = Some(size);
    total.elapsed_s = start.elapsed().as_secs_f64();
    drop(universe);
    Ok((total, true))
}

/// How many counters [`summed`] gives.
const SUMMED: usize = 16;

/// The counters that add up over ranks. Directories are walked by every rank, so
/// `dirs_scanned` is one rank's (all see the same tree): it is taken from rank 0.
fn summed(s: &Summary) -> [u64; SUMMED] {
    [
        s.files_scanned,
        s.bytes_scanned,
        s.files_copied,
        s.links_created,
        s.files_skipped,
        s.attrs_updated,
        s.files_deleted,
        s.dirs_created,
        s.bytes_copied,
        s.errors,
        s.vanished,
        s.specials_skipped,
        s.times_clamped,
        s.deletes_skipped,
        s.rpcs.unwrap_or(0),
        u64::from(s.interrupted),
    ]
}

fn set_summed(s: &mut Summary, v: &[u64]) {
    [
        s.files_scanned,
        s.bytes_scanned,
        s.files_copied,
        s.links_created,
        s.files_skipped,
        s.attrs_updated,
        s.files_deleted,
        s.dirs_created,
        s.bytes_copied,
        s.errors,
        s.vanished,
        s.specials_skipped,
        s.times_clamped,
        s.deletes_skipped,
    ] = v[..14].try_into().expect("SUMMED counters");
    s.rpcs = s.rpcs.map(|_| v[14]);
    s.interrupted = v[15] > 0;
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

/// The exit code numbered `code` (the worst of the ranks').
fn exit_code(code: u64) -> ExitCode {
    use ExitCode::*;
    [
        Success,
        Usage,
        Select,
        Connect,
        FileIo,
        Interrupted,
        Partial,
        Vanished,
        DelLimit,
        Timeout,
    ]
    .into_iter()
    .find(|c| c.code() as u64 == code)
    .unwrap_or(FileIo)
}
