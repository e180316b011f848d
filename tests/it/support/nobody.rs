//! Running nfsync as `nobody` (uid 65534) while the tests run as root, where permission
//! problems are real: root reads mode-000 files and writes into read-only directories.
//! Not root, the helpers run nfsync directly: the caller already lacks root's powers.

use std::ffi::OsStr;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::OnceLock;
use std::time::Duration;

use super::{RUN_TIMEOUT, Scratch, is_root};

/// `setpriv` options that make the command that follows run as nobody.
pub const SETPRIV: [&str; 4] = ["--reuid=65534", "--regid=65534", "--clear-groups", "--"];

/// The variable that tells a test process run as nobody where its nfsync copy is.
pub const BIN_VAR: &str = "NFSYNC_BIN";

/// True when nobody may execute `path` (every directory above it searchable).
pub fn can_run(path: &Path) -> bool {
    std::process::Command::new("setpriv")
        .args(SETPRIV)
        .arg("test")
        .arg("-x")
        .arg(path)
        .status()
        .is_ok_and(|s| s.success())
}

/// Where [`runnable`] puts its copies: made once per test process, removed at its exit.
static COPIES: OnceLock<PathBuf> = OnceLock::new();

extern "C" fn remove_copies() {
    if let Some(dir) = COPIES.get() {
        let _ = fs::remove_dir_all(dir);
    }
}

/// `path` if nobody can execute it there, else a copy nobody can execute in a directory
/// under /tmp (target/ may be under a private home).
pub fn runnable(path: &Path) -> PathBuf {
    if can_run(path) {
        return path.to_path_buf();
    }
    let dir = COPIES.get_or_init(|| {
        let dir = tempfile::Builder::new()
            .prefix("nfsync-bin-")
            .tempdir_in("/tmp")
            .unwrap()
            .keep();
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o755)).unwrap();
        // SAFETY: registering a plain extern "C" function.
        unsafe { libc::atexit(remove_copies) };
        dir
    });
    let copy = dir.join(path.file_name().expect("a binary has a file name"));
    if !copy.exists() {
        fs::copy(path, &copy).unwrap();
        fs::set_permissions(&copy, fs::Permissions::from_mode(0o755)).unwrap();
    }
    copy
}

/// The nfsync binary at a path nobody can execute.
pub fn bin() -> PathBuf {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| runnable(&super::bin())).clone()
}

/// Runs nfsync with `args` so that reading a mode-000 file really fails: as root, as
/// nobody through setpriv (hand the tree to nobody first, see [`hand_over`]); otherwise
/// directly.
pub fn run(args: &[&OsStr]) -> Output {
    if !is_root() {
        return super::nfsync().args(args).output().unwrap();
    }
    let bin = bin();
    for _ in 0..50 {
        let out = assert_cmd::Command::new("setpriv")
            .timeout(RUN_TIMEOUT)
            .args(SETPRIV)
            .arg(&bin)
            .args(args)
            .output()
            .expect("run setpriv (util-linux)");
        // A copied binary can be briefly "busy" while another test thread's child
        // still holds the fd it was written through; try again.
        if out.status.code() == Some(126) && String::from_utf8_lossy(&out.stderr).contains("busy") {
            std::thread::sleep(Duration::from_millis(50));
            continue;
        }
        return out;
    }
    panic!("{} stayed busy", bin.display());
}

/// Makes a scratch tree usable by nobody when root: everything owned by 65534.
pub fn hand_over(root: &Path) {
    if !is_root() {
        return;
    }
    let status = std::process::Command::new("chown")
        .args(["-R", "-h", "65534:65534"])
        .arg(root)
        .status()
        .unwrap();
    assert!(status.success());
}

/// A scratch directory nobody can use: under /tmp, whose parents every user can
/// traverse (TMPDIR might not be), and writable by all.
pub fn scratch() -> Scratch {
    let s = if is_root() {
        Scratch::new_in(Path::new("/tmp"))
    } else {
        Scratch::new()
    };
    fs::set_permissions(s.path(), fs::Permissions::from_mode(0o777)).unwrap();
    s
}
