//! The one seam between the engine and the places it writes to.
//!
//! The engine decides *what* to do (walk, plan); a [`Destination`] carries it out. The
//! mount path ([`local::LocalDest`]) speaks POSIX syscalls to any directory; the NFS
//! path ([`crate::nfs`], NFSv4.1 or NFSv3) speaks the wire protocol itself. Every
//! method names its target as a directory handle plus an entry name, because that is
//! what both POSIX `*at` calls and NFS (`LOOKUP`, `CREATE`, `REMOVE` all take a
//! directory file handle and a name) want: the engine never asks a backend to resolve
//! a whole path again.
//!
//! All methods are blocking and are called from many worker threads at once; that
//! concurrency is how latency is hidden, so implementations must not serialise calls
//! behind one lock.

mod error;
pub mod local;
pub mod name;
pub mod sparse;

pub use error::{Error, Result};

use std::ffi::{OsStr, OsString};
use std::io;
use std::path::Path;
use std::sync::atomic::AtomicBool;

use crate::meta::{Kind, Meta, Time};
use crate::options::bwlimit::RateLimit;
use crate::options::xattrs::{XattrSet, Xattrs};
use crate::source::Data;

/// One entry of a destination directory listing.
#[derive(Clone, Debug)]
pub struct DestEntry {
    /// The entry's name (never `.` or `..`).
    pub name: OsString,
    /// The entry's type when the listing tells it (`d_type`, READDIRPLUS).
    pub kind: Option<Kind>,
    /// Attributes when the listing carried them for free (NFSv3 READDIRPLUS);
    /// `None` means the engine must call [`Destination::stat`] if it needs them.
    pub meta: Option<Meta>,
}

/// What the destination looks like where DEST points.
#[derive(Clone, Debug)]
pub enum RootState {
    /// Nothing there yet.
    Missing,
    /// An object exists; its attributes.
    Exists(Meta),
}

/// Which attributes to apply with [`Destination::set_attrs`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AttrSet {
    /// Permission bits.
    pub mode: bool,
    /// Owner and/or group (the backend's policy decides which).
    pub owner: bool,
    /// Modification time.
    pub mtime: bool,
}

impl AttrSet {
    /// Everything.
    pub const ALL: AttrSet = AttrSet {
        mode: true,
        owner: true,
        mtime: true,
    };

    /// The mtime alone.
    pub const MTIME: AttrSet = AttrSet {
        mode: false,
        owner: false,
        mtime: true,
    };

    /// True when nothing is to be set.
    pub fn is_empty(self) -> bool {
        !(self.mode || self.owner || self.mtime)
    }
}

/// Which ownership to preserve; decided once from the command line and the caller's
/// privileges, then applied by the backend to everything it creates.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OwnerPolicy {
    /// Preserve the owner (rsync `-o`; default when running as root).
    pub owner: bool,
    /// Preserve the group (rsync `-g`).
    pub group: bool,
}

/// Why a file copy did not complete.
#[derive(Debug)]
pub enum CopyError {
    /// The source changed size or mtime while it was read. The destination is left
    /// without the source's mtime, so the quick check recopies it next run.
    SourceChanged,
    /// The source disappeared between the listing and the copy.
    Vanished,
    /// Reading the source failed.
    Source(io::Error),
    /// Writing the destination failed.
    Dest(Error),
    /// The run is stopping (SIGINT/SIGTERM): a large file is given up between two
    /// pieces rather than finished, and its partial copy removed like a failed one's.
    Interrupted,
}

impl CopyError {
    /// A destination failure (an `io::Error` is one entry's problem).
    pub fn dest(e: impl Into<Error>) -> CopyError {
        CopyError::Dest(e.into())
    }
}

/// A source regular file opened for copying.
///
/// Backends read from [`SourceFile::data`] and must call [`SourceFile::verify_unchanged`]
/// after the last byte is written and before setting the mtime, so that a file that
/// changed under us never looks complete.
pub struct SourceFile<'a> {
    /// The source file's bytes: a local file the kernel can copy, or bytes read as
    /// they are consumed.
    pub data: Data,
    /// What the destination must end up with: the source's `lstat`, less what the
    /// command line does not preserve (mode bits without `-p`, mtime without `-t`).
    pub meta: &'a Meta,
    /// `lstat` of the source as listed, which the file must still match once read.
    pub listed: &'a Meta,
    /// Source path, for messages.
    pub path: &'a Path,
    // Data (rsync -S, --bwlimit).
    /// `-S`: a new file gets only the source's data extents, its holes stay holes.
    /// With `--inplace` the mount path punches the source's holes into the old copy,
    /// as rsync does; over NFS, which has no call for that before 4.2, they are
    /// written as zeros.
    pub sparse: bool,
    /// `--bwlimit`: the run's shared rate, taken before each piece is written.
    pub limit: Option<&'a RateLimit>,
    /// Raised when the run is to stop; looked at before each piece is written.
    pub stop: Option<&'a AtomicBool>,
    /// `--partial`: a copy given up for the stop ([`CopyError::Interrupted`]) leaves
    /// the data written so far at its name, without the source's mtime, for the engine
    /// to keep (backends that say so in [`Destination::keeps_partial`]).
    pub keep_partial: bool,
    /// Where the pieces of this file count while it is written, so progress moves
    /// during a large file, not only at its end.
    pub moving: Option<Moving<'a>>,
}

/// The bytes of one file under way, counted into a run-wide total of bytes in flight
/// as each piece is let through, and taken out of it again when the file is done
/// (dropped), written or not: only a finished file counts as bytes copied.
pub struct Moving<'a> {
    run: &'a std::sync::atomic::AtomicU64,
    mine: std::sync::atomic::AtomicU64,
}

impl<'a> Moving<'a> {
    /// A file counting into `run`.
    pub fn new(run: &'a std::sync::atomic::AtomicU64) -> Moving<'a> {
        Moving {
            run,
            mine: Default::default(),
        }
    }

    /// Counts `bytes` more of this file written.
    pub fn add(&self, bytes: u64) {
        use std::sync::atomic::Ordering::Relaxed;
        self.mine.fetch_add(bytes, Relaxed);
        self.run.fetch_add(bytes, Relaxed);
    }
}

impl Drop for Moving<'_> {
    fn drop(&mut self) {
        use std::sync::atomic::Ordering::Relaxed;
        self.run.fetch_sub(self.mine.load(Relaxed), Relaxed);
    }
}

impl SourceFile<'_> {
    /// The ranges a new file is written with: the data extents under `-S`, else the
    /// whole file.
    pub fn new_file_ranges(&self) -> std::result::Result<Vec<(u64, u64)>, CopyError> {
        if self.sparse {
            self.data
                .data_extents(0, self.meta.size)
                .map_err(CopyError::Source)
        } else {
            Ok(sparse::whole(0, self.meta.size))
        }
    }

    /// Waits until `bytes` more may be written under `--bwlimit`. Every backend calls
    /// it before each piece, so it is also where a copy learns that the run is
    /// stopping: then [`CopyError::Interrupted`], and nothing more is written.
    pub fn throttle(&self, bytes: u64) -> std::result::Result<(), CopyError> {
        if self.stopping() || self.limit.is_some_and(|l| !l.take(bytes, self.stop)) {
            return Err(CopyError::Interrupted);
        }
        if let Some(m) = &self.moving {
            m.add(bytes);
        }
        Ok(())
    }

    /// Whether the run is stopping.
    pub fn stopping(&self) -> bool {
        self.stop
            .is_some_and(|s| s.load(std::sync::atomic::Ordering::Relaxed))
    }

    /// Re-checks size and mtime against the listing.
    pub fn verify_unchanged(&self) -> std::result::Result<(), CopyError> {
        match self.data.unchanged(self.listed) {
            Ok(true) => Ok(()),
            Ok(false) => Err(CopyError::SourceChanged),
            Err(e) => Err(CopyError::Source(e)),
        }
    }
}

/// Reads exactly `buf.len()` bytes of a source file at `off` for a backend that sends
/// data itself (the NFS paths); a short read means the file shrank under us.
pub fn read_full(data: &Data, buf: &mut [u8], off: u64) -> std::result::Result<(), CopyError> {
    let mut done = 0;
    while done < buf.len() {
        match data.read_at(&mut buf[done..], off + done as u64) {
            Ok(0) => return Err(CopyError::SourceChanged),
            Ok(n) => done += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(CopyError::Source(e)),
        }
    }
    Ok(())
}

/// What the engine is asked and told while a backend takes a directory tree apart.
/// `rel` is the entry's path below the directory passed to
/// [`Destination::remove_tree`] (so it starts with the removed directory's name).
pub trait Removal: Sync {
    /// Asked before an entry is removed; `false` keeps it.
    fn may_remove(&self, rel: &Path, kind: Kind) -> bool;
    /// Told once an entry is gone.
    fn removed(&self, rel: &Path, kind: Kind);
}

/// What went over the wire, for `--json` (`nfs_version`, `rpcs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Wire {
    /// The NFS version spoken: "3" or "4.1".
    pub version: &'static str,
    /// Calls sent (NFSv3 procedures, NFSv4.1 COMPOUNDs), retries included.
    pub rpcs: u64,
}

/// A place the engine can write a tree into: a mounted directory or an NFS export.
pub trait Destination: Send + Sync {
    /// A handle to a directory in the destination (a path, or an NFS file handle).
    type Dir: Clone + Send + Sync;

    /// Where `--jobs auto` starts and how far it may go.
    fn auto_bounds(&self) -> crate::tune::Bounds {
        crate::tune::Bounds::MOUNT
    }

    /// Whether [`Meta::dev`] and [`Meta::ino`] of this destination's entries are the
    /// local kernel's, comparable with the source's (so that a DEST inside a source is
    /// recognised by identity). An NFS file id says nothing about local inodes.
    fn ids_are_local(&self) -> bool {
        false
    }

    /// The time this destination keeps when asked to store `t`. NFSv3 carries times as
    /// unsigned 32-bit seconds, so a file from 1960 or 2200 cannot keep its time there:
    /// the engine compares the source's time *as stored* (so a re-run finds it equal and
    /// copies nothing) and warns once per entry whose time it sets to something else.
    fn storable_time(&self, t: Time) -> Time {
        t
    }

    /// What an entry's error means here when its errno says something else (EFS
    /// answers `EDQUOT` for its limits per client, not for a quota), for its line.
    fn explain(&self, e: &Error) -> Option<&'static str> {
        let _ = e;
        None
    }

    /// Whether [`Destination::write_file`] honours [`SourceFile::keep_partial`]: a
    /// backend whose interrupted file may hold less than it acknowledged (NFS writes
    /// not yet committed) keeps nothing.
    fn keeps_partial(&self) -> bool {
        false
    }

    /// The protocol spoken and the calls sent so far; `None` on the mount path.
    fn wire(&self) -> Option<Wire> {
        None
    }

    /// How the destination was reached (protocol, connections, security), in words
    /// for `--check`.
    fn connection(&self) -> String {
        "a mounted or local directory".into()
    }

    /// Looks at DEST itself.
    fn root_state(&self) -> Result<RootState>;

    /// Returns DEST as a directory, creating it (and missing parents) if needed.
    fn root_dir(&self) -> Result<Self::Dir>;

    /// DEST's parent directory and DEST's final name: used when a single file is
    /// copied to a new name.
    fn root_parent(&self) -> Result<(Self::Dir, OsString)>;

    /// Lists a directory (one readdir, or READDIRPLUS pages).
    fn list(&self, dir: &Self::Dir) -> Result<Vec<DestEntry>>;

    /// `lstat` of one entry; `Ok(None)` when it does not exist.
    fn stat(&self, dir: &Self::Dir, name: &OsStr) -> Result<Option<Meta>>;

    /// Creates a directory, writable by us until [`Destination::set_dir_attrs`] gives it
    /// its final attributes. Returns it and what `set_dir_attrs` must still apply once
    /// its children are in: each backend knows what its create already gave (the mode
    /// when it leaves the directory writable, owners it passed along), and a `chmod` or
    /// `chown` saved is a round trip saved per directory.
    fn mkdir(&self, dir: &Self::Dir, name: &OsStr, meta: &Meta) -> Result<(Self::Dir, AttrSet)>;

    /// Opens an existing subdirectory, returning its current attributes too (so the
    /// engine can leave an unchanged directory's attributes alone).
    fn open_dir(&self, dir: &Self::Dir, name: &OsStr) -> Result<(Self::Dir, Meta)>;

    /// Creates a regular file (which must not exist) with the source's content, then
    /// mode and ownership, and the mtime last. Returns the bytes written.
    ///
    /// The create is exclusive: a name that exists (another run may have made it
    /// meanwhile) fails with `AlreadyExists` and the engine looks again. When writing
    /// fails after the create, the backend removes its partial file itself, and only
    /// while the name still holds the object it created (same inode, same file
    /// handle): another run may have renamed a finished copy over it, which must stay.
    /// On [`CopyError::SourceChanged`] the file is left, without the source's mtime; so
    /// is one given up for the stop with [`SourceFile::keep_partial`].
    fn write_file(
        &self,
        dir: &Self::Dir,
        name: &OsStr,
        src: &SourceFile<'_>,
    ) -> std::result::Result<u64, CopyError>;

    /// Writes the source's bytes from offset `from` on into the existing regular file
    /// `name` (rsync `--inplace`: from 0; `--append`: from the destination's length),
    /// cuts it to the source's size, then gives it mode and ownership, and the mtime
    /// last. Returns the bytes written. Writing in place is what makes hard links to
    /// the file see the new content; a failure part-way leaves the file with the
    /// data written so far and its old mtime, so the quick check copies it again.
    fn write_into(
        &self,
        dir: &Self::Dir,
        name: &OsStr,
        src: &SourceFile<'_>,
        from: u64,
    ) -> std::result::Result<u64, CopyError> {
        let _ = (dir, name, src, from);
        Err(CopyError::Dest(unsupported(
            "writing into an existing file is not supported by this destination",
        )))
    }

    /// Reads a symbolic link's target (to compare it with the source's).
    fn read_link(&self, dir: &Self::Dir, name: &OsStr) -> Result<OsString>;

    /// Creates a symbolic link (which must not exist) and sets its ownership and mtime.
    fn symlink(&self, dir: &Self::Dir, name: &OsStr, target: &OsStr, meta: &Meta) -> Result<()>;

    /// Creates `name` as a hard link to the already written `target_dir/target_name`.
    fn hard_link(
        &self,
        dir: &Self::Dir,
        name: &OsStr,
        target_dir: &Self::Dir,
        target_name: &OsStr,
    ) -> Result<()>;

    /// [`Destination::hard_link`] to the object `target_name` holds *now*. A backend
    /// may remember the objects it wrote, to save a lookup per link to them; another
    /// writer (an overlapping run) may have renamed something else over such a name
    /// since, and `-H` runs that settle a group must link to what the name holds.
    fn hard_link_current(
        &self,
        dir: &Self::Dir,
        name: &OsStr,
        target_dir: &Self::Dir,
        target_name: &OsStr,
    ) -> Result<()> {
        self.hard_link(dir, name, target_dir, target_name)
    }

    /// Creates a fifo, socket or device node, with its attributes.
    fn mknod(&self, dir: &Self::Dir, name: &OsStr, meta: &Meta) -> Result<()>;

    /// Renames `from` to `to` within one directory, replacing a file at `to` in one step
    /// (rename(2), NFS RENAME): an update is written under a temporary name and put in
    /// place with this, so until then the old copy stays whole.
    fn rename(&self, dir: &Self::Dir, from: &OsStr, to: &OsStr) -> Result<()>;

    /// Removes one entry that is not a directory (or an empty directory).
    fn remove(&self, dir: &Self::Dir, name: &OsStr, kind: Kind) -> Result<()>;

    /// Removes the directory `name` with everything in it, deepest first, asking
    /// `each` before each entry goes and telling it after (every removed entry is
    /// itemized and counted, and `--max-delete` can stop it part-way). An entry `each`
    /// keeps keeps the directories above it. Returns whether `name` is gone.
    fn remove_tree(&self, dir: &Self::Dir, name: &OsStr, each: &dyn Removal) -> Result<bool>;

    /// Brings an existing entry's attributes in line with `meta`.
    fn set_attrs(&self, dir: &Self::Dir, name: &OsStr, meta: &Meta, what: AttrSet) -> Result<()>;

    /// Gives a directory its final mode, ownership and mtime once its children are done.
    /// `what` says which of them differ from what the directory has (the engine knows,
    /// having created or opened it); a backend that sets everything in one call (NFS
    /// SETATTR) may ignore it.
    fn set_dir_attrs(&self, dir: &Self::Dir, meta: &Meta, what: AttrSet) -> Result<()>;

    /// `--checksum`: whether the destination file's bytes equal those of `src`, a
    /// source file just opened (see [`crate::source::open_file`]).
    fn same_content(&self, dir: &Self::Dir, name: &OsStr, src: Data) -> Result<bool>;

    /// A regular file of this destination opened for reading, to be copied within it
    /// (a `--copy-dest` basis copy, the old copy `--inplace --backup` keeps): opened
    /// without following a symlink and without blocking on a FIFO. `Ok(None)` when
    /// `name` is not a regular file, or where the backend cannot read its files back
    /// (then the caller takes the bytes from elsewhere or declines). Read as a source
    /// file is: checked against its listing after the last byte.
    fn open_file(&self, dir: &Self::Dir, name: &OsStr) -> Result<Option<Data>> {
        let _ = (dir, name);
        Ok(None)
    }

    /// How many of DEST's parents (and DEST itself with `with_dest`) are missing: what
    /// `--mkpath` says it makes. 0 where the backend makes them as it goes (NFS).
    fn missing_parents(&self, with_dest: bool) -> usize {
        let _ = with_dest;
        0
    }

    /// Makes DEST's missing parents (`--mkpath`, before a file is copied onto DEST's
    /// name).
    fn make_parents(&self) -> Result<()> {
        Ok(())
    }

    /// Opens the directory at `path`: relative to DEST (`..` allowed), or absolute (on
    /// the mount path the filesystem's; on `nfs://` a path on the server as the URL
    /// writes it, within the export for NFSv3). With `create` missing directories are
    /// made (0755, as `mkdir -p`); without, a missing one is `Ok(None)`. For
    /// `--backup-dir`, `--temp-dir` and the basis directories of `--link-dest` and its
    /// kin, which the user names by path and which need not lie below DEST.
    fn open_path(&self, path: &Path, create: bool) -> Result<Option<Self::Dir>>;

    /// Renames `from_dir/from` to `to_dir/to`, replacing a non-directory at `to` in one
    /// step (renameat(2), NFS RENAME with two directory handles): how `--backup-dir`
    /// moves a replaced or deleted entry into the backup tree, and how an update
    /// written in `--temp-dir` is put in place. Where the two are on different
    /// filesystems the mount path copies, as rsync does.
    fn rename_into(
        &self,
        from_dir: &Self::Dir,
        from: &OsStr,
        to_dir: &Self::Dir,
        to: &OsStr,
    ) -> Result<()>;

    /// `-X`/`-A`: the kept extended attributes of `name` in `dir` (of `dir` itself for
    /// `None`). A destination that cannot hold them answers `Unsupported` (the engine
    /// warns once and copies on without them).
    fn xattrs(&self, dir: &Self::Dir, name: Option<&OsStr>, set: XattrSet) -> Result<Xattrs> {
        let _ = (dir, name, set);
        Err(unsupported(
            "extended attributes and ACLs are not supported by this destination",
        ))
    }

    /// Makes the kept extended attributes equal `want`, `have` being what
    /// [`Destination::xattrs`] returned.
    fn set_xattrs(
        &self,
        dir: &Self::Dir,
        name: Option<&OsStr>,
        have: &Xattrs,
        want: &Xattrs,
    ) -> Result<()> {
        let _ = (dir, name, have, want);
        Err(unsupported(
            "extended attributes and ACLs are not supported by this destination",
        ))
    }

    /// The permission bits a default ACL on `dir` lets what is created in it keep
    /// (standing in for the umask, as rsync takes it); `None` when it has none.
    fn default_perms(&self, dir: &Self::Dir) -> Option<u32> {
        let _ = dir;
        None
    }

    /// `-K`: the directory a destination symlink (`name` in `dir`, at `rel` below
    /// DEST) points to, with its attributes; `None` when it points to something else
    /// or nowhere (then it is replaced). A link that leads out of DEST is refused
    /// (`ELOOP`, as rsync 3.5): following it would write outside the tree.
    fn open_dir_link(
        &self,
        dir: &Self::Dir,
        name: &OsStr,
        rel: &Path,
    ) -> Result<Option<(Self::Dir, Meta)>> {
        let _ = (dir, name, rel);
        Err(unsupported(
            "-K (--keep-dirlinks) is not supported by this destination (its symlinks are not followed)",
        ))
    }
}

/// What a destination cannot do, said in `why`: one entry's error of kind
/// `ErrorKind::Unsupported`.
pub fn unsupported(why: &'static str) -> Error {
    Error::Entry(io::Error::new(io::ErrorKind::Unsupported, why))
}
