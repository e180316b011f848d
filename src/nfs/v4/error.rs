//! NFSv4 statuses as the seam's errors.
//!
//! NFSv4 keeps NFSv3's numbering where the two overlap (1 to 70 are errno values), so
//! those read as the errno a local filesystem would give (ENOSPC, EDQUOT, EROFS...);
//! the NFSv4-only statuses (10000 and up) keep their names, with advice where the user
//! can act on them. NFS4ERR_SYMLINK, met walking a path the user named, becomes the
//! refusal that names the link (LOOKUP never follows one).

use std::ffi::OsStr;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

use super::proto::status as S;
use super::reply::Reply;
use crate::dest;
use crate::options::trust;

/// The errno for a status, when there is a close one.
pub fn errno(st: u32) -> Option<i32> {
    Some(match st {
        S::PERM => libc::EPERM,
        S::NOENT => libc::ENOENT,
        S::IO => libc::EIO,
        S::NXIO => libc::ENXIO,
        S::ACCESS => libc::EACCES,
        S::EXIST => libc::EEXIST,
        S::XDEV => libc::EXDEV,
        S::NOTDIR => libc::ENOTDIR,
        S::ISDIR => libc::EISDIR,
        S::INVAL => libc::EINVAL,
        S::FBIG => libc::EFBIG,
        S::NOSPC => libc::ENOSPC,
        S::ROFS => libc::EROFS,
        S::MLINK => libc::EMLINK,
        S::NAMETOOLONG => libc::ENAMETOOLONG,
        S::NOTEMPTY => libc::ENOTEMPTY,
        S::DQUOT => libc::EDQUOT,
        S::STALE | S::FHEXPIRED => libc::ESTALE,
        S::NOTSUPP | S::BADTYPE => libc::EOPNOTSUPP,
        S::DELAY => libc::EAGAIN,
        S::BADNAME => libc::EINVAL,
        S::SYMLINK => libc::ELOOP,
        _ => return None,
    })
}

/// The name of an NFSv4-only status, for messages.
pub fn name(st: u32) -> String {
    let n = match st {
        S::BADHANDLE => "NFS4ERR_BADHANDLE",
        S::SERVERFAULT => "NFS4ERR_SERVERFAULT",
        S::GRACE => "NFS4ERR_GRACE (the server is recovering from a restart)",
        S::MINOR_VERS_MISMATCH => {
            "NFS4ERR_MINOR_VERS_MISMATCH: the server does not speak NFSv4.1; use ?version=3 \
             or the mount path"
        }
        S::WRONGSEC => {
            "NFS4ERR_WRONGSEC: the export wants another security flavour (Kerberos?); \
             nfsync speaks AUTH_SYS only"
        }
        S::BADOWNER => "NFS4ERR_BADOWNER (the server cannot map the owner)",
        S::BAD_STATEID | S::STALE_STATEID | S::EXPIRED | S::ADMIN_REVOKED => {
            "the server lost the file's open state (restarted?)"
        }
        S::MOVED => "NFS4ERR_MOVED: the file system moved to another server",
        S::WRONG_TYPE => "NFS4ERR_WRONG_TYPE",
        S::BAD_COOKIE => "NFS4ERR_BAD_COOKIE",
        _ => return format!("NFSv4 status {st}"),
    };
    n.to_string()
}

/// A status as an `io::Error`.
pub fn status_io(st: u32) -> io::Error {
    match errno(st) {
        Some(e) => io::Error::from_raw_os_error(e),
        None => io::Error::other(name(st)),
    }
}

/// A status as a per-entry error.
pub fn status(st: u32) -> dest::Error {
    dest::Error::Entry(status_io(st))
}

/// An error of our own making for one entry.
pub fn errno_err(e: i32) -> dest::Error {
    dest::Error::Entry(io::Error::from_raw_os_error(e))
}

/// A reply we could not make sense of, for one entry.
pub fn garbage(what: impl Into<String>) -> dest::Error {
    dest::Error::Entry(io::Error::new(io::ErrorKind::InvalidData, what.into()))
}

/// The refusal of the symlink at `comps` below the server's root.
pub(super) fn link_refused(comps: &[Vec<u8>]) -> dest::Error {
    let mut at = PathBuf::from("/");
    at.extend(comps.iter().map(|c| OsStr::from_bytes(c)));
    trust::server_link(at).into()
}

/// For a compound of PUTROOTFH and one LOOKUP per component of `comps` that failed
/// with NFS4ERR_SYMLINK (a LOOKUP in a symlink: LOOKUP never follows one), the
/// refusal naming that symlink: the last component found.
pub(super) fn symlink_on_the_way(r: &Reply, comps: &[Vec<u8>]) -> Option<dest::Error> {
    // results: SEQUENCE, PUTROOTFH, one LOOKUP per component found, the failed one.
    let found = r.results.len().saturating_sub(3);
    (r.status == S::SYMLINK && (1..=comps.len()).contains(&found))
        .then(|| link_refused(&comps[..found]))
}

/// Whether a GETATTR of TYPE (its first word) says symlink (NF4LNK).
pub(super) fn is_symlink_type(vals: &[u8]) -> bool {
    vals.get(..4) == Some(&[0, 0, 0, 5])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shared_statuses_are_errnos_and_the_rest_keep_their_names() {
        assert_eq!(status_io(S::NOSPC).raw_os_error(), Some(libc::ENOSPC));
        assert_eq!(status_io(S::DQUOT).raw_os_error(), Some(libc::EDQUOT));
        assert_eq!(status_io(S::ROFS).raw_os_error(), Some(libc::EROFS));
        assert_eq!(
            status_io(S::NAMETOOLONG).raw_os_error(),
            Some(libc::ENAMETOOLONG)
        );
        assert!(status_io(S::WRONGSEC).to_string().contains("AUTH_SYS"));
        assert!(status_io(10999).to_string().contains("10999"));
    }
}
