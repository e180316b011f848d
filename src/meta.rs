//! The metadata nfsync compares and preserves, independent of where it came from.
//!
//! Both backends describe files with the same [`Meta`], so the planner can compare a
//! local source `lstat` with a destination `stat` or with NFSv3 post-op attributes
//! without knowing which one it holds.

use std::fmt;
use std::fs;
use std::os::unix::fs::{FileTypeExt, MetadataExt};

/// What kind of object a directory entry is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    /// A regular file.
    File,
    /// A directory.
    Dir,
    /// A symbolic link (never followed).
    Symlink,
    /// A named pipe.
    Fifo,
    /// A unix-domain socket.
    Socket,
    /// A character device.
    CharDev,
    /// A block device.
    BlockDev,
}

impl Kind {
    /// Fifos and sockets: copied only with `--specials`.
    pub fn is_special(self) -> bool {
        matches!(self, Kind::Fifo | Kind::Socket)
    }

    /// Character and block devices: copied only with `--devices`.
    pub fn is_device(self) -> bool {
        matches!(self, Kind::CharDev | Kind::BlockDev)
    }

    /// The `S_IF*` bits for `mknod`.
    pub fn mode_bits(self) -> u32 {
        match self {
            Kind::File => libc::S_IFREG,
            Kind::Dir => libc::S_IFDIR,
            Kind::Symlink => libc::S_IFLNK,
            Kind::Fifo => libc::S_IFIFO,
            Kind::Socket => libc::S_IFSOCK,
            Kind::CharDev => libc::S_IFCHR,
            Kind::BlockDev => libc::S_IFBLK,
        }
    }

    /// Classifies a raw file type (a `stat`'s mode, a directory entry's type).
    pub fn from_raw_type(t: rustix::fs::FileType) -> Kind {
        use rustix::fs::FileType as T;
        match t {
            T::Directory => Kind::Dir,
            T::Symlink => Kind::Symlink,
            T::Fifo => Kind::Fifo,
            T::Socket => Kind::Socket,
            T::CharacterDevice => Kind::CharDev,
            T::BlockDevice => Kind::BlockDev,
            _ => Kind::File,
        }
    }

    /// Classifies a std file type.
    pub fn from_file_type(ft: fs::FileType) -> Kind {
        if ft.is_dir() {
            Kind::Dir
        } else if ft.is_symlink() {
            Kind::Symlink
        } else if ft.is_fifo() {
            Kind::Fifo
        } else if ft.is_socket() {
            Kind::Socket
        } else if ft.is_char_device() {
            Kind::CharDev
        } else if ft.is_block_device() {
            Kind::BlockDev
        } else {
            Kind::File
        }
    }
}

/// A point in time with nanosecond precision, as `struct timespec`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Time {
    /// Seconds since the epoch (may be negative).
    pub sec: i64,
    /// Nanoseconds, `0..1_000_000_000`.
    pub nsec: u32,
}

impl Time {
    /// rsync's `--modify-window`: equal within `window` whole seconds (0, rsync's
    /// default, compares seconds and ignores nanoseconds); a negative window compares
    /// to the nanosecond.
    pub fn matches(self, other: Time, window: i64) -> bool {
        match u64::try_from(window) {
            Err(_) => self == other,
            Ok(w) => self.sec.abs_diff(other.sec) <= w,
        }
    }

    /// The nearest time within `lo..=hi` (ordered by seconds, then nanoseconds).
    pub fn clamp_to(self, lo: Time, hi: Time) -> Time {
        self.max(lo).min(hi)
    }
}

/// UTC, as `date -u` would print it, with nanoseconds when there are any: warnings
/// about times must be readable without a calculator.
impl fmt::Display for Time {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let days = self.sec.div_euclid(86_400);
        let secs = self.sec.rem_euclid(86_400);
        let (y, m, d) = civil_from_days(days);
        write!(
            f,
            "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}",
            secs / 3600,
            secs / 60 % 60,
            secs % 60
        )?;
        if self.nsec != 0 {
            write!(f, ".{:09}", self.nsec)?;
        }
        f.write_str(" UTC")
    }
}

/// Days since 1970-01-01 to a proleptic Gregorian (year, month, day); Howard Hinnant's
/// `civil_from_days`, exact for every `i64` second count a filesystem can hold.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// The attributes nfsync compares and preserves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Meta {
    /// The object's kind.
    pub kind: Kind,
    /// Size in bytes (regular files; for others whatever the filesystem reports).
    pub size: u64,
    /// Permission bits including setuid, setgid and sticky (`0o7777`).
    pub mode: u32,
    /// Owner.
    pub uid: u32,
    /// Group.
    pub gid: u32,
    /// Modification time.
    pub mtime: Time,
    /// Link count, used by `-H` to find hard-linked groups.
    pub nlink: u64,
    /// Device of the filesystem holding the object (hard-link identity).
    pub dev: u64,
    /// Inode number (hard-link identity).
    pub ino: u64,
    /// Device number for character and block devices.
    pub rdev: u64,
    /// A number that changes whenever the object does, as a server reports it (the
    /// NFSv4 change attribute; NFSv3's ctime): what tells a file read from a server
    /// changed while it was read even where its mtime was put back. 0 where unknown
    /// (a local source is checked by size and mtime on the open file).
    pub change: u64,
    /// The access time to give a copy (`-U`): read from the source file as it is
    /// copied, `None` everywhere else (a destination's own is then left alone).
    pub atime: Option<Time>,
}

impl Meta {
    /// An entry of `kind` and `size`, mode 0644, owned by root, dated 1970, one link:
    /// what unit tests that deal or cut listings need, and a probe's empty file.
    pub fn of(kind: Kind, size: u64) -> Meta {
        Meta {
            kind,
            size,
            mode: 0o644,
            uid: 0,
            gid: 0,
            mtime: Time { sec: 0, nsec: 0 },
            nlink: 1,
            dev: 0,
            ino: 0,
            rdev: 0,
            change: 0,
            atime: None,
        }
    }
}

impl Meta {
    /// Converts `lstat`/`stat` results.
    pub fn from_std(m: &fs::Metadata) -> Meta {
        Meta {
            kind: Kind::from_file_type(m.file_type()),
            size: m.size(),
            mode: m.mode() & 0o7777,
            uid: m.uid(),
            gid: m.gid(),
            mtime: Time {
                sec: m.mtime(),
                nsec: m.mtime_nsec() as u32,
            },
            nlink: m.nlink(),
            dev: m.dev(),
            ino: m.ino(),
            rdev: m.rdev(),
            change: 0,
            atime: None,
        }
    }

    /// Converts a raw `stat`, as [`Meta::from_std`] reads `std::fs::Metadata`. The
    /// field types differ between architectures (`st_nlink` is 32-bit on arm64), hence
    /// the conversions that are no-ops on x86-64.
    #[allow(clippy::useless_conversion)]
    pub fn from_stat(st: &rustix::fs::Stat) -> Meta {
        Meta {
            kind: Kind::from_raw_type(rustix::fs::FileType::from_raw_mode(st.st_mode)),
            size: st.st_size as u64,
            mode: st.st_mode & 0o7777,
            uid: st.st_uid,
            gid: st.st_gid,
            mtime: Time {
                sec: st.st_mtime.into(),
                nsec: st.st_mtime_nsec as u32,
            },
            nlink: st.st_nlink.into(),
            dev: st.st_dev.into(),
            ino: st.st_ino.into(),
            rdev: st.st_rdev.into(),
            change: 0,
            atime: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Time;

    #[test]
    fn times_print_as_utc_dates_before_and_after_the_epoch() {
        let t = |sec, nsec| Time { sec, nsec }.to_string();
        assert_eq!(t(0, 0), "1970-01-01 00:00:00 UTC");
        assert_eq!(t(-2, 500_000_000), "1969-12-31 23:59:58.500000000 UTC");
        assert_eq!(t(-315_619_200, 0), "1960-01-01 00:00:00 UTC");
        assert_eq!(t(-2_147_483_648, 0), "1901-12-13 20:45:52 UTC");
        assert_eq!(t(4_294_967_295, 0), "2106-02-07 06:28:15 UTC");
        assert_eq!(t(7_258_118_400, 0), "2200-01-01 00:00:00 UTC");
        assert_eq!(t(951_782_400, 0), "2000-02-29 00:00:00 UTC");
    }

    #[test]
    fn clamping_keeps_times_inside_and_moves_others_to_the_nearest_end() {
        let lo = Time { sec: 0, nsec: 0 };
        let hi = Time {
            sec: 10,
            nsec: 999_999_999,
        };
        let t = |sec, nsec| Time { sec, nsec };
        assert_eq!(t(5, 7).clamp_to(lo, hi), t(5, 7));
        assert_eq!(t(-2, 500_000_000).clamp_to(lo, hi), lo);
        assert_eq!(t(11, 0).clamp_to(lo, hi), hi);
        assert_eq!(t(10, 999_999_999).clamp_to(lo, hi), hi);
    }
}
