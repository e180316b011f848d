//! Helpers shared by the integration tests: a tree builder, an independent tree
//! comparison (`rsync -anciH --delete`), a command builder for the `nfsync` binary, and
//! the [`Target`] abstraction that lets one scenario run against several kinds of
//! destination (a local directory, the in-process NFSv3 server, nfs-ganesha).
//!
//! Submodules: [`ganesha`] (a private nfs-ganesha), [`inproc`] (the in-process NFSv3
//! server and [`dirfs`], the file system it serves a local directory with), [`net`]
//! (test TCP servers and proxies), [`nfs4probe`] (a minimal NFSv4.1 client that checks
//! the test servers), [`nobody`] (runs as uid 65534 when root).

pub mod dirfs;
pub mod ganesha;
pub mod inproc;
pub mod net;
pub mod nfs4probe;
pub mod nobody;
pub mod tls;

use std::collections::BTreeSet;
use std::ffi::OsStr;
use std::fs;
use std::io::{BufWriter, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use filetime::FileTime;

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
// Temporary directories

/// A temporary directory that can always be removed: on drop it first makes every
/// directory inside writable again, so read-only directories made by a test (as a
/// non-root user) do not leak.
pub struct Scratch {
    dir: Option<tempfile::TempDir>,
}

impl Scratch {
    /// A fresh directory under the default temporary directory.
    pub fn new() -> Scratch {
        let dir = tempfile::Builder::new()
            .prefix("nfsync-test-")
            .tempdir()
            .expect("create temporary directory");
        Scratch { dir: Some(dir) }
    }

    /// A fresh directory under `parent`.
    pub fn new_in(parent: &Path) -> Scratch {
        let dir = tempfile::Builder::new()
            .prefix("nfsync-test-")
            .tempdir_in(parent)
            .expect("create temporary directory");
        Scratch { dir: Some(dir) }
    }

    pub fn path(&self) -> &Path {
        self.dir.as_ref().expect("scratch directory alive").path()
    }

    /// `self.path().join(rel)`.
    pub fn join(&self, rel: impl AsRef<Path>) -> PathBuf {
        self.path().join(rel)
    }
}

impl Default for Scratch {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if let Some(dir) = self.dir.take() {
            make_dirs_writable(dir.path());
            let _ = dir.close();
        }
    }
}

fn make_dirs_writable(dir: &Path) {
    let Ok(meta) = fs::symlink_metadata(dir) else {
        return;
    };
    if !meta.is_dir() {
        return;
    }
    let _ = fs::set_permissions(dir, fs::Permissions::from_mode(0o700));
    if let Ok(entries) = fs::read_dir(dir) {
        for entry in entries.flatten() {
            make_dirs_writable(&entry.path());
        }
    }
}

// ---------------------------------------------------------------------------------------
// Building trees

/// Builds a directory tree under `root`. Every method creates missing parent directories
/// and panics on failure. Set directory mtimes last: creating a child changes them.
pub struct Tree {
    root: PathBuf,
}

impl Tree {
    /// A tree at `root`, which is created if missing.
    pub fn new(root: impl Into<PathBuf>) -> Tree {
        let root = root.into();
        fs::create_dir_all(&root).unwrap_or_else(|e| panic!("mkdir {}: {e}", root.display()));
        Tree { root }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `root/rel`.
    pub fn path(&self, rel: impl AsRef<Path>) -> PathBuf {
        self.root.join(rel)
    }

    fn parent_of(&self, rel: &Path) -> PathBuf {
        let p = self.path(rel);
        let parent = p.parent().expect("path has a parent").to_path_buf();
        fs::create_dir_all(&parent).unwrap_or_else(|e| panic!("mkdir {}: {e}", parent.display()));
        p
    }

    /// A directory (and its parents).
    pub fn dir(&self, rel: impl AsRef<Path>) -> &Self {
        let p = self.path(rel);
        fs::create_dir_all(&p).unwrap_or_else(|e| panic!("mkdir {}: {e}", p.display()));
        self
    }

    /// A file with the given bytes.
    pub fn file(&self, rel: impl AsRef<Path>, content: impl AsRef<[u8]>) -> &Self {
        let p = self.parent_of(rel.as_ref());
        fs::write(&p, content).unwrap_or_else(|e| panic!("write {}: {e}", p.display()));
        self
    }

    /// A file of `size` pseudo-random bytes derived from `seed` (the same seed and size
    /// give the same bytes; different seeds give different bytes).
    pub fn random_file(&self, rel: impl AsRef<Path>, size: u64, seed: u64) -> &Self {
        let p = self.parent_of(rel.as_ref());
        let f = fs::File::create(&p).unwrap_or_else(|e| panic!("create {}: {e}", p.display()));
        let mut w = BufWriter::with_capacity(1 << 20, f);
        let mut rng = XorShift::new(seed);
        let mut left = size;
        let mut buf = [0u8; 8192];
        while left > 0 {
            for chunk in buf.chunks_exact_mut(8) {
                chunk.copy_from_slice(&rng.next().to_le_bytes());
            }
            let n = left.min(buf.len() as u64) as usize;
            w.write_all(&buf[..n]).expect("write random file");
            left -= n as u64;
        }
        w.flush().expect("flush random file");
        self
    }

    /// A symbolic link at `rel` whose content is `target` (not resolved, may dangle).
    pub fn symlink(&self, rel: impl AsRef<Path>, target: impl AsRef<Path>) -> &Self {
        let p = self.parent_of(rel.as_ref());
        std::os::unix::fs::symlink(target.as_ref(), &p)
            .unwrap_or_else(|e| panic!("symlink {}: {e}", p.display()));
        self
    }

    /// A hard link at `rel` to the existing `existing` (both relative to the root).
    pub fn hardlink(&self, rel: impl AsRef<Path>, existing: impl AsRef<Path>) -> &Self {
        let p = self.parent_of(rel.as_ref());
        let e = self.path(existing);
        fs::hard_link(&e, &p).unwrap_or_else(|err| panic!("link {}: {err}", p.display()));
        self
    }

    /// `chmod mode rel` (all 12 mode bits).
    pub fn chmod(&self, rel: impl AsRef<Path>, mode: u32) -> &Self {
        let p = self.path(rel);
        fs::set_permissions(&p, fs::Permissions::from_mode(mode))
            .unwrap_or_else(|e| panic!("chmod {}: {e}", p.display()));
        self
    }

    /// Sets atime and mtime of `rel` itself (a symlink's own times, not its target's).
    pub fn mtime(&self, rel: impl AsRef<Path>, secs: i64, nanos: u32) -> &Self {
        let p = self.path(rel);
        let t = FileTime::from_unix_time(secs, nanos);
        filetime::set_symlink_file_times(&p, t, t)
            .unwrap_or_else(|e| panic!("utimensat {}: {e}", p.display()));
        self
    }

    /// Gives every entry under the root (and the root itself) its own old mtime with a
    /// non-zero nanosecond part, derived from its path, children before parents. Call
    /// it after building, so that a copy that does not keep mtimes cannot pass by
    /// having been made within the same second as the source.
    pub fn age(&self) -> &Self {
        fn walk(root: &Path, p: &Path) {
            let m = fs::symlink_metadata(p).unwrap_or_else(|e| panic!("stat {}: {e}", p.display()));
            if m.is_dir() {
                for e in fs::read_dir(p).expect("read_dir").flatten() {
                    walk(root, &e.path());
                }
            }
            let rel = p.strip_prefix(root).expect("under root");
            let h = fnv1a(rel.as_os_str().as_bytes());
            let secs = 1_000_000_000 + (h % 500_000_000) as i64;
            let nanos = ((h >> 32) % 999_999_999) as u32 + 1;
            let t = FileTime::from_unix_time(secs, nanos);
            filetime::set_symlink_file_times(p, t, t)
                .unwrap_or_else(|e| panic!("utimensat {}: {e}", p.display()));
        }
        walk(&self.root, &self.root);
        self
    }

    /// A named pipe.
    pub fn fifo(&self, rel: impl AsRef<Path>) -> &Self {
        let p = self.parent_of(rel.as_ref());
        let c = std::ffi::CString::new(p.as_os_str().as_bytes()).expect("no NUL in path");
        // SAFETY: c is a valid NUL-terminated path.
        let rc = unsafe { libc::mkfifo(c.as_ptr(), 0o644) };
        assert_eq!(
            rc,
            0,
            "mkfifo {}: {}",
            p.display(),
            std::io::Error::last_os_error()
        );
        self
    }

    /// `chown uid:gid rel` without following a symlink (root only).
    pub fn chown(&self, rel: impl AsRef<Path>, uid: u32, gid: u32) -> &Self {
        let p = self.path(rel);
        std::os::unix::fs::lchown(&p, Some(uid), Some(gid))
            .unwrap_or_else(|e| panic!("chown {}: {e}", p.display()));
        self
    }
}

/// A path from raw bytes (for names that are not UTF-8).
pub fn bytes_path(b: &[u8]) -> &Path {
    Path::new(OsStr::from_bytes(b))
}

/// Small deterministic generator for file contents (xorshift64*).
pub struct XorShift(u64);

impl XorShift {
    pub fn new(seed: u64) -> XorShift {
        XorShift(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
}

// ---------------------------------------------------------------------------------------
// Comparing trees

/// Runs `rsync -anciH --delete SRC/ DST/` and returns its stdout: one line per
/// difference, empty when the trees are identical (contents by checksum, types, modes,
/// mtimes to the second, symlink targets, hard links, and owners/groups when root).
/// Panics if rsync fails.
pub fn rsync_diff(src: &Path, dst: &Path) -> String {
    rsync_diff_with(src, dst, &[])
}

/// [`rsync_diff`] with extra rsync options (e.g. `--exclude` to leave a known
/// difference out).
pub fn rsync_diff_with(src: &Path, dst: &Path, extra: &[&str]) -> String {
    let mut s = src.as_os_str().to_owned();
    s.push("/");
    let mut d = dst.as_os_str().to_owned();
    d.push("/");
    let out = Command::new("rsync")
        .arg("-anciH")
        .arg("--delete")
        .args(extra)
        .arg(&s)
        .arg(&d)
        .output()
        .expect("run rsync (is it installed?)");
    assert!(
        out.status.success(),
        "rsync -anciH --delete {} {} failed: {}\nstdout:\n{}\nstderr:\n{}",
        s.to_string_lossy(),
        d.to_string_lossy(),
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `cp -a FROM TO`: an identical copy of a tree (times of symlinks too, owners when
/// root), or nothing when FROM does not exist.
pub fn copy_tree(from: &Path, to: &Path) {
    if fs::symlink_metadata(from).is_err() {
        return;
    }
    let status = Command::new("cp")
        .arg("-a")
        .arg(from)
        .arg(to)
        .status()
        .expect("run cp");
    assert!(
        status.success(),
        "cp -a {} {}",
        from.display(),
        to.display()
    );
}

/// The changes `rsync -ai EXTRA SRC/ DST/` itemizes (EXTRA may hold `-n`), sorted: what
/// nfsync's `-i` must print for the same change, run on an identical copy of the
/// starting state, line for line (sorted: nfsync's lines come in the order its parallel
/// jobs finish).
pub fn rsync_itemize(src: &Path, dst: &Path, extra: &[&str]) -> Vec<String> {
    let out = Command::new("rsync")
        .arg("-ai")
        .args(extra)
        .arg(slash(src))
        .arg(slash(dst))
        .output()
        .expect("run rsync (is it installed?)");
    assert!(out.status.success(), "rsync -ai: {}", describe(&out));
    let mut lines: Vec<String> = itemized_lines(&String::from_utf8_lossy(&out.stdout))
        .map(str::to_owned)
        .collect();
    lines.sort();
    lines
}

/// nfsync's itemized changes (`-i`), sorted: from stdout, or from stderr with `--json`.
pub fn itemized(out: &Output) -> Vec<String> {
    let mut lines: Vec<String> = itemized_lines(&String::from_utf8_lossy(&out.stdout))
        .chain(itemized_lines(&String::from_utf8_lossy(&out.stderr)))
        .map(str::to_owned)
        .collect();
    lines.sort();
    lines
}

/// The lines of `text` that are itemized changes: an 11-character code
/// (`>f.st......`) and a name, or `*deleting   NAME`.
fn itemized_lines(text: &str) -> impl Iterator<Item = &str> {
    text.lines().filter(|l| {
        let b = l.as_bytes();
        l.starts_with("*deleting   ")
            || (b.len() > 12
                && b[11] == b' '
                && b"<>ch.".contains(&b[0])
                && b"fdLDS".contains(&b[1]))
    })
}

/// Asserts that two local trees are identical by [`rsync_diff`].
pub fn assert_same(src: &Path, dst: &Path) {
    let diff = rsync_diff(src, dst);
    assert!(
        diff.is_empty(),
        "trees differ ({} vs {}):\n{diff}",
        src.display(),
        dst.display()
    );
}

/// Asserts that `t` holds an exact copy of `src` under `sub`.
pub fn assert_target_same(t: &dyn Target, src: &Path, sub: &str) {
    let diff = t.diff(src, sub);
    assert!(
        diff.is_empty(),
        "destination {} differs from source {}:\n{diff}",
        t.dest_path(sub).display(),
        src.display()
    );
}

/// Copies `src/` to `dst` with the real rsync and the given extra options (e.g. filter
/// rules): the reference result that nfsync's output is compared with.
pub fn rsync_reference(src: &Path, dst: &Path, extra: &[&str]) {
    let mut s = src.as_os_str().to_owned();
    s.push("/");
    let out = Command::new("rsync")
        .arg("-aH")
        .args(extra)
        .arg(&s)
        .arg(dst)
        .output()
        .expect("run rsync");
    assert!(
        out.status.success(),
        "reference rsync failed: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A listing of everything under `root` with type, mode, size, mtime (ns), link target
/// and content hash: equal listings mean nothing was changed. Used to prove that a run
/// (e.g. `--dry-run`) touched nothing.
pub fn snapshot(root: &Path) -> Vec<String> {
    let mut out = Vec::new();
    snapshot_into(root, root, &mut out);
    out.sort();
    out
}

fn snapshot_into(root: &Path, p: &Path, out: &mut Vec<String>) {
    let Ok(m) = fs::symlink_metadata(p) else {
        return;
    };
    let rel = p.strip_prefix(root).expect("under root");
    let mut line = format!(
        "{:?} mode={:o} uid={} gid={} mtime={}.{:09} nlink={}",
        rel,
        m.mode(),
        m.uid(),
        m.gid(),
        m.mtime(),
        m.mtime_nsec(),
        if m.is_dir() { 0 } else { m.nlink() }
    );
    if m.file_type().is_symlink() {
        line += &format!(" -> {:?}", fs::read_link(p).expect("readlink"));
    } else if m.is_file() {
        let data = fs::read(p).unwrap_or_default();
        line += &format!(" size={} hash={:016x}", data.len(), fnv1a(&data));
    }
    out.push(line);
    if m.is_dir() {
        for e in fs::read_dir(p).expect("read_dir").flatten() {
            snapshot_into(root, &e.path(), out);
        }
    }
}

/// Asserts two [`snapshot`]s are equal, printing only the lines that differ.
pub fn assert_snapshots_eq(before: &[String], after: &[String], what: &str) {
    if before == after {
        return;
    }
    let gone: Vec<_> = before.iter().filter(|l| !after.contains(l)).collect();
    let new: Vec<_> = after.iter().filter(|l| !before.contains(l)).collect();
    panic!("{what}\nbefore:\n{gone:#?}\nafter:\n{new:#?}");
}

/// FNV-1a 64, enough to tell contents apart in a snapshot.
pub fn fnv1a(data: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in data {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// Number of regular files (and symlinks) under `root`, recursively; 0 if missing.
pub fn count_files(root: &Path) -> usize {
    let Ok(entries) = fs::read_dir(root) else {
        return 0;
    };
    let mut n = 0;
    for e in entries.flatten() {
        match e.file_type() {
            Ok(ft) if ft.is_dir() => n += count_files(&e.path()),
            Ok(_) => n += 1,
            Err(_) => {}
        }
    }
    n
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
