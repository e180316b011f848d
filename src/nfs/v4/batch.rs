//! Several callers' operations in one COMPOUND, when the slots are all busy anyway.
//!
//! Each small file is one compound of its own (PUTFH, OPEN, GETFH, WRITE, SETATTR,
//! CLOSE). When every session slot is in use, files wait for a slot; instead of
//! sending them one by one when slots free, whoever gets a slot takes every waiting
//! file that fits (the session's operation and request-size limits) into one
//! compound. Nothing waits on purpose: a lone file goes out alone at once, so this
//! only changes what happens under load, where it saves the server one call's
//! overhead per file batched (and a small slot table stops being the limit).
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
}

impl Batcher {
    /// For a session of `slots` slots taking `max_ops` operations (SEQUENCE included)
    /// and `max_bytes` bytes per request.
    pub fn new(slots: usize, max_ops: u32, max_bytes: u32) -> Batcher {
        Batcher {
            queue: Mutex::new(Vec::new()),
            gate: Semaphore::new(slots.max(1)),
            max_ops: (max_ops as usize).saturating_sub(1).max(1),
            // Room for the RPC header, the credentials and SEQUENCE.
            max_bytes: (max_bytes as usize).saturating_sub(1024).max(1),
        }
    }

    /// Sends `ops` in a compound, possibly together with other callers'.
    pub async fn compound(&self, client: &Client, ops: Vec<Op>) -> dest::Result<Answer> {
        let size: usize = ops.iter().map(Pack::packed_size).sum();
        if ops.len() > self.max_ops || size > self.max_bytes {
            return client.compound(ops).await;
        }
        let (tx, rx) = oneshot::channel();
        self.queue.lock().expect("batch queue").push(Pending {
            ops,
            size,
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
        let (mut ops, mut bytes, mut n) = (0, 0, 0);
        for p in q.iter() {
            if n > 0 && (ops + p.ops.len() > self.max_ops || bytes + p.size > self.max_bytes) {
                break;
            }
            ops += p.ops.len();
            bytes += p.size;
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
