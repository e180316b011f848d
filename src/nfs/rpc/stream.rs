//! A file on the server read as it is consumed: the [`Data`] a copy reads an NFS
//! file through, for a source's files and for a destination's own (a `--copy-dest`
//! basis, the old copy `--inplace --backup` keeps).
//!
//! A small file is one READ with its attributes after the data, held in memory. A
//! larger one keeps a few READs in flight ahead of what the copy has taken, each
//! holding twice its bytes of the client's budget until taken (the reply as received
//! and the data taken out of it), so memory stays bounded
//! whatever the number of jobs, and nothing is written to local disk. Under
//! `--bwlimit` it reads one small piece ahead: the limit paces the reads, not only
//! the writes. Its attributes after the last byte are what the copy checks against
//! the listing, so a file that changed while it was read never looks complete.

use std::collections::VecDeque;
use std::io;
use std::sync::Arc;

use tokio::sync::OwnedSemaphorePermit;
use tokio::task::JoinHandle;

use super::ops::{FileOps, to_io};
use super::pipeline::held;
use crate::dest;
use crate::meta::Meta;
use crate::source::{Data, Stream};

/// READs of one file in flight ahead of the copy.
const AHEAD: usize = 8;

/// A READ in flight: (offset, length asked, its share of the budget, the call).
type Pending = (
    u64,
    u64,
    OwnedSemaphorePermit,
    JoinHandle<dest::Result<Vec<u8>>>,
);

/// How a file's attributes are found again when a READ carries none (NFSv3 servers
/// may omit them): a LOOKUP of its name.
pub type Refind = Box<dyn Fn() -> io::Result<Meta> + Send>;

/// The file `fh` of `ops` (`listed` its attributes as listed) read whole in one call
/// when it fits one READ, with its attributes after the data (`refind` when the
/// reply carries none); `None` when it is larger (see [`open`]).
pub fn small<T: FileOps>(
    ops: &T,
    fh: &T::Fh,
    listed: &Meta,
    refind: impl FnOnce() -> io::Result<Meta>,
) -> io::Result<Option<Data>> {
    if listed.size > ops.read_size().max(1) {
        return Ok(None);
    }
    let (bytes, after) = ops
        .read_with_attrs(fh, 0, listed.size as u32)
        .map_err(to_io)?;
    let after = match after {
        Some(a) => a,
        None => refind()?,
    };
    // A file that grew past the listed size says so in its attributes (the copy's
    // check fails), whatever the READ gave.
    Ok(Some(Data::from_bytes(bytes, after)))
}

/// Opens the file `fh` of `ops` (`listed` its attributes as listed) for reading as it
/// is consumed; see the module doc. Errors of the first READ (a stale handle) come
/// from here, before anything is written.
pub fn open<T: FileOps + 'static>(
    ops: Arc<T>,
    fh: T::Fh,
    listed: &Meta,
    paced: bool,
    refind: Refind,
) -> io::Result<Data> {
    let rsize = ops.read_size().max(1);
    let (chunk, window) = match paced {
        true => (rsize.min(crate::options::bwlimit::CHUNK), 1),
        false => (rsize, AHEAD),
    };
    let mut s = ReadStream {
        ops,
        fh,
        size: listed.size,
        chunk,
        window,
        next: 0,
        pending: VecDeque::new(),
        cur: None,
        end: None,
        refind,
    };
    s.advance(0)?;
    Ok(Data::from_stream(Box::new(s)))
}

struct ReadStream<T: FileOps> {
    ops: Arc<T>,
    fh: T::Fh,
    /// The size listed: nothing past it is asked for.
    size: u64,
    chunk: u64,
    window: usize,
    /// The next offset to ask for.
    next: u64,
    pending: VecDeque<Pending>,
    /// The piece being taken: its offset and bytes, and the budget it holds.
    cur: Option<(u64, Vec<u8>, OwnedSemaphorePermit)>,
    /// Where a short READ showed the file ends.
    end: Option<u64>,
    refind: Refind,
}

impl<T: FileOps> ReadStream<T> {
    /// Asks for pieces until [`Self::window`] are in flight. Waits for budget only
    /// with none in flight and no piece held, so jobs waiting on each other's budget
    /// cannot all wait.
    fn fill(&mut self) -> io::Result<()> {
        let budget = self.ops.budget().clone();
        while self.pending.len() < self.window && self.next < self.size && self.end.is_none() {
            let len = self.chunk.min(self.size - self.next);
            let n = len as u32;
            let hold = held(n);
            let permit = match budget.clone().try_acquire_many_owned(hold) {
                Ok(p) => p,
                Err(_) if !self.pending.is_empty() || self.cur.is_some() => break,
                Err(_) => self
                    .ops
                    .runtime()
                    .block_on(budget.clone().acquire_many_owned(hold))
                    .map_err(io::Error::other)?,
            };
            let call = self
                .ops
                .runtime()
                .spawn(self.ops.read(&self.fh, self.next, n));
            self.pending.push_back((self.next, len, permit, call));
            self.next += len;
        }
        Ok(())
    }

    /// Makes the piece holding `off` current: the next one in flight when reading in
    /// order, else the reading starts again at `off`.
    fn advance(&mut self, off: u64) -> io::Result<()> {
        self.cur = None;
        if !self
            .pending
            .front()
            .is_some_and(|&(at, len, ..)| at <= off && off < at + len)
        {
            self.pending.drain(..).for_each(|(.., h)| h.abort());
            self.next = off;
        }
        self.fill()?;
        let Some((at, len, permit, call)) = self.pending.pop_front() else {
            return Ok(());
        };
        let data = self
            .ops
            .runtime()
            .block_on(call)
            .map_err(io::Error::other)?
            .map_err(to_io)?;
        if (data.len() as u64) < len {
            // The file ended early (it shrank): what follows would read past it.
            self.end = Some(at + data.len() as u64);
            self.pending.drain(..).for_each(|(.., h)| h.abort());
        }
        self.cur = Some((at, data, permit));
        self.fill()
    }
}

impl<T: FileOps> Stream for ReadStream<T> {
    fn read_at(&mut self, buf: &mut [u8], off: u64) -> io::Result<usize> {
        for _ in 0..2 {
            if let Some((at, data, _)) = &self.cur
                && *at <= off
                && off < at + data.len() as u64
            {
                let from = (off - at) as usize;
                let n = buf.len().min(data.len() - from);
                buf[..n].copy_from_slice(&data[from..from + n]);
                return Ok(n);
            }
            if off >= self.size || self.end.is_some_and(|e| off >= e) {
                return Ok(0);
            }
            self.advance(off)?;
        }
        Ok(0)
    }

    fn now(&mut self) -> io::Result<Meta> {
        let (_, after) = self
            .ops
            .read_with_attrs(&self.fh, self.size, 0)
            .map_err(to_io)?;
        match after {
            Some(a) => Ok(a),
            None => (self.refind)(),
        }
    }
}

impl<T: FileOps> Drop for ReadStream<T> {
    fn drop(&mut self) {
        self.pending.drain(..).for_each(|(.., h)| h.abort());
    }
}
