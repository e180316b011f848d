//! The engine: runs a sync on many workers through a [`Destination`].
//!
//! Work flows one way. The roots are planned on the calling thread; from then on
//! workers take scans and entry jobs from the [`sched::Sched`] queue. A scan lists a
//! source directory, lists (or, for a directory just created, skips listing) the
//! destination directory, and queues one job per child. Every directory is a
//! [`DirNode`] counting its unfinished children; when the count reaches zero its
//! deletions run and then its mode, owner and mtime are set — last, so they end up
//! exact whatever the children did to them — and its parent's count drops in turn.
//!
//! Crash safety comes from the order inside each file (the backend sets the mtime
//! last) and here from never deleting in a directory whose source listing failed.

mod backup;
mod delete;
mod dir;
mod dirlinks;
mod entry;
mod follow;
mod keep;
mod links;
mod partial;
mod race;
mod relative;
pub mod sched;
mod shard;
#[cfg(test)]
mod tests;
mod times;
mod update;
mod xattrs;

use std::any::Any;
use std::ffi::OsString;
use std::io;
use std::panic::{self, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use crate::config::Config;
use crate::dest::{self, AttrSet, Destination, RootState};
use crate::exit::{Error, ExitCode};
use crate::meta::{Kind, Meta};
use crate::options::relative::Named;
use crate::plan::{self, DestKnown};
use crate::report::{Escaped, Output, Stats, Summary};
use crate::source::SrcEntry;
use crate::tune::Controller;

/// A directory being filled: it finalizes when its last child is done.
pub struct DirNode<D: Destination> {
    /// Path relative to DEST, for messages and `-i`.
    rel: PathBuf,
    /// The destination directory; `None` only in a dry run for a directory that would
    /// have been created.
    dir: Option<D::Dir>,
    /// Source attributes to give the directory at the end (`None` for DEST itself when
    /// it receives several sources).
    meta: Option<Meta>,
    /// How the directory came to be, which says what finalizing it must set.
    origin: Origin,
    /// Children not yet finished, plus one held by the scan itself: each one a
    /// [`dir::ChildDone`] while it is worked on.
    pending: AtomicUsize,
    parent: Option<Arc<DirNode<D>>>,
    /// Set when an entry was created or removed in it (its mtime moved).
    changed: AtomicBool,
    /// `--delete` work, done after the children.
    deletions: Mutex<Vec<(OsString, Option<Kind>)>>,
    /// The per-directory filter rules in force for its children.
    filters: Arc<crate::options::filter::Scope>,
    /// The source directory (for `-X`/`-A`); `None` where `meta` is.
    src: Option<PathBuf>,
    /// The basis directories' counterparts of this directory (`--link-dest` and its
    /// kin), opened once for all its children; `None` where one has none.
    basis: OnceLock<Vec<Option<D::Dir>>>,
    /// Without `-p`: the permission bits what is created in it may keep (its default
    /// ACL's, else those the umask leaves), looked up once for all its children.
    new_perms: OnceLock<u32>,
    /// The `-R`/`--files-from` names at and below it, when it is on their path.
    implied: Option<Arc<Named>>,
    /// Several sources giving a directory of one name: the later ones, by name, for
    /// the child directory to list beside the first (rsync merges them).
    merged: Mutex<std::collections::HashMap<OsString, Vec<SrcEntry>>>,
}

/// Where a destination directory came from.
#[derive(Clone, Copy, Debug)]
enum Origin {
    /// It was there, with these attributes: finalizing sets what differs.
    Found(Meta),
    /// This run created it; the backend said what its create could not give.
    Created(AttrSet),
    /// Nothing to finalize: a dry run would have created it, or the node only stands
    /// for the parent of a single file copied to a new name.
    Imagined,
}

/// A directory to list.
pub struct ScanJob<D: Destination> {
    parent: Arc<DirNode<D>>,
    entry: SrcEntry,
    known: DestKnown,
    /// Its `-R` node: what is named below it (see [`crate::options::relative`]).
    implied: Option<Arc<Named>>,
}

/// One non-directory entry to bring up to date.
pub struct EntryJob<D: Destination> {
    parent: Arc<DirNode<D>>,
    entry: SrcEntry,
    known: DestKnown,
}

/// One run's shared state, in two layers. What every part reads — the settings, the
/// destination, the output, the counters, the queue and how the run ends — is here.
/// What one option keeps while the run goes on is a type of the file that carries the
/// option out, its insides private to that file: no other part can reach them.
pub struct Engine<'a, D: Destination> {
    cfg: &'a Config,
    /// What decisions depend on (a view of `cfg`).
    rules: plan::Rules<'a>,
    dest: &'a D,
    /// Where the sources are read from (local paths, or a remote source).
    source: &'a dyn crate::source::Source,
    out: &'a Output,
    /// DEST as given, for messages.
    dest_display: PathBuf,
    /// Live counters (read by the progress bar).
    pub stats: Arc<Stats>,
    sched: sched::Sched<ScanJob<D>, EntryJob<D>>,
    /// Raised by SIGINT/SIGTERM.
    interrupted: Arc<AtomicBool>,
    /// The error that ended the run early, if one did.
    fatal: Mutex<Option<Error>>,
    /// What the `--jobs auto` controller measures.
    load: Load,
    /// DEST's own directories this run writes into (DEST inside a source).
    written_roots: dir::WrittenRoots,
    /// `-H`.
    links: links::HardLinks<D>,
    /// `-K`.
    linked_dirs: dirlinks::LinkedDirs,
    /// `--max-delete`.
    delete_budget: delete::MaxDelete,
    /// `-X`/`-A`.
    xattrs: xattrs::Support,
    /// How file data is written (`--bwlimit`, `--temp-dir`, `--delay-updates`).
    writing: update::Writing<D>,
    /// `--partial-dir`: where held-back files wait.
    staging: partial::Staging<D>,
    /// `--shard`.
    deal: shard::Deal,
    /// Where the filesystem behind the destination clamps times.
    time_bounds: times::Bounds,
}

/// Completed jobs and their summed latency in microseconds.
#[derive(Default)]
struct Load {
    ops_done: AtomicU64,
    busy_us: AtomicU64,
}

/// Runs one sync. `interrupted` is the flag the signal handlers raise.
pub fn run<D: Destination>(
    cfg: &Config,
    source: &dyn crate::source::Source,
    dest: &D,
    out: &Output,
    stats: Arc<Stats>,
    interrupted: Arc<AtomicBool>,
) -> Result<Summary, Error> {
    let start = Instant::now();
    let mut ctl = Controller::new(cfg.jobs, dest.auto_bounds());
    let engine = Engine {
        cfg,
        rules: cfg.rules(),
        dest,
        source,
        out,
        dest_display: display_dest(&cfg.dest),
        stats,
        sched: sched::Sched::new(ctl.jobs()),
        interrupted,
        fatal: Mutex::new(None),
        load: Load::default(),
        written_roots: Default::default(),
        links: Default::default(),
        linked_dirs: Default::default(),
        delete_budget: delete::MaxDelete::new(cfg.max_delete),
        xattrs: Default::default(),
        writing: update::Writing::new(cfg, dest)?,
        staging: partial::Staging::new(),
        deal: Default::default(),
        time_bounds: Default::default(),
    };
    engine.stats.jobs.store(ctl.jobs(), Ordering::Relaxed);
    engine.plan_roots()?;
    engine.check_basis_dirs();
    engine.announce_backup_dir();
    engine.stats.roots_planned.store(true, Ordering::SeqCst);

    let started = std::thread::scope(|s| {
        // A container's pids limit can refuse threads: that means fewer workers (said
        // once, with -v), and only no worker at all ends the run.
        let mut refused = false;
        let mut spawn = |n: usize, first: usize| -> (usize, Option<io::Error>) {
            if refused {
                return (0, None);
            }
            let mut id = first;
            let (k, err) = spawn_up_to(n, || {
                id += 1;
                std::thread::Builder::new()
                    .name(format!("nfsync-worker-{}", id - 1))
                    .spawn_scoped(s, || engine.work())
                    .map(drop)
            });
            if let Some(e) = &err {
                refused = true;
                engine.out.verbose(
                    1,
                    format_args!("no more worker threads ({e}): running with {}", first + k),
                );
            }
            (k, err)
        };
        let mut spawned = match spawn(ctl.jobs(), 0) {
            (0, err) => {
                let source = err.unwrap_or_else(|| io::Error::other("no thread started"));
                return Err(Error::Local {
                    what: "cannot start a worker thread".into(),
                    source,
                });
            }
            (k, _) => k,
        };
        // The controller's loop: measure each interval, adjust the cap, spawn more
        // workers when the cap grows past those running.
        let tick = Duration::from_millis(100);
        let (mut last_ops, mut last_busy, mut last_bytes) = (0, 0, 0);
        let mut last_tick = Instant::now();
        while !engine.sched.wait_quiescent(tick) {
            if engine.interrupted.load(Ordering::Relaxed) {
                engine.sched.stop();
            }
            if last_tick.elapsed() < tick {
                continue;
            }
            last_tick = Instant::now();
            let ops = engine.load.ops_done.load(Ordering::Relaxed);
            let busy = engine.load.busy_us.load(Ordering::Relaxed);
            let bytes = engine.stats.bytes_copied.load(Ordering::Relaxed);
            let now = start.elapsed();
            let changed = ctl.on_interval(
                now,
                ops - last_ops,
                bytes - last_bytes,
                Duration::from_micros(busy - last_busy),
            );
            if let Some(change) = changed {
                let n = change.jobs;
                engine
                    .out
                    .verbose(1, format_args!("{change} at {:.1}s", now.as_secs_f64()));
                engine.sched.set_limit(n);
                engine.stats.jobs.store(n, Ordering::Relaxed);
                if n > spawned {
                    spawned += spawn(n - spawned, spawned).0;
                }
            }
            (last_ops, last_busy, last_bytes) = (ops, busy, bytes);
        }
        engine.sched.wake_all();
        Ok(())
    });
    started?;
    engine.run_stranded_links();
    engine.finish_delayed();
    engine.settle_hard_links();

    let mut summary = Summary::new(
        &engine.stats,
        start.elapsed().as_secs_f64(),
        ctl.report(),
        cfg.dry_run,
    );
    summary.shard = cfg.shard.map(|s| s.to_string());
    if let Some(w) = dest.wire() {
        summary.nfs_version = Some(w.version);
        summary.rpcs = Some(w.rpcs);
    }
    if let Some(f) = engine.fatal.lock().unwrap().take() {
        summary.exit_code = f.exit_code();
        summary.fatal = Some(format!("{f:#}"));
        return Ok(summary);
    }
    summary.interrupted = engine.interrupted.load(Ordering::Relaxed);
    if summary.deletes_skipped > 0 {
        out.warn(format_args!(
            "Deletions stopped due to --max-delete limit ({} skipped)",
            summary.deletes_skipped
        ));
    }
    summary.exit_code = ExitCode::of_run(crate::exit::RunEnd {
        interrupted: summary.interrupted,
        deletes_skipped: summary.deletes_skipped,
        errors: summary.errors,
        vanished: summary.vanished,
    });
    Ok(summary)
}

impl<'a, D: Destination> Engine<'a, D> {
    /// A worker's loop.
    fn work(&self) {
        while let Some(w) = self.sched.next() {
            let path = match &w {
                sched::Work::Scan(j) => j.entry.path.clone(),
                sched::Work::Entry(j) => j.entry.path.clone(),
            };
            Running::new(self, path).run(|| match w {
                sched::Work::Scan(j) => self.scan(j),
                sched::Work::Entry(j) => self.entry(j),
            });
        }
    }

    /// Ends the run with `e`: the first fatal error is the one reported (the other
    /// workers' copies of it would only bury it); workers finish the jobs they hold
    /// and take no more.
    fn end_run(&self, e: Error) {
        let mut f = self.fatal.lock().unwrap();
        if f.is_none() {
            *f = Some(e);
        }
        drop(f);
        self.sched.stop();
    }

    /// The destination path of `rel`, for messages.
    fn dest_path(&self, rel: &Path) -> PathBuf {
        self.dest_display.join(rel)
    }

    /// `m` with the mtime the destination keeps (see [`Engine::stored_time`]): what a
    /// destination entry is compared with.
    fn as_stored(&self, m: &Meta) -> Meta {
        Meta {
            mtime: self.stored_time(m.mtime),
            ..*m
        }
    }

    /// What an entry is given at the destination: its source attributes less what the
    /// command line does not preserve. Without `-p` the mode is the source's
    /// permission bits less the umask, special bits off (rsync's rule for new
    /// entries; existing ones keep theirs, see [`plan::attr_diff`]); without `-t` the
    /// time of the copy, as a copy that sets no time would get.
    fn give(&self, m: &Meta) -> Meta {
        let mut g = *m;
        if !self.cfg.perms {
            g.mode = m.mode & 0o777 & !self.cfg.umask;
        }
        // -J: a symlink gets the time it is made, as without -t.
        if !self.cfg.times || (m.kind == Kind::Symlink && self.cfg.omit_link_times) {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap_or_default();
            g.mtime = crate::meta::Time {
                sec: now.as_secs() as i64,
                nsec: now.subsec_nanos(),
            };
        }
        g
    }

    /// [`Engine::give`] for an entry created in `parent`: without `-p` a default ACL on
    /// `parent` stands for the umask, as in rsync (the kernel then ignores the umask).
    fn give_in(&self, m: &Meta, parent: Option<&DirNode<D>>) -> Meta {
        let mut g = self.give(m);
        if !self.cfg.perms
            && let Some(p) = parent
        {
            let allowed = *p.new_perms.get_or_init(|| {
                p.dir
                    .as_ref()
                    .and_then(|d| self.dest.default_perms(d))
                    .unwrap_or(0o777 & !self.cfg.umask)
            });
            g.mode = m.mode & 0o777 & allowed;
        }
        g
    }

    /// Warns, and counts, when the mtime just set on `rel` is not the source's own.
    fn note_time(&self, rel: &Path, m: &Meta) {
        let stored = self.stored_time(m.mtime);
        if stored != m.mtime {
            Stats::bump(&self.stats.times_clamped);
            self.out.warn(format_args!(
                "{}: modification time {} cannot be stored by the destination; stored as {}",
                Escaped(self.dest_path(rel)),
                m.mtime,
                stored
            ));
        }
    }

    /// Reports a destination error; errors that mean the destination is gone (an NFS
    /// server that stopped answering) end the run.
    fn dest_error(&self, rel: &Path, e: dest::Error) {
        Stats::bump(&self.stats.errors);
        if !e.is_fatal() {
            match self.dest.explain(&e) {
                Some(why) => self
                    .out
                    .error(&self.dest_path(rel), format_args!("{e} ({why})")),
                None => self.out.error(&self.dest_path(rel), &e),
            }
            return;
        }
        // The destination is gone.
        self.end_run(Error::Dest {
            path: self.dest_path(rel),
            source: e,
        });
    }

    /// Reports a source error (or a vanished source); a source server that went away
    /// or stopped answering ends the run as a destination's does.
    fn source_error(&self, path: &Path, e: &io::Error) {
        let gone = dest::Error::from(io::Error::new(e.kind(), e.to_string()));
        if gone.is_fatal() {
            Stats::bump(&self.stats.errors);
            self.end_run(Error::Dest {
                path: path.to_path_buf(),
                source: gone,
            });
        } else if e.kind() == io::ErrorKind::NotFound {
            Stats::bump(&self.stats.vanished);
            self.out
                .warn(format_args!("file has vanished: {}", Escaped(path)));
        } else {
            Stats::bump(&self.stats.errors);
            self.out.error(path, e);
        }
    }
}

/// A job a worker runs. Dropping it tells the queue the job is over, on every way
/// out: a job the queue still counted as running would keep the run waiting for it
/// forever. A job that panicked (a bug) ends the run, as a destination that went away
/// does: its message is reported with the entry's path, the jobs other workers hold
/// are finished, and the summary is printed.
struct Running<'e, 'a, D: Destination> {
    engine: &'e Engine<'a, D>,
    /// The entry's source path, for the message.
    path: PathBuf,
    started: Instant,
    /// The message of the panic the job ended with, once caught.
    panicked: Option<String>,
}

impl<'e, 'a, D: Destination> Running<'e, 'a, D> {
    fn new(engine: &'e Engine<'a, D>, path: PathBuf) -> Self {
        Running {
            engine,
            path,
            started: Instant::now(),
            panicked: None,
        }
    }

    /// Runs the job. A panic is caught here rather than left to end the thread:
    /// `run`'s thread scope would raise it again on the calling thread, and the
    /// summary and the exit code would be lost with it. (Unwind-safe enough: after a
    /// panic the run only finishes the jobs in flight and reports; the directory the
    /// panicked job belonged to is never finalized.)
    fn run(mut self, job: impl FnOnce()) {
        if let Err(payload) = panic::catch_unwind(AssertUnwindSafe(job)) {
            self.panicked = Some(panic_message(payload.as_ref()));
        }
    }
}

impl<D: Destination> Drop for Running<'_, '_, D> {
    fn drop(&mut self) {
        let e = self.engine;
        let load = &e.load;
        load.busy_us
            .fetch_add(self.started.elapsed().as_micros() as u64, Ordering::Relaxed);
        load.ops_done.fetch_add(1, Ordering::Relaxed);
        // Unwinding through here is a panic that `run` did not catch.
        let panicked = match self.panicked.take() {
            None if std::thread::panicking() => Some("a panic not caught".to_string()),
            p => p,
        };
        if let Some(message) = panicked {
            e.end_run(Error::Panic {
                path: std::mem::take(&mut self.path),
                message,
            });
        }
        e.sched.finish();
    }
}

/// What a panic said: its `panic!` message, when it had one.
fn panic_message(payload: &(dyn Any + Send)) -> String {
    match (
        payload.downcast_ref::<&str>(),
        payload.downcast_ref::<String>(),
    ) {
        (Some(s), _) => s.to_string(),
        (_, Some(s)) => s.clone(),
        _ => "a panic with no message".to_string(),
    }
}

/// DEST as messages show it: an `nfs://` URL loses its `?query`, so entry paths read
/// `nfs://server/export/dir/file`.
fn display_dest(dest: &Path) -> PathBuf {
    let bytes = dest.as_os_str().as_encoded_bytes();
    match bytes.iter().position(|&b| b == b'?') {
        Some(q) if bytes.starts_with(b"nfs://") => {
            PathBuf::from(String::from_utf8_lossy(&bytes[..q]).into_owned())
        }
        _ => dest.to_path_buf(),
    }
}

/// Whether DEST's root already exists as a directory.
fn root_is_dir(state: &RootState) -> bool {
    matches!(state, RootState::Exists(m) if m.kind == Kind::Dir)
}

/// Starts up to `n` threads with `spawn_one`, stopping at the first the OS refuses;
/// returns how many started and the refusal.
fn spawn_up_to(
    n: usize,
    mut spawn_one: impl FnMut() -> io::Result<()>,
) -> (usize, Option<io::Error>) {
    for started in 0..n {
        if let Err(e) = spawn_one() {
            return (started, Some(e));
        }
    }
    (n, None)
}
