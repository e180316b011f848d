//! Which attributes creating calls carry, and what to do when the server does not keep
//! them: a server that refuses owners (root squashed: PERM, ACCESS, BADOWNER) gets the
//! call again without them, and owners are given up on ([`AttrPolicy`]), as are
//! symlink times nfs-ganesha does not store.
//!
//! [`AttrPolicy`]: crate::nfs::rpc::policy::AttrPolicy

use super::client::Answer;
use super::dest::{Nfs4Dest, Nfs4Dir};
use super::proto::{AttrsBuilder, Op, SetAttrArgs, StateId, status};
use crate::dest;
use crate::meta::Meta;

impl Nfs4Dest {
    pub(super) fn with_owners(&self, b: AttrsBuilder, m: &Meta) -> AttrsBuilder {
        let owners = self.attrs.owners();
        if !(owners.owner || owners.group) {
            return b;
        }
        b.owner(owners.owner.then_some(m.uid), owners.group.then_some(m.gid))
    }

    /// Whether owners were asked for (by `self.with_owners`).
    pub(super) fn asks_owners(&self) -> bool {
        let owners = self.attrs.owners();
        owners.owner || owners.group
    }

    /// Whether a failed call that asked for owners should be sent again without them
    /// (and owners be given up on, with one warning).
    pub(super) fn owners_refused_by(&self, asked: bool, st: u32) -> bool {
        if asked
            && matches!(
                st,
                status::PERM | status::ACCESS | status::BADOWNER | status::INVAL
            )
        {
            self.attrs.owners_not_kept();
            return true;
        }
        false
    }

    /// nfs-ganesha's VFS answers a symlink's SETATTR with OK but keeps its times.
    pub(super) fn check_symlink_time(&self, after: Option<Meta>, m: &Meta) {
        if after.is_some_and(|a| a.mtime != m.mtime) {
            self.attrs.symlink_time_not_kept();
        }
    }

    /// SETATTR of `b` on the current handle with the anonymous stateid.
    pub(super) fn setattr(b: AttrsBuilder) -> Op {
        Op::SetAttr(SetAttrArgs {
            stateid: StateId::ANONYMOUS,
            attrs: b.build(),
        })
    }

    /// Runs `build(with owners)`; sent again without owners when the server refuses them.
    pub(super) async fn with_owner_retry(
        &self,
        dir: &Nfs4Dir,
        build: impl Fn(&[u8], bool) -> Vec<Op>,
    ) -> dest::Result<Answer> {
        self.with_owner_retry_via(dir, build, false).await
    }

    /// [`Nfs4Dest::with_owner_retry`], through the [`Batcher`](super::batch::Batcher)
    /// when `batched`.
    pub(super) async fn with_owner_retry_via(
        &self,
        dir: &Nfs4Dir,
        build: impl Fn(&[u8], bool) -> Vec<Op>,
        batched: bool,
    ) -> dest::Result<Answer> {
        let asked = self.asks_owners();
        let a = self.in_dir_via(dir, |fh| build(fh, asked), batched).await?;
        if a.reply.status != status::OK && self.owners_refused_by(asked, a.reply.status) {
            let mut again = self.in_dir_via(dir, |fh| build(fh, false), batched).await?;
            again.ambiguous |= a.ambiguous;
            return Ok(again);
        }
        Ok(a)
    }
}
