//! The source seam: where the command line's sources are read from, as
//! [`crate::dest`] is where they are written.
//!
//! A local source is read by descriptor (`entry.rs`: each directory listed by the
//! worker that scans it, never a separate walk). A source read through a client
//! (`nfs://`) hands the listing its directories as [`RemoteDir`]s (`remote.rs`): each
//! lists itself with the attributes the quick check needs and opens, reads and
//! removes its own entries. A file's bytes reach a destination as a [`Data`],
//! whatever holds them. The engine sees listed entries either way and never names a
//! source backend, as it never names a destination one.

mod data;
mod entry;
mod remote;

use std::ffi::{OsStr, OsString};
use std::fs;
use std::io::{self, Read};
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use data::{Data, Reader, Stream};
pub use entry::{
    in_listed_dir, is_local, list_dir, list_entry, lstat, open_dir, open_file, read_child,
    read_faked, read_link, referent, remove, short_path,
};

use crate::meta::Meta;

/// One source entry.
#[derive(Clone, Debug)]
pub struct SrcEntry {
    /// Name inside the destination directory.
    pub name: OsString,
    /// Full source path.
    pub path: PathBuf,
    /// `lstat` of the source.
    pub meta: Meta,
    /// The source directory it was listed in, held open. The entry is opened relative
    /// to it, never through its path, so a directory on that path swapped for a
    /// symlink after the listing is never followed (rsync's confined open). `None`
    /// for local paths the command line names and for symlinks followed on purpose
    /// (`-L`, `-k`), which are opened by path. An entry of a remote source always has
    /// one (for an operand, one that answers for it under any name).
    pub parent: Option<Arc<Held>>,
}

/// Why an entry could not be listed.
#[derive(Debug)]
pub enum ListError {
    /// The directory itself could not be read: nothing under it is known.
    Dir(io::Error),
    /// One entry vanished between readdir and lstat.
    Vanished(PathBuf),
    /// One entry could not be stat'ed.
    Entry(PathBuf, io::Error),
}

/// A directory's entries, with the problems met listing them one by one; or why it
/// could not be listed at all.
pub type Listing = Result<(Vec<SrcEntry>, Vec<ListError>), ListError>;

/// Most bytes [`entry::read_child`] reads: a file in a source directory read whole (a
/// per-directory filter file) is text a person wrote, not data to copy.
pub const CHILD_MAX: u64 = 1 << 20;

/// Reads `f` whole, refusing more than [`CHILD_MAX`] bytes.
fn read_bounded(f: impl io::Read) -> io::Result<Vec<u8>> {
    let mut v = Vec::new();
    f.take(CHILD_MAX + 1).read_to_end(&mut v)?;
    if v.len() as u64 > CHILD_MAX {
        return Err(too_large());
    }
    Ok(v)
}

/// What [`entry::read_child`] says of a file larger than [`CHILD_MAX`].
fn too_large() -> io::Error {
    io::Error::new(
        io::ErrorKind::FileTooLarge,
        format!("larger than {} bytes, not read", CHILD_MAX),
    )
}

/// A source directory held for the entries listed in it.
pub enum Held {
    /// A local directory, open (`O_DIRECTORY`, never through a symlink).
    Fd(OwnedFd),
    /// A directory of a source read through a client.
    Remote(Box<dyn RemoteDir>),
}

impl std::fmt::Debug for Held {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Held::Fd(fd) => f.debug_tuple("Fd").field(fd).finish(),
            Held::Remote(_) => f.write_str("Remote"),
        }
    }
}

/// A remote directory's listing: entries with their attributes, and the names that
/// could not be looked at with why.
pub type Entries = (Vec<(OsString, Meta)>, Vec<(OsString, io::Error)>);

/// One directory of a remote source, by its handle: what the walk and the copy ask of
/// it. Names are single components; nothing is resolved by path again, so a
/// directory swapped for a symlink on the server after the listing is never
/// followed.
pub trait RemoteDir: Send + Sync {
    /// Its entries (never `.` or `..`) with their attributes, in any order; problems
    /// with single entries (one that vanished while it was looked at) beside them.
    fn entries(&self) -> io::Result<Entries>;
    /// The directory `name` in it (never through a symlink: `ELOOP`).
    fn open_dir(&self, name: &OsStr) -> io::Result<Box<dyn RemoteDir>>;
    /// The regular file `name`, opened for reading as it is consumed; its attributes
    /// after the last byte read are what the copy checks against `listed`, so a file
    /// that changed while it was read never looks complete. `paced` (`--bwlimit`):
    /// little is read ahead of what is consumed. `None` when it is no longer a regular
    /// file.
    fn open_file(&self, name: &OsStr, listed: &Meta, paced: bool) -> io::Result<Option<Data>>;
    /// A symlink's target.
    fn read_link(&self, name: &OsStr) -> io::Result<OsString>;
    /// `name`'s attributes now, not following a symlink.
    fn lstat(&self, name: &OsStr) -> io::Result<Meta>;
    /// Removes the non-directory `name` (`--remove-source-files`).
    fn remove(&self, name: &OsStr) -> io::Result<()>;
    /// What the symlink `name` leads to (`-L`, `-k`), resolved on the server: its
    /// attributes, and a directory that answers for it under any name.
    fn referent(&self, name: &OsStr) -> io::Result<(Meta, Box<dyn RemoteDir>)>;
}

/// Where the command line's sources are: each operand becomes the entry the walk
/// starts from.
pub trait Source: Send + Sync {
    /// The operand `given` as rsync's operand rules see it: the path with a URL's
    /// query taken off, so the trailing-slash rule and the entry's name read it.
    fn path_of(&self, given: &Path) -> PathBuf {
        given.to_path_buf()
    }
    /// The entry for the operand `given` (or a path below one, as `--files-from`
    /// names it), its attributes following a final symlink when `contents` (`SRC/`)
    /// where the source can. The walk lists it for `SRC/`, or copies it under the
    /// name it gives the entry.
    fn operand(&self, given: &Path, contents: bool) -> io::Result<SrcEntry>;
    /// Whether the source's extended attributes and ACLs are read (`-X`/`-A`). When
    /// they are not, the destination's are neither compared nor changed: what is not
    /// known is not removed.
    fn reads_xattrs(&self) -> bool {
        true
    }
}

/// Local paths: what the command line names is looked at through the kernel.
pub struct LocalPaths;

impl Source for LocalPaths {
    fn operand(&self, given: &Path, contents: bool) -> io::Result<SrcEntry> {
        let m = match contents {
            true => fs::metadata(given),
            false => fs::symlink_metadata(given),
        }?;
        let name = match contents {
            true => OsString::new(),
            false => given.file_name().map(|n| n.to_owned()).unwrap_or_default(),
        };
        Ok(SrcEntry {
            name,
            path: given.to_path_buf(),
            meta: Meta::from_std(&m),
            parent: None,
        })
    }
}
