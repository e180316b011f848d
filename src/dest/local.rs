//! The mount path: any directory, typically a kernel NFS or EFS mount.
//!
//! Latency is hidden by the engine's many workers, so this backend's job is to spend as
//! few operations per file as the kernel allows: create with the final mode (the
//! process umask is cleared so no `chmod` is needed), one write for small files,
//! `chown`/`chmod` only when they change something, and the mtime set through the open
//! descriptor just before close. On an NFS mount `close` is where write errors
//! (ENOSPC, EDQUOT) surface, so its result is checked rather than dropped.

use std::ffi::{OsStr, OsString};
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::fd::{AsFd, IntoRawFd};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use rustix::fs::{AtFlags, CWD, Timespec, Timestamps, UTIME_OMIT};

use super::{AttrSet, CopyError, DestEntry, Destination, OwnerPolicy, RootState, SourceFile};
use crate::meta::{Kind, Meta, Time};

/// Files up to this size are copied with one read and one write.
const SMALL_FILE: u64 = 1 << 20;

/// A destination that is a directory on a mounted filesystem.
pub struct LocalDest {
    root: PathBuf,
    owners: OwnerPolicy,
    euid: u32,
    egid: u32,
}

impl LocalDest {
    /// Prepares a destination at `root`. Clears the process umask, so that files are
    /// created with their final permission bits in one operation.
    pub fn new(root: impl Into<PathBuf>, owners: OwnerPolicy) -> LocalDest {
        rustix::process::umask(rustix::fs::Mode::empty());
        LocalDest {
            root: root.into(),
            owners,
            euid: rustix::process::geteuid().as_raw(),
            egid: rustix::process::getegid().as_raw(),
        }
    }

    /// The uid/gid to pass to `chown` for `meta`, or `None` when nothing would change
    /// for a file we just created (owned by our euid/egid).
    fn chown_ids(&self, meta: &Meta) -> Option<(Option<u32>, Option<u32>)> {
        let uid = (self.owners.owner && meta.uid != self.euid).then_some(meta.uid);
        let gid = (self.owners.group && meta.gid != self.egid).then_some(meta.gid);
        (uid.is_some() || gid.is_some()).then_some((uid, gid))
    }

    fn lchown(&self, path: &Path, meta: &Meta) -> io::Result<()> {
        let uid = self.owners.owner.then_some(meta.uid);
        let gid = self.owners.group.then_some(meta.gid);
        if uid.is_none() && gid.is_none() {
            return Ok(());
        }
        std::os::unix::fs::lchown(path, uid, gid)
    }
}

fn timespec(t: Time) -> Timespec {
    Timespec {
        tv_sec: t.sec,
        tv_nsec: t.nsec as _,
    }
}

fn mtime_only(t: Time) -> Timestamps {
    Timestamps {
        last_access: Timespec {
            tv_sec: 0,
            tv_nsec: UTIME_OMIT,
        },
        last_modification: timespec(t),
    }
}

/// Sets the mtime of `path` itself (not a symlink's target); atime is left alone, as
/// rsync `-a` does.
fn set_mtime(path: &Path, t: Time) -> io::Result<()> {
    rustix::fs::utimensat(CWD, path, &mtime_only(t), AtFlags::SYMLINK_NOFOLLOW)?;
    Ok(())
}

/// Closes `f` and reports the error `close` returns, which on NFS carries deferred
/// write errors.
fn close_checked(f: File) -> io::Result<()> {
    let fd = f.into_raw_fd();
    // SAFETY: `fd` was just released from an owned `File` and is closed exactly once.
    if unsafe { libc::close(fd) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Copies all of `src` into `dst`, telling source failures from destination failures.
fn copy_data(src: &File, dst: &mut File, size: u64) -> Result<u64, CopyError> {
    if size <= SMALL_FILE {
        // One read of size + 1 bytes: a full answer of `size` bytes is the whole file
        // (a file that grew returns more and fails the later size check), so the usual
        // extra read to see EOF is saved.
        let mut buf = vec![0u8; size as usize + 1];
        let mut n = 0;
        loop {
            match (&*src).read(&mut buf[n..]) {
                Ok(0) => break,
                Ok(k) => n += k,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(CopyError::Source(e)),
            }
            if n == size as usize || n == buf.len() {
                break;
            }
        }
        if n != size as usize {
            return Err(CopyError::SourceChanged);
        }
        if n > 0 {
            dst.write_all(&buf[..n]).map_err(CopyError::Dest)?;
        }
        return Ok(n as u64);
    }
    // Large files: let the kernel move the bytes (copy_file_range, or sendfile across
    // filesystems), falling back to a bounded buffer where neither is offered.
    let mut done = 0u64;
    loop {
        match rustix::fs::copy_file_range(src.as_fd(), None, dst.as_fd(), None, 1 << 30) {
            Ok(0) => return Ok(done),
            Ok(n) => done += n as u64,
            Err(e)
                if done == 0
                    && matches!(
                        e,
                        rustix::io::Errno::XDEV
                            | rustix::io::Errno::INVAL
                            | rustix::io::Errno::NOSYS
                            | rustix::io::Errno::OPNOTSUPP
                    ) =>
            {
                break;
            }
            Err(e) => return Err(CopyError::Dest(e.into())),
        }
    }
    let mut buf = vec![0u8; 1 << 20];
    let mut src = src;
    loop {
        let n = match src.read(&mut buf) {
            Ok(0) => return Ok(done),
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(CopyError::Source(e)),
        };
        dst.write_all(&buf[..n]).map_err(CopyError::Dest)?;
        done += n as u64;
    }
}

impl Destination for LocalDest {
    type Dir = PathBuf;

    fn ids_are_local(&self) -> bool {
        true
    }

    fn root_state(&self) -> io::Result<RootState> {
        match fs::metadata(&self.root) {
            Ok(m) => Ok(RootState::Exists(Meta::from_std(&m))),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(RootState::Missing),
            Err(e) => Err(e),
        }
    }

    fn root_dir(&self) -> io::Result<PathBuf> {
        match fs::metadata(&self.root) {
            // DEST may be a symlink to a directory: work on the directory itself, so its
            // attributes (set without following links) land on it, as with rsync.
            Ok(m) if m.is_dir() => match fs::symlink_metadata(&self.root) {
                Ok(l) if l.file_type().is_symlink() => fs::canonicalize(&self.root),
                _ => Ok(self.root.clone()),
            },
            Ok(_) => Err(io::Error::from_raw_os_error(libc::ENOTDIR)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                fs::DirBuilder::new()
                    .recursive(true)
                    .mode(0o755)
                    .create(&self.root)?;
                Ok(self.root.clone())
            }
            Err(e) => Err(e),
        }
    }

    fn root_parent(&self) -> io::Result<(PathBuf, OsString)> {
        let name = self
            .root
            .file_name()
            .ok_or_else(|| io::Error::from_raw_os_error(libc::EISDIR))?;
        let parent = match self.root.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        Ok((parent, name.to_owned()))
    }

    fn list(&self, dir: &PathBuf) -> io::Result<Vec<DestEntry>> {
        fs::read_dir(dir)?
            .map(|e| {
                e.map(|e| DestEntry {
                    name: e.file_name(),
                    kind: e.file_type().ok().map(Kind::from_file_type),
                    meta: None,
                })
            })
            .collect()
    }

    fn stat(&self, dir: &PathBuf, name: &OsStr) -> io::Result<Option<Meta>> {
        match fs::symlink_metadata(dir.join(name)) {
            Ok(m) => Ok(Some(Meta::from_std(&m))),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    fn mkdir(&self, dir: &PathBuf, name: &OsStr, meta: &Meta) -> io::Result<PathBuf> {
        let path = dir.join(name);
        // Owner-writable until its children are in; set_dir_attrs gives the final mode.
        fs::DirBuilder::new().mode(mkdir_mode(meta)).create(&path)?;
        Ok(path)
    }

    fn open_dir(&self, dir: &PathBuf, name: &OsStr) -> io::Result<(PathBuf, Meta)> {
        let path = dir.join(name);
        let mut meta = Meta::from_std(&fs::symlink_metadata(&path)?);
        if meta.kind != Kind::Dir {
            return Err(io::Error::from_raw_os_error(libc::ENOTDIR));
        }
        // A read-only directory we may have to write into (when not root): make it ours
        // to write; the mode we report is the one it now has, so the engine's final
        // set_dir_attrs restores the source's.
        if self.euid != 0 && meta.mode & 0o300 != 0o300 {
            meta.mode |= 0o700;
            rustix::fs::chmod(&path, rustix::fs::Mode::from_raw_mode(meta.mode))?;
        }
        Ok((path, meta))
    }

    fn write_file(
        &self,
        dir: &PathBuf,
        name: &OsStr,
        src: &SourceFile<'_>,
    ) -> Result<u64, CopyError> {
        let path = dir.join(name);
        let meta = src.meta;
        let mut f = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(meta.mode & 0o777)
            .open(&path)
            .map_err(CopyError::Dest)?;
        let bytes = copy_data(&src.file, &mut f, meta.size)?;
        src.verify_unchanged()?;
        let mut mode_needed = meta.mode & 0o7000 != 0;
        if let Some((uid, gid)) = self.chown_ids(meta) {
            rustix::fs::fchown(
                &f,
                uid.map(rustix::fs::Uid::from_raw),
                gid.map(rustix::fs::Gid::from_raw),
            )
            .map_err(|e| CopyError::Dest(e.into()))?;
            mode_needed = true;
        }
        if mode_needed {
            rustix::fs::fchmod(&f, rustix::fs::Mode::from_raw_mode(meta.mode))
                .map_err(|e| CopyError::Dest(e.into()))?;
        }
        // Last: a file with the source's size and mtime is complete.
        rustix::fs::futimens(&f, &mtime_only(meta.mtime)).map_err(|e| CopyError::Dest(e.into()))?;
        close_checked(f).map_err(CopyError::Dest)?;
        Ok(bytes)
    }

    fn rename(&self, dir: &PathBuf, from: &OsStr, to: &OsStr) -> io::Result<()> {
        fs::rename(dir.join(from), dir.join(to))
    }

    fn read_link(&self, dir: &PathBuf, name: &OsStr) -> io::Result<OsString> {
        Ok(fs::read_link(dir.join(name))?.into_os_string())
    }

    fn symlink(&self, dir: &PathBuf, name: &OsStr, target: &OsStr, meta: &Meta) -> io::Result<()> {
        let path = dir.join(name);
        std::os::unix::fs::symlink(target, &path)?;
        if self.chown_ids(meta).is_some() {
            self.lchown(&path, meta)?;
        }
        set_mtime(&path, meta.mtime)
    }

    fn hard_link(
        &self,
        dir: &PathBuf,
        name: &OsStr,
        target_dir: &PathBuf,
        target_name: &OsStr,
    ) -> io::Result<()> {
        fs::hard_link(target_dir.join(target_name), dir.join(name))
    }

    fn mknod(&self, dir: &PathBuf, name: &OsStr, meta: &Meta) -> io::Result<()> {
        let path = dir.join(name);
        let ft = match meta.kind {
            Kind::Fifo => rustix::fs::FileType::Fifo,
            Kind::Socket => rustix::fs::FileType::Socket,
            Kind::CharDev => rustix::fs::FileType::CharacterDevice,
            Kind::BlockDev => rustix::fs::FileType::BlockDevice,
            _ => return Err(io::Error::from_raw_os_error(libc::EINVAL)),
        };
        rustix::fs::mknodat(
            CWD,
            &path,
            ft,
            rustix::fs::Mode::from_raw_mode(meta.mode & 0o777),
            meta.rdev,
        )?;
        self.set_attrs(dir, name, meta, AttrSet::ALL)
    }

    fn remove(&self, dir: &PathBuf, name: &OsStr, kind: Kind) -> io::Result<()> {
        let path = dir.join(name);
        if kind == Kind::Dir {
            remove_tree(&path, self.euid == 0)
        } else {
            fs::remove_file(path)
        }
    }

    fn set_attrs(&self, dir: &PathBuf, name: &OsStr, meta: &Meta, what: AttrSet) -> io::Result<()> {
        set_attrs_at(self, &dir.join(name), meta, what)
    }

    fn set_dir_attrs(&self, dir: &PathBuf, meta: &Meta, what: AttrSet) -> io::Result<()> {
        set_attrs_at(self, dir, meta, what)
    }

    fn same_content(&self, dir: &PathBuf, name: &OsStr, src: &Path) -> io::Result<bool> {
        same_bytes(&mut File::open(src)?, &mut File::open(dir.join(name))?)
    }
}

/// The mode a new directory is created with: its final mode when that leaves it
/// writable by us and needs no special bit (which `mkdir` would not apply), else 0700.
pub fn mkdir_mode(meta: &Meta) -> u32 {
    if meta.mode & 0o7000 == 0 && meta.mode & 0o700 == 0o700 {
        meta.mode & 0o777
    } else {
        0o700
    }
}

/// Owner first (chown clears setuid/setgid), then mode, then mtime.
fn set_attrs_at(d: &LocalDest, path: &Path, meta: &Meta, what: AttrSet) -> io::Result<()> {
    if what.owner {
        d.lchown(path, meta)?;
    }
    if (what.mode || what.owner) && meta.kind != Kind::Symlink {
        rustix::fs::chmod(path, rustix::fs::Mode::from_raw_mode(meta.mode))?;
    }
    if what.mtime {
        set_mtime(path, meta.mtime)?;
    }
    Ok(())
}

/// Removes a directory tree. Without root, a read-only directory's entries cannot be
/// unlinked, so such directories are made writable first, as rsync does.
fn remove_tree(path: &Path, root: bool) -> io::Result<()> {
    match fs::remove_dir_all(path) {
        Err(e) if !root && e.kind() == io::ErrorKind::PermissionDenied => {
            make_writable(path)?;
            fs::remove_dir_all(path)
        }
        r => r,
    }
}

fn make_writable(dir: &Path) -> io::Result<()> {
    let m = Meta::from_std(&fs::symlink_metadata(dir)?);
    if m.mode & 0o700 != 0o700 {
        rustix::fs::chmod(dir, rustix::fs::Mode::from_raw_mode(m.mode | 0o700))?;
    }
    for e in fs::read_dir(dir)? {
        let e = e?;
        if e.file_type()?.is_dir() {
            make_writable(&e.path())?;
        }
    }
    Ok(())
}

/// Compares two readers byte for byte, in bounded memory.
pub fn same_bytes(a: &mut impl Read, b: &mut impl Read) -> io::Result<bool> {
    let mut ba = vec![0u8; 256 * 1024];
    let mut bb = vec![0u8; 256 * 1024];
    loop {
        let na = read_full(a, &mut ba)?;
        let nb = read_full(b, &mut bb)?;
        if na != nb || ba[..na] != bb[..nb] {
            return Ok(false);
        }
        if na == 0 {
            return Ok(true);
        }
    }
}

fn read_full(r: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dest(dir: &Path) -> LocalDest {
        LocalDest::new(dir, OwnerPolicy::default())
    }

    #[test]
    fn a_source_that_changed_is_not_given_its_mtime() {
        let tmp = tempfile::tempdir().unwrap();
        let src_path = tmp.path().join("src");
        fs::write(&src_path, b"new content, longer than listed").unwrap();
        let mut listed = Meta::from_std(&fs::metadata(&src_path).unwrap());
        // The listing saw an older, shorter version.
        listed.size = 3;
        listed.mtime = Time {
            sec: 1_000_000,
            nsec: 7,
        };
        let out = tmp.path().join("out");
        fs::create_dir(&out).unwrap();
        let d = dest(&out);
        let src = SourceFile {
            file: File::open(&src_path).unwrap(),
            meta: &listed,
            path: &src_path,
        };
        let r = d.write_file(&out, OsStr::new("f"), &src);
        assert!(matches!(r, Err(CopyError::SourceChanged)), "{r:?}");
        let got = Meta::from_std(&fs::metadata(out.join("f")).unwrap());
        assert_ne!(
            got.mtime, listed.mtime,
            "a changed source must not look complete"
        );
    }

    #[test]
    fn large_files_stream_and_keep_mode_and_nanosecond_mtime() {
        let tmp = tempfile::tempdir().unwrap();
        let src_path = tmp.path().join("big");
        let data: Vec<u8> = (0..(3 * SMALL_FILE as usize + 17))
            .map(|i| (i * 31 % 251) as u8)
            .collect();
        fs::write(&src_path, &data).unwrap();
        rustix::fs::chmod(&src_path, rustix::fs::Mode::from_raw_mode(0o4751)).unwrap();
        let t = Time {
            sec: 1_234_567_890,
            nsec: 123_456_789,
        };
        rustix::fs::utimensat(CWD, &src_path, &mtime_only(t), AtFlags::empty()).unwrap();
        let listed = Meta::from_std(&fs::metadata(&src_path).unwrap());
        let out = tmp.path().join("out");
        fs::create_dir(&out).unwrap();
        let src = SourceFile {
            file: File::open(&src_path).unwrap(),
            meta: &listed,
            path: &src_path,
        };
        let n = dest(&out)
            .write_file(&out, OsStr::new("big"), &src)
            .unwrap();
        assert_eq!(n, data.len() as u64);
        assert_eq!(fs::read(out.join("big")).unwrap(), data);
        let got = Meta::from_std(&fs::metadata(out.join("big")).unwrap());
        assert_eq!((got.mode, got.mtime), (0o4751, t));
    }

    #[test]
    fn mkdir_mode_defers_what_mkdir_cannot_do() {
        let m = |mode| Meta {
            mode,
            ..Meta::from_std(&fs::metadata("/").unwrap())
        };
        assert_eq!(mkdir_mode(&m(0o755)), 0o755);
        assert_eq!(mkdir_mode(&m(0o555)), 0o700);
        assert_eq!(mkdir_mode(&m(0o2775)), 0o700);
    }
}
