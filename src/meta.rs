//! The metadata nfsync compares and preserves, independent of where it came from.
//!
//! Both backends describe files with the same [`Meta`], so the planner can compare a
//! local source `lstat` with a destination `stat` or with NFSv3 post-op attributes
//! without knowing which one it holds.

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
    /// True when the two times are equal, or within `window` seconds when a window is
    /// given (rsync's `--modify-window`, for filesystems that round times).
    pub fn matches(self, other: Time, window: Option<u64>) -> bool {
        match window {
            None | Some(0) => self == other,
            Some(w) => self.sec.abs_diff(other.sec) <= w,
        }
    }
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
        }
    }
}
