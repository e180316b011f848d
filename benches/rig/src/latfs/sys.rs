//! Thin libc wrappers used by the passthrough: path-based calls that must not
//! follow symlinks (lchown, utimensat with AT_SYMLINK_NOFOLLOW) are missing
//! from std, and errors must come back as raw errnos for FUSE replies.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use fuser::{Errno, FileAttr, FileType, INodeNo, TimeOrNow};

pub type Res<T> = Result<T, Errno>;

pub fn errno() -> Errno {
    Errno::from(std::io::Error::last_os_error())
}

pub fn cpath(p: &Path) -> Res<CString> {
    CString::new(p.as_os_str().as_bytes()).map_err(|_| Errno::EINVAL)
}

/// Turn a `-1` return into the current errno.
pub fn check(ret: libc::c_int) -> Res<libc::c_int> {
    if ret < 0 { Err(errno()) } else { Ok(ret) }
}

pub fn lstat(p: &Path) -> Res<std::fs::Metadata> {
    std::fs::symlink_metadata(p).map_err(Errno::from)
}

fn time(secs: i64, nsecs: i64) -> SystemTime {
    if secs >= 0 {
        UNIX_EPOCH + Duration::new(secs as u64, nsecs as u32)
    } else {
        UNIX_EPOCH - Duration::from_secs(secs.unsigned_abs()) + Duration::from_nanos(nsecs as u64)
    }
}

pub fn kind(mode: u32) -> FileType {
    match mode & libc::S_IFMT {
        libc::S_IFDIR => FileType::Directory,
        libc::S_IFLNK => FileType::Symlink,
        libc::S_IFIFO => FileType::NamedPipe,
        libc::S_IFCHR => FileType::CharDevice,
        libc::S_IFBLK => FileType::BlockDevice,
        libc::S_IFSOCK => FileType::Socket,
        _ => FileType::RegularFile,
    }
}

/// FUSE attributes from backing metadata, with the inode number mapped.
pub fn attr(m: &std::fs::Metadata, ino: u64) -> FileAttr {
    FileAttr {
        ino: INodeNo(ino),
        size: m.size(),
        blocks: m.blocks(),
        atime: time(m.atime(), m.atime_nsec()),
        mtime: time(m.mtime(), m.mtime_nsec()),
        ctime: time(m.ctime(), m.ctime_nsec()),
        crtime: time(m.ctime(), m.ctime_nsec()),
        kind: kind(m.mode()),
        perm: (m.mode() & 0o7777) as u16,
        nlink: m.nlink() as u32,
        uid: m.uid(),
        gid: m.gid(),
        rdev: m.rdev() as u32,
        blksize: m.blksize() as u32,
        flags: 0,
    }
}

pub fn lchown(p: &Path, uid: Option<u32>, gid: Option<u32>) -> Res<()> {
    if uid.is_none() && gid.is_none() {
        return Ok(());
    }
    let c = cpath(p)?;
    // SAFETY: valid NUL-terminated path; -1 (as uid_t) means "unchanged".
    check(unsafe { libc::lchown(c.as_ptr(), uid.unwrap_or(u32::MAX), gid.unwrap_or(u32::MAX)) })?;
    Ok(())
}

fn timespec(t: Option<TimeOrNow>) -> libc::timespec {
    match t {
        None => libc::timespec {
            tv_sec: 0,
            tv_nsec: libc::UTIME_OMIT,
        },
        Some(TimeOrNow::Now) => libc::timespec {
            tv_sec: 0,
            tv_nsec: libc::UTIME_NOW,
        },
        Some(TimeOrNow::SpecificTime(t)) => {
            let (sec, nsec) = match t.duration_since(UNIX_EPOCH) {
                Ok(d) => (d.as_secs() as i64, d.subsec_nanos() as i64),
                Err(e) => {
                    let d = e.duration();
                    let mut sec = -(d.as_secs() as i64);
                    let mut nsec = -(d.subsec_nanos() as i64);
                    if nsec < 0 {
                        sec -= 1;
                        nsec += 1_000_000_000;
                    }
                    (sec, nsec)
                }
            };
            libc::timespec {
                tv_sec: sec,
                tv_nsec: nsec,
            }
        }
    }
}

/// Set atime/mtime with nanoseconds, on the link itself for symlinks
/// (this is how `lutimes` from rsync/cp reaches us).
pub fn utimens(p: &Path, atime: Option<TimeOrNow>, mtime: Option<TimeOrNow>) -> Res<()> {
    if atime.is_none() && mtime.is_none() {
        return Ok(());
    }
    let c = cpath(p)?;
    let ts = [timespec(atime), timespec(mtime)];
    // SAFETY: valid path and a two-element timespec array.
    check(unsafe {
        libc::utimensat(
            libc::AT_FDCWD,
            c.as_ptr(),
            ts.as_ptr(),
            libc::AT_SYMLINK_NOFOLLOW,
        )
    })?;
    Ok(())
}

pub fn pread(fd: i32, size: usize, offset: u64) -> Res<Vec<u8>> {
    let mut buf = vec![0u8; size];
    let mut done = 0;
    while done < size {
        // SAFETY: buffer has `size - done` bytes left at `done`.
        let n = unsafe {
            libc::pread(
                fd,
                buf[done..].as_mut_ptr().cast(),
                size - done,
                (offset + done as u64) as libc::off_t,
            )
        };
        if n < 0 {
            return Err(errno());
        }
        if n == 0 {
            break;
        }
        done += n as usize;
    }
    buf.truncate(done);
    Ok(buf)
}

pub fn pwrite(fd: i32, data: &[u8], offset: u64) -> Res<usize> {
    let mut done = 0;
    while done < data.len() {
        // SAFETY: slice bounds checked by indexing.
        let n = unsafe {
            libc::pwrite(
                fd,
                data[done..].as_ptr().cast(),
                data.len() - done,
                (offset + done as u64) as libc::off_t,
            )
        };
        if n < 0 {
            return Err(errno());
        }
        done += n as usize;
    }
    Ok(done)
}
