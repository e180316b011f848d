//! The work queue shared by all workers.
//!
//! Two kinds of work: directory scans (list a source directory, compare it with the
//! destination, enqueue its children) and entry jobs (copy one file, make one link).
//! Entry jobs are queued per directory and handed out round-robin across directories:
//! Linux holds a directory's lock for the whole of each create in it (on an NFS mount,
//! across the CREATE round trip), so files taken from many directories at once are
//! created in parallel where files from one directory would queue behind each other.
//! Scans are taken only when few entry jobs are queued, so the walk stays just ahead
//! of the copy and memory stays bounded; they are taken depth-first (a stack) for the
//! same reason.
//!
//! The number of jobs running at once is capped by `limit`, which the `--jobs auto`
//! controller moves while the run goes on.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex};

/// A queue of scans and per-directory entry jobs, with a moving concurrency cap.
pub struct Sched<S, E> {
    state: Mutex<State<S, E>>,
    /// Idle workers wait here. Wake-ups are one at a time and cascade (a worker that
    /// takes a job wakes one more if work and room remain): waking every worker for
    /// every job costs more CPU than the copying on a 2-core client.
    cv: Condvar,
    /// The controller thread waits here for the end of the run.
    done_cv: Condvar,
    /// Raised to end the run early (an interrupt, a fatal error): workers finish the
    /// jobs they hold and take no more.
    stop: AtomicBool,
}

struct State<S, E> {
    scans: Vec<S>,
    open: VecDeque<VecDeque<E>>,
    queued_entries: usize,
    running: usize,
    limit: usize,
    done: bool,
}

/// A unit of work handed to a worker.
pub enum Work<S, E> {
    /// List a directory.
    Scan(S),
    /// Carry out one entry.
    Entry(E),
}

impl<S, E> Sched<S, E> {
    /// An empty queue allowing `limit` jobs at once.
    pub fn new(limit: usize) -> Self {
        Sched {
            state: Mutex::new(State {
                scans: Vec::new(),
                open: VecDeque::new(),
                queued_entries: 0,
                running: 0,
                limit: limit.max(1),
                done: false,
            }),
            cv: Condvar::new(),
            done_cv: Condvar::new(),
            stop: AtomicBool::new(false),
        }
    }

    /// Adds the work found in one directory: its subdirectory scans and its entries.
    pub fn push(&self, mut scans: Vec<S>, entries: VecDeque<E>) {
        if scans.is_empty() && entries.is_empty() {
            return;
        }
        let mut st = self.state.lock().unwrap();
        // Reversed so the stack pops them in name order.
        scans.reverse();
        st.scans.append(&mut scans);
        if !entries.is_empty() {
            st.queued_entries += entries.len();
            st.open.push_back(entries);
        }
        drop(st);
        self.cv.notify_one();
    }

    /// Changes the concurrency cap.
    pub fn set_limit(&self, limit: usize) {
        self.state.lock().unwrap().limit = limit.max(1);
        self.cv.notify_all();
    }

    /// Blocks until there is work for this worker, or returns `None` when the run is
    /// over (everything done, or stopped).
    pub fn next(&self) -> Option<Work<S, E>> {
        let mut st = self.state.lock().unwrap();
        loop {
            if st.done || self.stopped() {
                return None;
            }
            if st.running < st.limit {
                if let Some(w) = st.take() {
                    st.running += 1;
                    let more = st.running < st.limit && st.has_work();
                    drop(st);
                    if more {
                        self.cv.notify_one();
                    }
                    return Some(w);
                }
                if st.running == 0 {
                    st.done = true;
                    self.cv.notify_all();
                    self.done_cv.notify_all();
                    return None;
                }
            }
            // Every change a waiting worker cares about notifies (`stop`, `set_limit`,
            // `push`, the end of the run); the timeout is only a backstop. It is long
            // because workers above a lowered `--jobs auto` cap
            // wait here for the rest of the run: 256 of them polling every 100 ms cost
            // the working threads 2,560 lock round trips a second.
            st = self
                .cv
                .wait_timeout(st, std::time::Duration::from_secs(2))
                .unwrap()
                .0;
        }
    }

    /// Marks one job finished (after it pushed whatever it found).
    pub fn finish(&self) {
        // The finishing worker asks for its next job itself, so only the end of the
        // run needs a wake-up here.
        let mut st = self.state.lock().unwrap();
        st.running -= 1;
        let idle = st.running == 0;
        if idle && !st.has_work() {
            st.done = true;
        }
        drop(st);
        if idle {
            self.cv.notify_all();
            self.done_cv.notify_all();
        }
    }

    /// Waits up to `timeout` for the run to be over: everything done, or stopped and
    /// no job still running. Returns whether it is over.
    pub fn wait_quiescent(&self, timeout: std::time::Duration) -> bool {
        let over = |st: &State<S, E>| st.done || (self.stopped() && st.running == 0);
        let st = self.state.lock().unwrap();
        if over(&st) {
            return true;
        }
        let (st, _) = self.done_cv.wait_timeout(st, timeout).unwrap();
        over(&st)
    }

    /// Ends the run early: workers finish the jobs they hold and take no more.
    pub fn stop(&self) {
        self.stop.store(true, Ordering::Relaxed);
        self.wake_all();
    }

    /// Whether [`Sched::stop`] was called.
    pub fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    /// Wakes every waiting worker (when stopped, or when the run is over).
    pub fn wake_all(&self) {
        // Taking the lock orders this after any worker's check of `stop` under it, so
        // a worker that saw `stop` unset is already waiting and gets the notification.
        drop(self.state.lock().unwrap());
        self.cv.notify_all();
        self.done_cv.notify_all();
    }
}

impl<S, E> State<S, E> {
    fn has_work(&self) -> bool {
        self.queued_entries > 0 || !self.scans.is_empty()
    }

    fn take(&mut self) -> Option<Work<S, E>> {
        // Keep enough entries queued to feed every worker from several directories;
        // list more only when short of that.
        let low_water = 4 * self.limit + 64;
        if !self.scans.is_empty() && (self.queued_entries < low_water || self.open.is_empty()) {
            return self.scans.pop().map(Work::Scan);
        }
        let mut q = self.open.pop_front()?;
        let e = q.pop_front();
        if !q.is_empty() {
            self.open.push_back(q);
        }
        self.queued_entries -= 1;
        e.map(Work::Entry)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_are_interleaved_across_directories() {
        let s: Sched<(), (char, u32)> = Sched::new(1000);
        s.push(vec![], (0..3).map(|i| ('a', i)).collect());
        s.push(vec![], (0..3).map(|i| ('b', i)).collect());
        let mut order = vec![];
        while let Some(Work::Entry(e)) = s.next() {
            order.push(e.0);
            if order.len() == 6 {
                break;
            }
        }
        assert_eq!(order, vec!['a', 'b', 'a', 'b', 'a', 'b']);
    }

    #[test]
    fn ends_when_nothing_is_queued_or_running() {
        let s: Sched<u32, u32> = Sched::new(2);
        s.push(vec![1], VecDeque::new());
        assert!(matches!(s.next(), Some(Work::Scan(1))));
        s.finish();
        assert!(s.next().is_none());
    }

    #[test]
    fn limit_caps_running_jobs() {
        let s: Sched<u32, u32> = Sched::new(1);
        s.push(vec![], (0..2).collect());
        assert!(s.next().is_some());
        // A second worker must wait; stop so it returns instead of blocking.
        s.stop();
        assert!(s.next().is_none());
    }
}
