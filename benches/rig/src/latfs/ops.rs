//! The passthrough itself: each method does the backing syscalls for one
//! FUSE request and sends the reply. They run on delay-pool workers, after
//! the request's delay has elapsed, so they may block freely.
//!
//! The process runs as root with umask 0; new files get `mode & !umask` from
//! the request and are chowned to the caller's uid/gid (gid is left to the
//! backing file system when the parent directory is setgid), so ownership and
//! modes look as if the caller had created them on a real server.

use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{DirEntryExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use fuser::{
    Errno, FileHandle, FileType, FopenFlags, Generation, INodeNo, ReplyAttr, ReplyCreate,
    ReplyData, ReplyDirectory, ReplyEmpty, ReplyEntry, ReplyOpen, ReplyStatfs, ReplyWrite,
    TimeOrNow,
};

use super::delay::Stats;
use super::inodes::Inodes;
use super::sys::{self, Res, check, cpath, lstat};

/// Who sent a request (copied out of the borrowed `fuser::Request`).
#[derive(Clone, Copy)]
pub struct Caller {
    pub uid: u32,
    pub gid: u32,
}

/// A `setattr` request, bundled so it can move to a worker.
pub struct SetAttr {
    pub mode: Option<u32>,
    pub uid: Option<u32>,
    pub gid: Option<u32>,
    pub size: Option<u64>,
    pub atime: Option<TimeOrNow>,
    pub mtime: Option<TimeOrNow>,
    pub fh: Option<FileHandle>,
}

type DirList = Vec<(u64, FileType, OsString)>;

pub struct Inner {
    pub inodes: Inodes,
    pub attr_ttl: Duration,
    pub entry_ttl: Duration,
    pub stats: Arc<Stats>,
    dirs: Mutex<HashMap<u64, Arc<DirList>>>,
    next_dir: AtomicU64,
}

/// Reply types that can carry an error.
trait ErrReply {
    fn fail(self, e: Errno);
}

macro_rules! err_reply {
    ($($t:ty),*) => {$(
        impl ErrReply for $t {
            fn fail(self, e: Errno) {
                self.error(e)
            }
        }
    )*};
}
err_reply!(
    ReplyAttr,
    ReplyCreate,
    ReplyData,
    ReplyEmpty,
    ReplyEntry,
    ReplyOpen,
    ReplyStatfs
);

/// Send `ok(reply, value)` on success, else the errno.
fn reply_res<R: ErrReply, T>(r: Res<T>, reply: R, ok: impl FnOnce(R, T)) {
    match r {
        Ok(v) => ok(reply, v),
        Err(e) => reply.fail(e),
    }
}

impl Inner {
    pub fn new(inodes: Inodes, attr_ttl: Duration, entry_ttl: Duration, stats: Arc<Stats>) -> Self {
        Inner {
            inodes,
            attr_ttl,
            entry_ttl,
            stats,
            dirs: Mutex::new(HashMap::new()),
            next_dir: AtomicU64::new(1),
        }
    }

    /// lstat `path`, register it for the kernel and reply with the entry.
    fn entry_of(&self, path: &Path) -> Res<fuser::FileAttr> {
        let m = lstat(path)?;
        let ino = self.inodes.fuse_ino(m.ino());
        self.inodes.remember(ino, path);
        Ok(sys::attr(&m, ino))
    }

    fn send_entry(&self, r: Res<fuser::FileAttr>, reply: ReplyEntry) {
        reply_res(r, reply, |reply, a| {
            reply.entry(&self.entry_ttl, &a, Generation(0))
        });
    }

    /// Give a freshly created `path` to the caller, like a server would.
    fn own(&self, parent: &Path, path: &Path, who: Caller) -> Res<()> {
        let pm = lstat(parent)?;
        let gid = if pm.mode() & libc::S_ISGID != 0 {
            None
        } else {
            Some(who.gid)
        };
        if who.uid == 0 && gid.is_none_or(|g| g == 0) {
            return Ok(());
        }
        sys::lchown(path, Some(who.uid), gid)
    }

    pub fn lookup(&self, parent: u64, name: &OsStr, reply: ReplyEntry) {
        let r = self
            .inodes
            .child(parent, name)
            .and_then(|p| self.entry_of(&p));
        self.send_entry(r, reply);
    }

    pub fn getattr(&self, ino: u64, reply: ReplyAttr) {
        let r = self.inodes.path(ino).and_then(|p| lstat(&p));
        reply_res(r, reply, |reply, m| {
            reply.attr(&self.attr_ttl, &sys::attr(&m, ino))
        });
    }

    pub fn setattr(&self, ino: u64, s: SetAttr, reply: ReplyAttr) {
        let r = (|| {
            let path = self.inodes.path(ino)?;
            if let Some(size) = s.size {
                match s.fh {
                    // SAFETY: fh is an fd we opened in open/create.
                    Some(fh) => check(unsafe { libc::ftruncate(fh.0 as i32, size as i64) })?,
                    None => {
                        let c = cpath(&path)?;
                        // SAFETY: valid path.
                        check(unsafe { libc::truncate(c.as_ptr(), size as i64) })?
                    }
                };
            }
            // chown before chmod: chown clears setuid/setgid bits.
            sys::lchown(&path, s.uid, s.gid)?;
            if let Some(mode) = s.mode {
                let m = lstat(&path)?;
                // Linux cannot chmod a symlink; its mode is always 0777.
                if !m.file_type().is_symlink() {
                    let c = cpath(&path)?;
                    // SAFETY: valid path.
                    check(unsafe { libc::chmod(c.as_ptr(), mode & 0o7777) })?;
                }
            }
            sys::utimens(&path, s.atime, s.mtime)?;
            lstat(&path)
        })();
        reply_res(r, reply, |reply, m| {
            reply.attr(&self.attr_ttl, &sys::attr(&m, ino))
        });
    }

    pub fn readlink(&self, ino: u64, reply: ReplyData) {
        let r = self
            .inodes
            .path(ino)
            .and_then(|p| std::fs::read_link(p).map_err(Errno::from));
        reply_res(r, reply, |reply, t| reply.data(t.as_os_str().as_bytes()));
    }

    pub fn mknod(
        &self,
        who: Caller,
        parent: u64,
        name: &OsStr,
        mode: u32,
        rdev: u32,
        reply: ReplyEntry,
    ) {
        let r = (|| {
            let dir = self.inodes.path(parent)?;
            let path = dir.join(name);
            let c = cpath(&path)?;
            // SAFETY: valid path.
            check(unsafe { libc::mknod(c.as_ptr(), mode, rdev as libc::dev_t) })?;
            self.own(&dir, &path, who)?;
            self.entry_of(&path)
        })();
        self.send_entry(r, reply);
    }

    pub fn mkdir(&self, who: Caller, parent: u64, name: &OsStr, mode: u32, reply: ReplyEntry) {
        let r = (|| {
            let dir = self.inodes.path(parent)?;
            let path = dir.join(name);
            let c = cpath(&path)?;
            // SAFETY: valid path.
            check(unsafe { libc::mkdir(c.as_ptr(), mode & 0o7777) })?;
            self.own(&dir, &path, who)?;
            self.entry_of(&path)
        })();
        self.send_entry(r, reply);
    }

    pub fn symlink(
        &self,
        who: Caller,
        parent: u64,
        name: &OsStr,
        target: &Path,
        reply: ReplyEntry,
    ) {
        let r = (|| {
            let dir = self.inodes.path(parent)?;
            let path = dir.join(name);
            std::os::unix::fs::symlink(target, &path).map_err(Errno::from)?;
            self.own(&dir, &path, who)?;
            self.entry_of(&path)
        })();
        self.send_entry(r, reply);
    }

    pub fn link(&self, ino: u64, newparent: u64, newname: &OsStr, reply: ReplyEntry) {
        let r = (|| {
            let from = self.inodes.path(ino)?;
            let to = self.inodes.child(newparent, newname)?;
            std::fs::hard_link(&from, &to).map_err(Errno::from)?;
            self.entry_of(&to)
        })();
        self.send_entry(r, reply);
    }

    pub fn unlink(&self, parent: u64, name: &OsStr, dir: bool, reply: ReplyEmpty) {
        let r = (|| {
            let path = self.inodes.child(parent, name)?;
            let c = cpath(&path)?;
            // SAFETY: valid path.
            check(unsafe {
                if dir {
                    libc::rmdir(c.as_ptr())
                } else {
                    libc::unlink(c.as_ptr())
                }
            })?;
            self.inodes.removed(&path);
            Ok(())
        })();
        reply_res(r, reply, |reply, ()| reply.ok());
    }

    pub fn rename(
        &self,
        parent: u64,
        name: &OsStr,
        newparent: u64,
        newname: &OsStr,
        flags: u32,
        reply: ReplyEmpty,
    ) {
        let r = (|| {
            let from = self.inodes.child(parent, name)?;
            let to = self.inodes.child(newparent, newname)?;
            let is_dir = lstat(&from)?.is_dir();
            let (cf, ct) = (cpath(&from)?, cpath(&to)?);
            // SAFETY: valid paths.
            check(unsafe {
                libc::renameat2(
                    libc::AT_FDCWD,
                    cf.as_ptr(),
                    libc::AT_FDCWD,
                    ct.as_ptr(),
                    flags,
                )
            })?;
            self.inodes.renamed(&from, &to, is_dir);
            Ok(())
        })();
        reply_res(r, reply, |reply, ()| reply.ok());
    }

    pub fn open(&self, ino: u64, flags: i32, reply: ReplyOpen) {
        let r = (|| {
            let c = cpath(&self.inodes.path(ino)?)?;
            let flags = flags & !(libc::O_CREAT | libc::O_EXCL | libc::O_NOCTTY);
            // SAFETY: valid path.
            check(unsafe { libc::open(c.as_ptr(), flags | libc::O_CLOEXEC) })
        })();
        reply_res(r, reply, |reply, fd| {
            reply.opened(FileHandle(fd as u64), FopenFlags::empty())
        });
    }

    pub fn create(
        &self,
        who: Caller,
        parent: u64,
        name: &OsStr,
        mode: u32,
        flags: i32,
        reply: ReplyCreate,
    ) {
        let r = (|| {
            let dir = self.inodes.path(parent)?;
            let path = dir.join(name);
            let c = cpath(&path)?;
            // SAFETY: valid path.
            let fd = check(unsafe {
                libc::open(
                    c.as_ptr(),
                    (flags & !libc::O_NOCTTY) | libc::O_CREAT | libc::O_CLOEXEC,
                    (mode & 0o7777) as libc::c_uint,
                )
            })?;
            let done = self
                .own(&dir, &path, who)
                .and_then(|()| self.entry_of(&path));
            if done.is_err() {
                // SAFETY: fd was just opened by us.
                unsafe { libc::close(fd) };
            }
            done.map(|a| (a, fd))
        })();
        reply_res(r, reply, |reply, (a, fd)| {
            reply.created(
                &self.entry_ttl,
                &a,
                Generation(0),
                FileHandle(fd as u64),
                FopenFlags::empty(),
            )
        });
    }

    pub fn read(&self, fh: u64, offset: u64, size: u32, reply: ReplyData) {
        match sys::pread(fh as i32, size as usize, offset) {
            Ok(buf) => {
                self.stats
                    .bytes_read
                    .fetch_add(buf.len() as u64, Ordering::Relaxed);
                reply.data(&buf)
            }
            Err(e) => reply.error(e),
        }
    }

    pub fn write(&self, fh: u64, offset: u64, data: &[u8], reply: ReplyWrite) {
        match sys::pwrite(fh as i32, data, offset) {
            Ok(n) => {
                self.stats
                    .bytes_written
                    .fetch_add(n as u64, Ordering::Relaxed);
                reply.written(n as u32)
            }
            Err(e) => reply.error(e),
        }
    }

    pub fn release(&self, fh: u64, reply: ReplyEmpty) {
        // SAFETY: fh is an fd we opened; the kernel releases it exactly once.
        unsafe { libc::close(fh as i32) };
        reply.ok();
    }

    pub fn fsync(&self, fh: u64, datasync: bool, reply: ReplyEmpty) {
        // SAFETY: fh is an fd we opened.
        let r = check(unsafe {
            if datasync {
                libc::fdatasync(fh as i32)
            } else {
                libc::fsync(fh as i32)
            }
        });
        reply_res(r, reply, |reply, _| reply.ok());
    }

    /// Snapshot the whole directory at opendir; readdir pages through it by
    /// index, which keeps offsets stable while tools create entries in it.
    pub fn opendir(&self, ino: u64, reply: ReplyOpen) {
        let r = (|| {
            let path = self.inodes.path(ino)?;
            let parent_ino = match path.parent() {
                Some(p) if ino != super::inodes::ROOT => self.inodes.fuse_ino(lstat(p)?.ino()),
                _ => ino,
            };
            let mut list: DirList = vec![
                (ino, FileType::Directory, ".".into()),
                (parent_ino, FileType::Directory, "..".into()),
            ];
            for e in std::fs::read_dir(&path).map_err(Errno::from)? {
                let e = e.map_err(Errno::from)?;
                let ft = e.file_type().map_err(Errno::from)?;
                let kind = FileType::from_std(ft).unwrap_or(FileType::RegularFile);
                list.push((self.inodes.fuse_ino(e.ino()), kind, e.file_name()));
            }
            let fh = self.next_dir.fetch_add(1, Ordering::Relaxed);
            self.dirs.lock().unwrap().insert(fh, Arc::new(list));
            Ok(fh)
        })();
        reply_res(r, reply, |reply, fh| {
            reply.opened(FileHandle(fh), FopenFlags::empty())
        });
    }

    pub fn readdir(&self, fh: u64, offset: u64, mut reply: ReplyDirectory) {
        let list = self.dirs.lock().unwrap().get(&fh).cloned();
        let Some(list) = list else {
            return reply.error(Errno::EBADF);
        };
        for (i, (ino, kind, name)) in list.iter().enumerate().skip(offset as usize) {
            if reply.add(INodeNo(*ino), i as u64 + 1, *kind, name) {
                break;
            }
        }
        reply.ok();
    }

    pub fn releasedir(&self, fh: u64, reply: ReplyEmpty) {
        self.dirs.lock().unwrap().remove(&fh);
        reply.ok();
    }

    pub fn statfs(&self, reply: ReplyStatfs) {
        let r = (|| {
            let c = cpath(&self.inodes.path(super::inodes::ROOT)?)?;
            // SAFETY: statvfs is plain data; zeroed is a valid initial value.
            let mut s: libc::statvfs = unsafe { std::mem::zeroed() };
            // SAFETY: valid path and out-pointer.
            check(unsafe { libc::statvfs(c.as_ptr(), &mut s) })?;
            Ok(s)
        })();
        reply_res(r, reply, |reply, s| {
            reply.statfs(
                s.f_blocks,
                s.f_bfree,
                s.f_bavail,
                s.f_files,
                s.f_ffree,
                s.f_bsize as u32,
                s.f_namemax as u32,
                s.f_frsize as u32,
            )
        });
    }
}

/// Backing path helper for callers that only need to check existence.
pub fn backing_root_ino(root: &PathBuf) -> std::io::Result<u64> {
    Ok(std::fs::symlink_metadata(root)?.ino())
}
