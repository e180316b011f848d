//! Recursive removal for `--delete`, shared by the NFSv3 and NFSv4.1 paths.
//!
//! Neither protocol removes a tree in one call, so the client walks it: deepest first,
//! a directory's files many at once (one round trip for all of them instead of one
//! each), and the engine asked before each entry goes (see [`Removal`]). The walk is
//! the same on both versions; only the calls differ, which is what [`TreeOps`] gives.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use crate::dest::{self, Removal};
use crate::meta::Kind;

/// What [`remove_tree`] finds under a name.
pub(crate) enum Found<D> {
    /// A directory, opened.
    Dir(D),
    /// Anything else.
    Other(Kind),
}

/// A backend's calls, blocking, as [`remove_tree`] needs them.
pub(crate) trait TreeOps {
    /// A directory handle.
    type Dir: Clone;

    /// LOOKUP of `name` in `parent`; `None` when it is not there.
    fn find(&self, parent: &Self::Dir, name: &[u8]) -> dest::Result<Option<Found<Self::Dir>>>;

    /// A directory's entries with their kind when the listing carried it.
    fn entries(&self, dir: &Self::Dir) -> dest::Result<Vec<(Vec<u8>, Option<Kind>)>>;

    /// Removes one entry; `is_dir` when it is a directory (emptied already).
    fn remove_one(&self, dir: &Self::Dir, name: &[u8], is_dir: bool) -> dest::Result<()>;

    /// Removes many non-directory entries of one directory at once; one result each,
    /// in order.
    fn remove_many(&self, dir: &Self::Dir, names: &[&[u8]]) -> Vec<dest::Result<()>>;
}

/// Removes `rel`'s last component from `parent` with everything in it (see
/// [`crate::dest::Destination::remove_tree`]); `rel` is the path the engine is told.
pub(crate) fn remove_tree<T: TreeOps>(
    ops: &T,
    parent: &T::Dir,
    rel: &Path,
    each: &dyn Removal,
) -> dest::Result<bool> {
    let name = rel.file_name().unwrap_or(rel.as_os_str()).as_bytes();
    let dir = match ops.find(parent, name)? {
        None => return Ok(true),
        Some(Found::Other(kind)) => {
            // Replaced by something else meanwhile: remove that.
            if !each.may_remove(rel, kind) {
                return Ok(false);
            }
            ops.remove_one(parent, name, false)?;
            each.removed(rel, kind);
            return Ok(true);
        }
        Some(Found::Dir(dir)) => dir,
    };
    let mut all_gone = true;
    let mut files: Vec<(PathBuf, Kind)> = Vec::new();
    for (n, kind) in ops.entries(&dir)? {
        let child = rel.join(OsStr::from_bytes(&n));
        // Without a type, REMOVE tells a directory (NOTEMPTY or ISDIR): then as one.
        let kind = kind.unwrap_or(Kind::File);
        if kind == Kind::Dir {
            all_gone &= remove_tree(ops, &dir, &child, each)?;
        } else if each.may_remove(&child, kind) {
            files.push((child, kind));
        } else {
            all_gone = false;
        }
    }
    let names: Vec<&[u8]> = files
        .iter()
        .map(|(child, _)| child.file_name().unwrap_or_default().as_bytes())
        .collect();
    let results = ops.remove_many(&dir, &names);
    let mut first_err = None;
    for (r, (child, kind)) in results.into_iter().zip(&files) {
        match r {
            Ok(()) => each.removed(child, *kind),
            Err(e)
                if matches!(
                    e.raw_os_error(),
                    Some(libc::EISDIR | libc::ENOTEMPTY | libc::EEXIST)
                ) =>
            {
                all_gone &= remove_tree(ops, &dir, child, each)?;
            }
            Err(e) => {
                first_err.get_or_insert(e);
            }
        }
    }
    if let Some(e) = first_err {
        return Err(e);
    }
    if !all_gone || !each.may_remove(rel, Kind::Dir) {
        return Ok(false);
    }
    ops.remove_one(parent, name, true)?;
    each.removed(rel, Kind::Dir);
    Ok(true)
}
