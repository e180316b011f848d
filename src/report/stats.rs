//! `--stats` and the closing `sent … bytes` lines in rsync's layout, so a script that
//! reads rsync's totals reads nfsync's.
//!
//! The counts are rsync's: entries in the transfer by type, entries created (an
//! itemized line with `+++++++++`), entries deleted, regular files transferred, and the
//! sizes (a symlink counts as the length of its target, as in rsync). The lines about
//! rsync's protocol say what nfsync really did instead: nfsync has no file list to send
//! (`File list size: 0`, and its walk runs alongside the copy, so no time is spent
//! building or sending one), no delta transfer (every byte written is literal data,
//! none matched), and the only bytes it sends are the file contents it writes to the
//! destination (`Total bytes sent`); it receives none (`Total bytes received: 0`: the
//! server's replies and `-c`'s read-back are not counted).

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use super::Summary;
use crate::meta::Kind;
use crate::report::units::HumanLevel;

/// Counts by rsync's five types: regular files, directories, symlinks, devices,
/// specials (fifos and sockets).
#[derive(Default, Debug)]
pub struct KindCounts([AtomicU64; 5]);

const LABELS: [&str; 5] = ["reg", "dir", "link", "dev", "special"];

impl KindCounts {
    fn slot(kind: Kind) -> usize {
        match kind {
            Kind::File => 0,
            Kind::Dir => 1,
            Kind::Symlink => 2,
            Kind::CharDev | Kind::BlockDev => 3,
            Kind::Fifo | Kind::Socket => 4,
        }
    }

    /// Counts one entry of `kind`.
    pub fn add(&self, kind: Kind) {
        self.0[Self::slot(kind)].fetch_add(1, Relaxed);
    }

    /// The counts now.
    pub fn get(&self) -> [u64; 5] {
        std::array::from_fn(|i| self.0[i].load(Relaxed))
    }
}

/// What the itemized lines add up to (counted whether or not they are printed).
#[derive(Default, Debug)]
pub struct Tally {
    /// Entries created (rsync's `ITEM_IS_NEW`).
    pub created: KindCounts,
    /// Entries deleted.
    pub deleted: KindCounts,
    /// Regular files whose content was written.
    pub transferred: AtomicU64,
    /// Their sizes.
    pub transferred_size: AtomicU64,
}

/// The numbers `--stats` prints, gathered at the end of the run.
pub struct RsyncStats {
    /// Entries in the transfer by type (directories: `dirs`).
    pub files: [u64; 5],
    pub created: [u64; 5],
    pub deleted: [u64; 5],
    pub transferred: u64,
    /// Regular files' sizes plus symlinks' target lengths.
    pub total_size: u64,
    pub transferred_size: u64,
    /// Content bytes written to the destination.
    pub sent: u64,
    pub elapsed_s: f64,
    pub dry_run: bool,
    /// rsync's `-h` level.
    pub human: HumanLevel,
}

impl RsyncStats {
    /// From the run's summary, the per-type counts of what was found, and the tally of
    /// the itemized lines.
    pub fn new(
        s: &Summary,
        found: [u64; 5],
        link_bytes: u64,
        t: &Tally,
        human: HumanLevel,
    ) -> Self {
        RsyncStats {
            files: found,
            created: t.created.get(),
            deleted: t.deleted.get(),
            transferred: t.transferred.load(Relaxed),
            total_size: s.bytes_scanned + link_bytes,
            transferred_size: t.transferred_size.load(Relaxed),
            // A dry run writes nothing (its summary counts what it would write).
            sent: if s.dry_run { 0 } else { s.bytes_copied },
            elapsed_s: s.elapsed_s,
            dry_run: s.dry_run,
            human,
        }
    }

    fn num(&self, n: u64) -> String {
        self.human.num(n)
    }

    fn comma(&self, n: u64) -> String {
        self.human.separators_only().num(n)
    }

    fn counts(&self, prefix: &str, c: &[u64; 5]) -> String {
        let total: u64 = c.iter().sum();
        let mut s = format!("{prefix}: {}", self.comma(total));
        let mut pre = " (";
        for (label, n) in LABELS.iter().zip(c) {
            if *n > 0 {
                let _ = write!(s, "{pre}{label}: {}", self.comma(*n));
                pre = ", ";
            }
        }
        if total > 0 {
            s.push(')');
        }
        s
    }

    /// The `--stats` block (rsync's `output_summary` at stats level 2), without the
    /// blank line rsync prints before it.
    pub fn block(&self) -> Vec<String> {
        vec![
            self.counts("Number of files", &self.files),
            self.counts("Number of created files", &self.created),
            self.counts("Number of deleted files", &self.deleted),
            format!(
                "Number of regular files transferred: {}",
                self.comma(self.transferred)
            ),
            format!("Total file size: {} bytes", self.num(self.total_size)),
            format!(
                "Total transferred file size: {} bytes",
                self.num(self.transferred_size)
            ),
            format!("Literal data: {} bytes", self.num(self.sent)),
            "Matched data: 0 bytes".to_string(),
            "File list size: 0".to_string(),
            "File list generation time: 0.000 seconds".to_string(),
            "File list transfer time: 0.000 seconds".to_string(),
            format!("Total bytes sent: {}", self.num(self.sent)),
            "Total bytes received: 0".to_string(),
        ]
    }

    /// rsync's two closing lines (`-v` or `--stats`), without the blank line before.
    pub fn totals(&self) -> [String; 2] {
        let rate = self.sent as f64 / self.elapsed_s.max(1e-3);
        // rsync divides by the bytes that crossed its pipe; nfsync's are the content
        // written (at least one byte, so a run that wrote nothing reads as no speedup).
        let speedup = self.total_size as f64 / self.sent.max(1) as f64;
        [
            format!(
                "sent {} bytes  received 0 bytes  {} bytes/sec",
                self.num(self.sent),
                self.human.dnum(rate, 2)
            ),
            format!(
                "total size is {}  speedup is {}{}",
                self.num(self.total_size),
                self.human.separators_only().dnum(speedup, 2),
                if self.dry_run { " (DRY RUN)" } else { "" }
            ),
        ]
    }

    /// The line rsync's log file ends with when neither `-v` nor `--stats` printed the
    /// totals.
    pub fn log_exit(&self) -> String {
        format!(
            "sent {} bytes  received 0 bytes  total size {}",
            HumanLevel::Digits.num(self.sent),
            HumanLevel::Digits.num(self.total_size)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_list_only_the_types_present() {
        let s = RsyncStats {
            files: [1101, 1, 0, 0, 0],
            created: [0; 5],
            deleted: [2, 1, 0, 0, 0],
            transferred: 0,
            total_size: 0,
            transferred_size: 0,
            sent: 0,
            elapsed_s: 1.0,
            dry_run: false,
            human: HumanLevel::Separated,
        };
        let b = s.block();
        assert_eq!(b[0], "Number of files: 1,102 (reg: 1,101, dir: 1)");
        assert_eq!(b[1], "Number of created files: 0");
        assert_eq!(b[2], "Number of deleted files: 3 (reg: 2, dir: 1)");
    }
}
