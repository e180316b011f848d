//! Where the host's client key is kept, and who may have put it there.
//!
//! One key per host, in a file of mode 0600, so every run (and every concurrent run)
//! signs with the same key. As root `/var/lib/nfsync/efs-client-key.pem`; otherwise
//! `$XDG_STATE_HOME/nfsync/efs-client-key.pem`, `$XDG_STATE_HOME` defaulting to
//! `~/.local/state` (the XDG base directory spec's place for state that survives a
//! reboot but is not worth backing up). `NFSYNC_EFS_KEY` names another file.
//!
//! Every IAM-signed certificate binds the signature to this key, so whoever can choose
//! the key can use the certificates. The file is therefore used only when it is what
//! we made: a regular file (never through a final symlink), owned by root or us, that
//! no one else may write or read; the directories on the way obey `--log-file`'s
//! symlink rule ([`crate::options::trust`]), and `NFSYNC_EFS_KEY` is no exception. A
//! refusal says which file and why, and leaves fixing it to the user (a silently
//! replaced key would hide that someone tampered with it).
//!
//! A new key is written into an unnamed `O_TMPFILE` and linked in whole with `linkat`:
//! a crash leaves nothing behind, and concurrent runs cannot see half a key. Where the
//! file system has no `O_TMPFILE`, a named temporary file is used and removed on every
//! path but a crash.

use std::io::{self, Write};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};

use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use rustix::io::Errno;

use super::file;
use super::key::ClientKey;
use crate::options::trust::{self, Trust};

/// The file's name when none is given.
const FILE_NAME: &str = "efs-client-key.pem";

/// Where the host's key lives (see the module doc).
pub fn default_path() -> Option<PathBuf> {
    let is_root = rustix::process::geteuid().is_root();
    path_for(is_root, &|k| std::env::var_os(k).filter(|v| !v.is_empty()))
}

fn path_for(is_root: bool, env: &dyn Fn(&str) -> Option<std::ffi::OsString>) -> Option<PathBuf> {
    if let Some(p) = env("NFSYNC_EFS_KEY") {
        return Some(PathBuf::from(p));
    }
    let dir = if is_root {
        PathBuf::from("/var/lib/nfsync")
    } else if let Some(s) = env("XDG_STATE_HOME") {
        PathBuf::from(s).join("nfsync")
    } else {
        PathBuf::from(env("HOME")?).join(".local/state/nfsync")
    };
    Some(dir.join(FILE_NAME))
}

/// Why there is no key from [`load_or_create`].
#[derive(Debug)]
pub enum Failed {
    /// There is no place to keep one: its directory cannot be reached or made, or the
    /// file cannot be written there (a read-only filesystem, no permission, full).
    Place(String),
    /// A key file is there and must not be used, or the key cannot be made.
    Refused(String),
}

impl std::fmt::Display for Failed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failed::Place(s) | Failed::Refused(s) => f.write_str(s),
        }
    }
}

/// Whether `e` says the place cannot hold a key rather than that something there is
/// refused.
fn no_place(e: Errno) -> bool {
    matches!(
        e,
        Errno::ROFS | Errno::ACCESS | Errno::PERM | Errno::NOENT | Errno::NOSPC | Errno::DQUOT
    )
}

/// The key at `path`, made (mode 0600, its directory 0700) if there is none.
///
/// Concurrent runs may both make one; each links a complete file into place, so the
/// loser takes the winner's key.
pub fn load_or_create(path: &Path) -> Result<ClientKey, Failed> {
    let shown = path.display();
    let name = path
        .file_name()
        .ok_or_else(|| Failed::Refused(format!("key file {shown} names no file")))?;
    let dir = open_dir(path)?;
    if let Some(key) = open_key(&dir, name, path).map_err(Failed::Refused)? {
        return Ok(key);
    }
    let key = ClientKey::generate().map_err(Failed::Refused)?;
    match link_new(&dir, name, key.to_pem().as_bytes()) {
        Ok(()) => Ok(key),
        // Another run linked its key first: that one is the host's.
        Err(Errno::EXIST) => open_key(&dir, name, path)
            .map_err(Failed::Refused)?
            .ok_or_else(|| Failed::Refused(format!("key file {shown} vanished while it was made"))),
        Err(e) => {
            let why = format!("writing the EFS client key {shown}: {e}");
            Err(match no_place(e) {
                true => Failed::Place(why),
                false => Failed::Refused(why),
            })
        }
    }
}

/// The directory the key file is in, made if missing (the last one 0700: it holds a
/// private key), reached under the symlink rule.
fn open_dir(path: &Path) -> Result<OwnedFd, Failed> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let refused = |e: io::Error| {
        let why = format!("key file {}: {e}", path.display());
        match e.raw_os_error().map(Errno::from_raw_os_error) {
            Some(e) if no_place(e) => Failed::Place(why),
            _ => Failed::Refused(why),
        }
    };
    let open = |p: &Path, make: bool| trust::open_dir(Trust::OWNED, rustix::fs::CWD, p, make);
    match open(dir, false) {
        Ok(fd) => return Ok(fd),
        Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(refused(e)),
        Err(_) => {}
    }
    if let (Some(up), Some(last)) = (dir.parent(), dir.file_name()) {
        let up = if up.as_os_str().is_empty() {
            Path::new(".")
        } else {
            up
        };
        let up = open(up, true).map_err(refused)?;
        match rustix::fs::mkdirat(&up, last, Mode::from_raw_mode(0o700)) {
            Ok(()) | Err(Errno::EXIST) => {}
            Err(e) => return Err(refused(e.into())),
        }
    }
    open(dir, true).map_err(refused)
}

/// The key in `dir`, if there is one there; an error if there is one we must not use.
fn open_key(
    dir: &OwnedFd,
    name: &std::ffi::OsStr,
    path: &Path,
) -> Result<Option<ClientKey>, String> {
    let shown = path.display();
    let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
    let fd = match rustix::fs::openat(dir, name, flags, Mode::empty()) {
        Ok(fd) => fd,
        Err(Errno::NOENT) => return Ok(None),
        Err(Errno::LOOP) => {
            return Err(format!(
                "key file {shown} is a symlink: refusing it (name the file itself)"
            ));
        }
        Err(e) => return Err(format!("reading the EFS client key {shown}: {e}")),
    };
    let st = rustix::fs::fstat(&fd).map_err(|e| format!("key file {shown}: {e}"))?;
    let euid = rustix::process::geteuid().as_raw();
    if let Some(why) = untrusted(st.st_mode, st.st_uid, euid) {
        return Err(format!("key file {shown} {why}"));
    }
    let pem = file::read_fd(fd, path, "key file", file::MAX)?;
    ClientKey::from_pem(&pem)
        .map(Some)
        .map_err(|e| format!("key file {shown}: {e}"))
}

/// Why a key file of `mode` owned by `uid` must not be used by `euid`, with what to do.
fn untrusted(mode: u32, uid: u32, euid: u32) -> Option<String> {
    if FileType::from_raw_mode(mode) != FileType::RegularFile {
        return Some("is not a regular file: refusing it".into());
    }
    if uid != 0 && uid != euid {
        return Some(format!(
            "is owned by uid {uid} (neither root nor us): refusing it (remove it, and a new \
             key is made)"
        ));
    }
    let why = [
        (0o020, "group-writable"),
        (0o002, "writable by others"),
        (0o040, "group-readable"),
        (0o004, "readable by others"),
    ]
    .into_iter()
    .find(|(bit, _)| mode & bit != 0)?
    .1;
    Some(format!("is {why}: refusing it (chmod 600)"))
}

/// Links a new file holding `pem` into `dir` as `name`, whole or not at all.
fn link_new(dir: &OwnedFd, name: &std::ffi::OsStr, pem: &[u8]) -> Result<(), Errno> {
    let mode = Mode::from_raw_mode(0o600);
    let unnamed = OFlags::TMPFILE | OFlags::WRONLY | OFlags::CLOEXEC;
    let fd = match rustix::fs::openat(dir, ".", unnamed, mode) {
        Ok(fd) => fd,
        // No O_TMPFILE on this file system (or kernel).
        Err(Errno::OPNOTSUPP | Errno::ISDIR | Errno::INVAL) => {
            return link_named(dir, name, pem);
        }
        Err(e) => return Err(e),
    };
    write_synced(&fd, pem)?;
    // `AT_EMPTY_PATH` needs CAP_DAC_READ_SEARCH; `/proc/self/fd` works for anyone
    // (open(2)), where /proc is mounted.
    let proc = format!("/proc/self/fd/{}", fd.as_raw_fd());
    let linked =
        match rustix::fs::linkat(rustix::fs::CWD, &proc, dir, name, AtFlags::SYMLINK_FOLLOW) {
            Err(Errno::NOENT) => rustix::fs::linkat(&fd, "", dir, name, AtFlags::EMPTY_PATH),
            r => r,
        };
    linked?;
    let _ = rustix::fs::fsync(dir);
    Ok(())
}

/// [`link_new`] through a named temporary file, removed whatever happens.
fn link_named(dir: &OwnedFd, name: &std::ffi::OsStr, pem: &[u8]) -> Result<(), Errno> {
    static MADE: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let tmp = format!(
        ".efs-client-key.{}.{}.tmp",
        rustix::process::getpid().as_raw_nonzero(),
        MADE.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    );
    let flags = OFlags::CREATE | OFlags::EXCL | OFlags::WRONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let fd = rustix::fs::openat(dir, &tmp, flags, Mode::from_raw_mode(0o600))?;
    let linked = write_synced(&fd, pem)
        .and_then(|()| rustix::fs::linkat(dir, &tmp, dir, name, AtFlags::empty()));
    let _ = rustix::fs::unlinkat(dir, &tmp, AtFlags::empty());
    linked?;
    let _ = rustix::fs::fsync(dir);
    Ok(())
}

fn write_synced(fd: &OwnedFd, data: &[u8]) -> Result<(), Errno> {
    let mut f = std::fs::File::from(fd.as_fd().try_clone_to_owned().map_err(errno)?);
    f.write_all(data).map_err(errno)?;
    f.sync_all().map_err(errno)
}

fn errno(e: io::Error) -> Errno {
    Errno::from_io_error(&e).unwrap_or(Errno::IO)
}

#[cfg(test)]
#[path = "key_store_tests.rs"]
mod tests;
