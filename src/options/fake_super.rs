//! `--fake-super`: what a receiver that may not be root keeps of the attributes only
//! root can give, in the `user.rsync.%stat` extended attribute of each entry, as rsync
//! keeps them (so either tool reads the other's).
//!
//! The value is `MODE MAJOR,MINOR UID:GID`: the whole mode in octal (type and
//! permission bits), the device numbers (0,0 for anything but a device) and the owner.
//! The real entry stays safe and ours to read: a device or special file is an empty
//! regular file, a symlink a regular file holding its target (Linux keeps no user
//! attributes on a symlink), special permission bits are dropped, and the owner can always read
//! and write (and search a directory). An entry that is what the value would say
//! carries no value.

use std::io;

use rustix::fs::XattrFlags;

use crate::meta::{Kind, Meta};
use crate::options::xattrs::Target;

/// The extended attribute that holds the faked attributes.
pub const STAT_XATTR: &str = crate::options::xattrs::FAKE_STAT_NAME;

/// Where `--fake-super` is in force: rsync's option applies to both sides of a local
/// copy, `-M--fake-super` to the receiver only.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FakeSuper {
    /// The source's entries are read with their stored attributes.
    pub source: bool,
    /// DEST's entries are written (and read) with them.
    pub dest: bool,
}

/// Attributes as the extended attribute keeps them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Faked {
    /// File type and permission bits (`st_mode`'s `S_IFMT | 0o7777`).
    pub mode: u32,
    /// Device number (0 for anything but a device).
    pub rdev: u64,
    pub uid: u32,
    pub gid: u32,
}

fn is_device(kind: Kind) -> bool {
    matches!(kind, Kind::CharDev | Kind::BlockDev)
}

impl Faked {
    /// What `meta` (the entry as it should be) keeps.
    pub fn of(meta: &Meta) -> Faked {
        Faked {
            mode: meta.kind.mode_bits() | (meta.mode & 0o7777),
            rdev: if is_device(meta.kind) { meta.rdev } else { 0 },
            uid: meta.uid,
            gid: meta.gid,
        }
    }

    /// The entry's kind.
    pub fn kind(&self) -> Kind {
        Kind::from_raw_type(rustix::fs::FileType::from_raw_mode(self.mode))
    }

    /// Parses a stored value; `None` for one that is not of this form.
    pub fn parse(value: &[u8]) -> Option<Faked> {
        let s = std::str::from_utf8(value).ok()?;
        let mut parts = s.trim_end_matches('\0').split(' ');
        let mode = u32::from_str_radix(parts.next()?, 8).ok()?;
        let (major, minor) = parts.next()?.split_once(',')?;
        let (uid, gid) = parts.next()?.split_once(':')?;
        if parts.next().is_some() {
            return None;
        }
        Some(Faked {
            mode,
            rdev: rustix::fs::makedev(major.parse().ok()?, minor.parse().ok()?),
            uid: uid.parse().ok()?,
            gid: gid.parse().ok()?,
        })
    }

    /// The value to store.
    pub fn value(&self) -> String {
        format!(
            "{:o} {},{} {}:{}",
            self.mode,
            rustix::fs::major(self.rdev),
            rustix::fs::minor(self.rdev),
            self.uid,
            self.gid
        )
    }

    /// `meta` (an entry as the filesystem has it) as the stored value says it is.
    pub fn apply(&self, meta: &mut Meta) {
        meta.kind = self.kind();
        meta.mode = self.mode & 0o7777;
        meta.rdev = self.rdev;
        meta.uid = self.uid;
        meta.gid = self.gid;
    }
}

/// The safe permission bits the real entry of kind `real` gets for the faked `mode`:
/// no special bits, and always the owner's read and write (and search).
pub fn real_mode(real: Kind, mode: u32) -> u32 {
    let own = if real == Kind::Dir { 0o700 } else { 0o600 };
    (mode & 0o777) | own
}

/// Whether the real entry (`real`, as stat gives it) needs a stored value to say
/// `want`.
pub fn needs_value(real: &Meta, want: &Faked) -> bool {
    let real_rdev = if is_device(real.kind) { real.rdev } else { 0 };
    (real.kind.mode_bits() | (real.mode & 0o7777)) != want.mode
        || real_rdev != want.rdev
        || real.uid != want.uid
        || real.gid != want.gid
}

/// The stored value of `t`, if it has one that parses.
pub fn read(t: Target<'_>) -> io::Result<Option<Faked>> {
    let mut buf = [0u8; 128];
    let got = match t {
        Target::Path(p) => rustix::fs::lgetxattr(p, STAT_XATTR, &mut buf),
        Target::Fd(fd) => rustix::fs::fgetxattr(fd, STAT_XATTR, &mut buf),
    };
    match got {
        Ok(n) => Ok(Faked::parse(&buf[..n])),
        // None stored; none storable (a filesystem without them, a symlink's).
        Err(rustix::io::Errno::NODATA)
        | Err(rustix::io::Errno::NOTSUP)
        | Err(rustix::io::Errno::RANGE)
        | Err(rustix::io::Errno::PERM) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// Makes `t` (whose real attributes are `real`) say `want`: the value stored where the
/// real entry differs, removed where it does not.
pub fn store(t: Target<'_>, real: &Meta, want: &Faked) -> io::Result<()> {
    let r = if needs_value(real, want) {
        let v = want.value();
        match t {
            Target::Path(p) => {
                rustix::fs::lsetxattr(p, STAT_XATTR, v.as_bytes(), XattrFlags::empty())
            }
            Target::Fd(fd) => {
                rustix::fs::fsetxattr(fd, STAT_XATTR, v.as_bytes(), XattrFlags::empty())
            }
        }
    } else {
        match t {
            Target::Path(p) => rustix::fs::lremovexattr(p, STAT_XATTR),
            Target::Fd(fd) => rustix::fs::fremovexattr(fd, STAT_XATTR),
        }
        .or_else(|e| {
            if e == rustix::io::Errno::NODATA {
                Ok(())
            } else {
                Err(e)
            }
        })
    };
    Ok(r?)
}

/// rsync's mark for an ACL entry it does not keep.
const NO_ENTRY: u32 = 0x80;
/// rsync's mark for a named entry that names a user (else a group).
const NAME_IS_USER: u32 = 1 << 31;

/// A kernel ACL (`system.posix_acl_access` or `_default`'s value) as `--fake-super`
/// keeps it in `user.rsync.%aacl` or `%dacl`, in rsync's layout: the owner, group,
/// mask and other entries, then each named entry (id, then its bits with the top bit
/// set for a user), little-endian 32-bit words. An access ACL (`mode`: the entry's
/// mode) drops what the mode already says, as rsync does; `None` when nothing is left
/// to keep, or the value is no ACL.
pub fn pack_acl(kernel: &[u8], mode: Option<u32>) -> Option<Vec<u8>> {
    let (version, entries) = kernel.split_first_chunk::<4>()?;
    if u32::from_le_bytes(*version) != 2 || entries.len() % 8 != 0 {
        return None;
    }
    let [mut user, mut group, mut mask, mut other] = [NO_ENTRY; 4];
    let mut names = Vec::new();
    for e in entries.chunks_exact(8) {
        let tag = u16::from_le_bytes([e[0], e[1]]);
        let perm = u32::from(u16::from_le_bytes([e[2], e[3]]) & 0o7);
        let id = u32::from_le_bytes([e[4], e[5], e[6], e[7]]);
        match tag {
            0x01 => user = perm,
            0x02 => names.push((id, perm | NAME_IS_USER)),
            0x04 => group = perm,
            0x08 => names.push((id, perm)),
            0x10 => mask = perm,
            0x20 => other = perm,
            _ => return None,
        }
    }
    // Users before groups, each by id.
    names.sort_by_key(|&(id, access)| (access & NAME_IS_USER == 0, id));
    if let Some(mode) = mode {
        let group_bits = (mode >> 3) & 7;
        user = NO_ENTRY;
        if mask == NO_ENTRY {
            group = NO_ENTRY;
        } else {
            if group == group_bits {
                group = NO_ENTRY;
            }
            if !names.is_empty() && mask == group_bits {
                mask = NO_ENTRY;
            }
        }
        other = NO_ENTRY;
        if [user, group, mask, other] == [NO_ENTRY; 4] && names.is_empty() {
            return None;
        }
    }
    // A list of names needs a mask: rsync's receiver puts back the one the mode says
    // (a default ACL's: what its entries grant).
    if !names.is_empty() && mask == NO_ENTRY {
        mask = match mode {
            Some(mode) => (mode >> 3) & 7,
            None => names
                .iter()
                .fold(group & 7, |m, &(_, access)| m | (access & 7)),
        };
    }
    let mut out = Vec::with_capacity(16 + 8 * names.len());
    for w in [user, group, mask, other] {
        out.extend(w.to_le_bytes());
    }
    for (id, access) in names {
        out.extend(id.to_le_bytes());
        out.extend(access.to_le_bytes());
    }
    Some(out)
}

/// The target a regular file standing for a symlink holds: at most `PATH_MAX` bytes.
pub fn read_target(f: impl io::Read) -> io::Result<Vec<u8>> {
    use std::io::Read;
    let mut target = Vec::new();
    f.take(4097).read_to_end(&mut target)?;
    if target.len() > 4096 {
        return Err(io::Error::from_raw_os_error(libc::ENAMETOOLONG));
    }
    Ok(target)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_read_back_as_written() {
        let f = Faked {
            mode: 0o20644,
            rdev: rustix::fs::makedev(41, 67),
            uid: 5000,
            gid: 5002,
        };
        assert_eq!(f.value(), "20644 41,67 5000:5002");
        assert_eq!(Faked::parse(f.value().as_bytes()), Some(f));
        assert_eq!(f.kind(), Kind::CharDev);
        assert_eq!(Faked::parse(b"100000 0,0 0:0").unwrap().kind(), Kind::File);
        assert_eq!(Faked::parse(b"nonsense"), None);
        assert_eq!(Faked::parse(b"644 0,0"), None);
    }

    #[test]
    fn acls_are_kept_in_rsyncs_layout() {
        let kernel = |entries: &[(u16, u16, u32)]| {
            let mut v = 2u32.to_le_bytes().to_vec();
            for &(tag, perm, id) in entries {
                v.extend(tag.to_le_bytes());
                v.extend(perm.to_le_bytes());
                v.extend(id.to_le_bytes());
            }
            v
        };
        let words = |w: &[u32]| w.iter().flat_map(|w| w.to_le_bytes()).collect::<Vec<u8>>();
        let m = u32::MAX;
        // u::rw-, u:1000:rwx, g::r--, g:7:r-x, m::rwx, o::r-- on a 0674 file: the owner's
        // and other's bits are the mode's; the group's, the mask and the names are kept.
        let acl = kernel(&[
            (0x01, 6, m),
            (0x08, 5, 7),
            (0x02, 7, 1000),
            (0x04, 4, m),
            (0x10, 7, m),
            (0x20, 4, m),
        ]);
        assert_eq!(
            pack_acl(&acl, Some(0o674)),
            Some(words(&[0x80, 4, 7, 0x80, 1000, 7 | 1 << 31, 7, 5]))
        );
        // A default ACL is kept whole.
        assert_eq!(
            pack_acl(&kernel(&[(0x01, 7, m), (0x04, 5, m), (0x20, 5, m)]), None),
            Some(words(&[7, 5, 0x80, 5]))
        );
        // An access ACL the mode says all of is not kept.
        let trivial = kernel(&[(0x01, 6, m), (0x04, 4, m), (0x20, 4, m)]);
        assert_eq!(pack_acl(&trivial, Some(0o644)), None);
        assert_eq!(pack_acl(b"junk", None), None);
    }

    #[test]
    fn the_real_entry_stays_safe_and_ours() {
        assert_eq!(real_mode(Kind::File, 0o4000), 0o600);
        assert_eq!(real_mode(Kind::Dir, 0o2755), 0o755);
    }
}
