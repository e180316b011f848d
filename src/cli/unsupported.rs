//! rsync's options that nfsync does not implement, each with the reason it gives.
//!
//! From rsync(1)'s option list (3.2/3.3). An option here is refused by name, so a
//! script that relies on it fails loudly instead of getting a different result; one
//! that is in neither this list nor nfsync's own options is "unknown", as rsync says.

/// One refused rsync option.
#[derive(Clone, Copy, Debug)]
pub struct Unsupported {
    /// Its short letter, if it has one.
    pub short: Option<char>,
    /// Its long name, without `--`.
    pub long: &'static str,
    /// Why nfsync does not do it (shown in parentheses).
    pub why: &'static str,
}

const REMOTE: &str = "nfsync copies to a local path or an nfs:// URL, not to a remote rsync";
const NOT_YET: &str = "not implemented yet";
const NO_ATTR: &str = "nfsync copies no other times, and no attributes beyond -X and -A";

macro_rules! refused {
    ($(($short:expr, $long:literal, $why:expr)),* $(,)?) => {
        &[$(Unsupported { short: $short, long: $long, why: $why }),*]
    };
}

/// The list, in rsync(1)'s order.
pub const LIST: &[Unsupported] = refused![
    (None, "old-args", "nfsync splits no remote arguments"),
    (None, "old-dirs", NOT_YET),
    (None, "old-d", NOT_YET),
    (None, "munge-links", NOT_YET),
    (None, "copy-devices", NOT_YET),
    (None, "write-devices", NOT_YET),
    (
        None,
        "no-open-noatime",
        "source files are always opened with O_NOATIME where allowed"
    ),
    (Some('N'), "crtimes", NO_ATTR),
    (Some('e'), "rsh", REMOTE),
    (None, "rsync-path", REMOTE),
    (None, "delete-missing-args", NOT_YET),
    (None, "ignore-missing-args", NOT_YET),
    (None, "checksum-choice", "-c compares the bytes themselves"),
    (None, "cc", "-c compares the bytes themselves"),
    (Some('s'), "secluded-args", REMOTE),
    (None, "protect-args", REMOTE),
    (None, "trust-sender", REMOTE),
    (None, "copy-as", NOT_YET),
    (None, "address", REMOTE),
    (None, "port", REMOTE),
    (None, "sockopts", REMOTE),
    (None, "blocking-io", REMOTE),
    (None, "outbuf", NOT_YET),
    (None, "password-file", REMOTE),
    (None, "early-input", REMOTE),
    (
        None,
        "fsync",
        "new files are written with FILE_SYNC or COMMIT on the NFS path"
    ),
    (None, "write-batch", NOT_YET),
    (None, "only-write-batch", NOT_YET),
    (None, "read-batch", NOT_YET),
    (None, "protocol", REMOTE),
    (None, "iconv", NOT_YET),
    (None, "checksum-seed", "-c compares the bytes themselves"),
    (Some('4'), "ipv4", REMOTE),
    (Some('6'), "ipv6", REMOTE),
    (None, "contimeout", REMOTE),
    (None, "daemon", REMOTE),
    (None, "config", REMOTE),
    (None, "dparam", REMOTE),
    (None, "no-detach", REMOTE),
    (None, "msgs2stderr", NOT_YET),
    (None, "stderr", NOT_YET),
];

/// The refused option with this long name, or whose `--no-` form this is (`--no-A`
/// too).
pub fn long(name: &str) -> Option<Unsupported> {
    if let Some(base) = name.strip_prefix("no-") {
        let mut c = base.chars();
        if let (Some(letter), None) = (c.next(), c.next()) {
            return short(letter);
        }
    }
    let base = name.strip_prefix("no-").unwrap_or(name);
    LIST.iter()
        .find(|u| !u.long.is_empty() && (u.long == name || u.long == base))
        .copied()
}

/// The refused option with this short letter.
pub fn short(c: char) -> Option<Unsupported> {
    LIST.iter().find(|u| u.short == Some(c)).copied()
}
