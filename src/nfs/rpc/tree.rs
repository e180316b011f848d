//! Recursive removal for `--delete`, shared by the NFSv3 and NFSv4.1 paths.
//!
//! Neither protocol removes a tree in one call, so the client walks it: deepest first,
//! a directory's files many at once (one round trip for all of them instead of one
//! each), and the engine asked before each entry goes (see [`Removal`]). The walk is
//! the same on both versions; only the calls differ, which is what [`ObjectOps`] gives.

use std::ffi::OsStr;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use super::ops::ObjectOps;
use crate::dest::{self, Removal};
use crate::meta::Kind;

/// Removes `rel`'s last component from `parent` with everything in it (see
/// [`crate::dest::Destination::remove_tree`]); `rel` is the path the engine is told.
pub(crate) fn remove_tree<T: ObjectOps>(
    ops: &T,
    parent: &T::Dir,
    rel: &Path,
    each: &dyn Removal,
) -> dest::Result<bool> {
    remove_below(
        ops,
        parent,
        rel,
        each,
        &mut vec![T::handle(parent).to_vec()],
    )
}

/// [`remove_tree`] with the handles of the directories above `rel` (`above`): a server
/// that lists an ancestor as a child must not send the walk round until the stack
/// runs out.
fn remove_below<T: ObjectOps>(
    ops: &T,
    parent: &T::Dir,
    rel: &Path,
    each: &dyn Removal,
    above: &mut Vec<Vec<u8>>,
) -> dest::Result<bool> {
    let name = rel.file_name().unwrap_or(rel.as_os_str()).as_bytes();
    let dir = match ops.find(parent, name)? {
        None => return Ok(true),
        Some((_, m)) if m.kind != Kind::Dir => {
            let kind = m.kind;
            // Replaced by something else meanwhile: remove that.
            if !each.may_remove(rel, kind) {
                return Ok(false);
            }
            ops.remove(parent, name, false)?;
            each.removed(rel, kind);
            return Ok(true);
        }
        Some((fh, _)) => T::child(parent, fh, name),
    };
    if above.iter().any(|h| h == T::handle(&dir)) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "the server gave this directory the handle of a directory above it (a looping server)",
        )
        .into());
    }
    above.push(T::handle(&dir).to_vec());
    let r = remove_inside(ops, parent, &dir, name, rel, each, above);
    above.pop();
    r
}

/// Empties the directory `dir` (`name` in `parent`, `rel` to the engine) and removes it.
fn remove_inside<T: ObjectOps>(
    ops: &T,
    parent: &T::Dir,
    dir: &T::Dir,
    name: &[u8],
    rel: &Path,
    each: &dyn Removal,
    above: &mut Vec<Vec<u8>>,
) -> dest::Result<bool> {
    let mut all_gone = true;
    let mut files: Vec<(PathBuf, Kind)> = Vec::new();
    let listed = ops.read_dir(dir)?;
    // A name that is not one component must never be sent back in a REMOVE: the
    // directory is left whole, with the reason.
    if let Some(bad) = listed.refused.first() {
        return Err(bad.to_io().into());
    }
    for e in listed.entries {
        let child = rel.join(OsStr::from_bytes(&e.name));
        // Without a type, REMOVE tells a directory (NOTEMPTY or ISDIR): then as one.
        let kind = e.meta.map_or(Kind::File, |m| m.kind);
        if kind == Kind::Dir {
            all_gone &= remove_below(ops, dir, &child, each, above)?;
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
    let results = ops.remove_many(dir, &names);
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
                all_gone &= remove_below(ops, dir, child, each, above)?;
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
    ops.remove(parent, name, true)?;
    each.removed(rel, Kind::Dir);
    Ok(true)
}
