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
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Component, Path, PathBuf};

use rustix::fs::{CWD, Mode, OFlags};

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
    let rd = short_path(dir, |p| fs::read_dir(p)).map_err(ListError::Dir)?;
    let mut entries = Vec::new();
    let mut problems = Vec::new();
    for e in rd {
        let e = e.map_err(ListError::Dir)?;
        let path = dir.join(e.file_name());
        // fstatat on the open directory: no path to resolve again.
        match e.metadata() {
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

/// Paths at least this long are not handed to the kernel in one piece (`PATH_MAX` is
/// 4,096 bytes with its terminating NUL).
const LONG_PATH: usize = 4000;

/// Runs `f` on `path`, or, when `path` is too long for one system call (a tree deeper
/// than `PATH_MAX`), on an equivalent short path: its directory opened a piece at a
/// time and named through `/proc/self/fd`, followed by the last component.
pub fn short_path<T>(path: &Path, f: impl FnOnce(&Path) -> io::Result<T>) -> io::Result<T> {
    if path.as_os_str().len() < LONG_PATH {
        return f(path);
    }
    let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
        return f(path);
    };
    let dir = open_long_dir(parent)?;
    f(&Path::new(&format!("/proc/self/fd/{}", dir.as_raw_fd())).join(name))
}

/// Opens a directory (`O_PATH`) whose path may exceed `PATH_MAX`, resolving it in
/// pieces shorter than [`LONG_PATH`].
fn open_long_dir(dir: &Path) -> io::Result<OwnedFd> {
    let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC;
    let mut fd: Option<OwnedFd> = None;
    let mut piece = PathBuf::new();
    for c in dir.components() {
        let c: &Path = match c {
            Component::RootDir => Path::new("/"),
            other => other.as_os_str().as_ref(),
        };
        if !piece.as_os_str().is_empty()
            && piece.as_os_str().len() + c.as_os_str().len() + 1 >= LONG_PATH
        {
            let next = match &fd {
                Some(d) => rustix::fs::openat(d, &piece, flags, Mode::empty()),
                None => rustix::fs::openat(CWD, &piece, flags, Mode::empty()),
            }?;
            fd = Some(next);
            piece.clear();
        }
        piece.push(c);
    }
    Ok(match &fd {
        Some(d) => rustix::fs::openat(d, &piece, flags, Mode::empty()),
        None => rustix::fs::openat(CWD, &piece, flags, Mode::empty()),
    }?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_longer_than_path_max_are_opened_in_pieces() {
        let tmp = tempfile::tempdir().unwrap();
        let name = "n".repeat(250);
        let mut dir = rustix::fs::open(
            tmp.path(),
            OFlags::RDONLY | OFlags::DIRECTORY,
            Mode::empty(),
        )
        .unwrap();
        let mut path = tmp.path().to_path_buf();
        for _ in 0..20 {
            rustix::fs::mkdirat(&dir, name.as_str(), Mode::from_raw_mode(0o755)).unwrap();
            dir = rustix::fs::openat(&dir, name.as_str(), OFlags::RDONLY, Mode::empty()).unwrap();
            path.push(&name);
        }
        let f = rustix::fs::openat(
            &dir,
            "f",
            OFlags::WRONLY | OFlags::CREATE,
            Mode::from_raw_mode(0o644),
        )
        .unwrap();
        rustix::io::write(&f, b"deep").unwrap();
        let file = path.join("f");
        assert!(file.as_os_str().len() > 4096);
        assert!(
            fs::read(&file).is_err(),
            "the kernel takes the long path after all"
        );
        assert_eq!(short_path(&file, |p| fs::read(p)).unwrap(), b"deep");
        let (listed, problems) = list_dir(&path).unwrap();
        assert!(problems.is_empty());
        assert_eq!(listed.len(), 1);
        assert_eq!(listed[0].meta.size, 4);
        assert_eq!(listed[0].path, file);
    }
}
