//! What one NFS version provides, in its own terms, so that everything both versions
//! do alike is written once (`seam`: the engine's `Destination`; `tree`: recursive
//! removal).
//!
//! Names are bytes, as both protocols carry them; the calls are blocking, as the
//! engine's workers make them. Each trait is implemented in the file that holds those
//! calls in a version: [`NfsOps`] (directories and attributes) in its `dest`,
//! [`FileOps`] in `write`, [`ObjectOps`] in `objects`, [`PathOps`] in `paths`.

use std::collections::HashMap;
use std::io;
use std::path::Path;
use std::sync::{Arc, Mutex};

use tokio::runtime::Runtime;
use tokio::sync::Semaphore;

use super::names::Refused;
use crate::dest::{self, AttrSet, CopyError, RootState, SourceFile, Wire};
use crate::meta::{Meta, Time};
use crate::tune::Bounds;

/// A directory as the server listed it: its entries, each name once and a single
/// component, and the names refused on the way in (see [`super::names`]).
pub struct ListedDir<F> {
    pub entries: Vec<Listed<F>>,
    pub refused: Vec<Refused>,
}

/// One entry of a directory as the server listed it.
pub struct Listed<F> {
    /// Its name: one path component (checked as it came in).
    pub name: Vec<u8>,
    /// Its attributes, when the listing carried them.
    pub meta: Option<Meta>,
    /// Its handle, when the listing carried it.
    pub fh: Option<F>,
}

/// (directory handle, entry name): how handles are kept.
pub type EntryKey = (Vec<u8>, Vec<u8>);

/// Directory handles from the last listings, for the engine's `open_dir` of what it
/// just listed: nothing listed is looked up again.
pub struct DirCache<F>(Mutex<HashMap<EntryKey, (F, Meta)>>);

impl<F> Default for DirCache<F> {
    fn default() -> Self {
        DirCache(Mutex::new(HashMap::new()))
    }
}

impl<F> DirCache<F> {
    /// Keeps the handles of `dirs`, entries of the directory `parent`.
    pub fn keep(&self, parent: &[u8], dirs: Vec<(Vec<u8>, F, Meta)>) {
        if let Ok(mut c) = self.0.lock() {
            c.extend(
                dirs.into_iter()
                    .map(|(name, fh, m)| ((parent.to_vec(), name), (fh, m))),
            );
        }
    }

    /// The handle kept for `name` in `parent`, given out once.
    pub fn take(&self, parent: &[u8], name: &[u8]) -> Option<(F, Meta)> {
        self.0
            .lock()
            .ok()
            .and_then(|mut c| c.remove(&(parent.to_vec(), name.to_vec())))
    }
}

/// A version's directories, attributes and state: the base of the other traits.
pub trait NfsOps: Send + Sync {
    /// A directory handle, with what finds it again when it goes stale.
    type Dir: Clone + Send + Sync;
    /// A file handle.
    type Fh: Clone + Send + Sync + 'static;
    /// Where DEST's path starts, for messages ("the export root").
    const TOP: &'static str;

    /// `nfs://server/path`, for messages.
    fn label(&self) -> &str;
    /// The runtime the calls run on.
    fn runtime(&self) -> &Runtime;
    /// Handles of directories listed last.
    fn dir_cache(&self) -> &DirCache<Self::Fh>;
    /// A directory's handle as bytes (the cache's key).
    fn handle(dir: &Self::Dir) -> &[u8];
    /// The directory `name` in `dir`, whose handle is `fh`.
    fn child(dir: &Self::Dir, fh: Self::Fh, name: &[u8]) -> Self::Dir;

    /// See [`dest::Destination::auto_bounds`].
    fn bounds(&self) -> Bounds;
    /// See [`dest::Destination::wire`].
    fn wire(&self) -> Wire;
    /// See [`dest::Destination::connection`].
    fn connection(&self) -> String;
    /// See [`dest::Destination::storable_time`].
    fn storable_time(&self, t: Time) -> Time {
        t
    }
    /// See [`dest::Destination::explain`].
    fn explain(&self, e: &dest::Error) -> Option<&'static str> {
        let _ = e;
        None
    }
    /// See [`dest::Destination::root_state`].
    fn root_state(&self) -> dest::Result<RootState>;
    /// DEST's path from [`NfsOps::TOP`].
    fn dest_path(&self) -> &[Vec<u8>];
    /// The directory at the first `upto` components of DEST's path, made (0755) where
    /// missing, as `mkdir -p` would.
    fn dir_at(&self, upto: usize) -> dest::Result<Self::Dir>;
    /// LOOKUP of `name` in `dir`: its handle and attributes, `None` when not there.
    fn find(&self, dir: &Self::Dir, name: &[u8]) -> dest::Result<Option<(Self::Fh, Meta)>>;
    /// Every entry of `dir`.
    fn read_dir(&self, dir: &Self::Dir) -> dest::Result<ListedDir<Self::Fh>>;
    /// Makes the directory `name` (writable by us until [`NfsOps::set_dir_attrs`]).
    fn make_dir(&self, dir: &Self::Dir, name: &[u8], m: &Meta) -> dest::Result<Self::Fh>;
    /// A symlink's target.
    fn read_link(&self, dir: &Self::Dir, name: &[u8]) -> dest::Result<Vec<u8>>;
    /// See [`dest::Destination::set_attrs`].
    fn set_attrs(&self, dir: &Self::Dir, name: &[u8], m: &Meta, what: AttrSet) -> dest::Result<()>;
    /// See [`dest::Destination::set_dir_attrs`].
    fn set_dir_attrs(&self, dir: &Self::Dir, m: &Meta, what: AttrSet) -> dest::Result<()>;
}

/// A version's file data.
pub trait FileOps: NfsOps {
    /// See [`dest::Destination::write_file`].
    fn write_file(
        &self,
        dir: &Self::Dir,
        name: &[u8],
        src: &SourceFile<'_>,
    ) -> Result<u64, CopyError>;
    /// See [`dest::Destination::write_into`].
    fn write_into(
        &self,
        dir: &Self::Dir,
        name: &[u8],
        src: &SourceFile<'_>,
        from: u64,
    ) -> Result<u64, CopyError>;
    /// Memory for file data in flight, all files together.
    fn budget(&self) -> &Arc<Semaphore>;
    /// Bytes per READ.
    fn read_size(&self) -> u64;
    /// READ of `len` bytes at `off`, fewer only at the end of the file.
    fn read(
        &self,
        fh: &Self::Fh,
        off: u64,
        len: u32,
    ) -> impl Future<Output = dest::Result<Vec<u8>>> + Send + 'static;
    /// READ of up to `len` bytes at `off` (0: none, for the attributes alone), with the
    /// file's attributes after it from the same call where the version carries them.
    fn read_with_attrs(
        &self,
        fh: &Self::Fh,
        off: u64,
        len: u32,
    ) -> dest::Result<(Vec<u8>, Option<Meta>)>;
}

/// A version's objects other than files and directories, and their removal.
pub trait ObjectOps: NfsOps {
    /// See [`dest::Destination::symlink`].
    fn symlink(&self, dir: &Self::Dir, name: &[u8], target: &[u8], m: &Meta) -> dest::Result<()>;
    /// See [`dest::Destination::hard_link`].
    fn hard_link(
        &self,
        dir: &Self::Dir,
        name: &[u8],
        target_dir: &Self::Dir,
        target_name: &[u8],
    ) -> dest::Result<()>;
    /// Forgets what `hard_link` remembers of the object written at `name`, so the next
    /// link to it looks the name up (see [`dest::Destination::hard_link_current`]).
    fn forget_written(&self, dir: &Self::Dir, name: &[u8]) {
        let _ = (dir, name);
    }
    /// See [`dest::Destination::mknod`].
    fn mknod(&self, dir: &Self::Dir, name: &[u8], m: &Meta) -> dest::Result<()>;
    /// Removes one entry; `is_dir` when it is a directory (emptied already).
    fn remove(&self, dir: &Self::Dir, name: &[u8], is_dir: bool) -> dest::Result<()>;
    /// Removes many non-directory entries of one directory at once; one result each,
    /// in order.
    fn remove_many(&self, dir: &Self::Dir, names: &[&[u8]]) -> Vec<dest::Result<()>>;
}

/// A version's directories named by path, and RENAME.
pub trait PathOps: NfsOps {
    /// See [`dest::Destination::open_path`].
    fn open_path(&self, path: &Path, create: bool) -> dest::Result<Option<Self::Dir>>;
    /// RENAME, within one directory or between two.
    fn rename(
        &self,
        from_dir: &Self::Dir,
        from: &[u8],
        to_dir: &Self::Dir,
        to: &[u8],
    ) -> dest::Result<()>;
}

/// A client error as the walk's: an entry's error as it is; a server that went away
/// or stopped answering keeps a kind that ends the run (see `dest::Error::from`).
pub fn to_io(e: dest::Error) -> io::Error {
    match e {
        dest::Error::Entry(e) => e,
        dest::Error::Unreachable(e) => io::Error::new(io::ErrorKind::ConnectionAborted, e),
        dest::Error::TimedOut(e) => io::Error::new(io::ErrorKind::TimedOut, e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::meta::Kind;

    #[test]
    fn a_listed_directory_handle_is_given_out_once_for_its_own_parent_and_name() {
        let cache = DirCache::default();
        let m = Meta::of(Kind::Dir, 0);
        cache.keep(b"p", vec![(b"d".to_vec(), 7u8, m)]);
        assert!(cache.take(b"q", b"d").is_none());
        assert!(cache.take(b"p", b"e").is_none());
        assert_eq!(cache.take(b"p", b"d").map(|(fh, _)| fh), Some(7));
        assert!(cache.take(b"p", b"d").is_none());
    }
}
