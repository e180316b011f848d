//! The system calls the mount path is made of: copying bytes, closing with the error
//! checked, setting times and modes without following symlinks, reading raw `stat`s.

use std::ffi::OsStr;
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, IntoRawFd};
use std::sync::atomic::{AtomicBool, Ordering};

use rustix::fs::{AtFlags, Mode, OFlags, Timespec, Timestamps, UTIME_OMIT};

use crate::dest::CopyError;
use crate::meta::{Kind, Time};

/// Files up to this size are copied with one read and one write.
pub(super) const SMALL_FILE: u64 = 1 << 20;

pub(super) fn timespec(t: Time) -> Timespec {
    Timespec {
        tv_sec: t.sec,
        tv_nsec: t.nsec as _,
    }
}

/// A written file's times: its mtime, and its atime where the run keeps it (`-U`).
pub(super) fn file_times(m: &crate::meta::Meta) -> Timestamps {
    let mut t = mtime_only(m.mtime);
    if let Some(atime) = m.atime {
        t.last_access = timespec(atime);
    }
    t
}

pub(super) fn mtime_only(t: Time) -> Timestamps {
    Timestamps {
        last_access: Timespec {
            tv_sec: 0,
            tv_nsec: UTIME_OMIT,
        },
        last_modification: timespec(t),
    }
}

/// Closes `f` and reports the error `close` returns, which on NFS carries deferred
/// write errors.
pub(super) fn close_checked(f: File) -> io::Result<()> {
    let fd = f.into_raw_fd();
    // SAFETY: `fd` was just released from an owned `File` and is closed exactly once.
    if unsafe { libc::close(fd) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// The most one `copy_file_range` moves: small enough that a stop raised meanwhile
/// (looked at between calls) is seen within a fraction of a second.
const KERNEL_PIECE: usize = 16 << 20;

/// Copies all of `src` into `dst`, telling source failures from destination failures.
/// A large copy gives up with [`CopyError::Interrupted`] once `stop` is raised, and
/// counts its pieces into `moving` as they go.
pub(super) fn copy_data(
    src: &File,
    dst: &mut File,
    size: u64,
    stop: Option<&AtomicBool>,
    moving: Option<&crate::dest::Moving<'_>>,
) -> Result<u64, CopyError> {
    let moved = |n: u64| {
        if let Some(m) = moving {
            m.add(n);
        }
    };
    let stopped = || stop.is_some_and(|s| s.load(Ordering::Relaxed));
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
            dst.write_all(&buf[..n]).map_err(CopyError::dest)?;
        }
        return Ok(n as u64);
    }
    // Large files: let the kernel move the bytes (copy_file_range, or sendfile across
    // filesystems), falling back to a bounded buffer where neither is offered.
    let mut done = 0u64;
    loop {
        if stopped() {
            return Err(CopyError::Interrupted);
        }
        match rustix::fs::copy_file_range(src.as_fd(), None, dst.as_fd(), None, KERNEL_PIECE) {
            Ok(0) => return Ok(done),
            Ok(n) => {
                done += n as u64;
                moved(n as u64);
            }
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
        if stopped() {
            return Err(CopyError::Interrupted);
        }
        let n = match src.read(&mut buf) {
            Ok(0) => return Ok(done),
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(CopyError::Source(e)),
        };
        dst.write_all(&buf[..n]).map_err(CopyError::dest)?;
        done += n as u64;
        moved(n as u64);
    }
}

/// Every directory in progress holds a descriptor, and the engine may have a few
/// hundred in progress at once: lift the soft limit on open files (often 1,024) to the
/// hard one, as `ulimit -n` would. Failing that, runs go on with what there is.
pub fn raise_fd_limit() {
    use rustix::process::{Resource, getrlimit, setrlimit};
    let mut l = getrlimit(Resource::Nofile);
    if l.current < l.maximum {
        l.current = l.maximum;
        let _ = setrlimit(Resource::Nofile, l);
    }
}

/// Sets the mtime of `name` itself (not a symlink's target); atime is left alone, as
/// rsync `-a` does.
pub(super) fn set_mtime_at(dir: BorrowedFd<'_>, name: &OsStr, t: Time) -> io::Result<()> {
    rustix::fs::utimensat(dir, name, &mtime_only(t), AtFlags::SYMLINK_NOFOLLOW)?;
    Ok(())
}

/// `chmod` of `name` itself, refusing a symlink (Linux has no `lchmod`): the object is
/// pinned with `O_PATH | O_NOFOLLOW` and changed through `/proc/self/fd`, which names
/// that inode and no other, as glibc's `fchmodat(AT_SYMLINK_NOFOLLOW)` does.
pub(super) fn chmod_nofollow(dir: BorrowedFd<'_>, name: &OsStr, mode: u32) -> io::Result<()> {
    let flags = OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let fd = rustix::fs::openat(dir, name, flags, Mode::empty())?;
    if Kind::from_raw_type(rustix::fs::FileType::from_raw_mode(
        rustix::fs::fstat(&fd)?.st_mode,
    )) == Kind::Symlink
    {
        return Err(io::Error::from_raw_os_error(libc::ELOOP));
    }
    let proc_path = format!("/proc/self/fd/{}", fd.as_raw_fd());
    match rustix::fs::chmod(proc_path.as_str(), Mode::from_raw_mode(mode)) {
        // No /proc (a minimal container): the check above and this call are as close
        // as Linux allows without it.
        Err(rustix::io::Errno::NOENT) => Ok(rustix::fs::chmodat(
            dir,
            name,
            Mode::from_raw_mode(mode),
            AtFlags::empty(),
        )?),
        r => Ok(r?),
    }
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

pub(super) fn read_full(r: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
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
