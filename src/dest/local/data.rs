//! The mount path's file data: a new file's content and attributes, and writes by
//! ranges: `-S` (only the data extents, less whole blocks of zeros, then the size),
//! `--bwlimit` (pieces small enough to pace), and `--inplace` / `--append` (into the
//! existing file, from an offset).

use std::ffi::OsStr;
use std::fs::File;
use std::os::fd::AsFd;
use std::os::unix::fs::FileExt;

use rustix::fs::{AtFlags, Mode, OFlags};

use super::sys::{close_checked, copy_data, file_times, mtime_only};
use super::{LocalDest, LocalDir};
use crate::dest::{CopyError, SourceFile, read_full, sparse};

/// The largest piece read and written at once.
const PIECE: u64 = 1 << 20;

/// The unit `-S` finds zeros in: a block of the file (at a multiple of it) holding
/// only zeros is not written, so it stays (or is made) a hole, as rsync's `-S` leaves
/// runs of zeros unwritten. The page size, the smallest block a hole can free.
const ZERO_BLOCK: u64 = 4096;

/// Copies `ranges` of the source into `dst` at the same offsets, pacing by
/// `--bwlimit`. Under `-S` whole blocks of zeros are not written: below `old_end`
/// (what `dst` held before: `--inplace`) they are punched out, past it they already
/// read as zeros once the size is set. Returns the bytes read from the source.
pub(super) fn write_ranges(
    src: &SourceFile<'_>,
    dst: &File,
    ranges: &[(u64, u64)],
    old_end: u64,
) -> Result<u64, CopyError> {
    let piece = if src.limit.is_some() {
        crate::options::bwlimit::CHUNK
    } else {
        PIECE
    };
    let mut buf = Vec::new();
    let mut done = 0;
    for &(off, len) in ranges {
        let mut at = off;
        while at < off + len {
            let n = piece.min(off + len - at);
            buf.resize(n as usize, 0);
            read_full(&src.data, &mut buf, at)?;
            src.throttle(n)?;
            if src.sparse {
                for (seg_at, seg, zero) in segments(&buf, at) {
                    if !zero {
                        dst.write_all_at(seg, seg_at).map_err(CopyError::dest)?;
                    } else if seg_at < old_end {
                        punch_hole(dst, seg_at, seg.len() as u64, old_end)?;
                    }
                }
            } else {
                dst.write_all_at(&buf, at).map_err(CopyError::dest)?;
            }
            at += n;
            done += n;
        }
    }
    Ok(done)
}

/// `buf` (the file's bytes from `at`) cut into runs of whole zero blocks and runs of
/// the rest: `(offset in the file, bytes, whether zeros)`, in order.
fn segments(buf: &[u8], at: u64) -> Vec<(u64, &[u8], bool)> {
    let mut out: Vec<(u64, &[u8], bool)> = Vec::new();
    let mut i = 0usize;
    while i < buf.len() {
        let pos = at + i as u64;
        let end = ((pos / ZERO_BLOCK + 1) * ZERO_BLOCK - at).min(buf.len() as u64) as usize;
        let block = &buf[i..end];
        let zero = pos.is_multiple_of(ZERO_BLOCK)
            && block.len() as u64 == ZERO_BLOCK
            && block.iter().all(|&b| b == 0);
        match out.last_mut() {
            Some((from, seg, z)) if *z == zero => {
                let start = (*from - at) as usize;
                *seg = &buf[start..end];
            }
            _ => out.push((pos, block, zero)),
        }
        i = end;
    }
    out
}

/// Whether a new file must be written by ranges rather than copied whole.
pub(super) fn by_ranges(src: &SourceFile<'_>) -> bool {
    src.sparse || src.limit.is_some()
}

/// A new file's data by ranges, then its size (a trailing hole). Returns the file's
/// size, as a whole copy does.
pub(super) fn fill_by_ranges(src: &SourceFile<'_>, f: &File) -> Result<u64, CopyError> {
    write_ranges(src, f, &src.new_file_ranges()?, 0)?;
    f.set_len(src.meta.size).map_err(CopyError::dest)?;
    Ok(src.meta.size)
}

/// Makes `[off, off + len)` of `f` a hole; where the filesystem cannot, zeros up to
/// `old_end` (past it the file reads as zeros already).
fn punch_hole(f: &File, off: u64, len: u64, old_end: u64) -> Result<(), CopyError> {
    use rustix::fs::FallocateFlags as F;
    match rustix::fs::fallocate(f, F::PUNCH_HOLE | F::KEEP_SIZE, off, len) {
        Ok(()) => Ok(()),
        Err(rustix::io::Errno::OPNOTSUPP | rustix::io::Errno::NOSYS) => {
            let end = (off + len).min(old_end);
            let zeros = vec![0u8; PIECE.min(end - off) as usize];
            let mut at = off;
            while at < end {
                let n = (end - at).min(PIECE) as usize;
                f.write_all_at(&zeros[..n], at).map_err(CopyError::dest)?;
                at += n as u64;
            }
            Ok(())
        }
        Err(e) => Err(CopyError::Dest(e.into())),
    }
}

impl LocalDest {
    /// A new file's content, then owner and mode where they differ from what the
    /// create gave, then the mtime: a file with the source's size and mtime is
    /// complete.
    pub(super) fn fill(&self, f: &mut File, src: &SourceFile<'_>) -> Result<u64, CopyError> {
        let meta = src.meta;
        let bytes = match (src.data.as_file(), src.data.as_bytes()) {
            (Some(file), _) if !by_ranges(src) => {
                copy_data(file, f, meta.size, src.stop, src.moving.as_ref())?
            }
            // A file read whole (a small one of a remote source): one write, no copy.
            (_, Some(bytes)) if !by_ranges(src) && bytes.len() as u64 == meta.size => {
                src.throttle(meta.size)?;
                std::io::Write::write_all(f, bytes).map_err(CopyError::dest)?;
                meta.size
            }
            // Bytes held or read as they come: written by pieces, paced and counted
            // as each is let through.
            _ => fill_by_ranges(src, f)?,
        };
        src.verify_unchanged()?;
        let dest = |e: rustix::io::Errno| CopyError::Dest(e.into());
        if self.fake_super {
            self.fill_faked(f, meta).map_err(CopyError::dest)?;
            rustix::fs::futimens(&*f, &file_times(meta)).map_err(dest)?;
            return Ok(bytes);
        }
        let mut mode_needed = meta.mode & 0o7000 != 0;
        if let Some((uid, gid)) = self.chown_ids(meta) {
            rustix::fs::fchown(
                &*f,
                uid.map(rustix::fs::Uid::from_raw),
                gid.map(rustix::fs::Gid::from_raw),
            )
            .map_err(dest)?;
            mode_needed = true;
        }
        if mode_needed {
            rustix::fs::fchmod(&*f, Mode::from_raw_mode(meta.mode)).map_err(dest)?;
        }
        rustix::fs::futimens(&*f, &file_times(meta)).map_err(dest)?;
        Ok(bytes)
    }
}

/// The file a write created: open, or closed already and known by (device, inode).
pub(super) enum Ours<'a> {
    Open(&'a File),
    Was((u64, u64)),
}

/// Removes the partial file `name` after a failed write, but only while the name still
/// holds the file we created (`ours`): another run may have renamed its finished copy
/// over it meanwhile.
pub(super) fn remove_if_ours(dir: &LocalDir, name: &OsStr, ours: Ours<'_>) {
    let mine = match ours {
        Ours::Open(f) => match rustix::fs::fstat(f) {
            Ok(st) => (st.st_dev, st.st_ino),
            Err(_) => return,
        },
        Ours::Was(id) => id,
    };
    let Ok(now) = rustix::fs::statat(dir.fd(), name, AtFlags::SYMLINK_NOFOLLOW) else {
        return;
    };
    if mine == (now.st_dev, now.st_ino) {
        let _ = rustix::fs::unlinkat(dir.fd(), name, AtFlags::empty());
    }
}

impl LocalDest {
    pub(super) fn write_into_impl(
        &self,
        dir: &LocalDir,
        name: &OsStr,
        src: &SourceFile<'_>,
        from: u64,
    ) -> Result<u64, CopyError> {
        let meta = src.meta;
        let dest = |e: rustix::io::Errno| CopyError::Dest(e.into());
        let flags = OFlags::WRONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let open = || rustix::fs::openat(dir.fd(), name, flags, Mode::empty());
        // A read-only file of ours is made writable for the update (rsync does the
        // same); the mode it ends with is set below either way.
        let mut made_writable = false;
        let fd = match open() {
            Err(rustix::io::Errno::ACCESS) if self.euid != 0 => {
                let st = rustix::fs::statat(dir.fd(), name, rustix::fs::AtFlags::SYMLINK_NOFOLLOW)
                    .map_err(dest)?;
                super::sys::chmod_nofollow(dir.fd(), name, (st.st_mode | 0o200) & 0o7777)
                    .map_err(CopyError::dest)?;
                made_writable = true;
                open()
            }
            r => r,
        }
        .map_err(dest)?;
        let st = rustix::fs::fstat(&fd).map_err(dest)?;
        if rustix::fs::FileType::from_raw_mode(st.st_mode) != rustix::fs::FileType::RegularFile {
            return Err(CopyError::Dest(
                std::io::Error::from_raw_os_error(libc::EISDIR).into(),
            ));
        }
        let f = File::from(fd);
        let bytes = if src.sparse {
            // rsync -S --inplace: the source's holes become holes here too.
            let data = src
                .data
                .data_extents(from, meta.size)
                .map_err(CopyError::Source)?;
            // Past the old end there is nothing to punch, but the block it falls in
            // goes too: the punch runs to the gap's end (the size stays).
            let old_end = (st.st_size as u64).min(meta.size);
            for (off, len) in sparse::gaps(from, meta.size, &data) {
                if off < old_end {
                    punch_hole(&f, off, len, old_end)?;
                }
            }
            write_ranges(src, &f, &data, old_end)?
        } else {
            write_ranges(src, &f, &sparse::whole(from, meta.size), 0)?
        };
        if st.st_size as u64 != meta.size {
            f.set_len(meta.size).map_err(CopyError::dest)?;
        }
        src.verify_unchanged()?;
        if self.fake_super {
            self.fill_faked(&f, meta).map_err(CopyError::dest)?;
            rustix::fs::futimens(&f, &super::sys::file_times(meta)).map_err(dest)?;
            close_checked(f).map_err(CopyError::dest)?;
            return Ok(bytes);
        }
        let mut chmod =
            made_writable || st.st_mode & 0o7777 != meta.mode || meta.mode & 0o6000 != 0;
        if let Some((uid, gid)) = self.owner_ids(meta)
            && (uid.is_some_and(|u| u.as_raw() != st.st_uid)
                || gid.is_some_and(|g| g.as_raw() != st.st_gid))
        {
            rustix::fs::fchown(&f, uid, gid).map_err(dest)?;
            chmod = true;
        }
        if chmod {
            rustix::fs::fchmod(&f, Mode::from_raw_mode(meta.mode)).map_err(dest)?;
        }
        rustix::fs::futimens(&f, &super::sys::file_times(meta)).map_err(dest)?;
        close_checked(f).map_err(CopyError::dest)?;
        Ok(bytes)
    }
}

impl LocalDest {
    /// `--temp-dir`: relative to DEST, or absolute (anywhere on this machine).
    /// A rename between directories; across filesystems (EXDEV) a copy under a
    /// temporary name in `to_dir`, renamed over `to`, then `from` removed, as rsync
    /// does for a `--temp-dir` or a `--backup-dir` on another filesystem.
    pub(super) fn rename_between_impl(
        &self,
        from_dir: &LocalDir,
        from: &OsStr,
        to_dir: &LocalDir,
        to: &OsStr,
    ) -> std::io::Result<()> {
        match rustix::fs::renameat(from_dir.fd(), from, to_dir.fd(), to) {
            Err(rustix::io::Errno::XDEV) => {}
            r => return Ok(r?),
        }
        let temp = crate::options::temp::name(to);
        let copied = copy_entry(from_dir, from, to_dir, &temp)
            .and_then(|()| Ok(rustix::fs::renameat(to_dir.fd(), &temp, to_dir.fd(), to)?));
        if let Err(e) = copied {
            let _ = rustix::fs::unlinkat(to_dir.fd(), &temp, rustix::fs::AtFlags::empty());
            return Err(e);
        }
        rustix::fs::unlinkat(from_dir.fd(), from, rustix::fs::AtFlags::empty())?;
        Ok(())
    }
}

/// Re-creates the entry `from` as `temp` in `to_dir` by its type, never opening
/// anything but a regular file: a FIFO opened for reading would wait for a writer
/// forever, and a symlink would be followed. Mode, owners and mtime are kept (the
/// mtime last).
fn copy_entry(
    from_dir: &LocalDir,
    from: &OsStr,
    to_dir: &LocalDir,
    temp: &OsStr,
) -> std::io::Result<()> {
    use rustix::fs::{AtFlags, FileType};
    let st = rustix::fs::statat(from_dir.fd(), from, AtFlags::SYMLINK_NOFOLLOW)?;
    let mtime = mtime_only(crate::meta::Time {
        sec: st.st_mtime,
        nsec: st.st_mtime_nsec as u32,
    });
    let uid = Some(rustix::fs::Uid::from_raw(st.st_uid));
    let gid = Some(rustix::fs::Gid::from_raw(st.st_gid));
    let nofollow = AtFlags::SYMLINK_NOFOLLOW;
    match FileType::from_raw_mode(st.st_mode) {
        FileType::RegularFile => {}
        FileType::Symlink => {
            let target = rustix::fs::readlinkat(from_dir.fd(), from, Vec::new())?;
            rustix::fs::symlinkat(target.as_c_str(), to_dir.fd(), temp)?;
            let _ = rustix::fs::chownat(to_dir.fd(), temp, uid, gid, nofollow);
            rustix::fs::utimensat(to_dir.fd(), temp, &mtime, nofollow)?;
            return Ok(());
        }
        t @ (FileType::Fifo
        | FileType::CharacterDevice
        | FileType::BlockDevice
        | FileType::Socket) => {
            let mode = Mode::from_raw_mode(st.st_mode & 0o7777);
            rustix::fs::mknodat(to_dir.fd(), temp, t, mode, st.st_rdev)?;
            let _ = rustix::fs::chownat(to_dir.fd(), temp, uid, gid, nofollow);
            rustix::fs::chmodat(to_dir.fd(), temp, mode, AtFlags::empty())?;
            rustix::fs::utimensat(to_dir.fd(), temp, &mtime, nofollow)?;
            return Ok(());
        }
        _ => return Err(rustix::io::Errno::XDEV.into()),
    }
    // O_NONBLOCK: the entry may have been swapped for a FIFO since the stat.
    let rd = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
    let src = File::from(rustix::fs::openat(from_dir.fd(), from, rd, Mode::empty())?);
    let st = rustix::fs::fstat(&src)?;
    if FileType::from_raw_mode(st.st_mode) != FileType::RegularFile {
        return Err(std::io::Error::other(
            "the entry changed type while it was moved",
        ));
    }
    let wr = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let mut dst = File::from(rustix::fs::openat(
        to_dir.fd(),
        temp,
        wr,
        Mode::from_raw_mode(0o600),
    )?);
    super::sys::copy_data(&src, &mut dst, st.st_size as u64, None, None).map_err(|e| match e {
        CopyError::Source(e) => e,
        CopyError::Dest(e) => std::io::Error::other(e),
        _ => std::io::Error::other("the temporary changed while it was moved"),
    })?;
    let _ = rustix::fs::fchown(&dst, uid, gid);
    copy_xattrs(&src, &dst)?;
    rustix::fs::fchmod(&dst, Mode::from_raw_mode(st.st_mode & 0o7777))?;
    rustix::fs::futimens(&dst, &mtime)?;
    close_checked(dst)
}

/// The extended attributes (ACLs, `--fake-super`'s) a rename would have kept, copied
/// from `src` to `dst`: those the filesystem or our privileges do not let us set are
/// left out, as they would be by any copy.
fn copy_xattrs(src: &File, dst: &File) -> std::io::Result<()> {
    use rustix::io::Errno;
    let all = crate::options::xattrs::XattrSet {
        xattrs: true,
        acls: true,
        root: true,
        ..Default::default()
    };
    let got =
        match crate::options::xattrs::read(crate::options::xattrs::Target::Fd(src.as_fd()), all) {
            Ok(got) => got,
            Err(e) if crate::options::xattrs::is_unsupported(&e) => return Ok(()),
            Err(e) => return Err(e),
        };
    for (name, value) in got {
        match rustix::fs::fsetxattr(dst, &name, &value, rustix::fs::XattrFlags::empty()) {
            Ok(()) | Err(Errno::PERM | Errno::NOTSUP | Errno::ACCESS) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_zero_blocks_are_found_at_block_offsets() {
        let b = ZERO_BLOCK as usize;
        let mut buf = vec![0u8; 4 * b + 10];
        buf[0] = 1;
        buf[3 * b + 5] = 1;
        // From offset 0: block 0 has data, 1 and 2 are zeros, block 3 has data, and
        // the 10 bytes after block 3 are no whole block.
        let seg: Vec<_> = segments(&buf, 0)
            .into_iter()
            .map(|(at, s, z)| (at, s.len(), z))
            .collect();
        assert_eq!(
            seg,
            [
                (0, b, false),
                (b as u64, 2 * b, true),
                (3 * b as u64, b + 10, false)
            ]
        );
        // Starting mid-block, the first (partial) block is written whatever it holds.
        let zeros = vec![0u8; 2 * b];
        let seg: Vec<_> = segments(&zeros, 100)
            .into_iter()
            .map(|(at, s, z)| (at, s.len(), z))
            .collect();
        assert_eq!(
            seg,
            [
                (100, b - 100, false),
                (b as u64, b, true),
                (2 * b as u64, 100, false)
            ]
        );
        assert!(segments(&[], 0).is_empty());
    }
}
