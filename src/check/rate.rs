//! The small-file rate: new files written with as many in flight as a run would keep.

use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use super::probe::{in_memory, write};
use super::{Failed, failed, scratch_name};
use crate::dest::{Destination, Removal};
use crate::meta::{Kind, Time};
use crate::tune::{Jobs, SLOW_START_GAIN};

/// Bytes in each file: a small file's cost is its round trips, not its bytes.
pub const SIZE: usize = 4096;

/// Directories the files are spread over, as a tree's are (on a mount, creates in
/// one directory wait for each other; README "How it goes fast" has the single huge
/// directory case).
const DIRS: usize = 16;

/// Each concurrency is measured for this long at most...
const STEP_TIME: Duration = Duration::from_secs(1);
/// ...or until this many files per job are written.
const FILES_PER_JOB: usize = 8;

/// Doublings tried at most under `--jobs auto`, so the check stays short.
const STEPS: usize = 4;

/// The best rate measured and the jobs that gave it.
pub struct Best {
    pub per_sec: f64,
    pub jobs: usize,
}

/// Writes small files in `dir` with `--jobs N`, or under `--jobs auto` with the
/// number a run starts with and doublings while they pay as much as the run's slow
/// start asks; returns the best. The files and their directory are removed.
pub(super) fn small_files<D: Destination>(
    dest: &D,
    dir: &D::Dir,
    jobs: Jobs,
) -> Result<Best, Failed> {
    let top = scratch_name("check-files");
    let meta = in_memory(&[], 0o700, Time { sec: 0, nsec: 0 })?.1;
    let dir_meta = crate::meta::Meta {
        kind: Kind::Dir,
        ..meta
    };
    let (scratch, _) = dest
        .mkdir(dir, &top, &dir_meta)
        .map_err(|e| failed("making the check's directory", &e))?;
    let r = measure(dest, &scratch, jobs, &dir_meta);
    let removed = dest.remove_tree(dir, &top, &Everything);
    let best = r?;
    removed.map_err(|e| failed("removing the check's files", &e))?;
    Ok(best)
}

fn measure<D: Destination>(
    dest: &D,
    scratch: &D::Dir,
    jobs: Jobs,
    dir_meta: &crate::meta::Meta,
) -> Result<Best, Failed> {
    let mut dirs = Vec::with_capacity(DIRS);
    for i in 0..DIRS {
        let name = format!("d{i}");
        let (d, _) = dest
            .mkdir(scratch, name.as_ref(), dir_meta)
            .map_err(|e| failed("making the check's directories", &e))?;
        dirs.push(d);
    }
    let data = vec![b'x'; SIZE];
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    let src = in_memory(&data, 0o644, Time { sec: now, nsec: 0 })?;
    let counts: Vec<usize> = match jobs {
        Jobs::Fixed(n) => vec![n],
        Jobs::Auto => {
            let b = dest.auto_bounds();
            std::iter::successors(Some(b.start.max(1)), |j| Some(j * 2))
                .take_while(|&j| j <= b.max)
                .take(STEPS)
                .collect()
        }
    };
    let mut best: Option<Best> = None;
    for (step, &n) in counts.iter().enumerate() {
        let rate = step_rate(dest, &dirs, n, step, (&src.0, &src.1))?;
        if let Some(b) = &best
            && rate < b.per_sec * (1.0 + SLOW_START_GAIN)
        {
            if rate > b.per_sec {
                best = Some(Best {
                    per_sec: rate,
                    jobs: n,
                });
            }
            break;
        }
        best = Some(Best {
            per_sec: rate,
            jobs: n,
        });
    }
    Ok(best.expect("at least one concurrency is measured"))
}

/// Files per second with `jobs` threads each writing new files until the step's
/// time or file count is reached.
fn step_rate<D: Destination>(
    dest: &D,
    dirs: &[D::Dir],
    jobs: usize,
    step: usize,
    src: (&std::fs::File, &crate::meta::Meta),
) -> Result<f64, Failed> {
    let limit = (jobs * FILES_PER_JOB).max(200);
    let next = AtomicUsize::new(0);
    let done = AtomicUsize::new(0);
    let first_error: Mutex<Option<Failed>> = Mutex::new(None);
    let start = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..jobs {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= limit || start.elapsed() > STEP_TIME {
                        break;
                    }
                    let name = format!("s{step}-{i}");
                    match write(dest, &dirs[i % dirs.len()], name.as_ref(), src) {
                        Ok(_) => {
                            done.fetch_add(1, Ordering::Relaxed);
                        }
                        Err(e) => {
                            first_error.lock().unwrap().get_or_insert(e);
                            next.store(limit, Ordering::Relaxed);
                            break;
                        }
                    }
                }
            });
        }
    });
    if let Some(e) = first_error.into_inner().unwrap() {
        return Err(e);
    }
    let secs = start.elapsed().as_secs_f64().max(1e-6);
    Ok(done.load(Ordering::Relaxed) as f64 / secs)
}

/// Takes the check's whole scratch tree away.
struct Everything;

impl Removal for Everything {
    fn may_remove(&self, _: &Path, _: Kind) -> bool {
        true
    }
    fn removed(&self, _: &Path, _: Kind) {}
}
