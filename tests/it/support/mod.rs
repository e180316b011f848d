//! Helpers shared by the integration tests: a tree builder, an independent tree
//! comparison (`rsync -anciH --delete`), a command builder for the `nfsync` binary, and
//! the [`Target`] abstraction that lets one scenario run against several kinds of
//! destination (a local directory, the in-process NFSv3 server, nfs-ganesha).
//!
//! Submodules: [`ganesha`] (a private nfs-ganesha), [`efs_shim`] (EFS's partitions in
//! front of it), [`efs_front`] (EFS's TLS front, judging client certificates),
//! [`inproc`] (the in-process NFSv3 server and [`dirfs`], the file system it serves a local directory with), [`net`]
//! (test TCP servers and proxies), [`nfs4probe`] (a minimal NFSv4.1 client that checks
//! the test servers), [`nobody`] (runs as uid 65534 when root), [`sides`] (rsync and
//! nfsync side by side), [`tree`] (scratch directories and the tree builder),
//! [`compare`] (the comparisons and snapshots), both re-exported here.

mod compare;
pub mod dirfs;
pub mod efs_front;
pub mod efs_shim;
pub mod ganesha;
pub mod inproc;
pub mod net;
pub mod nfs4probe;
pub mod nobody;
pub mod sides;
pub mod times;
pub mod tls;
pub mod tmpfs;
mod tree;

use std::collections::BTreeSet;
use std::ffi::{OsStr, OsString};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

pub use compare::{
    assert_same, assert_snapshots_eq, assert_target_same, copy_tree, count_files, fnv1a, itemized,
    rsync_diff, rsync_diff_with, rsync_itemize, rsync_reference, snapshot,
};
pub use tree::{Scratch, Tree, XorShift, bytes_path};

/// Makes every panic also print at once, straight to the process's stderr (which the
/// test harness does not capture), so a failure's message sits beside its test's line
/// in a long parallel log, not only in the summary at the end (CI shows a window of
/// the log). Idempotent; [`Scratch::new`] calls it.
pub fn report_panics_at_once() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let thread = std::thread::current();
            let name = thread.name().unwrap_or("?");
            let _ = writeln!(std::io::stderr(), "\n---- {name} panicked: {info}\n");
            default(info);
        }));
    });
}

/// Path of the binary under test: the one cargo built, or `$NFSYNC_BIN` where a test run
/// as `nobody` was handed a copy it can execute (see [`nobody::runnable`]).
pub fn bin() -> PathBuf {
    std::env::var_os(nobody::BIN_VAR)
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_nfsync")))
}

/// How long any single nfsync run may take before the test fails instead of hanging.
pub const RUN_TIMEOUT: Duration = Duration::from_secs(120);

/// `nfsync` with no arguments, ready for `.args(..)` and `.assert()`.
pub fn nfsync() -> assert_cmd::Command {
    let mut cmd = assert_cmd::Command::new(bin());
    cmd.timeout(RUN_TIMEOUT);
    cmd
}

/// `nfsync ARGS SRC/ DEST` (the contents of SRC into DEST), run to its end.
pub fn run_nfsync(args: &[&str], src: &Path, dest: impl AsRef<OsStr>) -> Output {
    nfsync()
        .args(args)
        .arg(slash(src))
        .arg(dest)
        .output()
        .expect("run nfsync")
}

/// [`run_nfsync`], which must succeed.
pub fn sync_ok(args: &[&str], src: &Path, dest: impl AsRef<OsStr>) -> Output {
    let out = run_nfsync(args, src, dest);
    assert!(out.status.success(), "{}", describe(&out));
    out
}

/// True when the tests run as root (as they do in CI).
pub fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

/// A prerequisite of a test is missing (`why` says which). As root, how CI runs the
/// tests, that is a failure with the reason: a test that passes without running hides
/// a broken setup. Otherwise it says so on stderr and the caller returns early.
pub fn prerequisite_missing(why: &str) {
    assert!(
        !is_root(),
        "{why} (as root every prerequisite must be there)"
    );
    eprintln!("skipping: {why}");
}

/// Whether a test that needs root may run. As root: yes. Otherwise it says so once per
/// process for each `what` (`skipping ganesha tests: not root`), straight to stderr so
/// that libtest's output capture does not hide it, and the caller returns early. As
/// root nothing is skipped: a missing server or tool then fails the test.
pub fn root_or_skip(what: &str) -> bool {
    if is_root() {
        return true;
    }
    static SAID: Mutex<BTreeSet<String>> = Mutex::new(BTreeSet::new());
    let first = SAID
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .insert(what.to_owned());
    if first {
        let _ = writeln!(std::io::stderr(), "skipping {what}: not root");
    }
    false
}

// ---------------------------------------------------------------------------------------
// Targets

/// Where a scenario sends its copy.
///
/// `sub` is a short relative name chosen by the scenario (e.g. `"dst"`), unique within
/// one target; it lets one target serve scenarios that need several destinations.
pub trait Target {
    /// The SRC argument for the command line that reads the local tree `src` (a
    /// directory, or a file): `src/` (its contents) when `contents`, else `src`. The
    /// path itself unless the target reads its sources from elsewhere (a copy of `src`
    /// on a server, refreshed at each call so that a scenario that changes `src`
    /// between runs reads the change).
    fn src_arg(&self, src: &Path, contents: bool) -> OsString {
        if contents {
            slash(src)
        } else {
            src.as_os_str().to_owned()
        }
    }

    /// The DEST argument for the command line: a local path, or an `nfs://` URL.
    fn dest_arg(&self, sub: &str) -> String;

    /// The local directory where what was written to `dest_arg(sub)` can be read back
    /// and compared (the path itself for local targets, the exported directory for NFS).
    /// Scenarios may also create files there to set up a destination's prior state.
    fn dest_path(&self, sub: &str) -> PathBuf;

    /// The process to run: the nfsync binary, plus whatever options or environment the
    /// target needs (e.g. a timeout for NFS). Scenarios add their own arguments after it.
    fn command(&self) -> Command {
        Command::new(bin())
    }

    /// Independent comparison of a source tree with what the target holds for `sub`.
    /// Returns rsync's itemized output: empty means identical. Override to relax what is
    /// compared if the target cannot store something (e.g. owners on a root-squashed export).
    fn diff(&self, src: &Path, sub: &str) -> String {
        rsync_diff(src, &self.dest_path(sub))
    }

    /// Whether the destination can store a symlink's own mtime. Scenarios check it to
    /// the nanosecond only where it can; `diff` decides what rsync compares.
    fn keeps_symlink_times(&self) -> bool {
        true
    }

    /// Whether times travel as NFSv3 carries them, as unsigned 32-bit seconds: times
    /// before 1970 or after 2106 then get the nearest storable one (NFSv4 carries signed
    /// 64-bit seconds, a mount whatever the file system holds).
    fn clamps_times(&self) -> bool {
        false
    }
}

/// A destination in a local temporary directory, reached through its path.
pub struct LocalTarget {
    dir: Scratch,
}

impl LocalTarget {
    pub fn new() -> LocalTarget {
        LocalTarget {
            dir: Scratch::new(),
        }
    }
}

impl Default for LocalTarget {
    fn default() -> Self {
        Self::new()
    }
}

impl Target for LocalTarget {
    fn dest_arg(&self, sub: &str) -> String {
        self.dest_path(sub)
            .to_str()
            .expect("temporary directory paths are UTF-8")
            .to_owned()
    }

    fn dest_path(&self, sub: &str) -> PathBuf {
        self.dir.path().join(sub)
    }
}

/// `nfsync` built from a target's command, with the test timeout.
pub fn nf(t: &dyn Target) -> assert_cmd::Command {
    let mut cmd = assert_cmd::Command::from_std(t.command());
    cmd.timeout(RUN_TIMEOUT);
    cmd
}

// ---------------------------------------------------------------------------------------
// Reading results

/// Parses `--json` output: stdout must hold exactly one JSON object and nothing else.
pub fn json_stats(out: &Output) -> serde_json::Value {
    let text = String::from_utf8_lossy(&out.stdout);
    let mut values = serde_json::Deserializer::from_str(&text).into_iter::<serde_json::Value>();
    let first = match values.next() {
        Some(Ok(v)) => v,
        other => panic!("--json: no JSON object on stdout ({other:?}); stdout was:\n{text}"),
    };
    match values.next() {
        None => {}
        Some(v) => {
            panic!("--json: more than one JSON value on stdout ({v:?}); stdout was:\n{text}")
        }
    }
    assert!(first.is_object(), "--json: not an object: {first}");
    for key in [
        "files_scanned",
        "files_copied",
        "files_skipped",
        "files_deleted",
        "dirs_created",
        "bytes_copied",
        "errors",
        "elapsed_s",
        "jobs",
    ] {
        assert!(
            first.get(key).is_some(),
            "--json: key {key:?} missing in {first}"
        );
    }
    first
}

/// An unsigned counter from `--json` output.
pub fn stat(v: &serde_json::Value, key: &str) -> u64 {
    v.get(key)
        .and_then(serde_json::Value::as_u64)
        .unwrap_or_else(|| panic!("--json: {key:?} is not an unsigned integer in {v}"))
}

/// Asserts that a `--json` run copied `n` files.
pub fn assert_copied(out: &Output, n: u64) {
    assert_eq!(
        stat(&json_stats(out), "files_copied"),
        n,
        "{}",
        describe(out)
    );
}

/// Both output streams as text, for failure messages.
pub fn describe(out: &Output) -> String {
    format!(
        "status: {}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// `src` as a command-line argument with a trailing slash ("the contents of").
pub fn slash(p: &Path) -> std::ffi::OsString {
    let mut s = p.as_os_str().to_owned();
    s.push("/");
    s
}

/// Asserts that stderr has, for each `(name, cause)`, one line naming both: a per-file
/// error must say which file and why.
pub fn assert_errors_name(out: &Output, expected: &[(&str, &str)]) {
    let err = String::from_utf8_lossy(&out.stderr);
    for (name, cause) in expected {
        assert!(
            err.lines().any(|l| l.contains(name) && l.contains(cause)),
            "no line naming {name} with {cause:?}:\n{err}"
        );
    }
}
