//! Updates over NFSv4.1 other than write-beside-and-rename: `--temp-dir`'s rename
//! between directories (PUTFH, SAVEFH, PUTFH, RENAME), and `--inplace` / `--append`:
//! the existing file's data rewritten from an
//! offset with the anonymous stateid (no OPEN: nothing is created, and a share
//! reservation would only keep other clients out), COMMIT, then one SETATTR with the
//! size when it differs, the mode, owners that differ, and the mtime last.

use super::dest::{Nfs4Dest, Nfs4Dir, ok, put};

use super::error::errno_err;
use super::proto::{AttrsBuilder, Op, SetAttrArgs, StateId};
use crate::dest::{CopyError, SourceFile, sparse};
use crate::meta::Kind;

impl Nfs4Dest {
    pub(super) fn write_into_impl(
        &self,
        dir: &Nfs4Dir,
        n: &[u8],
        src: &SourceFile<'_>,
        from: u64,
    ) -> Result<u64, CopyError> {
        let m = src.meta;
        let (fh, mut have) = self
            .rt
            .block_on(self.lookup(dir, n))
            .map_err(CopyError::dest)?
            .ok_or_else(|| CopyError::Dest(errno_err(libc::ENOENT)))?;
        if have.kind != Kind::File {
            return Err(CopyError::Dest(errno_err(libc::EISDIR)));
        }
        if have.mode & 0o200 == 0 {
            // Writable for the update (as rsync makes it); the final SETATTR then
            // sees a mode that differs and gives the file its own.
            have.mode |= 0o200;
            self.rt
                .block_on(self.client.compound(vec![
                    put(&fh),
                    Op::SetAttr(SetAttrArgs {
                        stateid: StateId::ANONYMOUS,
                        attrs: AttrsBuilder::default().mode(have.mode).build(),
                    }),
                ]))
                .and_then(ok)
                .map_err(CopyError::dest)?;
        }
        let ranges = sparse::whole(from, m.size);
        self.send_data(&fh, StateId::ANONYMOUS, src, &ranges)?;
        src.verify_unchanged()?;
        let mut b = AttrsBuilder::default();
        if have.size != m.size {
            b = b.size(m.size);
        }
        if have.mode & 0o7777 != m.mode || m.mode & 0o6000 != 0 {
            b = b.mode(m.mode);
        }
        let owners = self.attrs.owners();
        if (owners.owner && have.uid != m.uid) || (owners.group && have.gid != m.gid) {
            b = self.with_owners(b, m);
        }
        let b = b.mtime(m.mtime.sec, m.mtime.nsec);
        self.rt
            .block_on(self.client.compound(vec![
                put(&fh),
                Op::SetAttr(SetAttrArgs {
                    stateid: StateId::ANONYMOUS,
                    attrs: b.build(),
                }),
            ]))
            .and_then(ok)
            .map_err(CopyError::dest)?;
        Ok(ranges.iter().map(|r| r.1).sum())
    }
}
