//! Temporary names for updates, and who owns a temporary found in a listing.
//!
//! An update is written beside the old copy under a hidden name and renamed over it
//! (rsync's `.name.XXXXXX`). Several runs may write into one DEST at once (a cron job
//! that starts while the last one still runs), so a temporary found in a listing may
//! be another run's file in progress: removing it would make that run's rename fail.
//! The name therefore says which host and which process made it —
//! `.NAME.nfsync-HOST-PID-START-SEQ`, all hex: an 8-digit hash of the host name, the
//! process id, the process's start time (clock ticks since boot, so a reused pid is
//! told apart) and a sequence number — and a leftover is removed only when its
//! owner is provably gone: made on this host, by a process that no longer runs.
//! Temporaries of other hosts are left alone; nothing here can prove their owner dead.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

const MARKER: &[u8] = b".nfsync-";

/// How much of the original name a temporary keeps: with the marker and four hex
/// numbers the whole stays within NAME_MAX (255).
const KEEP: usize = 180;

/// This process as temporaries name it: (host hash, pid, start time).
fn me() -> (u32, u32, u64) {
    static ME: OnceLock<(u32, u32, u64)> = OnceLock::new();
    *ME.get_or_init(|| {
        let pid = std::process::id();
        (host_hash(), pid, start_time(pid).unwrap_or(0))
    })
}

/// FNV-1a of the host name: short, and the same for every run on this host.
fn host_hash() -> u32 {
    let name = std::fs::read("/proc/sys/kernel/hostname").unwrap_or_default();
    let mut h: u32 = 0x811c_9dc5;
    for &b in name.trim_ascii() {
        h = (h ^ u32::from(b)).wrapping_mul(0x0100_0193);
    }
    h
}

/// A process's start time in clock ticks since boot (`/proc/PID/stat`, field 22);
/// `None` when no such process runs.
fn start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may hold spaces and parentheses: count after the last ')'.
    let close = stat.iter().rposition(|&b| b == b')')?;
    let rest = std::str::from_utf8(&stat[close + 1..]).ok()?;
    rest.split_ascii_whitespace().nth(19)?.parse().ok()
}

/// A fresh temporary name for an update of `name`, unique across runs and hosts.
pub fn name(name: &OsStr) -> OsString {
    static SEQ: AtomicU64 = AtomicU64::new(0);
    let (host, pid, start) = me();
    let seq = SEQ.fetch_add(1, Ordering::Relaxed);
    let b = name.as_bytes();
    let mut t = Vec::with_capacity(b.len().min(KEEP) + 64);
    t.push(b'.');
    t.extend_from_slice(&b[..b.len().min(KEEP)]);
    t.extend_from_slice(MARKER);
    t.extend_from_slice(format!("{host:08x}-{pid:x}-{start:x}-{seq:x}").as_bytes());
    OsString::from_vec(t)
}

/// The owner a temporary's name claims: (host hash, pid, start time). `None` when the
/// name is not one of ours (a user's `.notes.nfsync-1-2` is not).
fn owner(name: &OsStr) -> Option<(u32, u32, u64)> {
    let b = name.as_bytes();
    let at = b.windows(MARKER.len()).rposition(|w| w == MARKER)?;
    if b.first() != Some(&b'.') || at < 2 {
        return None;
    }
    let tail = std::str::from_utf8(&b[at + MARKER.len()..]).ok()?;
    let parts: Vec<&str> = tail.split('-').collect();
    let hex = |t: &str| !t.is_empty() && t.len() <= 16 && t.bytes().all(|c| c.is_ascii_hexdigit());
    if parts.len() != 4 || parts[0].len() != 8 || !parts.iter().all(|p| hex(p)) {
        return None;
    }
    Some((
        u32::from_str_radix(parts[0], 16).ok()?,
        u32::from_str_radix(parts[1], 16).ok()?,
        u64::from_str_radix(parts[2], 16).ok()?,
    ))
}

/// Whether `name` is a temporary whose owner is provably gone, so it may be removed:
/// made on this host by a process that no longer runs (or whose pid now belongs to a
/// process started at another time).
pub fn is_abandoned(name: &OsStr) -> bool {
    let Some((host, pid, start)) = owner(name) else {
        return false;
    };
    let (my_host, my_pid, my_start) = me();
    if host != my_host || (pid == my_pid && start == my_start) {
        return false;
    }
    start_time(pid) != Some(start)
}

/// Whether `name` has the form of one of our temporaries, whoever made it.
pub fn is_temp(name: &OsStr) -> bool {
    owner(name).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_fit_and_are_recognised_and_nothing_else() {
        for name in [&b"a.txt"[..], b"x", &[0xff, 0xfe], &[b'n'; 255]] {
            let t = name_of(name);
            assert!(is_temp(&t), "{t:?}");
            assert!(t.len() <= 255, "{} bytes", t.len());
            assert!(!is_temp(OsStr::from_bytes(name)));
        }
        for name in [
            "a.nfsync-1-2",
            ".nfsync-1-2",
            ".notes.nfsync-1-2",
            ".a.nfsync-dead-beef",
            ".a.nfsync-1-",
            ".a.nfsync-x-2",
            ".a.nfsync-12345678-1-2-3.bak",
            ".a.nfsync-1234567-1-2-3",
            ".a.nfsync-12345678-1-2",
        ] {
            assert!(!is_temp(OsStr::new(name)), "{name}");
        }
    }

    fn name_of(b: &[u8]) -> OsString {
        name(OsStr::from_bytes(b))
    }

    #[test]
    fn a_live_owner_keeps_its_temporary_and_a_dead_one_does_not() {
        let (host, _, _) = me();
        // Ours, in this very run: alive.
        assert!(!is_abandoned(&name_of(b"f")));
        // pid 1 runs, but was started at another time than this claims: gone.
        let init_start = start_time(1).expect("pid 1 runs");
        let reused = format!(".f.nfsync-{host:08x}-1-{:x}-0", init_start + 1);
        assert!(is_abandoned(OsStr::new(&reused)));
        let live = format!(".f.nfsync-{host:08x}-1-{init_start:x}-0");
        assert!(!is_abandoned(OsStr::new(&live)));
        // A pid past any kernel's pid_max cannot run.
        let dead = format!(".f.nfsync-{host:08x}-7fffffff-0-0");
        assert!(is_abandoned(OsStr::new(&dead)));
        // Another host's: never provably gone.
        let other = format!(".f.nfsync-{:08x}-7fffffff-0-0", host.wrapping_add(1));
        assert!(!is_abandoned(OsStr::new(&other)));
    }
}
