//! Which attributes CREATE and SETATTR carry, and what to do when the server does not
//! keep them.
//!
//! Everything nfsync creates ends with one SETATTR: the mtime, last, plus whatever the
//! creating call's returned attributes show is still missing. A root-squashed export
//! either refuses a chown (knfsd: NFS3ERR_PERM) or answers OK and keeps the squashed
//! owner (nfs-ganesha); either way owners are given up on ([`AttrPolicy`]), as are
//! symlink times nfs-ganesha does not store.
//!
//! [`AttrPolicy`]: crate::nfs::rpc::policy::AttrPolicy

use nfs3_types::nfs3::{self as v3, fattr3, nfs_fh3, nfsstat3, sattr3, set_mtime};

use super::client::{Answer, nfs_time};
use super::dest::NfsDest;
use crate::dest;
use crate::meta::Meta;

impl NfsDest {
    /// Adds the owners we keep to `s` (those `have` does not already show).
    pub(super) fn set_owners(&self, s: &mut sattr3, m: &Meta, have: Option<&fattr3>) {
        let owners = self.attrs.owners();
        if owners.owner && have.is_none_or(|a| a.uid != m.uid) {
            s.uid = v3::Nfs3Option::Some(m.uid);
        }
        if owners.group && have.is_none_or(|a| a.gid != m.gid) {
            s.gid = v3::Nfs3Option::Some(m.gid);
        }
    }

    /// Attributes CREATE/MKDIR/SYMLINK/MKNOD should set: mode and the owners we keep.
    pub(super) fn create_attrs(&self, m: &Meta, mode: Option<u32>) -> sattr3 {
        let mut s = sattr3 {
            mode: mode.map_or(v3::Nfs3Option::None, v3::Nfs3Option::Some),
            ..Default::default()
        };
        self.set_owners(&mut s, m, None);
        s
    }

    /// The SETATTR that finishes an object: mtime, plus whatever `have` (the server's
    /// attributes after creation) shows is still missing.
    pub(super) fn finish_attrs(&self, m: &Meta, have: Option<&fattr3>, mode: bool) -> sattr3 {
        let mut s = sattr3 {
            mtime: set_mtime::SET_TO_CLIENT_TIME(nfs_time(m.mtime)),
            ..Default::default()
        };
        if mode && have.is_none_or(|a| a.mode & 0o7777 != m.mode || m.mode & 0o6000 != 0) {
            s.mode = v3::Nfs3Option::Some(m.mode);
        }
        self.set_owners(&mut s, m, have);
        s
    }

    /// Whether a failed creating call with these attributes should be retried without
    /// owners (and owners be given up on).
    pub(super) fn owners_refused_by(&self, s: &sattr3, stat: nfsstat3) -> bool {
        let asked = s.uid.is_some() || s.gid.is_some();
        if asked && matches!(stat, nfsstat3::NFS3ERR_PERM | nfsstat3::NFS3ERR_ACCES) {
            self.attrs.owners_not_kept();
            return true;
        }
        false
    }

    /// SETATTR; when it asked for owners and the server refuses (PERM/ACCES), the same
    /// without them; when the server answers OK but kept other owners, noted. Returns
    /// the attributes after the call, when the server sent them.
    pub(super) async fn apply(
        &self,
        fh: &nfs_fh3,
        mut s: sattr3,
    ) -> dest::Result<Answer<Option<fattr3>>> {
        let a = self.nfs.setattr_wcc(fh, s.clone()).await?;
        let a = match a.res {
            Err(stat) if self.owners_refused_by(&s, stat) => {
                s.uid = v3::Nfs3Option::None;
                s.gid = v3::Nfs3Option::None;
                self.nfs.setattr_wcc(fh, s.clone()).await?
            }
            _ => a,
        };
        if let Ok(Some(after)) = &a.res {
            let uid_lost = matches!(s.uid, v3::Nfs3Option::Some(u) if u != after.uid);
            let gid_lost = matches!(s.gid, v3::Nfs3Option::Some(g) if g != after.gid);
            if uid_lost || gid_lost {
                self.attrs.owners_not_kept();
            }
        }
        Ok(a)
    }

    /// nfs-ganesha's VFS answers a symlink's SETATTR with OK but keeps its times ("Setting
    /// time on symlinks is illegal"): say so once, since every run will find those
    /// mtimes different again.
    pub(super) fn check_symlink_time(&self, after: Option<&fattr3>, m: &Meta) {
        if after.is_some_and(|a| a.mtime != nfs_time(m.mtime)) {
            self.attrs.symlink_time_not_kept();
        }
    }
}
