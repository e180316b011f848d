//! READ, for `--checksum`'s comparison, the old copy a backup keeps, and a tree read as
//! a source: NFSv3 needs no OPEN, and each reply carries the file's attributes after
//! it, so a small source file is one call.

use std::io;

use nfs3_types::nfs3::{self as v3, NFS_PROGRAM as P, nfs_fh3};

use super::client::{Nfs, meta, post_op};
use super::dest::ok;
use crate::dest;
use crate::meta::Meta;

/// READs `len` bytes at `off` (several calls if the server returns less).
pub async fn read_exact(nfs: &Nfs, fh: &nfs_fh3, off: u64, len: u32) -> dest::Result<Vec<u8>> {
    if len == 0 {
        return Ok(Vec::new());
    }
    Ok(read_with_attrs(nfs, fh, off, len).await?.0)
}

/// READs `len` bytes at `off` (several calls if the server returns less), with the
/// file's attributes the last reply carried.
pub async fn read_with_attrs(
    nfs: &Nfs,
    fh: &nfs_fh3,
    off: u64,
    len: u32,
) -> dest::Result<(Vec<u8>, Option<Meta>)> {
    let mut out = Vec::with_capacity(len as usize);
    let mut attrs = None;
    loop {
        let args = v3::READ3args {
            file: fh.clone(),
            offset: off + out.len() as u64,
            count: len - out.len() as u32,
        };
        let r = ok(nfs
            .call::<_, v3::READ3resok<'static>, v3::READ3resfail>(P::NFSPROC3_READ, &args)
            .await?)?;
        attrs = post_op(r.file_attributes).map(|a| meta(&a)).or(attrs);
        let want = len as usize - out.len();
        let data = r.data.0;
        if data.len() > want {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "READ returned more than asked",
            )
            .into());
        }
        out.extend_from_slice(&data);
        if out.len() >= len as usize || data.is_empty() || r.eof {
            return Ok((out, attrs));
        }
    }
}
