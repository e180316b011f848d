//! Directories listed ahead of the printing.
//!
//! The listing is printed in rsync's order, depth first, one directory after another;
//! listed one after another too, a tree on a network filesystem costs a round trip per
//! directory (and per entry's `lstat`) in turn. So the directories the printing will
//! come to are handed, as soon as their parent is sorted, to a few threads that list
//! them meanwhile; the printing takes each listing when it gets there, or lists it
//! itself when no thread has started on it yet. The threads take the newest request
//! first: the printing goes depth first, so what was asked last (the first child of
//! the directory just entered, asked last of its siblings) is what it needs next. A
//! thread that lists a directory of a recursive listing asks for its subdirectories
//! itself (those the filter lets through, as the printing will), so the listing runs
//! ahead of the printing by more than one level. At most [`AHEAD`] listings are asked
//! for or held at once, so memory stays bounded; past that, a directory is listed
//! when the printing gets to it.

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::{Arc, Condvar, Mutex};

use crate::meta::Kind;
use crate::options::filter::Filter;
use crate::source::{self, Listing, SrcEntry};

/// Directories asked for or listed and not yet taken, at most.
pub const AHEAD: usize = 4096;

/// Threads listing ahead: each waits on the filesystem most of the time. On a mount
/// with latency a listing is a round trip per entry (its `lstat`, one after another
/// in one directory), so the threads in flight set the rate; the rate kept rising
/// well past a few dozen on the latency rig (benches/README.md, "NFS as a source").
pub const THREADS: usize = 128;

/// The listings asked for below a listed directory, by name.
pub type Kids = Vec<(OsString, Arc<Slot>)>;

/// One directory's listing: asked for, being made, or made.
pub struct Slot {
    entry: SrcEntry,
    /// Its path in the listing (what the filter matches).
    rel: PathBuf,
    /// Whether everything below it is listed (`-r`, no `-R` names): then its lister
    /// asks for its subdirectories too.
    deep: bool,
    state: Mutex<State>,
    made: Condvar,
    kids: Mutex<Kids>,
}

enum State {
    /// Asked for, no thread on it yet (or never: over [`AHEAD`]).
    Waiting,
    /// A thread is listing it.
    Listing,
    /// Listed; the printing has not taken it yet.
    Made(Listing),
    /// Taken.
    Taken,
}

/// The requests and how many listings are out.
pub struct Ahead<'a> {
    queue: Mutex<Queue>,
    wake: Condvar,
    filter: &'a Filter,
}

struct Queue {
    /// Newest last: the threads take from the end.
    asked: Vec<Arc<Slot>>,
    /// Listings asked for and not yet taken.
    out: usize,
    closed: bool,
}

impl<'a> Ahead<'a> {
    /// Listing ahead for a listing that `filter` cuts.
    pub fn new(filter: &'a Filter) -> Ahead<'a> {
        Ahead {
            queue: Mutex::new(Queue {
                asked: Vec::new(),
                out: 0,
                closed: false,
            }),
            wake: Condvar::new(),
            filter,
        }
    }

    /// Asks for `entry`'s listing (`rel`: its path in the listing; `deep`: all below
    /// it is listed). Ask for siblings in reverse of the order they are taken in, so
    /// that the one needed first is taken up first.
    pub fn ask(&self, entry: SrcEntry, rel: PathBuf, deep: bool) -> Arc<Slot> {
        let slot = Arc::new(Slot {
            entry,
            rel,
            deep,
            state: Mutex::new(State::Waiting),
            made: Condvar::new(),
            kids: Mutex::new(Vec::new()),
        });
        let mut q = self.queue.lock().unwrap_or_else(|e| e.into_inner());
        if q.out < AHEAD && !q.closed {
            q.out += 1;
            q.asked.push(slot.clone());
            self.wake.notify_one();
        }
        slot
    }

    /// The listing of `slot`: the one made ahead, waited for while a thread makes it,
    /// or made here when none has started; with the listings its lister asked for
    /// below it.
    pub fn take(&self, slot: &Slot) -> (Listing, Kids) {
        let mut st = slot.state.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            match std::mem::replace(&mut *st, State::Taken) {
                State::Made(l) => {
                    self.taken();
                    let kids =
                        std::mem::take(&mut *slot.kids.lock().unwrap_or_else(|e| e.into_inner()));
                    return (l, kids);
                }
                State::Listing => {
                    *st = State::Listing;
                    st = slot.made.wait(st).unwrap_or_else(|e| e.into_inner());
                }
                State::Waiting => {
                    // Still in the queue (a thread that pops it finds it taken), or
                    // never queued; either way listed here, now.
                    drop(st);
                    let queued = {
                        let mut q = self.queue.lock().unwrap_or_else(|e| e.into_inner());
                        let at = q.asked.iter().position(|s| std::ptr::eq(&**s, slot));
                        at.map(|i| q.asked.remove(i)).is_some()
                    };
                    if queued {
                        self.taken();
                    }
                    return (source::list_entry(&slot.entry), Vec::new());
                }
                State::Taken => unreachable!("a listing is taken once"),
            }
        }
    }

    fn taken(&self) {
        let mut q = self.queue.lock().unwrap_or_else(|e| e.into_inner());
        q.out -= 1;
    }

    /// A thread's loop: list the newest request until [`Ahead::close`].
    pub fn work(&self) {
        loop {
            let slot = {
                let mut q = self.queue.lock().unwrap_or_else(|e| e.into_inner());
                loop {
                    if q.closed {
                        return;
                    }
                    if let Some(s) = q.asked.pop() {
                        break s;
                    }
                    q = self.wake.wait(q).unwrap_or_else(|e| e.into_inner());
                }
            };
            {
                let mut st = slot.state.lock().unwrap_or_else(|e| e.into_inner());
                if !matches!(*st, State::Waiting) {
                    // Taken and listed by the printing after this thread popped it.
                    drop(st);
                    self.taken();
                    continue;
                }
                *st = State::Listing;
            }
            let listing = source::list_entry(&slot.entry);
            if slot.deep
                && let Ok((entries, _)) = &listing
            {
                *slot.kids.lock().unwrap_or_else(|e| e.into_inner()) =
                    self.ask_below(&slot, entries);
            }
            *slot.state.lock().unwrap_or_else(|e| e.into_inner()) = State::Made(listing);
            slot.made.notify_all();
        }
    }

    /// Asks for the listings of the subdirectories in `entries` (of `slot`) that the
    /// printing will list: those the filter lets through, last first.
    fn ask_below(&self, slot: &Slot, entries: &[SrcEntry]) -> Kids {
        let mut dirs: Vec<&SrcEntry> = entries
            .iter()
            .filter(|e| e.meta.kind == Kind::Dir)
            .filter(|e| {
                self.filter.is_empty() || !self.filter.is_excluded(&slot.rel.join(&e.name), true)
            })
            .collect();
        dirs.sort_by(|a, b| b.name.as_encoded_bytes().cmp(a.name.as_encoded_bytes()));
        dirs.into_iter()
            .map(|e| {
                let kid = self.ask(e.clone(), slot.rel.join(&e.name), true);
                (e.name.clone(), kid)
            })
            .collect()
    }

    /// Ends the threads' loops once the printing is done.
    pub fn close(&self) {
        let mut q = self.queue.lock().unwrap_or_else(|e| e.into_inner());
        q.closed = true;
        q.asked.clear();
        self.wake.notify_all();
    }
}
