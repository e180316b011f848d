//! A tmpfs mounted over a directory for the life of a value (root only): another
//! filesystem (renames into it fail with EXDEV), a read-only one, or a tiny one.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A tmpfs mounted at its path; unmounted on drop, also when the test fails.
pub struct Tmpfs(pub PathBuf);

impl Tmpfs {
    /// Mounts one at `at` (made if missing) with the mount options `opts`
    /// (`defaults`, `ro`, `size=64k`); `None` when that is not possible here.
    pub fn mount(at: &Path, opts: &str) -> Option<Tmpfs> {
        fs::create_dir_all(at).unwrap();
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", opts, "tmpfs"])
            .arg(at)
            .status()
            .is_ok_and(|s| s.success());
        ok.then(|| Tmpfs(at.to_path_buf()))
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}
