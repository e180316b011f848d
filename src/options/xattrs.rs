//! Extended attributes and POSIX ACLs (`-X`, `-A`): which ones a run keeps, and
//! reading and writing them on a local object.
//!
//! On Linux an ACL is the `system.posix_acl_access` (and, on a directory,
//! `system.posix_acl_default`) extended attribute, so one mechanism carries both:
//! `-A` keeps those two names, `-X` the `user.*` namespace, and as root also
//! `trusted.*` and `security.*`, as rsync does. Values are copied as bytes; both sides
//! are the local kernel's (the mount path), so the ACL format needs no translation.

use std::ffi::{OsStr, OsString};
use std::io;
use std::os::fd::BorrowedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use rustix::fs::XattrFlags;

/// The names and values of the attributes a run keeps, sorted by name.
pub type Xattrs = Vec<(OsString, Vec<u8>)>;

/// Which extended attributes are copied.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct XattrSet {
    /// `-X`: `user.*` (and `trusted.*`, `security.*` as root).
    pub xattrs: bool,
    /// `-A`: POSIX ACLs.
    pub acls: bool,
    /// Running as root: the privileged namespaces are readable and writable.
    pub root: bool,
    /// `--fake-super`: its own attribute (the faked owner, mode and device) is not
    /// one of the entry's attributes to copy or remove.
    pub fake_super: bool,
    /// The side read keeps its ACLs as `--fake-super` does, in `user.rsync.%aacl`
    /// and `%dacl` (which `-A` then keeps instead of the real ones).
    pub fake_acls: bool,
}

const ACL_NAMES: [&[u8]; 2] = [b"system.posix_acl_access", b"system.posix_acl_default"];

/// Where `--fake-super` keeps an entry's owner, mode and device numbers.
pub const FAKE_STAT_NAME: &str = "user.rsync.%stat";

/// Where `--fake-super` keeps the access and default ACLs.
pub const FAKE_ACL_NAMES: [&[u8]; 2] = [b"user.rsync.%aacl", b"user.rsync.%dacl"];

impl XattrSet {
    /// Whether anything is copied.
    pub fn any(self) -> bool {
        self.xattrs || self.acls
    }

    /// Whether the attribute `name` is one this run keeps.
    pub fn keeps(self, name: &[u8]) -> bool {
        if ACL_NAMES.contains(&name) {
            return self.acls && !self.fake_acls;
        }
        if self.fake_acls && FAKE_ACL_NAMES.contains(&name) {
            return self.acls;
        }
        if self.fake_super && name == FAKE_STAT_NAME.as_bytes() {
            return false;
        }
        self.xattrs
            && (name.starts_with(b"user.")
                || (self.root && (name.starts_with(b"trusted.") || name.starts_with(b"security."))))
    }
}

/// Where attributes are read or written: a path whose last component is not
/// followed, or an open descriptor (a destination directory itself).
#[derive(Clone, Copy)]
pub enum Target<'a> {
    /// An object by path (`l*xattr`).
    Path(&'a Path),
    /// An object by descriptor (`f*xattr`).
    Fd(BorrowedFd<'a>),
}

/// Grows `buf` until `fill` fits; `query` says how much is needed.
fn read_sized(
    query: impl Fn() -> rustix::io::Result<usize>,
    fill: impl Fn(&mut [u8]) -> rustix::io::Result<usize>,
) -> io::Result<Vec<u8>> {
    loop {
        let n = query()?;
        let mut buf = vec![0u8; n];
        match fill(&mut buf) {
            Ok(got) => {
                buf.truncate(got);
                return Ok(buf);
            }
            // It grew between the two calls: ask again.
            Err(rustix::io::Errno::RANGE) => continue,
            Err(e) => return Err(e.into()),
        }
    }
}

/// The kept attributes of `t`, sorted. A filesystem without extended attributes
/// answers `ENOTSUP`, which is returned as such for the caller to judge.
pub fn read(t: Target<'_>, set: XattrSet) -> io::Result<Xattrs> {
    let names = match t {
        Target::Path(p) => read_sized(
            || rustix::fs::llistxattr_query(p),
            |b| rustix::fs::llistxattr(p, b),
        ),
        Target::Fd(fd) => read_sized(
            || rustix::fs::flistxattr_query(fd),
            |b| rustix::fs::flistxattr(fd, b),
        ),
    }?;
    let mut out = Vec::new();
    for name in names.split(|&b| b == 0).filter(|n| !n.is_empty()) {
        if !set.keeps(name) {
            continue;
        }
        let name = OsStr::from_bytes(name);
        let value = match t {
            Target::Path(p) => read_sized(
                || rustix::fs::lgetxattr_query(p, name),
                |b| rustix::fs::lgetxattr(p, name, b),
            ),
            Target::Fd(fd) => read_sized(
                || rustix::fs::fgetxattr_query(fd, name),
                |b| rustix::fs::fgetxattr(fd, name, b),
            ),
        };
        match value {
            Ok(v) => out.push((name.to_owned(), v)),
            // Removed since the listing.
            Err(e) if e.raw_os_error() == Some(libc::ENODATA) => {}
            Err(e) => return Err(e),
        }
    }
    out.sort();
    Ok(out)
}

/// Makes the kept attributes of `t` equal `want` (sorted): sets what differs, removes
/// what `want` lacks. `have` is what `t` holds now.
pub fn write(t: Target<'_>, have: &Xattrs, want: &Xattrs) -> io::Result<()> {
    for (name, value) in want {
        if have.iter().any(|(n, v)| n == name && v == value) {
            continue;
        }
        match t {
            Target::Path(p) => rustix::fs::lsetxattr(p, name, value, XattrFlags::empty()),
            Target::Fd(fd) => rustix::fs::fsetxattr(fd, name, value, XattrFlags::empty()),
        }?;
    }
    for (name, _) in have {
        if want.iter().any(|(n, _)| n == name) {
            continue;
        }
        let r = match t {
            Target::Path(p) => rustix::fs::lremovexattr(p, name),
            Target::Fd(fd) => rustix::fs::fremovexattr(fd, name),
        };
        match r {
            Ok(()) | Err(rustix::io::Errno::NODATA) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

/// The permission bits a default ACL (`system.posix_acl_default`'s value) lets a new
/// entry keep: its owner's, its mask's (else its owning group's) and its others'
/// entries, as rsync reads them to stand for the umask. `None` for a value that is
/// not an ACL.
pub fn default_acl_perms(value: &[u8]) -> Option<u32> {
    let (version, entries) = value.split_first_chunk::<4>()?;
    if u32::from_le_bytes(*version) != 2 || entries.len() % 8 != 0 {
        return None;
    }
    let (mut user, mut group, mut mask, mut other) = (None, None, None, None);
    for e in entries.chunks_exact(8) {
        let tag = u16::from_le_bytes([e[0], e[1]]);
        let perm = u32::from(u16::from_le_bytes([e[2], e[3]]) & 0o7);
        match tag {
            0x01 => user = Some(perm),
            0x04 => group = Some(perm),
            0x10 => mask = Some(perm),
            0x20 => other = Some(perm),
            _ => {}
        }
    }
    Some((user? << 6) | (mask.or(group)? << 3) | other?)
}

/// Whether an error means the filesystem holds no such attributes at all.
pub fn is_unsupported(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::ENOTSUP) | Some(libc::ENOSYS))
        || e.kind() == io::ErrorKind::Unsupported
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn namespaces_kept_follow_rsync() {
        let x = XattrSet {
            xattrs: true,
            acls: false,
            root: false,
            fake_super: false,
            fake_acls: false,
        };
        assert!(x.keeps(b"user.a"));
        assert!(!x.keeps(b"trusted.a"));
        assert!(!x.keeps(b"system.posix_acl_access"));
        let root = XattrSet { root: true, ..x };
        assert!(root.keeps(b"trusted.a") && root.keeps(b"security.b"));
        let acl = XattrSet {
            xattrs: false,
            acls: true,
            root: true,
            fake_super: false,
            fake_acls: false,
        };
        let fake_acl = XattrSet {
            fake_acls: true,
            ..acl
        };
        assert!(!fake_acl.keeps(b"system.posix_acl_access"));
        assert!(fake_acl.keeps(b"user.rsync.%aacl") && fake_acl.keeps(b"user.rsync.%dacl"));
        assert!(!fake_acl.keeps(b"user.rsync.other"));
        assert!(acl.keeps(b"system.posix_acl_default") && !acl.keeps(b"user.a"));
        let fake = XattrSet {
            fake_super: true,
            ..x
        };
        assert!(x.keeps(b"user.rsync.%stat") && !fake.keeps(b"user.rsync.%stat"));
        assert!(fake.keeps(b"user.rsync.other"));
    }

    #[test]
    fn a_default_acl_stands_for_the_umask() {
        let acl = |entries: &[(u16, u16, u32)]| {
            let mut v = 2u32.to_le_bytes().to_vec();
            for &(tag, perm, id) in entries {
                v.extend(tag.to_le_bytes());
                v.extend(perm.to_le_bytes());
                v.extend(id.to_le_bytes());
            }
            v
        };
        let plain = acl(&[
            (0x01, 7, u32::MAX),
            (0x04, 7, u32::MAX),
            (0x20, 5, u32::MAX),
        ]);
        assert_eq!(default_acl_perms(&plain), Some(0o775));
        let masked = acl(&[
            (0x01, 7, u32::MAX),
            (0x02, 7, 0),
            (0x04, 7, u32::MAX),
            (0x10, 5, u32::MAX),
            (0x20, 0, u32::MAX),
        ]);
        assert_eq!(default_acl_perms(&masked), Some(0o750));
        assert_eq!(default_acl_perms(b"junk"), None);
        assert_eq!(default_acl_perms(&acl(&[(0x01, 7, u32::MAX)])), None);
    }
}
