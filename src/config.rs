//! The engine's configuration: plain data, built from the command line by `cli`, so the
//! library never sees clap.

use std::path::PathBuf;
use std::time::Duration;

use crate::dest::OwnerPolicy;
use crate::filter::Filter;
use crate::plan::{Compare, Rules, Skip};
use crate::shard::Shard;
use crate::tune::Jobs;

/// Everything the engine needs to know about one run.
#[derive(Clone, Debug)]
pub struct Config {
    /// Sources as given; a trailing `/` means "the contents of".
    pub sources: Vec<PathBuf>,
    /// DEST as given: a path (any bytes), or an `nfs://` URL.
    pub dest: PathBuf,
    /// `-n`: decide and report, change nothing.
    pub dry_run: bool,
    /// `--delete`: remove destination entries the source lacks.
    pub delete: bool,
    /// `--max-delete`: how many entries may be removed in all.
    pub max_delete: Option<u64>,
    /// Exclude/include rules.
    pub filter: Filter,
    /// Up-to-date test.
    pub compare: Compare,
    /// `--modify-window SECS` (0: whole seconds; -1: nanoseconds).
    pub modify_window: i64,
    /// Entries to leave alone (`-u`, `--ignore-existing`, `--existing`, size limits).
    pub skip: Skip,
    /// `-r`: enter directories (without it they are skipped, as rsync does).
    pub recursive: bool,
    /// `-l`: copy symlinks (without it they are skipped).
    pub links: bool,
    /// `-p`: give entries the source's mode (without it new ones get the source's
    /// permission bits less `umask`, existing ones keep theirs).
    pub perms: bool,
    /// `-t`: give entries the source's mtime (without it they get the time of the copy).
    pub times: bool,
    /// `-O`: leave directories' mtimes alone.
    pub omit_dir_times: bool,
    /// The umask nfsync was started with (nfsync then clears it to give modes itself).
    pub umask: u32,
    /// `-x` count: 1 creates mount points empty, 2 leaves them out.
    pub one_file_system: u8,
    /// `--ignore-errors`: delete even in a directory whose source listing failed.
    pub ignore_errors: bool,
    /// Concurrency.
    pub jobs: Jobs,
    /// `-H`: keep hard links.
    pub hard_links: bool,
    /// Which ownership to keep.
    pub owners: OwnerPolicy,
    /// `--numeric-ids` (ids are always numeric on both of our paths; accepted for rsync parity).
    pub numeric_ids: bool,
    /// `--specials`: copy fifos and sockets.
    pub specials: bool,
    /// `--devices`: copy device nodes.
    pub devices: bool,
    /// `-v` count.
    pub verbose: u8,
    /// `-q`.
    pub quiet: bool,
    /// Show a progress bar (only if stderr is a terminal).
    pub progress: bool,
    /// `--stats`.
    pub stats: bool,
    /// `-i`.
    pub itemize: bool,
    /// `--json`.
    pub json: bool,
    /// NFS: give up on an unresponsive server after this long.
    pub timeout: Duration,

    // Many machines (issue 17).
    /// `--shard`: this process's share (see [`crate::shard`]); `None` copies everything.
    pub shard: Option<Shard>,
    /// `--mpi`: the share comes from the MPI rank (see `crate::mpi`, feature `mpi`).
    pub mpi: bool,
}

impl Config {
    /// The rules [`crate::plan`] decides by.
    pub fn rules(&self) -> Rules<'_> {
        Rules {
            compare: self.compare,
            modify_window: self.modify_window,
            owners: self.owners,
            perms: self.perms,
            times: self.times,
            skip: self.skip,
            delete: self.delete,
            filter: &self.filter,
        }
    }
}
