//! Trees a test works in: temporary directories that always clean up (even when a
//! test left read-only directories behind), and a builder for the trees themselves.
//!
//! Its own module because nearly every test starts here and nothing here runs nfsync.

use std::ffi::OsStr;
use std::fs;
use std::io::{BufWriter, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use filetime::FileTime;

use super::fnv1a;

/// A temporary directory that can always be removed: on drop it first makes every
/// directory inside writable again, so read-only directories made by a test (as a
/// non-root user) do not leak.
pub struct Scratch {
    dir: Option<tempfile::TempDir>,
}

impl Scratch {
    /// A fresh directory under the default temporary directory.
    pub fn new() -> Scratch {
        super::report_panics_at_once();
        let dir = tempfile::Builder::new()
            .prefix("nfsync-test-")
            .tempdir()
            .expect("create temporary directory");
        Scratch { dir: Some(dir) }
    }

    /// A fresh directory under `parent`.
    pub fn new_in(parent: &Path) -> Scratch {
        super::report_panics_at_once();
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

    /// A device node of `kind` (`libc::S_IFCHR` or `libc::S_IFBLK`), mode 0666 less the
    /// umask (root only).
    pub fn device(
        &self,
        rel: impl AsRef<Path>,
        kind: libc::mode_t,
        major: u32,
        minor: u32,
    ) -> &Self {
        let p = self.parent_of(rel.as_ref());
        let c = std::ffi::CString::new(p.as_os_str().as_bytes()).expect("no NUL in path");
        // SAFETY: c is a valid NUL-terminated path.
        let rc = unsafe { libc::mknod(c.as_ptr(), kind | 0o666, libc::makedev(major, minor)) };
        assert_eq!(
            rc,
            0,
            "mknod {}: {}",
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
