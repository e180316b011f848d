//! Listing the source, one directory at a time.
//!
//! The walk is not a separate pass: each directory is listed by whichever worker picks
//! up its scan job, so listing overlaps copying and many directories are listed at
//! once (like ripgrep's `WalkParallel`, but driven by the engine's scheduler, which
//! only lists more when the copy queue runs low: memory stays bounded however large
//! the tree). A listing is one `readdir` plus one `lstat` per entry.

use std::ffi::OsString;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

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

/// Lists `dir`, sorted by name so that runs are reproducible. Entry-level problems
/// are returned beside the entries that did list.
pub fn list_dir(dir: &Path) -> Result<(Vec<SrcEntry>, Vec<ListError>), ListError> {
    let rd = fs::read_dir(dir).map_err(ListError::Dir)?;
    let mut entries = Vec::new();
    let mut problems = Vec::new();
    for e in rd {
        let e = e.map_err(ListError::Dir)?;
        let path = e.path();
        match fs::symlink_metadata(&path) {
            Ok(m) => entries.push(SrcEntry {
                name: e.file_name(),
                meta: Meta::from_std(&m),
                path,
            }),
            Err(err) if err.kind() == io::ErrorKind::NotFound => {
                problems.push(ListError::Vanished(path))
            }
            Err(err) => problems.push(ListError::Entry(path, err)),
        }
    }
    entries.sort_unstable_by(|a, b| a.name.cmp(&b.name));
    Ok((entries, problems))
}
