//! Turning NFSv3 statuses into the seam's [`dest::Error`].
//!
//! The engine prints `path: error` and counts the file, so an NFS status becomes the
//! errno a local filesystem would have given (ENOSPC, EDQUOT, EROFS...), which reads
//! the same as on the mount path. Transport failures are the RPC toolkit's to classify
//! ([`crate::nfs::rpc::error`]).

use std::io;

use nfs3_types::nfs3::nfsstat3;

use crate::dest;

/// The errno matching an NFSv3 status (RFC 1813 defines most of them as errno values).
pub fn errno(stat: nfsstat3) -> i32 {
    use nfsstat3 as S;
    match stat {
        S::NFS3_OK => 0,
        S::NFS3ERR_PERM => libc::EPERM,
        S::NFS3ERR_NOENT => libc::ENOENT,
        S::NFS3ERR_IO => libc::EIO,
        S::NFS3ERR_NXIO => libc::ENXIO,
        S::NFS3ERR_ACCES => libc::EACCES,
        S::NFS3ERR_EXIST => libc::EEXIST,
        S::NFS3ERR_XDEV => libc::EXDEV,
        S::NFS3ERR_NODEV => libc::ENODEV,
        S::NFS3ERR_NOTDIR => libc::ENOTDIR,
        S::NFS3ERR_ISDIR => libc::EISDIR,
        S::NFS3ERR_INVAL => libc::EINVAL,
        S::NFS3ERR_FBIG => libc::EFBIG,
        S::NFS3ERR_NOSPC => libc::ENOSPC,
        S::NFS3ERR_ROFS => libc::EROFS,
        S::NFS3ERR_MLINK => libc::EMLINK,
        S::NFS3ERR_NAMETOOLONG => libc::ENAMETOOLONG,
        S::NFS3ERR_NOTEMPTY => libc::ENOTEMPTY,
        S::NFS3ERR_DQUOT => libc::EDQUOT,
        S::NFS3ERR_STALE => libc::ESTALE,
        S::NFS3ERR_REMOTE => libc::EREMOTE,
        S::NFS3ERR_NOTSUPP | S::NFS3ERR_BADTYPE => libc::EOPNOTSUPP,
        S::NFS3ERR_JUKEBOX => libc::EAGAIN,
        S::NFS3ERR_BADHANDLE
        | S::NFS3ERR_NOT_SYNC
        | S::NFS3ERR_BAD_COOKIE
        | S::NFS3ERR_TOOSMALL
        | S::NFS3ERR_SERVERFAULT => libc::EIO,
    }
}

/// An NFS status as a per-entry error.
pub fn status(stat: nfsstat3) -> dest::Error {
    dest::Error::Entry(status_io(stat))
}

/// An NFS status as an `io::Error`; statuses without a close errno keep their name.
pub fn status_io(stat: nfsstat3) -> io::Error {
    let e = errno(stat);
    if e == libc::EIO && stat != nfsstat3::NFS3ERR_IO {
        return io::Error::other(format!("server error {stat}"));
    }
    io::Error::from_raw_os_error(e)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quota_and_space_map_to_errnos() {
        assert_eq!(
            status_io(nfsstat3::NFS3ERR_NOSPC).raw_os_error(),
            Some(libc::ENOSPC)
        );
        assert_eq!(
            status_io(nfsstat3::NFS3ERR_DQUOT).raw_os_error(),
            Some(libc::EDQUOT)
        );
        assert_eq!(
            status_io(nfsstat3::NFS3ERR_ROFS).raw_os_error(),
            Some(libc::EROFS)
        );
        assert_eq!(
            status_io(nfsstat3::NFS3ERR_ACCES).raw_os_error(),
            Some(libc::EACCES)
        );
        assert_eq!(
            status_io(nfsstat3::NFS3ERR_NAMETOOLONG).raw_os_error(),
            Some(libc::ENAMETOOLONG)
        );
        assert!(
            status_io(nfsstat3::NFS3ERR_SERVERFAULT)
                .to_string()
                .contains("SERVERFAULT")
        );
    }
}
