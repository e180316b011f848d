//! The units of a `--mpi` run (see [`crate::shard::claim`]) are handed out by rank 0:
//! a thread there keeps the [`Ledger`] and answers every other rank's requests; rank
//! 0's own workers use the ledger directly.
//!
//! A request is one message to rank 0: the tag the answer should carry, then the
//! units asked for (one directory's at a time); the answer is one byte per unit,
//! 1 if it is the asker's, and one more, 1 once every unit is taken. Each waiting
//! worker has its own answer tag, so the workers of one rank ask at once without
//! taking each other's answers. A rank that is done says so, and whether it walked
//! the whole tree (one byte); the thread ends when every other rank is done.
//!
//! Nobody spins while waiting: Open MPI's blocking calls poll at full speed, which
//! on a machine with fewer cores than ranks takes the CPU the copy needs. Waits here
//! are non-blocking probes with short sleeps in between (see [`poll`]).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex};
use std::thread::sleep;
use std::time::Duration;

use mpi::Tag;
use mpi::point_to_point::{MatchedReceiveVec, Message, Status};
use mpi::topology::SimpleCommunicator;
use mpi::traits::{Communicator, Destination, Source};

use crate::shard::claim::{Claim, Ledger};

/// A request for units.
const CLAIM: Tag = 1;
/// A rank has no more requests.
const DONE: Tag = 2;
/// The first answer tag; MPI guarantees tags up to 32,767.
const FIRST_ANSWER: Tag = 16;
const LAST_ANSWER: Tag = 32_767;

/// The longest sleep between two probes: the most a waiting answer is late by.
const MAX_NAP: Duration = Duration::from_micros(500);

/// Probes with `probe` until it gives something, sleeping between tries (from a few
/// microseconds up to [`MAX_NAP`]).
pub(super) fn poll<T>(mut probe: impl FnMut() -> Option<T>) -> T {
    let mut nap = Duration::from_micros(5);
    loop {
        if let Some(t) = probe() {
            return t;
        }
        sleep(nap);
        nap = (nap * 2).min(MAX_NAP);
    }
}

/// Rank 0's side: answers requests until each of the `others` ranks is done.
pub(super) fn serve(ledger: &Ledger, others: usize) {
    let world = SimpleCommunicator::world();
    let mut done = 0;
    while done < others {
        let (msg, status) = poll(|| {
            world
                .any_process()
                .immediate_matched_probe_with_tag(CLAIM)
                .or_else(|| world.any_process().immediate_matched_probe_with_tag(DONE))
        });
        if status.tag() == DONE {
            let (walked, _): (Vec<u8>, Status) = (msg, status).matched_receive_vec();
            if walked == [1] {
                ledger.walked();
            }
            done += 1;
            continue;
        }
        let (ask, status): (Vec<u64>, Status) = (msg, status).matched_receive_vec();
        let Some((&tag, units)) = ask.split_first() else {
            continue;
        };
        let mut got: Vec<u8> = ledger.claim(units).into_iter().map(u8::from).collect();
        got.push(u8::from(ledger.all_taken()));
        world
            .process_at_rank(status.source_rank())
            .send_with_tag(&got[..], tag as Tag);
    }
}

/// Tells rank 0 this rank will ask for nothing more, and whether it `walked` the
/// whole tree.
pub(super) fn done(walked: bool) {
    let world = SimpleCommunicator::world();
    world
        .process_at_rank(0)
        .send_with_tag(&[u8::from(walked)][..], DONE);
}

/// Another rank's side: asks rank 0.
#[derive(Default)]
pub(super) struct Remote {
    tags: Mutex<Tags>,
    freed: Condvar,
    /// Rank 0 said every unit is taken.
    all_taken: AtomicBool,
}

#[derive(Default)]
struct Tags {
    free: Vec<Tag>,
    /// Answer tags handed out so far (the next new one is `FIRST_ANSWER + made`).
    made: Tag,
}

impl Remote {
    fn take_tag(&self) -> Tag {
        let mut t = self.tags.lock().unwrap();
        loop {
            if let Some(tag) = t.free.pop() {
                return tag;
            }
            if FIRST_ANSWER + t.made <= LAST_ANSWER {
                t.made += 1;
                return FIRST_ANSWER + t.made - 1;
            }
            t = self.freed.wait(t).unwrap();
        }
    }

    fn give_tag(&self, tag: Tag) {
        self.tags.lock().unwrap().free.push(tag);
        self.freed.notify_one();
    }
}

impl Claim for Remote {
    fn claim(&self, units: &[u64]) -> Vec<bool> {
        let tag = self.take_tag();
        let world = SimpleCommunicator::world();
        let root = world.process_at_rank(0);
        let mut ask = Vec::with_capacity(units.len() + 1);
        ask.push(tag as u64);
        ask.extend_from_slice(units);
        root.send_with_tag(&ask[..], CLAIM);
        let answer: (Message, Status) = poll(|| root.immediate_matched_probe_with_tag(tag));
        let (mut got, _): (Vec<u8>, Status) = answer.matched_receive_vec();
        self.give_tag(tag);
        if got.len() > units.len() && got.pop() == Some(1) {
            self.all_taken.store(true, Ordering::Relaxed);
        }
        got.into_iter().map(|b| b == 1).collect()
    }

    fn all_taken(&self) -> bool {
        self.all_taken.load(Ordering::Relaxed)
    }
}
