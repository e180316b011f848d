//! A listed source entry and what can be done with it (list it, open it, read its
//! link), whichever backend holds it: a local one here, by descriptor; a remote one
//! by asking its directory ([`super::remote`]).
//!
//! The walk is not a separate pass: each directory is listed by whichever worker picks
//! up its scan job, so listing overlaps copying and many directories are listed at
//! once (like ripgrep's `WalkParallel`, but driven by the engine's scheduler, which
//! only lists more when the copy queue runs low: memory stays bounded however large
//! the tree). A listing is one `readdir` plus one `lstat` per entry.
//!
//! The walk goes by descriptor, as the destination's does: a directory is opened once,
//! relative to its parent's descriptor and without following a symlink, listed through
//! that descriptor, and its entries are opened relative to it. Whoever can write in
//! the source cannot make a run read outside it by swapping a directory for a
//! symlink between the listing and the copy.
//!
//! A source read through a client rather than the kernel (`nfs://`) comes in through
//! [`super::RemoteDir`]: its directories are held as [`Held::Remote`], and every function here
//! that reads an entry asks the directory that holds it. Above this module a listed
//! entry is the same whatever it came from.

use std::ffi::OsString;
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStringExt;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use rustix::fs::{AtFlags, CWD, Mode, OFlags};

use super::{Data, Held, ListError, Listing, SrcEntry, read_bounded, remote};
use crate::meta::Meta;

/// Lists the directory at `dir`, reached by path (following symlinks: what the
/// command line names). See [`list_open`].
pub fn list_dir(dir: &Path) -> Listing {
    let fd = short_path(dir, |p| Ok(rustix::fs::open(p, DIR_FLAGS, Mode::empty())?))
        .map_err(ListError::Dir)?;
    list_open(fd, dir)
}

/// Lists a directory entry of the source, opened relative to the directory it was
/// listed in (see [`open_dir`]).
pub fn list_entry(e: &SrcEntry) -> Listing {
    if let Some(Held::Remote(d)) = e.parent.as_deref() {
        return remote::list(&**d, e);
    }
    list_open(open_dir(e).map_err(ListError::Dir)?, &e.path)
}

const DIR_FLAGS: OFlags = OFlags::RDONLY
    .union(OFlags::DIRECTORY)
    .union(OFlags::CLOEXEC);

/// Opens a listed directory: relative to its parent without following a symlink
/// (one put there since the listing is refused with `ELOOP`, as rsync refuses it), or
/// by path where it has no parent held.
pub fn open_dir(e: &SrcEntry) -> io::Result<OwnedFd> {
    let p = match e.parent.as_deref() {
        None => {
            return short_path(&e.path, |p| {
                Ok(rustix::fs::open(p, DIR_FLAGS, Mode::empty())?)
            });
        }
        Some(Held::Fd(p)) => p,
        Some(Held::Remote(_)) => return Err(remote::no_descriptor()),
    };
    match rustix::fs::openat(p, &e.name, DIR_FLAGS | OFlags::NOFOLLOW, Mode::empty()) {
        Ok(fd) => Ok(fd),
        // Linux says ENOTDIR for a symlink opened as a directory without following.
        Err(rustix::io::Errno::NOTDIR)
            if rustix::fs::statat(p, &e.name, AtFlags::SYMLINK_NOFOLLOW).is_ok_and(|st| {
                rustix::fs::FileType::from_raw_mode(st.st_mode) == rustix::fs::FileType::Symlink
            }) =>
        {
            Err(rustix::io::Errno::LOOP.into())
        }
        Err(e) => Err(e.into()),
    }
}

/// Lists the open directory `fd` (whose path is `dir`), sorted by name so that runs
/// are reproducible. Entry-level problems are returned beside the entries that did
/// list. Each entry holds `fd` to be opened relative to it.
fn list_open(fd: OwnedFd, dir: &Path) -> Listing {
    // The stream reads a copy of the descriptor (one dup), the entries keep `fd`.
    let mut rd = fd
        .try_clone()
        .and_then(|d| Ok(rustix::fs::Dir::new(d)?))
        .map_err(ListError::Dir)?;
    let fd = Arc::new(Held::Fd(fd));
    let mut entries = Vec::new();
    let mut problems = Vec::new();
    while let Some(e) = rd.read() {
        let e = e.map_err(|e| ListError::Dir(e.into()))?;
        let cname = e.file_name();
        if cname == c"." || cname == c".." {
            continue;
        }
        let name = OsString::from_vec(cname.to_bytes().to_vec());
        let path = dir.join(&name);
        // fstatat on the open directory: no path to resolve again.
        let Held::Fd(dirfd) = &*fd else {
            unreachable!("made above")
        };
        match rustix::fs::statat(dirfd, cname, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) => entries.push(SrcEntry {
                name,
                meta: Meta::from_stat(&st),
                path,
                parent: Some(fd.clone()),
            }),
            Err(rustix::io::Errno::NOENT) => problems.push(ListError::Vanished(path)),
            Err(err) => problems.push(ListError::Entry(path, err.into())),
        }
    }
    entries.sort_unstable_by(|a, b| a.name.cmp(&b.name));
    Ok((entries, problems))
}

/// Whether `e` is read through the kernel, so that its open file's attributes say
/// what a read of it gives from then on (a remote source's file is checked against
/// the listing by the attributes its server gives after the last byte).
pub fn is_local(e: &SrcEntry) -> bool {
    !matches!(e.parent.as_deref(), Some(Held::Remote(_)))
}

/// Opens a listed regular file for reading. `Ok(None)`: it is no longer a regular
/// file (replaced since the listing: a FIFO, a device, a directory), and was not read.
///
/// Opened without blocking, so a FIFO put in its place cannot hold the worker waiting
/// for a writer, and without following a symlink; the descriptor then reads normally.
///
/// `paced` (`--bwlimit`): a file read through a client reads little ahead.
pub fn open_file(e: &SrcEntry, paced: bool) -> io::Result<Option<Data>> {
    if let Some(Held::Remote(d)) = e.parent.as_deref() {
        return d.open_file(&e.name, &e.meta, paced);
    }
    let base = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NOCTTY | OFlags::CLOEXEC;
    let open = |flags: OFlags| -> io::Result<OwnedFd> {
        let flags = flags | OFlags::NONBLOCK;
        Ok(match e.parent.as_deref() {
            Some(Held::Fd(p)) => rustix::fs::openat(p, &e.name, flags, Mode::empty())?,
            Some(Held::Remote(_)) => unreachable!("read above"),
            None => short_path(&e.path, |p| Ok(rustix::fs::open(p, flags, Mode::empty())?))?,
        })
    };
    let (fd, flags) = match open(base | OFlags::NOATIME) {
        Ok(fd) => (fd, base | OFlags::NOATIME),
        // O_NOATIME is refused on files we do not own.
        Err(err) if err.raw_os_error() == Some(libc::EPERM) => (open(base)?, base),
        Err(err) => return Err(err),
    };
    let st = rustix::fs::fstat(&fd)?;
    if rustix::fs::FileType::from_raw_mode(st.st_mode) != rustix::fs::FileType::RegularFile {
        return Ok(None);
    }
    rustix::fs::fcntl_setfl(&fd, flags)?;
    Ok(Some(Data::from_file(File::from(fd))))
}

/// Reads the file `name` (one component) in the listed source directory `dir`,
/// whole, through whichever backend holds it: a local directory relative to its
/// descriptor (opened again relative to its parent, never through a symlink put in
/// its place), following a symlink in it only as `trust` allows; an operand with no
/// parent held by its path; a remote one through its server (where a symlink is not
/// followed). `Ok(None)`: there is no such file. Larger than [`CHILD_MAX`]: an error.
///
/// What reads a file in a source directory by name goes through here, so that it
/// reads the source wherever the source is (the engine never opens a source path).
pub fn read_child(
    dir: &SrcEntry,
    name: &std::ffi::OsStr,
    trust: crate::options::trust::Trust,
) -> io::Result<Option<Vec<u8>>> {
    use crate::options::trust;
    let flags = OFlags::RDONLY | OFlags::NONBLOCK;
    let read = match dir.parent.as_deref() {
        Some(Held::Remote(p)) => remote::read_child(&**p, &dir.name, name),
        Some(Held::Fd(_)) => open_dir(dir).and_then(|d| {
            let f = trust::open_at(
                trust,
                d.as_fd(),
                Path::new(name),
                flags,
                Mode::empty(),
                false,
            )?;
            read_bounded(File::from(f))
        }),
        None => short_path(&dir.path.join(name), |p| {
            let f = trust::open_at(trust, CWD, p, flags, Mode::empty(), false)?;
            read_bounded(File::from(f))
        }),
    };
    match read {
        Ok(v) => Ok(Some(v)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// A listed symlink's target, read relative to the directory it was listed in.
pub fn read_link(e: &SrcEntry) -> io::Result<OsString> {
    let target = match e.parent.as_deref() {
        Some(Held::Fd(p)) => match rustix::fs::readlinkat(p, &e.name, Vec::new()) {
            Ok(t) => t,
            // Listed as a symlink, read as something else: a regular file standing for
            // one (`--fake-super`), or one swapped in since the listing.
            Err(rustix::io::Errno::INVAL) => return read_faked_link(e),
            Err(err) => return Err(err.into()),
        },
        Some(Held::Remote(d)) => return d.read_link(&e.name),
        None => return short_path(&e.path, |p| std::fs::read_link(p)).map(|t| t.into()),
    };
    Ok(OsString::from_vec(target.into_bytes()))
}

/// A listed entry's `lstat` now, relative to the directory it was listed in.
pub fn lstat(e: &SrcEntry) -> io::Result<Meta> {
    match e.parent.as_deref() {
        Some(Held::Remote(d)) => d.lstat(&e.name),
        Some(Held::Fd(p)) => Ok(Meta::from_stat(&rustix::fs::statat(
            p,
            &e.name,
            AtFlags::SYMLINK_NOFOLLOW,
        )?)),
        None => short_path(&e.path, |p| std::fs::symlink_metadata(p)).map(|m| Meta::from_std(&m)),
    }
}

/// What a listed symlink leads to, to be copied in its place (`-L`, `-k`): the
/// referent's attributes, and where it is read from (a local one by its real path,
/// opened without following links from there; a remote one through its directory).
pub fn referent(e: &SrcEntry) -> io::Result<SrcEntry> {
    if let Some(Held::Remote(d)) = e.parent.as_deref() {
        let (meta, holder) = d.referent(&e.name)?;
        return Ok(SrcEntry {
            name: e.name.clone(),
            path: e.path.clone(),
            meta,
            parent: Some(Arc::new(Held::Remote(holder))),
        });
    }
    let meta = short_path(&e.path, |p| std::fs::metadata(p))?;
    Ok(SrcEntry {
        name: e.name.clone(),
        path: short_path(&e.path, |p| std::fs::canonicalize(p))?,
        meta: Meta::from_std(&meta),
        parent: None,
    })
}

/// Removes a listed non-directory, relative to the directory it was listed in
/// (`--remove-source-files`): never one outside the source reached through a
/// directory swapped for a symlink.
pub fn remove(e: &SrcEntry) -> io::Result<()> {
    match e.parent.as_deref() {
        Some(Held::Remote(d)) => d.remove(&e.name),
        Some(Held::Fd(p)) => Ok(rustix::fs::unlinkat(p, &e.name, AtFlags::empty())?),
        None => short_path(&e.path, |p| std::fs::remove_file(p)),
    }
}

/// `--fake-super` on the source: the entry as the attributes stored with it say it
/// is (its owner, mode and kind: a regular file may stand for a device).
pub fn read_faked(e: &mut SrcEntry) -> io::Result<()> {
    use crate::options::{fake_super, xattrs::Target};
    if e.meta.kind == crate::meta::Kind::Symlink {
        return Ok(());
    }
    if let Some(f) = in_listed_dir(e, |p| fake_super::read(Target::Path(p)))? {
        f.apply(&mut e.meta);
    }
    Ok(())
}

/// The target a regular file standing for a symlink holds, when its stored attributes
/// say it is one (else `EINVAL`, as for any other entry that is not a symlink).
fn read_faked_link(e: &SrcEntry) -> io::Result<OsString> {
    use crate::options::{fake_super, xattrs::Target};
    let faked = in_listed_dir(e, |p| fake_super::read(Target::Path(p)))?;
    if faked.is_none_or(|f| f.kind() != crate::meta::Kind::Symlink) {
        return Err(rustix::io::Errno::INVAL.into());
    }
    match open_file(e, false)? {
        Some(f) => Ok(OsString::from_vec(fake_super::read_target(f.reader())?)),
        None => Err(rustix::io::Errno::INVAL.into()),
    }
}

/// Runs `f` on a path that names a listed entry inside the directory it was listed in
/// (that directory's `/proc/self/fd` link, then the name), for the calls that have no
/// `*at` form (`lgetxattr`): a directory on the entry's own path swapped for a symlink
/// is not followed. Without `/proc`, or for an entry with no directory held, its path.
pub fn in_listed_dir<T>(e: &SrcEntry, f: impl Fn(&Path) -> io::Result<T>) -> io::Result<T> {
    let p = match e.parent.as_deref() {
        None => return short_path(&e.path, f),
        Some(Held::Fd(p)) => p,
        Some(Held::Remote(_)) => return Err(remote::no_descriptor()),
    };
    let held = PathBuf::from(format!("/proc/self/fd/{}", p.as_raw_fd()));
    match f(&held.join(&e.name)) {
        Err(err) if err.kind() == io::ErrorKind::NotFound && !held.exists() => {
            short_path(&e.path, f)
        }
        r => r,
    }
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
    use crate::source::{CHILD_MAX, Source};
    use std::fs;

    #[test]
    fn a_child_is_read_by_descriptor_by_path_and_within_its_bound() {
        use crate::options::trust::Trust;
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("src");
        fs::create_dir_all(root.join("d")).unwrap();
        fs::write(root.join("d/.f"), "- x\n").unwrap();
        fs::write(root.join("d/big"), vec![b'#'; CHILD_MAX as usize + 1]).unwrap();
        fs::write(root.join("d/max"), vec![b'#'; CHILD_MAX as usize]).unwrap();
        std::os::unix::fs::symlink(".f", root.join("d/link")).unwrap();
        let (listed, _) = list_dir(&root).unwrap();
        let d = &listed[0];
        assert!(matches!(d.parent.as_deref(), Some(Held::Fd(_))));
        let read = |name: &str| read_child(d, name.as_ref(), Trust::OWNED);
        assert_eq!(read(".f").unwrap().unwrap(), b"- x\n");
        assert_eq!(read("link").unwrap().unwrap(), b"- x\n");
        assert!(read("absent").unwrap().is_none());
        assert_eq!(read("max").unwrap().unwrap().len() as u64, CHILD_MAX);
        let err = read("big").unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::FileTooLarge, "{err}");
        // Moved away after the listing: the listed directory's name is not followed to
        // another one put in its place.
        fs::rename(root.join("d"), root.join("moved")).unwrap();
        std::os::unix::fs::symlink("moved", root.join("d")).unwrap();
        assert!(read(".f").is_err());
        // An operand (no parent held) is read by its path.
        let op = crate::source::LocalPaths
            .operand(&root.join("moved"), true)
            .unwrap();
        let got = read_child(&op, ".f".as_ref(), Trust::OWNED).unwrap();
        assert_eq!(got.unwrap(), b"- x\n");
    }

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
