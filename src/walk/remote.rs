//! The source seam: where the command line's sources are read from.
//!
//! A local source is read by descriptor (the rest of [`super`]). A source read
//! through a client (`nfs://`) hands the walk its directories as [`RemoteDir`]s: each
//! lists itself with the attributes the quick check needs and opens, reads and
//! removes its own entries. The engine sees [`super::SrcEntry`]s either way and never
//! names a source backend, as it never names a destination one.

use std::ffi::{OsStr, OsString};
use std::fs::{self, File};
use std::io;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::{ListError, Listing, SrcEntry};
use crate::meta::Meta;

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
    /// The regular file `name`, read whole into an unnamed local file that carries the
    /// size and mtime the server gave after the last byte was read (so a file that
    /// changed while it was read fails the copy's check against `listed`). `None`
    /// when it is no longer a regular file.
    fn open_file(&self, name: &OsStr, listed: &Meta) -> io::Result<Option<File>>;
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

/// Lists the directory `e` (its parent's entry `e.name`), sorted by name as a local
/// listing is.
pub(super) fn list(parent: &dyn RemoteDir, e: &SrcEntry) -> Listing {
    let dir = parent.open_dir(&e.name).map_err(ListError::Dir)?;
    let (listed, problems) = match dir.entries() {
        Ok(listed) => listed,
        // Its handle went stale: it was removed since its parent's listing. Gone by
        // name too, it vanished, as a local directory would.
        Err(err)
            if err.raw_os_error() == Some(libc::ESTALE)
                && parent
                    .lstat(&e.name)
                    .is_err_and(|gone| gone.kind() == io::ErrorKind::NotFound) =>
        {
            return Err(ListError::Dir(io::Error::from_raw_os_error(libc::ENOENT)));
        }
        Err(err) => return Err(ListError::Dir(err)),
    };
    let held = Arc::new(Held::Remote(dir));
    // Whatever a backend let through, a name that is not one component never becomes
    // an entry: joined to DEST it would lead elsewhere.
    let (listed, bad): (Vec<_>, Vec<_>) = listed
        .into_iter()
        .partition(|(name, _)| crate::name::check(name.as_bytes()).is_ok());
    let mut entries: Vec<SrcEntry> = listed
        .into_iter()
        .map(|(name, meta)| SrcEntry {
            path: e.path.join(&name),
            name,
            meta,
            parent: Some(held.clone()),
        })
        .collect();
    entries.sort_unstable_by(|a, b| a.name.cmp(&b.name));
    let bad = bad.into_iter().map(|(name, _)| {
        let why = crate::name::check(name.as_bytes()).err();
        let text = format!(
            "refused the entry name \"{}\": {}",
            crate::name::escape(name.as_bytes()),
            why.map(|w| w.to_string()).unwrap_or_default()
        );
        (
            OsString::new(),
            io::Error::new(io::ErrorKind::InvalidData, text),
        )
    });
    let problems = problems
        .into_iter()
        .chain(bad)
        .map(|(name, err)| match err.kind() {
            io::ErrorKind::NotFound => ListError::Vanished(e.path.join(name)),
            _ => ListError::Entry(e.path.join(name), err),
        })
        .collect();
    Ok((entries, problems))
}

/// The file `name` in the directory `dir_name` of `parent` (see [`super::read_child`]),
/// read whole: a symlink there is not followed (its text is a path on the server).
pub(super) fn read_child(
    parent: &dyn RemoteDir,
    dir_name: &OsStr,
    name: &OsStr,
) -> io::Result<Vec<u8>> {
    use crate::meta::Kind;
    if crate::name::check(name.as_bytes()).is_err() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "not a name in the directory: a file of a source read over the network is read \
             from the directory that holds it",
        ));
    }
    let dir = parent.open_dir(dir_name)?;
    let meta = dir.lstat(name)?;
    match meta.kind {
        Kind::File if meta.size > super::CHILD_MAX => return Err(super::too_large()),
        Kind::File => {}
        Kind::Dir => return Err(io::Error::from_raw_os_error(libc::EISDIR)),
        Kind::Symlink => {
            return Err(io::Error::other(
                "a symlink on the NFS server is not followed over nfs://",
            ));
        }
        _ => return Err(not_regular()),
    }
    match dir.open_file(name, &meta)? {
        Some(f) => super::read_bounded(f),
        None => Err(not_regular()),
    }
}

fn not_regular() -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, "not a regular file")
}

/// What a remote entry answers to a call that needs a local descriptor or path.
pub(super) fn no_descriptor() -> io::Error {
    io::Error::new(
        io::ErrorKind::Unsupported,
        "not possible on a source read over the network",
    )
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
