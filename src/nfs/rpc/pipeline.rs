//! File data in flight, for both NFS versions: a file's chunks written with many
//! calls at once, and `--checksum`'s reads compared as they arrive.
//!
//! Source bytes are read on the worker thread; each chunk holds its share of a byte
//! budget shared by all files until its call is answered, which bounds memory
//! whatever the number of workers. The protocol part (one WRITE or READ) is the
//! caller's `send` / `read`.

use std::collections::VecDeque;
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::sync::Arc;

use tokio::runtime::Runtime;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinHandle;

use crate::dest::{self, CopyError, SourceFile, read_full};
use crate::source::Data;

/// Calls of one file in flight at once (the transport's window bounds the total).
const PER_FILE_INFLIGHT: usize = 16;
/// READs of one file in flight at once for `--checksum`.
const READS_INFLIGHT: usize = 8;

/// Bytes of memory a chunk of `len` data bytes holds while in flight: the data read
/// from the source, plus its encoded call (or, for `--checksum`, the local copy; for a
/// READ ahead of a copy, the reply it is taken from).
pub fn held(len: u32) -> u32 {
    len.saturating_mul(2)
}

fn join_error(e: impl std::error::Error + Send + Sync + 'static) -> CopyError {
    CopyError::Dest(io::Error::other(e).into())
}

/// Sends the `ranges` (offset, length) of the source as `chunk`-byte pieces,
/// `send(offset, bytes)` each, up to [`PER_FILE_INFLIGHT`] at once, each piece paced by
/// `--bwlimit` before it is read; returns their results in file order. Waits for
/// every call in flight before returning, also on failure, so that no write lands
/// after the caller goes on.
pub fn send_all<T, F, Fut>(
    rt: &Runtime,
    budget: &Arc<Semaphore>,
    src: &SourceFile<'_>,
    ranges: &[(u64, u64)],
    chunk: u64,
    send: F,
) -> Result<Vec<T>, CopyError>
where
    T: Send + 'static,
    F: Fn(u64, Vec<u8>) -> Fut,
    Fut: Future<Output = dest::Result<T>> + Send + 'static,
{
    let mut inflight: VecDeque<JoinHandle<dest::Result<T>>> = VecDeque::new();
    let mut out = Vec::new();
    let mut failed: Option<CopyError> = None;
    let mut pieces = ranges.iter().flat_map(|&(start, len)| {
        (0..len.div_ceil(chunk)).map(move |i| (start + i * chunk, chunk.min(len - i * chunk)))
    });
    let join = |h: JoinHandle<dest::Result<T>>, out: &mut Vec<T>| {
        out.push(
            rt.block_on(h)
                .map_err(join_error)?
                .map_err(CopyError::dest)?,
        );
        Ok::<(), CopyError>(())
    };
    while failed.is_none() {
        let Some((off, len)) = pieces.next() else {
            break;
        };
        let len = len as usize;
        if let Err(e) = src.throttle(len as u64) {
            failed = Some(e);
            break;
        }
        let permit = rt
            .block_on(budget.clone().acquire_many_owned(held(len as u32)))
            .map_err(join_error)?;
        let mut buf = vec![0u8; len];
        if let Err(e) = read_full(&src.data, &mut buf, off) {
            failed = Some(e);
            break;
        }
        let call = send(off, buf);
        inflight.push_back(rt.spawn(async move {
            let r = call.await;
            drop(permit);
            r
        }));
        if inflight.len() >= PER_FILE_INFLIGHT
            && let Some(h) = inflight.pop_front()
            && let Err(e) = join(h, &mut out)
        {
            failed = Some(e);
        }
    }
    for h in inflight {
        if let Err(e) = join(h, &mut out) {
            failed.get_or_insert(e);
        }
    }
    match failed {
        Some(e) => Err(e),
        None => Ok(out),
    }
}

/// Whether the `size` bytes `read(offset, len)` returns equal `file`'s, read in
/// `chunk`-byte pieces up to [`READS_INFLIGHT`] at once and compared in order; stops
/// at the first difference.
pub fn same_bytes<F, Fut>(
    rt: &Runtime,
    budget: &Arc<Semaphore>,
    file: &Data,
    size: u64,
    chunk: u64,
    read: F,
) -> dest::Result<bool>
where
    F: Fn(u64, u32) -> Fut,
    Fut: Future<Output = dest::Result<Vec<u8>>> + Send + 'static,
{
    let mut same = true;
    // Each piece holds room for its local copy too.
    reads_in_order(rt, budget, (size, chunk), held, read, |off, _, remote| {
        let mut local = vec![0u8; remote.len()];
        file.read_exact_at(&mut local, off)?;
        same = local == remote;
        Ok(same)
    })?;
    Ok(same)
}

/// Reads `size` bytes with `read(offset, len)` into `file` at the same offsets, in
/// `chunk`-byte pieces up to [`READS_INFLIGHT`] at once (a destination's own large
/// file read back); returns the bytes read, fewer when the file ended early (it
/// shrank). Pieces of zeros are not written: the file is as long as what was read,
/// with holes there.
pub fn read_into<F, Fut>(
    rt: &Runtime,
    budget: &Arc<Semaphore>,
    file: &File,
    size: u64,
    chunk: u64,
    read: F,
) -> dest::Result<u64>
where
    F: Fn(u64, u32) -> Fut,
    Fut: Future<Output = dest::Result<Vec<u8>>> + Send + 'static,
{
    let mut done = 0u64;
    reads_in_order(
        rt,
        budget,
        (size, chunk),
        |len| len,
        read,
        |off, len, data| {
            // Zeros are left as a hole of the local file, so `-S` finds them as the
            // mount path finds a source's holes.
            if data.iter().any(|&b| b != 0) {
                file.write_all_at(&data, off)?;
            }
            done += data.len() as u64;
            // A short piece: the file ended early, and what follows would read past it.
            Ok(data.len() == len as usize)
        },
    )?;
    file.set_len(done)?;
    Ok(done)
}

/// The READs of `size` bytes in `chunk`-byte pieces, up to [`READS_INFLIGHT`] at once,
/// each holding `hold(len)` of the budget until `each(offset, len, data)` has taken it,
/// in file order. `each` returning `false` stops the reading; the reads still in
/// flight are then given up, as on an error.
fn reads_in_order<F, Fut>(
    rt: &Runtime,
    budget: &Arc<Semaphore>,
    (size, chunk): (u64, u64),
    hold: fn(u32) -> u32,
    read: F,
    mut each: impl FnMut(u64, u32, Vec<u8>) -> dest::Result<bool>,
) -> dest::Result<()>
where
    F: Fn(u64, u32) -> Fut,
    Fut: Future<Output = dest::Result<Vec<u8>>> + Send + 'static,
{
    type Pending = (
        u64,
        u32,
        OwnedSemaphorePermit,
        JoinHandle<dest::Result<Vec<u8>>>,
    );
    let mut reads: VecDeque<Pending> = VecDeque::new();
    let mut next = 0u64;
    while next < size || !reads.is_empty() {
        while next < size && reads.len() < READS_INFLIGHT {
            let len = chunk.min(size - next) as u32;
            // Never wait for budget while holding some: that could deadlock with
            // other workers doing the same. With reads pending, take one first.
            let permit = match budget.clone().try_acquire_many_owned(hold(len)) {
                Ok(p) => p,
                Err(_) if !reads.is_empty() => break,
                Err(_) => rt
                    .block_on(budget.clone().acquire_many_owned(hold(len)))
                    .map_err(io::Error::other)?,
            };
            reads.push_back((next, len, permit, rt.spawn(read(next, len))));
            next += u64::from(len);
        }
        let Some((off, len, permit, h)) = reads.pop_front() else {
            break;
        };
        let go_on = rt
            .block_on(h)
            .map_err(io::Error::other)
            .map_err(dest::Error::from)
            .and_then(|r| r)
            .and_then(|data| each(off, len, data));
        drop(permit);
        if !matches!(go_on, Ok(true)) {
            reads.iter().for_each(|(.., h)| h.abort());
            return go_on.map(|_| ());
        }
    }
    Ok(())
}
