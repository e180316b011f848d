//! The walk's side of a source read through a client ([`crate::source::RemoteDir`]):
//! listing one of its directories as the walk lists a local one, and reading a small
//! file of it whole.

use std::ffi::{OsStr, OsString};
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::sync::Arc;

use super::{CHILD_MAX, Held, ListError, Listing, RemoteDir, SrcEntry, read_bounded, too_large};

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
        Kind::File if meta.size > CHILD_MAX => return Err(too_large()),
        Kind::File => {}
        Kind::Dir => return Err(io::Error::from_raw_os_error(libc::EISDIR)),
        Kind::Symlink => {
            return Err(io::Error::other(
                "a symlink on the NFS server is not followed over nfs://",
            ));
        }
        _ => return Err(not_regular()),
    }
    match dir.open_file(name, &meta, false)? {
        Some(f) => read_bounded(f.reader()),
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
