//! The engine's configuration: plain data, built from the command line by `cli`, so the
//! library never sees clap.

use std::path::PathBuf;
use std::time::Duration;

use crate::dest::OwnerPolicy;
use crate::filter::Filter;

/// How to decide that a destination file is already up to date.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compare {
    /// Size and mtime equal (rsync's default quick check).
    QuickCheck,
    /// Size equal (`--size-only`).
    SizeOnly,
    /// Size equal and identical bytes (`-c/--checksum`).
    Checksum,
}

/// How many files to keep in flight.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Jobs {
    /// Measure and adapt (`--jobs auto`, the default).
    Auto,
    /// A fixed count (`--jobs N`).
    Fixed(usize),
}

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
    /// `--modify-window SECS`.
    pub modify_window: Option<u64>,
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
}
