//! Times the filesystem behind the destination cannot hold.
//!
//! The protocol may carry a time that the filesystem behind it cannot keep:
//! `utimensat` and NFSv4.1 take signed 64-bit seconds, but ext4 keeps 1901-12-13 to
//! 2446-05-10, XFS without `bigtime` and ext4 with 128-byte inodes 1901 to 2038, and
//! the kernel (or the server's) moves a time past either end to that end. Nothing
//! tells a client where the ends are, so they are learned from the destination
//! itself: the first time outside signed 32-bit seconds (which every such filesystem
//! holds) on either side is given to an empty scratch file in DEST and read back. A time that
//! comes back moved towards the middle is where that filesystem clamps, and every
//! time past it is stored as it.
//!
//! The engine compares the source's time *as stored*: a file from 1600 whose copy
//! holds 1901-12-13 20:45:52 is up to date when the sizes match (a re-run copies
//! nothing), and each entry whose time is set to something else is warned about once.
//! A run that writes nothing (`--dry-run`) or sets no times (no `-t`) does not probe.

use std::ffi::OsStr;
use std::path::Path;
use std::sync::Mutex;

use crate::dest::{AttrSet, Destination, RootState, SourceFile};
use crate::meta::{Kind, Meta, Time};

use super::Engine;

/// Signed 32-bit seconds: every filesystem nfsync meets stores these exactly, so a
/// time inside needs no probe.
const SAFE: (Time, Time) = (
    Time {
        sec: i32::MIN as i64,
        nsec: 0,
    },
    Time {
        sec: i32::MAX as i64,
        nsec: 999_999_999,
    },
);

/// What the probes have taught about each end of the destination's time range.
///
/// One lock for both ends, held while a probe runs: one probe per end serves every
/// worker, and two probes never overlap. Each puts DEST's mtime back as it found it,
/// so a probe that began while another's scratch file stood in DEST would put back
/// the other's time.
#[derive(Default)]
pub(super) struct Bounds {
    ends: Mutex<[End; 2]>,
}

/// One end of the range.
#[derive(Default)]
struct End {
    /// Where the filesystem clamps, once a probe showed it.
    bound: Option<Time>,
    /// The farthest time a probe saw kept (to the second).
    kept: Option<Time>,
    /// A probe could not be made: times at this end are taken as stored.
    failed: bool,
}

impl End {
    /// What `t` is stored as, when already known. `late` says which end this is.
    fn known(&self, t: Time, late: bool) -> Option<Time> {
        let beyond = |a: Time, b: Time| if late { a > b } else { a < b };
        if let Some(b) = self.bound {
            return Some(if beyond(t, b) { b } else { t });
        }
        if self.failed || self.kept.is_some_and(|k| !beyond(t, k)) {
            return Some(t);
        }
        None
    }

    /// Takes in a probe's answer: `t` was given and `stored` read back. A time moved
    /// by whole seconds towards the middle is the bound; one cut to the filesystem's
    /// granularity is kept (that is `--modify-window`'s business).
    fn learn(&mut self, t: Time, stored: Option<Time>, late: bool) {
        match stored {
            None => self.failed = true,
            Some(s) if (late && s.sec < t.sec) || (!late && s.sec > t.sec) => self.bound = Some(s),
            Some(_) => self.kept = Some(t),
        }
    }
}

impl Bounds {
    /// What `t` is stored as, asking `probe` (give a scratch entry `t`, read back
    /// what it holds) when nothing learned so far answers.
    fn stored(&self, t: Time, probe: impl FnOnce(Time) -> Option<Time>) -> Time {
        let late = if t < SAFE.0 {
            false
        } else if t > SAFE.1 {
            true
        } else {
            return t;
        };
        let mut ends = self.ends.lock().unwrap_or_else(|e| e.into_inner());
        let end = &mut ends[usize::from(late)];
        if let Some(s) = end.known(t, late) {
            return s;
        }
        end.learn(t, probe(t), late);
        end.known(t, late).unwrap_or(t)
    }
}

impl<D: Destination> Engine<'_, D> {
    /// The time the destination keeps when asked to store `t`: what the protocol can
    /// carry ([`Destination::storable_time`]), then what the filesystem behind it keeps.
    pub(super) fn stored_time(&self, t: Time) -> Time {
        let t = self.dest.storable_time(t);
        if self.cfg.dry_run || !self.cfg.times {
            return t;
        }
        self.time_bounds.stored(t, |t| self.probe_time(t))
    }

    /// Writes an empty scratch file with the time `t` in DEST (or in DEST's parent,
    /// where the run makes DEST or a single file) and reads back what it holds; `None`
    /// when that cannot be done. The file has a temporary's name, so runs that overlap
    /// leave it alone (even with `--delete`) and a run killed meanwhile leaves nothing
    /// a later run would not remove; DEST gets its mtime back, so a run that finds
    /// everything up to date changes nothing.
    fn probe_time(&self, t: Time) -> Option<Time> {
        let (dir, before) = match self.dest.root_state().ok()? {
            RootState::Exists(m) if m.kind == Kind::Dir => (self.dest.root_dir().ok()?, Some(m)),
            _ => (self.dest.root_parent().ok()?.0, None),
        };
        let name = crate::options::temp::name(OsStr::new("time-probe"));
        let listed = Meta::of(Kind::File, 0);
        let empty = crate::source::Data::from_bytes(Vec::new(), listed);
        let meta = Meta {
            mode: 0o600,
            mtime: t,
            ..listed
        };
        let src = SourceFile {
            data: empty,
            meta: &meta,
            listed: &listed,
            path: Path::new("(time probe)"),
            sparse: false,
            limit: None,
            stop: None,
            keep_partial: false,
            moving: None,
        };
        let written = self.dest.write_file(&dir, &name, &src);
        let got = written.is_ok().then(|| self.dest.stat(&dir, &name));
        if written.is_ok() {
            let _ = self.dest.remove(&dir, &name, Kind::File);
        }
        if let Some(m) = before {
            // Through the parent where there is one: NFS sets a directory's mode and
            // owners with its mtime, and only the mtime is to go back.
            let mtime = AttrSet::MTIME;
            let _ = match self.dest.root_parent() {
                Ok((parent, n)) => self.dest.set_attrs(&parent, &n, &m, mtime),
                Err(_) => self.dest.set_dir_attrs(&dir, &m, mtime),
            };
        }
        Some(got?.ok()??.mtime)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(sec: i64, nsec: u32) -> Time {
        Time { sec, nsec }
    }

    /// ext4 with 256-byte inodes, as the kernel clamps (nanoseconds dropped at an end).
    fn ext4(x: Time) -> Option<Time> {
        const LO: i64 = i32::MIN as i64;
        const HI: i64 = (1 << 34) - 1 + i32::MIN as i64;
        Some(match x.sec {
            s if s < LO => t(LO, 0),
            s if s > HI => t(HI, 0),
            _ => x,
        })
    }

    #[test]
    fn an_end_is_learned_once_and_clamps_every_time_past_it() {
        let b = Bounds::default();
        let probes = std::cell::Cell::new(0);
        let probe = |x| {
            probes.set(probes.get() + 1);
            ext4(x)
        };
        let y1600 = t(-11_676_096_000, 5);
        let y2500 = t(16_725_225_600, 0);
        assert_eq!(b.stored(y1600, probe), t(i32::MIN as i64, 0));
        assert_eq!(
            b.stored(t(-30_000_000_000, 1), probe),
            t(i32::MIN as i64, 0)
        );
        assert_eq!(b.stored(t(-2_200_000_000, 7), probe), t(i32::MIN as i64, 0));
        assert_eq!(b.stored(y2500, probe), t(15_032_385_535, 0));
        assert_eq!(b.stored(t(9_000_000_000, 3), probe), t(9_000_000_000, 3));
        assert_eq!(probes.get(), 2, "one probe per end");
        assert_eq!(b.stored(t(5, 5), |_| unreachable!()), t(5, 5));
    }

    #[test]
    fn an_end_kept_exactly_is_probed_again_only_past_what_was_seen() {
        let b = Bounds::default();
        let probes = std::cell::Cell::new(0);
        let probe = |x| {
            probes.set(probes.get() + 1);
            ext4(x)
        };
        assert_eq!(b.stored(t(9_000_000_000, 0), probe), t(9_000_000_000, 0));
        assert_eq!(b.stored(t(8_000_000_000, 0), probe), t(8_000_000_000, 0));
        assert_eq!(probes.get(), 1);
        assert_eq!(b.stored(t(16_725_225_600, 0), probe), t(15_032_385_535, 0));
        assert_eq!(probes.get(), 2);
    }

    /// Probes for the two ends, asked by two workers at once, run one after the other.
    #[test]
    fn probes_for_the_two_ends_never_overlap() {
        use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
        let b = Bounds::default();
        let (inside, most) = (AtomicUsize::new(0), AtomicUsize::new(0));
        let probe = |x| {
            most.fetch_max(inside.fetch_add(1, SeqCst) + 1, SeqCst);
            std::thread::sleep(std::time::Duration::from_millis(100));
            inside.fetch_sub(1, SeqCst);
            ext4(x)
        };
        std::thread::scope(|s| {
            s.spawn(|| b.stored(t(-11_676_096_000, 0), probe));
            s.spawn(|| b.stored(t(16_725_225_600, 0), probe));
        });
        assert_eq!(most.load(SeqCst), 1, "two probes ran at once");
    }

    #[test]
    fn a_failed_probe_or_a_granularity_cut_is_no_bound() {
        let b = Bounds::default();
        assert_eq!(
            b.stored(t(-3_000_000_000, 9), |_| None),
            t(-3_000_000_000, 9)
        );
        assert_eq!(
            b.stored(t(-4_000_000_000, 9), |_| unreachable!()),
            t(-4_000_000_000, 9)
        );
        let b = Bounds::default();
        let cut = |x: Time| Some(t(x.sec, 0));
        assert_eq!(b.stored(t(9_000_000_000, 9), cut), t(9_000_000_000, 9));
    }
}
