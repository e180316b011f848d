//! Races with another writer of the same tree (another run, a shard, a user): the
//! outcome of one attempt at an entry, which errors mean another writer got to the
//! name first, and how often an entry is looked at again because of it.

use std::io;

use crate::dest;

/// How often an entry is planned again after another run changed its name under us
/// (created it first, or renamed its own copy over ours): each retry looks afresh.
pub(super) const RACE_RETRIES: usize = 3;

/// The outcome of one attempt at an entry.
pub(super) enum Attempt {
    /// Finished: whether the destination now holds the entry.
    Done(bool),
    /// Another writer changed the name meanwhile: look again and decide anew.
    Raced,
}

/// Whether a destination error means another writer got to the name first: it exists
/// now (we create exclusively), or the file we were writing was replaced (NFS answers
/// STALE for a file renamed over), or our own temporary is gone.
pub(super) fn is_race(e: &dest::Error) -> bool {
    e.kind() == io::ErrorKind::AlreadyExists || e.raw_os_error() == Some(libc::ESTALE)
}

/// [`is_race`], or the name gone: for calls on a name another run may remove or
/// replace between our look and the call (a creating call's NotFound means a missing
/// parent instead, which is no race).
pub(super) fn is_race_or_gone(e: &dest::Error) -> bool {
    is_race(e) || e.kind() == io::ErrorKind::NotFound
}
