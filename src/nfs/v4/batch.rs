//! Several callers' operations in one COMPOUND, when the slots are all busy anyway.
//!
//! Each small file is one compound of its own (PUTFH, OPEN, GETFH, WRITE, SETATTR,
//! CLOSE written; PUTFH, READ, GETATTR read as a source). When every session slot is
//! in use, files wait for a slot; instead of sending them one by one when slots free,
//! whoever gets a slot takes every waiting file that fits (the session's operation,
//! request-size and reply-size limits) into one compound. Nothing waits on purpose: a
//! lone file goes out alone at once, so this only changes what happens under load,
//! where it saves the server one call's overhead per file batched (and a small slot
//! table stops being the limit).
//!
//! A compound stops at its first failing operation. The callers before it get their
//! results; the failing one gets the failure; those after it were not run, and send
//! their operations again on their own.

use std::sync::Mutex;

use nfs3_types::xdr_codec::Pack;
use tokio::sync::{Semaphore, oneshot};

use super::client::{Answer, Client};
use super::proto::{Op, status};
use super::reply::Reply;
use crate::dest;

/// One caller's operations, waiting for a slot.
struct Pending {
    ops: Vec<Op>,
    size: usize,
    /// What its reply may take: the session bounds replies as it bounds requests.
    reply: usize,
    done: oneshot::Sender<Outcome>,
}

/// What a caller is told.
enum Outcome {
    Answer(dest::Result<Answer>),
    /// Not run (an earlier caller's operation failed): its operations back, to send
    /// again alone.
    NotRun(Vec<Op>),
}

/// The queue of callers waiting, and the gate that lets one sender per slot through.
pub struct Batcher {
    queue: Mutex<Vec<Pending>>,
    gate: Semaphore,
    max_ops: usize,
    max_bytes: usize,
    max_reply: usize,
}

/// Reply bytes allowed for each operation besides the data it returns: a status, an
/// operation number and at most a GETATTR's attributes (owner strings included) or a
/// handle.
const REPLY_PER_OP: usize = 512;

impl Batcher {
    /// For a session of `slots` slots taking `max_ops` operations (SEQUENCE included)
    /// and `max_bytes` bytes per request.
    pub fn new(slots: usize, max_ops: u32, max_bytes: u32, max_reply: u32) -> Batcher {
        Batcher {
            queue: Mutex::new(Vec::new()),
            gate: Semaphore::new(slots.max(1)),
            max_ops: (max_ops as usize).saturating_sub(1).max(1),
            // Room for the RPC header, the credentials and SEQUENCE.
            max_bytes: (max_bytes as usize).saturating_sub(1024).max(1),
            max_reply: (max_reply as usize).saturating_sub(1024).max(1),
        }
    }

    /// Sends `ops` in a compound, possibly together with other callers'.
    pub async fn compound(&self, client: &Client, ops: Vec<Op>) -> dest::Result<Answer> {
        self.compound_returning(client, ops, 0).await
    }

    /// [`Batcher::compound`] of operations that return up to `data` bytes (READs).
    pub async fn compound_returning(
        &self,
        client: &Client,
        ops: Vec<Op>,
        data: usize,
    ) -> dest::Result<Answer> {
        let size: usize = ops.iter().map(Pack::packed_size).sum();
        let reply = data + REPLY_PER_OP * ops.len();
        if ops.len() > self.max_ops || size > self.max_bytes || reply > self.max_reply {
            return client.compound(ops).await;
        }
        let (tx, rx) = oneshot::channel();
        self.queue.lock().expect("batch queue").push(Pending {
            ops,
            size,
            reply,
            done: tx,
        });
        let permit = self.gate.acquire().await.expect("never closed");
        let batch = self.take();
        if !batch.is_empty() {
            self.send(client, batch).await;
        }
        drop(permit);
        match rx.await {
            Ok(Outcome::Answer(a)) => a,
            Ok(Outcome::NotRun(ops)) => client.compound(ops).await,
            Err(_) => unreachable!("every batched caller is answered"),
        }
    }

    /// The waiting callers that fit in one compound, oldest first.
    fn take(&self) -> Vec<Pending> {
        let mut q = self.queue.lock().expect("batch queue");
        let (mut ops, mut bytes, mut reply, mut n) = (0, 0, 0, 0);
        for p in q.iter() {
            if n > 0
                && (ops + p.ops.len() > self.max_ops
                    || bytes + p.size > self.max_bytes
                    || reply + p.reply > self.max_reply)
            {
                break;
            }
            ops += p.ops.len();
            bytes += p.size;
            reply += p.reply;
            n += 1;
        }
        q.drain(..n).collect()
    }

    async fn send(&self, client: &Client, batch: Vec<Pending>) {
        let counts: Vec<usize> = batch.iter().map(|p| p.ops.len()).collect();
        let mut all = Vec::with_capacity(counts.iter().sum());
        let mut dones = Vec::with_capacity(batch.len());
        for p in batch {
            all.extend(p.ops);
            dones.push(p.done);
        }
        let outcomes: Vec<Option<dest::Result<Answer>>> = match client.compound_of(&all).await {
            // The transport or session failed for all: the first caller reports it,
            // the others try on their own (and meet the same fate or not).
            Err(e) => std::iter::once(Some(Err(e)))
                .chain(counts.iter().skip(1).map(|_| None))
                .collect(),
            Ok(a) => split(a, &counts).into_iter().map(|r| r.map(Ok)).collect(),
        };
        let mut all = all.into_iter();
        for ((d, out), &n) in dones.into_iter().zip(outcomes).zip(&counts) {
            let mine: Vec<Op> = all.by_ref().take(n).collect();
            let _ = d.send(match out {
                Some(a) => Outcome::Answer(a),
                None => Outcome::NotRun(mine),
            });
        }
    }
}

/// One reply per caller: `counts[i]` operations each, in order, after SEQUENCE;
/// `None` for a caller the server did not get to.
fn split(a: Answer, counts: &[usize]) -> Vec<Option<Answer>> {
    let mut results = a.reply.results.into_iter();
    let seq = results.next();
    let mut out = Vec::with_capacity(counts.len());
    let mut failed = false;
    for &n in counts {
        if failed {
            out.push(None);
            continue;
        }
        let mine: Vec<_> = seq
            .iter()
            .cloned()
            .chain(results.by_ref().take(n))
            .collect();
        let ran = mine.len() - 1;
        let st = mine.last().map_or(status::OK, |r| r.1);
        if ran == 0 {
            // Nothing of ours ran: the compound stopped before us.
            out.push(None);
            failed = true;
            continue;
        }
        if st != status::OK || ran < n {
            failed = true;
        }
        out.push(Some(Answer {
            reply: Reply {
                status: st,
                results: mine,
            },
            ambiguous: a.ambiguous,
        }));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nfs::v4::reply::Res;

    fn answer(results: Vec<(u32, u32)>) -> Answer {
        let status = results.last().map_or(0, |r| r.1);
        let mut all = vec![(
            53,
            0,
            Res::Sequence {
                slot: 0,
                highest_slot: 0,
                target_highest_slot: 0,
                flags: 0,
            },
        )];
        all.extend(results.into_iter().map(|(o, s)| (o, s, Res::Done)));
        Answer {
            reply: Reply {
                status,
                results: all,
            },
            ambiguous: false,
        }
    }

    fn statuses(o: &[Option<Answer>]) -> Vec<Option<(u32, usize)>> {
        o.iter()
            .map(|o| o.as_ref().map(|a| (a.reply.status, a.reply.results.len())))
            .collect()
    }

    /// Queues callers of `ops` operations, `size` request bytes and `reply` reply
    /// bytes each; what one `take` hands out, by the callers' reply sizes.
    fn taken(b: &Batcher, callers: &[(usize, usize, usize)]) -> Vec<usize> {
        let mut q = b.queue.lock().unwrap();
        for &(ops, size, reply) in callers {
            let (done, _) = oneshot::channel();
            let ops = (0..ops).map(|_| Op::GetFh).collect();
            q.push(Pending {
                ops,
                size,
                reply,
                done,
            });
        }
        drop(q);
        b.take().iter().map(|p| p.reply).collect()
    }

    #[test]
    fn a_compound_keeps_to_the_sessions_request_reply_and_operation_limits() {
        // Replies of up to 10,000 bytes (1,024 kept for the headers): two READs of
        // 4,000 fit, a third does not; it goes in the next compound.
        let b = Batcher::new(4, 64, 1 << 20, 11_024);
        assert_eq!(taken(&b, &[(3, 100, 4000); 3]), vec![4000, 4000]);
        assert_eq!(b.take().len(), 1);
        // One caller's reply larger than the limit still goes, alone.
        assert_eq!(taken(&b, &[(3, 100, 20_000), (3, 100, 10)]), vec![20_000]);
        assert_eq!(b.take().len(), 1);
        // Requests of up to 2,000 bytes after the headers.
        let b = Batcher::new(4, 64, 3_024, 1 << 20);
        assert_eq!(taken(&b, &[(3, 900, 0); 3]), vec![0, 0]);
        assert_eq!(b.take().len(), 1);
        // Nine operations besides SEQUENCE: three callers of three.
        let b = Batcher::new(4, 10, 1 << 20, 1 << 20);
        assert_eq!(taken(&b, &[(3, 10, 0); 4]).len(), 3);
        assert_eq!(b.take().len(), 1);
    }

    #[test]
    fn each_caller_gets_its_own_results_and_those_after_a_failure_run_again() {
        // Three callers of two ops each; the second one's second op fails with EXIST.
        let a = answer(vec![(22, 0), (18, 0), (22, 0), (18, status::EXIST)]);
        let out = split(a, &[2, 2, 2]);
        assert_eq!(
            statuses(&out),
            vec![Some((0, 3)), Some((status::EXIST, 3)), None]
        );
        // All went through.
        let a = answer(vec![(22, 0), (18, 0), (22, 0), (18, 0)]);
        assert_eq!(
            statuses(&split(a, &[2, 2])),
            vec![Some((0, 3)), Some((0, 3))]
        );
        // The first caller's first op failed: the second never ran.
        let a = answer(vec![(22, status::STALE)]);
        assert_eq!(
            statuses(&split(a, &[2, 2])),
            vec![Some((status::STALE, 2)), None]
        );
    }
}
