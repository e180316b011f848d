//! READ with the anonymous stateid (no OPEN), for `--checksum`'s comparison, the old
//! copy a backup keeps, and a tree read as a source, where the same COMPOUND asks for
//! the file's attributes after the data: a small source file is one call.

use super::dest::{Nfs4Dest, nth, ok, put};
use super::error;
use super::proto::{Op, ReadArgs, StateId};
use super::reply::{Reply, Res};
use super::{attrs, client::Client};
use crate::dest;
use crate::meta::Meta;

/// READs `len` bytes at `off` (several calls if the server returns less).
pub async fn read_exact(client: &Client, fh: &[u8], off: u64, len: u32) -> dest::Result<Vec<u8>> {
    if len == 0 {
        return Ok(Vec::new());
    }
    Ok(read_all(client, None, fh, off, len, false).await?.0)
}

/// READs `len` bytes at `off`, several compounds if the server returns less, each with
/// a GETATTR after the READ when `attrs`; the data and the last reply.
async fn read_all(
    client: &Client,
    batcher: Option<&super::batch::Batcher>,
    fh: &[u8],
    off: u64,
    len: u32,
    attrs: bool,
) -> dest::Result<(Vec<u8>, Reply)> {
    let mut out = Vec::with_capacity(len as usize);
    loop {
        let r = read_once(
            client,
            batcher,
            fh,
            off + out.len() as u64,
            len - out.len() as u32,
            attrs,
        )
        .await?;
        let (data, eof) = data_of(&r, len as usize - out.len())?;
        out.extend_from_slice(data);
        if out.len() >= len as usize || data.is_empty() || eof {
            return Ok((out, r));
        }
    }
}

async fn read_once(
    client: &Client,
    batcher: Option<&super::batch::Batcher>,
    fh: &[u8],
    off: u64,
    count: u32,
    attrs: bool,
) -> dest::Result<Reply> {
    let mut ops = vec![
        put(fh),
        Op::Read(ReadArgs {
            stateid: StateId::ANONYMOUS,
            offset: off,
            count,
        }),
    ];
    if attrs {
        ops.push(Op::GetAttr(attrs::wanted()));
    }
    match batcher {
        Some(b) => ok(b.compound_returning(client, ops, count as usize).await?),
        None => ok(client.compound(ops).await?),
    }
}

fn data_of(r: &Reply, want: usize) -> dest::Result<(&[u8], bool)> {
    let Some(Res::Read { eof, data }) = nth(r, 25, 0) else {
        return Err(error::garbage("READ reply without data"));
    };
    if data.len() > want {
        return Err(error::garbage("READ returned more than asked"));
    }
    Ok((data, *eof))
}

impl Nfs4Dest {
    /// READs `len` bytes at `off` (several compounds if the server returns less),
    /// each with a GETATTR after the READ; the last one's attributes.
    pub(super) fn read_attrs(
        &self,
        fh: &[u8],
        off: u64,
        len: u32,
    ) -> dest::Result<(Vec<u8>, Option<Meta>)> {
        let (data, r) = self.rt.block_on(read_all(
            &self.client,
            self.read_batcher(),
            fh,
            off,
            len,
            true,
        ))?;
        Ok((data, self.attrs_in(&r, 0)?.meta))
    }
}
