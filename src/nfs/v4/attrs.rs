//! NFSv4 attributes (`fattr4`) as nfsync's [`Meta`], and owners as numbers.
//!
//! An `fattr4` is a bitmap plus the values of the set bits packed in attribute-number
//! order, with no lengths between them: a value we cannot size makes the rest
//! unreadable. So we only ever ask for [`WANTED`] and refuse a reply carrying anything
//! else.
//!
//! Owners travel as strings. Servers that map ids (`Only_Numeric_Owners = false` on
//! nfs-ganesha, idmapd on knfsd) send `name@domain`; others, and EFS, send the number
//! itself. A number is taken as is; a name is looked up in the local user and group
//! database (as the kernel's idmapper does), and one unknown here reads as `nobody`
//! (65534), so its file is re-chowned if owners are preserved.

use std::collections::HashMap;
use std::ffi::CString;
use std::sync::Mutex;

use super::proto::{Bitmap, attr, ftype};
use super::reply::{Dec, Fattr};
use crate::meta::{Kind, Meta, Time};

/// The attributes nfsync reads: what the quick check and `-H` need, plus the handle
/// (so a listed directory is entered without a LOOKUP).
pub const WANTED: &[u32] = &[
    attr::TYPE,
    attr::CHANGE,
    attr::SIZE,
    attr::FSID,
    attr::FILEHANDLE,
    attr::FILEID,
    attr::MODE,
    attr::NUMLINKS,
    attr::OWNER,
    attr::OWNER_GROUP,
    attr::RAWDEV,
    attr::TIME_MODIFY,
];

/// The bitmap of [`WANTED`].
pub fn wanted() -> Bitmap {
    Bitmap::of(WANTED)
}

/// What one `fattr4` says about an object.
#[derive(Debug, Clone, Default)]
pub struct Decoded {
    pub meta: Option<Meta>,
    pub fh: Option<Vec<u8>>,
}

/// The uid given to owners the local database does not know.
const NOBODY: u32 = 65534;

/// Decodes `a`; `None` in [`Decoded::meta`] when the type or a compared attribute is
/// missing (the engine then asks again, or treats the entry as changed).
pub fn decode(a: &Fattr, ids: &IdMap) -> Result<Decoded, String> {
    let mut d = Dec::new(&a.vals);
    let mut kind = None;
    let mut m = Meta {
        kind: Kind::File,
        size: 0,
        mode: 0,
        uid: 0,
        gid: 0,
        mtime: Time::default(),
        nlink: 1,
        dev: 0,
        ino: 0,
        rdev: 0,
        change: 0,
        atime: None,
    };
    let mut fh = None;
    let mut have = 0u32;
    let e = |e: nfs3_types::xdr_codec::Error| e.to_string();
    for (word, bits) in a.mask.0.iter().enumerate() {
        for bit in 0..32 {
            if bits & (1 << bit) == 0 {
                continue;
            }
            let n = word as u32 * 32 + bit;
            match n {
                attr::TYPE => {
                    kind = Some(match d.u32().map_err(e)? {
                        ftype::REG => Kind::File,
                        ftype::DIR => Kind::Dir,
                        ftype::BLK => Kind::BlockDev,
                        ftype::CHR => Kind::CharDev,
                        ftype::LNK => Kind::Symlink,
                        ftype::SOCK => Kind::Socket,
                        ftype::FIFO => Kind::Fifo,
                        t => return Err(format!("object type {t}")),
                    })
                }
                attr::CHANGE => m.change = d.u64().map_err(e)?,
                attr::SIZE => m.size = d.u64().map_err(e)?,
                attr::FSID => m.dev = d.u64().map_err(e)? ^ d.u64().map_err(e)?,
                attr::FILEHANDLE => fh = Some(d.opaque(super::proto::FH_MAX).map_err(e)?.to_vec()),
                attr::FILEID => m.ino = d.u64().map_err(e)?,
                attr::MODE => m.mode = d.u32().map_err(e)? & 0o7777,
                attr::NUMLINKS => m.nlink = u64::from(d.u32().map_err(e)?),
                attr::OWNER => m.uid = ids.uid(d.opaque(1024).map_err(e)?),
                attr::OWNER_GROUP => m.gid = ids.gid(d.opaque(1024).map_err(e)?),
                attr::RAWDEV => {
                    let (maj, min) = (d.u32().map_err(e)?, d.u32().map_err(e)?);
                    m.rdev = libc::makedev(maj, min);
                }
                attr::TIME_MODIFY => {
                    let sec = d.u64().map_err(e)? as i64;
                    let nsec = d.u32().map_err(e)?;
                    if nsec > 999_999_999 {
                        return Err(format!("time_modify with {nsec} nanoseconds"));
                    }
                    m.mtime = Time { sec, nsec };
                }
                n => return Err(format!("attribute {n}, which we did not ask for")),
            }
            if matches!(n, attr::TYPE | attr::SIZE | attr::MODE | attr::TIME_MODIFY) {
                have += 1;
            }
        }
    }
    if !d.at_end() {
        return Err("bytes after the last attribute".to_string());
    }
    let meta = match kind {
        Some(k) if have == 4 => Some(Meta { kind: k, ..m }),
        _ => None,
    };
    Ok(Decoded { meta, fh })
}

/// Owner strings to ids, cached (a listing repeats the same few thousand times).
#[derive(Default)]
pub struct IdMap {
    users: Mutex<HashMap<Vec<u8>, u32>>,
    groups: Mutex<HashMap<Vec<u8>, u32>>,
}

impl IdMap {
    pub fn uid(&self, s: &[u8]) -> u32 {
        Self::id(&self.users, s, true)
    }

    pub fn gid(&self, s: &[u8]) -> u32 {
        Self::id(&self.groups, s, false)
    }

    fn id(cache: &Mutex<HashMap<Vec<u8>, u32>>, s: &[u8], user: bool) -> u32 {
        if let Some(n) = std::str::from_utf8(s).ok().and_then(|t| t.parse().ok()) {
            return n;
        }
        if let Some(&n) = cache.lock().ok().and_then(|c| c.get(s).copied()).as_ref() {
            return n;
        }
        let name = s.split(|&b| b == b'@').next().unwrap_or(s);
        let n = lookup_name(name, user).unwrap_or(NOBODY);
        if let Ok(mut c) = cache.lock() {
            c.insert(s.to_vec(), n);
        }
        n
    }
}

/// `getpwnam_r` / `getgrnam_r`.
fn lookup_name(name: &[u8], user: bool) -> Option<u32> {
    let c = CString::new(name).ok()?;
    let mut buf = vec![0u8; 16 * 1024];
    // SAFETY: the structs are plain C data written by libc into our buffers; the
    // result pointer is only read when libc says it found an entry.
    unsafe {
        if user {
            let mut pw: libc::passwd = std::mem::zeroed();
            let mut out = std::ptr::null_mut();
            let r = libc::getpwnam_r(
                c.as_ptr(),
                &mut pw,
                buf.as_mut_ptr().cast(),
                buf.len(),
                &mut out,
            );
            (r == 0 && !out.is_null()).then_some(pw.pw_uid)
        } else {
            let mut gr: libc::group = std::mem::zeroed();
            let mut out = std::ptr::null_mut();
            let r = libc::getgrnam_r(
                c.as_ptr(),
                &mut gr,
                buf.as_mut_ptr().cast(),
                buf.len(),
                &mut out,
            );
            (r == 0 && !out.is_null()).then_some(gr.gr_gid)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(w: &[u32]) -> Vec<u8> {
        w.iter().flat_map(|x| x.to_be_bytes()).collect()
    }

    #[test]
    fn decodes_the_quick_check_attributes_and_signed_times() {
        let mask = Bitmap::of(&[
            attr::TYPE,
            attr::SIZE,
            attr::MODE,
            attr::OWNER,
            attr::TIME_MODIFY,
        ]);
        let mut vals = words(&[ftype::REG, 0, 42, 0o640, 4]);
        vals.extend_from_slice(b"1234");
        // 1960-01-01: -315619200 seconds.
        vals.extend_from_slice(&(-315_619_200i64).to_be_bytes());
        vals.extend_from_slice(&5u32.to_be_bytes());
        let d = decode(&Fattr { mask, vals }, &IdMap::default()).unwrap();
        let m = d.meta.unwrap();
        assert_eq!(
            (m.kind, m.size, m.mode, m.uid),
            (Kind::File, 42, 0o640, 1234)
        );
        assert_eq!(
            m.mtime,
            Time {
                sec: -315_619_200,
                nsec: 5
            }
        );
    }

    #[test]
    fn names_map_through_the_local_database_and_unknown_ones_are_nobody() {
        let ids = IdMap::default();
        assert_eq!(ids.uid(b"root@localdomain"), 0);
        assert_eq!(ids.gid(b"root"), 0);
        assert_eq!(ids.uid(b"no-such-user-here@x"), NOBODY);
        assert_eq!(ids.uid(b"1000"), 1000);
    }

    #[test]
    fn unasked_or_truncated_attributes_are_refused() {
        let mask = Bitmap::of(&[attr::TYPE, 2]);
        assert!(
            decode(
                &Fattr {
                    mask,
                    vals: words(&[1, 0])
                },
                &IdMap::default()
            )
            .is_err()
        );
        let mask = Bitmap::of(&[attr::SIZE]);
        assert!(
            decode(
                &Fattr {
                    mask,
                    vals: words(&[1])
                },
                &IdMap::default()
            )
            .is_err()
        );
    }
}
