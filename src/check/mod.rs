//! `nfsync --check DEST`: what a run would meet there, found before a migration.
//!
//! A migration that fails an hour in (a read-only export, a policy that refuses
//! writes, a server too far away for the planned window) costs the hour. The check
//! goes through the same seam a run does ([`Destination`]), so what it finds is what
//! the run would find: it connects, writes a probe file, reads it back and dates it,
//! times single round trips, then writes small files with the run's `--jobs` to
//! measure the rate that decides a tree of many small files, and turns that into an
//! estimate. Everything it creates has a temporary's name and is removed before it
//! returns; a check that is killed leaves at most that, which a run removes.

mod probe;
mod rate;

use std::ffi::OsStr;
use std::time::Duration;

use serde::Serialize;

use crate::config::Config;
use crate::dest::{Destination, Error as DestError, RootState};
use crate::exit::{Error, ExitCode};
use crate::meta::Kind;
use crate::report::units::HumanLevel;

/// What the check found, printed as lines or, with `--json`, as one object.
#[derive(Debug, Default, Serialize)]
pub struct Findings {
    /// DEST as given.
    pub dest: String,
    /// The protocol, connections and security, as the connection was set up.
    pub connection: String,
    /// Seconds the connection took.
    pub connect_secs: f64,
    /// What happened to the probe file, each step in order; the last one failed when
    /// `failed` is set.
    pub probe: Vec<String>,
    /// Median round trip of a lookup that finds nothing, in milliseconds.
    pub round_trip_ms: Option<f64>,
    /// Small files per second at the best concurrency tried, and that concurrency.
    pub files_per_sec: Option<f64>,
    pub jobs: Option<usize>,
    /// Files a run is estimated for (`--check-files`), and the estimate in seconds.
    pub estimate_files: u64,
    pub estimate_secs: Option<f64>,
    /// Why the check stopped, when it did; the exit code says what kind of failure.
    pub failed: Option<String>,
    pub exit_code: i32,
}

/// Runs the checks on `dest`, already connected in `connected` and described by
/// `connection`. Every failure is in the findings with its exit code; nothing is left
/// behind that a check created.
pub fn run<D: Destination>(
    cfg: &Config,
    dest: &D,
    connection: String,
    connected: Duration,
) -> Findings {
    let mut f = Findings {
        dest: cfg.dest.to_string_lossy().into_owned(),
        connection,
        connect_secs: connected.as_secs_f64(),
        estimate_files: cfg.check_files,
        ..Findings::default()
    };
    if let Err((code, why)) = checks(cfg, dest, &mut f) {
        f.failed = Some(why);
        f.exit_code = code.code();
    }
    f
}

/// A failed check: the exit code and the reason.
type Failed = (ExitCode, String);

fn checks<D: Destination>(cfg: &Config, dest: &D, f: &mut Findings) -> Result<(), Failed> {
    let dir = match dest
        .root_state()
        .map_err(|e| failed("looking at DEST", &e))?
    {
        RootState::Exists(m) if m.kind == Kind::Dir => {
            dest.root_dir().map_err(|e| failed("opening DEST", &e))?
        }
        RootState::Exists(_) => {
            return Err((ExitCode::Select, "DEST is not a directory".into()));
        }
        // A run makes DEST; its parent is where that will be written.
        _ => {
            f.probe
                .push("DEST does not exist yet; a run creates it".into());
            dest.root_parent()
                .map_err(|e| failed("opening DEST's parent", &e))?
                .0
        }
    };
    probe::file(dest, &dir, &mut f.probe)?;
    let rtt = probe::round_trip(dest, &dir)?;
    f.round_trip_ms = Some(rtt.as_secs_f64() * 1e3);
    let best = rate::small_files(dest, &dir, cfg.jobs)?;
    f.files_per_sec = Some(best.per_sec);
    f.jobs = Some(best.jobs);
    f.estimate_secs = Some(cfg.check_files as f64 / best.per_sec);
    Ok(())
}

/// A destination error while doing `what`, as a check failure: a read-only
/// destination or a refusal is DEST being unusable (exit 3); a server that went away
/// or stopped answering has the run's codes.
fn failed(what: &str, e: &DestError) -> Failed {
    let code = match e {
        DestError::Unreachable(_) => ExitCode::Connect,
        DestError::TimedOut(_) => ExitCode::Timeout,
        DestError::Entry(_) => ExitCode::Select,
    };
    let hint = match e.raw_os_error() {
        Some(libc::EROFS) => " (the export is read-only)",
        Some(libc::EACCES | libc::EPERM) => {
            " (access denied: the export's options, a file system policy, or an access point's owner and permissions)"
        }
        Some(libc::EDQUOT | libc::ENOSPC) => " (no space or quota left)",
        _ => "",
    };
    (code, format!("{what}: {e}{hint}"))
}

impl Findings {
    /// The exit code the check ends with.
    pub fn exit_code(&self) -> ExitCode {
        ExitCode::from_code(self.exit_code).unwrap_or(ExitCode::Internal)
    }

    /// The findings as lines for a person.
    pub fn lines(&self) -> Vec<String> {
        let mut l = vec![
            format!("DEST          {}", self.dest),
            format!(
                "connected     {} in {}",
                self.connection,
                span(self.connect_secs)
            ),
        ];
        for p in &self.probe {
            l.push(format!("probe         {p}"));
        }
        if let Some(ms) = self.round_trip_ms {
            let places = if ms < 1.0 { 3 } else { 1 };
            l.push(format!(
                "round trip    {ms:.places$} ms (median of {} lookups)",
                probe::LOOKUPS
            ));
        }
        if let (Some(r), Some(j)) = (self.files_per_sec, self.jobs) {
            l.push(format!(
                "small files   {} files/s ({} bytes each, {j} in flight)",
                HumanLevel::Separated.num(r as u64),
                rate::SIZE
            ));
        }
        if let Some(s) = self.estimate_secs {
            l.push(format!(
                "estimate      {} small files in about {} (large files: add their bytes at the link's rate)",
                HumanLevel::Separated.num(self.estimate_files),
                span(s)
            ));
        }
        match &self.failed {
            Some(why) => l.push(format!("FAILED        {why}")),
            None => l.push("ok            a run can write here".into()),
        }
        l
    }
}

/// `secs` as a person reads a span: milliseconds under a second, then seconds,
/// minutes and hours.
fn span(secs: f64) -> String {
    let whole = secs.round() as u64;
    match secs {
        s if s < 1.0 => format!("{:.0} ms", s * 1e3),
        s if s < 60.0 => format!("{s:.1} s"),
        _ if whole < 3600 => format!("{} min {} s", whole / 60, whole % 60),
        _ => format!("{} h {} min", whole / 3600, whole % 3600 / 60),
    }
}

/// The name of a scratch entry of the check's: a temporary's, so that overlapping
/// runs leave it alone and a later run removes it if the check was killed.
fn scratch_name(what: &str) -> std::ffi::OsString {
    crate::options::temp::name(OsStr::new(what))
}

/// A connection failure before any check could run, as findings.
pub fn not_connected(cfg: &Config, e: &Error) -> Findings {
    let why = format!("{e:#}");
    let failed = match advice(&why) {
        Some(a) => format!("{why} ({a})"),
        None => why,
    };
    Findings {
        dest: cfg.dest.to_string_lossy().into_owned(),
        connection: "not connected".into(),
        estimate_files: cfg.check_files,
        failed: Some(failed),
        exit_code: e.exit_code().code(),
        ..Findings::default()
    }
}

/// What a failure to connect most likely means before a migration, read from the
/// error's words (the causes nfsync itself puts there): the first place to look.
fn advice(why: &str) -> Option<&'static str> {
    let has = |w: &str| why.contains(w);
    Some(if has("cannot resolve") || has("has no address") {
        "the name does not resolve here: EFS names resolve inside the file system's VPC \
         (DNS hostnames on), or give a mount target's address with ?fsid= and ?region= \
         (with ?tls its certificate is then checked against the file system's name, as \
         efs-utils does)"
    } else if has("refused the client certificate") {
        "the file system policy, the IAM identity of ?iam, or the access point refused us"
    } else if has("Connection refused") {
        "nothing listens there: the port, or a firewall that rejects it"
    } else if has("timed out") || has("sent nothing") {
        "no answer: a security group or firewall dropping TCP 2049 (EFS: the mount \
         target's security group must allow it from this host), or the wrong address"
    } else if has("certificate") || has("TLS") {
        "the server's TLS certificate is not for the name checked (the URL's host, or \
         for EFS the file system's name from the host or ?fsid= and ?region=), or is not \
         from the CA given (tls-ca=)"
    } else {
        return None;
    })
}

#[cfg(test)]
mod tests {
    use super::advice;

    #[test]
    fn each_cause_of_a_failed_connection_gets_its_advice() {
        let cases = [
            (
                "cannot resolve NFS server fs-1.efs.x: failed to lookup",
                "resolve",
            ),
            (
                "NFS service: cannot connect to 10.0.0.1:2049: Connection refused",
                "listens",
            ),
            (
                "NFS service: connecting to 10.0.0.1:2049 timed out",
                "security group",
            ),
            (
                "TLS handshake with h: invalid peer certificate: UnknownIssuer",
                "tls-ca",
            ),
            (
                "TLS handshake with h failed: the server refused the client certificate",
                "policy",
            ),
        ];
        for (why, says) in cases {
            let a = advice(why).unwrap_or_else(|| panic!("no advice for {why}"));
            assert!(a.contains(says), "{why}: {a}");
        }
        assert_eq!(advice("MOUNT: export /x not found"), None);
    }
}
