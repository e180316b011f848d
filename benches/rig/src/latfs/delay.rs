//! Delay pool and per-operation counters for the latency mount.
//!
//! Every FUSE request is turned into a job stamped with `arrival + delay` and
//! handed to a fixed pool of worker threads. A worker sleeps until the job's
//! deadline, then runs it (the backing syscall plus the reply). Because the
//! delay is the same for every job, FIFO order is deadline order, so a worker
//! never sleeps past a job that is due earlier. This is what makes the mount
//! behave like a network file system: a request waiting out its delay does
//! not hold up any other request, and N concurrent callers see N requests in
//! flight, limited only by the pool size (`--threads`, like nfsd threads).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

/// Operation kinds counted at unmount, in `mountstats`-like order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Lookup,
    Getattr,
    Setattr,
    Readlink,
    Mknod,
    Mkdir,
    Unlink,
    Rmdir,
    Symlink,
    Rename,
    Link,
    Open,
    Create,
    Read,
    Write,
    Flush,
    Release,
    Fsync,
    Opendir,
    Readdir,
    Releasedir,
    Statfs,
    Xattr,
    Other,
}

impl Op {
    pub const ALL: [Op; 24] = [
        Op::Lookup,
        Op::Getattr,
        Op::Setattr,
        Op::Readlink,
        Op::Mknod,
        Op::Mkdir,
        Op::Unlink,
        Op::Rmdir,
        Op::Symlink,
        Op::Rename,
        Op::Link,
        Op::Open,
        Op::Create,
        Op::Read,
        Op::Write,
        Op::Flush,
        Op::Release,
        Op::Fsync,
        Op::Opendir,
        Op::Readdir,
        Op::Releasedir,
        Op::Statfs,
        Op::Xattr,
        Op::Other,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Op::Lookup => "LOOKUP",
            Op::Getattr => "GETATTR",
            Op::Setattr => "SETATTR",
            Op::Readlink => "READLINK",
            Op::Mknod => "MKNOD",
            Op::Mkdir => "MKDIR",
            Op::Unlink => "UNLINK",
            Op::Rmdir => "RMDIR",
            Op::Symlink => "SYMLINK",
            Op::Rename => "RENAME",
            Op::Link => "LINK",
            Op::Open => "OPEN",
            Op::Create => "CREATE",
            Op::Read => "READ",
            Op::Write => "WRITE",
            Op::Flush => "FLUSH",
            Op::Release => "RELEASE",
            Op::Fsync => "FSYNC",
            Op::Opendir => "OPENDIR",
            Op::Readdir => "READDIR",
            Op::Releasedir => "RELEASEDIR",
            Op::Statfs => "STATFS",
            Op::Xattr => "XATTR",
            Op::Other => "OTHER",
        }
    }
}

/// Per-operation request counters and bytes moved.
#[derive(Default)]
pub struct Stats {
    counts: [AtomicU64; Op::ALL.len()],
    pub bytes_read: AtomicU64,
    pub bytes_written: AtomicU64,
    /// Highest number of requests queued or running at once.
    pub max_in_flight: AtomicU64,
    in_flight: AtomicU64,
}

impl Stats {
    pub fn count(&self, op: Op) {
        self.counts[op as usize].fetch_add(1, Ordering::Relaxed);
    }

    pub fn get(&self, op: Op) -> u64 {
        self.counts[op as usize].load(Ordering::Relaxed)
    }

    pub fn total(&self) -> u64 {
        Op::ALL.iter().map(|&op| self.get(op)).sum()
    }

    /// Text report: one `OP count` line per non-zero op, then totals.
    /// The format is stable: `benches/validate-latency` parses it.
    pub fn report(&self, delay: Duration, elapsed: Duration) -> String {
        let mut out = String::new();
        out.push_str(&format!(
            "latency mount stats: delay {:.3} ms, mounted {:.1} s\n",
            delay.as_secs_f64() * 1e3,
            elapsed.as_secs_f64()
        ));
        for op in Op::ALL {
            let n = self.get(op);
            if n > 0 {
                out.push_str(&format!("{:<12}{:>12}\n", op.name(), n));
            }
        }
        out.push_str(&format!("{:<12}{:>12}\n", "TOTAL", self.total()));
        out.push_str(&format!(
            "bytes_read {}\nbytes_written {}\nmax_in_flight {}\n",
            self.bytes_read.load(Ordering::Relaxed),
            self.bytes_written.load(Ordering::Relaxed),
            self.max_in_flight.load(Ordering::Relaxed)
        ));
        out
    }
}

type Job = Box<dyn FnOnce() + Send + 'static>;

/// Fixed pool of workers that run each job no earlier than `delay` after it
/// was submitted, each first spending `cpu` of its own CPU time (a server whose
/// work per request competes with the client for the same cores).
pub struct DelayPool {
    tx: Mutex<Sender<(Instant, Job)>>,
    delay: Duration,
    stats: Arc<Stats>,
}

impl DelayPool {
    pub fn new(delay: Duration, cpu: Duration, threads: usize, stats: Arc<Stats>) -> DelayPool {
        let (tx, rx) = channel::<(Instant, Job)>();
        let rx = Arc::new(Mutex::new(rx));
        for i in 0..threads.max(1) {
            let rx = Arc::clone(&rx);
            let stats = Arc::clone(&stats);
            thread::Builder::new()
                .name(format!("lat-{i}"))
                .stack_size(256 * 1024)
                .spawn(move || worker(&rx, &stats, cpu))
                .expect("spawn delay worker");
        }
        DelayPool {
            tx: Mutex::new(tx),
            delay,
            stats,
        }
    }

    /// Count `op` and run `job` after the configured delay on a worker.
    pub fn submit(&self, op: Op, job: impl FnOnce() + Send + 'static) {
        self.stats.count(op);
        let n = self.stats.in_flight.fetch_add(1, Ordering::Relaxed) + 1;
        self.stats.max_in_flight.fetch_max(n, Ordering::Relaxed);
        let deadline = Instant::now() + self.delay;
        // The receiver lives as long as the workers, which never exit.
        let _ = self.tx.lock().unwrap().send((deadline, Box::new(job)));
    }
}

fn worker(rx: &Mutex<Receiver<(Instant, Job)>>, stats: &Stats, cpu: Duration) {
    // Default timer slack is 50 µs, a sixth of the `lan` delay; ask for 1 µs
    // so sleeps end close to the deadline.
    // SAFETY: prctl(PR_SET_TIMERSLACK) only affects the calling thread.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1u64, 0, 0, 0);
    }
    loop {
        let next = rx.lock().unwrap().recv();
        let Ok((deadline, job)) = next else { return };
        let now = Instant::now();
        if deadline > now {
            thread::sleep(deadline - now);
        }
        if !cpu.is_zero() {
            burn(cpu);
        }
        job();
        stats.in_flight.fetch_sub(1, Ordering::Relaxed);
    }
}

/// This thread's CPU time.
fn thread_cpu() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec for the call to fill.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// Spins until this thread has used `cpu` more CPU time: measured on the
/// thread's own clock, not the wall clock, so that a spin the scheduler
/// preempts still costs the whole amount of CPU, as real work would.
fn burn(cpu: Duration) {
    let end = thread_cpu() + cpu;
    while thread_cpu() < end {
        std::hint::spin_loop();
    }
}
