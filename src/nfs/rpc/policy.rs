//! What a client is told by the run, and what it tells the run back.
//!
//! A client gets the owners to keep ([`OwnerPolicy`]) and a sink for what it notices
//! about the server ([`Notices`]), not the whole configuration and output: the
//! command line decides what is printed and how (`-q`, the progress bar), and a test
//! can collect the notices. xcp's drivers report through a `StatusUpdater` the same
//! way.
//!
//! Two server behaviours are worth one notice per run rather than an error per file,
//! and both versions meet them: an export that squashes root refuses owners or keeps
//! its own (then owners are no longer asked for, so content, modes and mtimes still
//! arrive), and nfs-ganesha's VFS answers a symlink's SETATTR with OK but keeps the
//! server's time. [`AttrPolicy`] keeps that state.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::dest::OwnerPolicy;

/// Something a client noticed about the server, for the user.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Notice<'a> {
    /// The server refuses owners or keeps its own: files get the server's owner.
    OwnersNotKept {
        /// The destination, as the URL names it.
        dest: &'a str,
    },
    /// The server does not store symlinks' modification times.
    SymlinkTimesNotKept {
        /// The destination, as the URL names it.
        dest: &'a str,
    },
    /// The EFS client key cannot be kept where it belongs: one made for this run is
    /// used.
    EfsKeyNotKept {
        /// Why (the place and the error).
        why: &'a str,
    },
    /// The calls the run sent, at its end (`NFSYNC_RPC_STATS=1`).
    Calls {
        /// `NAME=N` per procedure.
        counts: &'a str,
    },
}

impl Notice<'_> {
    /// Whether it warns of data that is not copied as asked (the others are
    /// diagnostics asked for).
    pub fn is_warning(&self) -> bool {
        !matches!(self, Notice::Calls { .. })
    }
}

impl fmt::Display for Notice<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Notice::OwnersNotKept { dest } => write!(
                f,
                "{dest} does not let us set owners (root squashed?): files get the server's \
                 owner. Use --no-owner --no-group not to ask, or export with no_root_squash"
            ),
            Notice::SymlinkTimesNotKept { dest } => write!(
                f,
                "{dest} does not store symlink modification times; symlinks keep the \
                 server's time"
            ),
            Notice::EfsKeyNotKept { why } => write!(
                f,
                "the EFS client key cannot be kept ({why}); a key made for this run is used \
                 (set NFSYNC_EFS_KEY to a writable file to keep one)"
            ),
            Notice::Calls { counts } => write!(f, "NFS calls: {counts}"),
        }
    }
}

/// Where a client's notices go.
pub trait Notices: Send + Sync {
    /// Takes one notice.
    fn notice(&self, n: Notice<'_>);
}

impl<F: Fn(Notice<'_>) + Send + Sync> Notices for F {
    fn notice(&self, n: Notice<'_>) {
        self(n)
    }
}

/// Which owners to ask the server for, given up on when it does not keep them, and
/// each server limit noticed once.
pub struct AttrPolicy {
    owners: OwnerPolicy,
    notices: Arc<dyn Notices>,
    /// The destination, for the notices.
    dest: String,
    owners_refused: AtomicBool,
    symlink_times_noticed: AtomicBool,
}

impl AttrPolicy {
    /// Keeps `owners` on `dest` until the server shows it does not; tells `notices`.
    pub fn new(owners: OwnerPolicy, notices: Arc<dyn Notices>, dest: String) -> AttrPolicy {
        AttrPolicy {
            owners,
            notices,
            dest,
            owners_refused: AtomicBool::new(false),
            symlink_times_noticed: AtomicBool::new(false),
        }
    }

    /// The owners to ask for now: none once the server refused them.
    pub fn owners(&self) -> OwnerPolicy {
        if self.owners_refused.load(Ordering::Relaxed) {
            OwnerPolicy::default()
        } else {
            self.owners
        }
    }

    /// The server refused owners or kept others: stop asking, with one notice.
    pub fn owners_not_kept(&self) {
        if !self.owners_refused.swap(true, Ordering::Relaxed) {
            self.notices
                .notice(Notice::OwnersNotKept { dest: &self.dest });
        }
    }

    /// A symlink's time did not stick: one notice, since every run will find those
    /// mtimes different again.
    pub fn symlink_time_not_kept(&self) {
        if !self.symlink_times_noticed.swap(true, Ordering::Relaxed) {
            self.notices
                .notice(Notice::SymlinkTimesNotKept { dest: &self.dest });
        }
    }

    /// Tells the calls the run sent (`NAME=N ...`).
    pub fn calls(&self, counts: &str) {
        self.notices.notice(Notice::Calls { counts });
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;

    fn collecting() -> (Arc<Mutex<Vec<String>>>, Arc<dyn Notices>) {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let sink = seen.clone();
        let notices = Arc::new(move |n: Notice<'_>| sink.lock().unwrap().push(n.to_string()));
        (seen, notices)
    }

    #[test]
    fn owners_are_given_up_on_once_with_one_notice() {
        let (seen, notices) = collecting();
        let both = OwnerPolicy {
            owner: true,
            group: true,
        };
        let p = AttrPolicy::new(both, notices, "nfs://h/x".into());
        assert_eq!(p.owners(), both);
        for _ in 0..3 {
            p.owners_not_kept();
        }
        assert_eq!(p.owners(), OwnerPolicy::default());
        let seen = seen.lock().unwrap();
        assert_eq!(seen.len(), 1, "{seen:?}");
        assert!(seen[0].starts_with("nfs://h/x does not let us set owners"));
    }

    #[test]
    fn symlink_times_are_noticed_once_and_calls_each_time() {
        let (seen, notices) = collecting();
        let p = AttrPolicy::new(OwnerPolicy::default(), notices, "nfs://h/x".into());
        p.symlink_time_not_kept();
        p.symlink_time_not_kept();
        p.calls("NULL=1");
        let seen = seen.lock().unwrap();
        assert_eq!(seen.len(), 2, "{seen:?}");
        assert!(seen[0].contains("symlink modification times"));
        assert_eq!(seen[1], "NFS calls: NULL=1");
        assert!(!Notice::Calls { counts: "" }.is_warning());
        assert!(Notice::OwnersNotKept { dest: "" }.is_warning());
    }
}
