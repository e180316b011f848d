//! Reading the small files the environment names (`AWS_WEB_IDENTITY_TOKEN_FILE`, the
//! shared credentials and config files, `AWS_CA_BUNDLE`, the container token file).
//!
//! Whoever sets the environment chooses these paths, and root reads them: a FIFO
//! there would hang the run before its first connection, `/dev/zero` would fill
//! memory, and a symlink someone else owns could lead root to read a file that is not
//! theirs to show. So the path is opened under `--log-file`'s symlink rule
//! ([`crate::options::trust`]: only links root or we own are followed; Kubernetes'
//! projected token files are root's links), non-blocking, and must be a regular file
//! of at most [`MAX`] bytes. Each refusal names the path and why.

use std::fs;
use std::io::{self, Read};
use std::os::fd::OwnedFd;
use std::path::Path;

use rustix::fs::{FileType, Mode, OFlags};

use crate::options::trust::{self, Trust};

/// Credentials, tokens, keys and CA bundles are kilobytes; a megabyte is plenty.
pub const MAX: u64 = 1 << 20;

/// Checks that `fd` (opened from `path`) is a regular file of at most `max` bytes and
/// reads it. `what` names the file in errors ("AWS_WEB_IDENTITY_TOKEN_FILE").
pub fn read_fd(fd: OwnedFd, path: &Path, what: &str, max: u64) -> Result<Vec<u8>, String> {
    let shown = path.display();
    let st = rustix::fs::fstat(&fd).map_err(|e| format!("{what} {shown}: {e}"))?;
    if FileType::from_raw_mode(st.st_mode) != FileType::RegularFile {
        return Err(format!("{what} {shown} is not a regular file: refusing it"));
    }
    let too_big = || format!("{what} {shown} is larger than {max} bytes: refusing it");
    if u64::try_from(st.st_size).map_or(true, |n| n > max) {
        return Err(too_big());
    }
    let mut out = Vec::new();
    // The size may grow after fstat: never read more than one byte past the limit.
    fs::File::from(fd)
        .take(max.saturating_add(1))
        .read_to_end(&mut out)
        .map_err(|e| format!("reading {what} {shown}: {e}"))?;
    if out.len() as u64 > max {
        return Err(too_big());
    }
    Ok(out)
}

/// The file at `path`, read as the module doc says. `Err(None)`: there is no such
/// file (callers that pass over a missing file say so in their own words).
pub fn read_small(path: &Path, what: &str) -> Result<Vec<u8>, Option<String>> {
    let fd = trust::open_at(
        Trust::OWNED,
        rustix::fs::CWD,
        path,
        OFlags::RDONLY | OFlags::NONBLOCK,
        Mode::empty(),
        false,
    )
    .map_err(|e| match e.kind() {
        io::ErrorKind::NotFound => None,
        _ => Some(format!("{what} {}: {e}", path.display())),
    })?;
    read_fd(fd, path, what, MAX).map_err(Some)
}

/// [`read_small`] as text, a missing file being an error like any other.
pub fn read_text(path: &Path, what: &str) -> Result<String, String> {
    let raw = read_small(path, what)
        .map_err(|e| e.unwrap_or_else(|| format!("{what} {}: no such file", path.display())))?;
    String::from_utf8(raw).map_err(|_| format!("{what} {} is not UTF-8 text", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;
    use std::time::Duration;

    /// A FIFO is refused at once (opening it non-blocking, nobody writing), not waited on.
    #[test]
    fn a_fifo_is_refused_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("token");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &fifo,
            FileType::Fifo,
            Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let f = fifo.clone();
        std::thread::spawn(move || tx.send(read_text(&f, "AWS_WEB_IDENTITY_TOKEN_FILE")));
        let e = rx
            .recv_timeout(Duration::from_secs(5))
            .expect("reading a FIFO blocked")
            .unwrap_err();
        assert!(
            e.contains("not a regular file") && e.contains("/token"),
            "{e}"
        );
    }

    #[test]
    fn an_oversize_file_is_refused_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let big = dir.path().join("credentials");
        fs::write(&big, vec![b'x'; MAX as usize + 1]).unwrap();
        let e = read_text(&big, "AWS_SHARED_CREDENTIALS_FILE").unwrap_err();
        assert!(
            e.contains("larger than") && e.contains("/credentials"),
            "{e}"
        );
        fs::write(&big, vec![b'x'; MAX as usize]).unwrap();
        assert_eq!(read_text(&big, "x").unwrap().len(), MAX as usize);
        assert_eq!(read_small(&dir.path().join("none"), "x"), Err(None));
        let e = read_text(dir.path(), "x").unwrap_err();
        assert!(e.contains("not a regular file"), "{e}");
    }

    /// The symlink rule: our own link is followed, another user's is not.
    #[test]
    fn a_foreign_symlink_is_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("real"), "tok").unwrap();
        let link = dir.path().join("link");
        symlink("real", &link).unwrap();
        assert_eq!(read_text(&link, "x").unwrap(), "tok");
        if !rustix::process::geteuid().is_root() {
            return;
        }
        rustix::fs::chownat(
            rustix::fs::CWD,
            &link,
            Some(rustix::fs::Uid::from_raw(65534)),
            None,
            rustix::fs::AtFlags::SYMLINK_NOFOLLOW,
        )
        .unwrap();
        let e = read_text(&link, "AWS_CONFIG_FILE").unwrap_err();
        assert!(e.contains("symlink owned by uid 65534"), "{e}");
    }
}
