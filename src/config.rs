//! The engine's configuration: plain data, built from the command line by `cli`, so the
//! library never sees clap.

use std::path::PathBuf;
use std::time::Duration;

use crate::dest::OwnerPolicy;
use crate::options::chmod::Chmod;
use crate::options::filter::Filter;
use crate::options::follow::Follow;
use crate::options::idmap::IdMap;
use crate::options::keep::{Backup, Basis};
use crate::options::xattrs::XattrSet;
use crate::plan::{Compare, Rules, Skip};
use crate::report::format::LogFormat;
use crate::report::units::HumanLevel;
use crate::shard::Shard;
use crate::shard::claim::Claims;
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
    /// `--mkpath`: DEST's missing parents are made (and said), also for a file copied
    /// onto DEST's name.
    pub mkpath: bool,
    /// `--force`: a non-empty directory in the way of a non-directory is removed
    /// (also with `--delete`; without either, rsync refuses).
    pub force: bool,
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
    /// `-U`: a copied file gets the source's access time.
    pub atimes: bool,
    /// `-J`: leave symlinks' mtimes alone (and out of the up-to-date test).
    pub omit_link_times: bool,
    /// `-E`: without `-p`, a copied file's execute bits follow the source's (rsync's
    /// `--executability`).
    pub executability: bool,
    /// `--stop-at`/`--stop-after`: no new work is started from this moment on.
    pub stop_at: Option<std::time::SystemTime>,
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
    /// Which symlinks the paths the command line names, and merge files, may lead
    /// through (`--insecure-links`: all).
    pub trust: crate::options::trust::Trust,
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
    /// Progress was asked for (`--progress`, `-P`, `--info=progress2`): the summary
    /// line is printed also where stderr is no terminal, and so are progress lines.
    pub progress_asked: bool,
    /// `--stats-every`: a progress line this often where there is no bar (a log, a
    /// pipe), asked for even without `--progress`.
    pub stats_every: Option<Duration>,
    /// `--progress=json`: progress lines are JSON objects, the last one the totals.
    pub progress_json: bool,
    /// `--progress`/`-P` where stdout is no terminal: rsync's per-file progress lines.
    pub file_progress: bool,
    /// `-8/--8-bit-output`.
    pub eight_bit: bool,
    /// `--stats`.
    pub stats: bool,
    /// `-i`, counted (`-ii` itemizes unchanged entries too).
    pub itemize: u8,
    /// `--json`.
    pub json: bool,
    /// NFS: give up on an unresponsive server after this long.
    pub timeout: Duration,
    // Output: rsync's per-file lines, log file and number style.
    /// `--out-format`: replaces `-i`'s and `-v`'s per-file lines.
    pub out_format: Option<LogFormat>,
    /// `--log-file`.
    pub log_file: Option<PathBuf>,
    /// `--log-file-format` (rsync's default `%i %n%L`).
    pub log_file_format: LogFormat,
    /// rsync's `-h` level, for `--stats` and `--list-only`'s sizes.
    pub human_readable: HumanLevel,
    // Links and attributes (rsync's -L -k -K --safe-links --chmod --chown -X -A).
    /// Which source symlinks are followed or left out.
    pub follow: Follow,
    /// `-K`: a destination symlink to a directory stands for that directory.
    pub keep_dirlinks: bool,
    /// `--chmod`: mode changes applied to every source entry but symlinks.
    pub chmod: Chmod,
    /// `--usermap` (or `--chown USER`): the owner each entry gets (`None`: its own).
    pub usermap: Option<IdMap>,
    /// `--groupmap` (or `--chown :GROUP`): the group each entry gets.
    pub groupmap: Option<IdMap>,
    /// Which extended attributes are copied (`-X`, `-A`).
    pub xattrs: XattrSet,
    /// `--fake-super` (and `-M--fake-super`): which side keeps root's attributes in
    /// an extended attribute.
    pub fake_super: crate::options::fake_super::FakeSuper,
    // Safety: what is kept and reused.
    /// `-b/--backup`, `--suffix`, `--backup-dir`.
    pub backup: Option<Backup>,
    /// `--link-dest`, `--compare-dest`, `--copy-dest`.
    pub basis: Option<Basis>,
    /// `--remove-source-files`: a source non-directory is removed once the destination
    /// holds it complete.
    pub remove_source_files: bool,
    /// Which paths are sent (-R, --files-from, -d, -m, --list-only).
    pub paths: Paths,
    // Many machines.
    /// `--shard`: this process's share (see [`crate::shard`]); `None` copies everything.
    pub shard: Option<Shard>,
    /// `--mpi`: the share comes from the MPI rank (see `crate::mpi`, feature `mpi`).
    pub mpi: bool,
    /// `--check`: look at DEST and measure it, copy nothing (see [`crate::check`]).
    pub check: bool,
    /// `--check-files`: the run size `--check` estimates for.
    pub check_files: u64,
    /// A share decided while the run goes on (see [`crate::shard::claim`]): set by
    /// `--mpi`, never by the command line itself.
    pub claims: Option<Claims>,
    // Data: how file data is written (-S, --inplace, --append, --temp-dir, ...).
    /// How file data is written.
    pub data: DataConfig,
}

/// How file data is written (rsync's `-S`, `--inplace`, `--append[-verify]`,
/// `--temp-dir`, `--delay-updates`, `--bwlimit`).
#[derive(Clone, Debug, Default)]
pub struct DataConfig {
    /// `-S`: holes in a new file stay holes.
    pub sparse: bool,
    /// `--inplace` (implied by `--append`): an update is written into the existing
    /// file instead of beside it.
    pub inplace: bool,
    /// `--append` / `--append-verify`.
    pub append: Append,
    /// `--temp-dir`: where an update's temporary is written (relative to DEST).
    pub temp_dir: Option<PathBuf>,
    /// `--delay-updates`: every transferred file is put in place at the end.
    pub delay_updates: bool,
    /// `--partial` (`-P`, or a `--partial-dir`): a copy given up for an interrupt keeps
    /// what it wrote, at its name or in the partial dir, for the next run.
    pub partial: bool,
    /// `--partial-dir`: where `--delay-updates` holds files back (relative: below each
    /// file's directory; absolute: one for the run).
    pub partial_dir: Option<PathBuf>,
    /// `--bwlimit` in bytes per second (0: no limit).
    pub bwlimit: u64,
}

/// rsync's `--append` modes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Append {
    /// Updates rewrite the whole file.
    #[default]
    Off,
    /// A file longer at the source gets the rest appended; one the same size or
    /// longer at the destination is left alone.
    Append,
    /// As `Append`, then the whole file is compared, and rewritten if it differs.
    Verify,
}

/// rsync's options that choose which source paths are sent, beyond the operands and
/// everything below them.
#[derive(Clone, Debug, Default)]
pub struct Paths {
    /// `-R`: each source's path (after a `/./`) is recreated under DEST.
    pub relative: bool,
    /// `--no-implied-dirs`: the directories above a -R path are not sent.
    pub no_implied_dirs: bool,
    /// `--files-from`: the names read, relative to the one source.
    pub files_from: Option<Vec<std::ffi::OsString>>,
    /// `-d`: without `-r`, directories are created, not entered.
    pub dirs: bool,
    /// `-m`: directories with no file below them are left out.
    pub prune_empty_dirs: bool,
    /// `--list-only`: list the sources, copy nothing.
    pub list_only: bool,
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
            backup: self.backup.as_ref(),
        }
    }
}
