//! Paths the command line names (DEST, `--backup-dir`, `--link-dest`, `--log-file`,
//! `--files-from`, `--exclude-from`, ...) and merge files must not lead through a
//! symlink someone else controls.
//!
//! A symlink owned by another user (neither root nor us) in such a path could be
//! pointed, between our check and our use or before it, into a tree that is not
//! theirs to give: root reading "their" exclude file would read any file, and a
//! backup into "their" directory would write anywhere. rsync's rule is the one kept:
//! a symlink is followed only when root or the effective user owns it, and
//! `--insecure-links` turns the rule off ([`Trust`], passed to each function here:
//! the run's configuration carries it). [`open_at`] applies it while opening, one
//! component at a time by descriptor (`O_NOFOLLOW`, then `fstat` of the link
//! itself), so what was checked is what gets used. The kernel's
//! `fs.protected_symlinks` is the same rule, limited to sticky world-writable
//! directories.

use std::ffi::OsString;
use std::fs;
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStringExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};

use rustix::fs::{FileType, Mode, OFlags};
use rustix::io::Errno;

/// Why a path was refused.
#[derive(Debug, thiserror::Error)]
pub enum Untrusted {
    /// A symlink on the way belongs to someone else.
    #[error("{link}: symlink owned by uid {uid} (neither root nor us) is not followed")]
    ForeignLink {
        /// The link, as resolved so far.
        link: PathBuf,
        /// Its owner.
        uid: u32,
    },
    /// A symlink on an NFS server. nfsync resolves paths there with LOOKUP, which
    /// never follows a link, and the link's text is a path in the server's own
    /// namespace, which the client cannot map onto the export reliably (exports,
    /// pseudo-filesystems and junctions differ): refused whoever owns it.
    #[error(
        "{link}: symlink on the NFS server is not followed over nfs:// (name the directory it leads to)"
    )]
    ServerLink {
        /// The link, as a path on the server.
        link: PathBuf,
    },
}

/// The refusal of a symlink met on an NFS server at `link` (see
/// [`Untrusted::ServerLink`]).
pub fn server_link(link: PathBuf) -> io::Error {
    io::Error::other(Untrusted::ServerLink { link })
}

/// Most links resolved in one path, as the kernel's `ELOOP` limit.
const MAX_LINKS: usize = 40;

/// Which symlinks a path the command line names may lead through.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Trust {
    /// `--insecure-links`: every symlink, whoever owns it.
    insecure: bool,
}

impl Trust {
    /// rsync's rule: symlinks root or the effective user owns.
    pub const OWNED: Trust = Trust { insecure: false };

    /// The rule, or with `insecure_links` (`--insecure-links`) every symlink.
    pub fn new(insecure_links: bool) -> Trust {
        Trust {
            insecure: insecure_links,
        }
    }

    /// Whether a symlink owned by `uid` may be followed by a process running as `euid`.
    fn follows(self, uid: u32, euid: u32) -> bool {
        uid == 0 || uid == euid || self.insecure
    }
}

/// Opens `path` (absolute, or relative to `base`) with `flags`, following only
/// symlinks `trust` allows. With `make_dirs`, missing directories on the way (and a
/// missing last one when `flags` holds `DIRECTORY`) are made, mode 0755 less the umask.
pub fn open_at(
    trust: Trust,
    base: BorrowedFd<'_>,
    path: &Path,
    flags: OFlags,
    mode: Mode,
    make_dirs: bool,
) -> io::Result<OwnedFd> {
    let euid = rustix::process::geteuid().as_raw();
    let look = OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let dir = OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC;
    let root = || rustix::fs::open("/", dir, Mode::empty());
    let mut at = if path.is_absolute() {
        root()?
    } else {
        rustix::fs::openat(base, ".", dir, Mode::empty())?
    };
    // The path as resolved so far, to name a refused link.
    let mut seen = PathBuf::from(if path.is_absolute() { "/" } else { "" });
    let mut todo = Vec::new();
    push_front(&mut todo, path);
    let mut links = 0;
    let mut made = 0;
    while let Some(name) = todo.pop() {
        if name == ".." {
            at = rustix::fs::openat(&at, "..", dir, Mode::empty())?;
            seen.push("..");
            continue;
        }
        let last = todo.is_empty();
        let missing = |at: &OwnedFd, made: &mut usize| -> io::Result<()> {
            *made += 1;
            if *made > 1000 {
                return Err(Errno::LOOP.into());
            }
            match rustix::fs::mkdirat(at, &name, Mode::from_raw_mode(0o755)) {
                Ok(()) | Err(Errno::EXIST) => Ok(()),
                Err(e) => Err(e.into()),
            }
        };
        let mut refused = None;
        if last {
            match rustix::fs::openat(&at, &name, flags | OFlags::NOFOLLOW | OFlags::CLOEXEC, mode) {
                Ok(fd) => return Ok(fd),
                // Perhaps a symlink: looked at below.
                Err(e @ (Errno::LOOP | Errno::NOTDIR)) => refused = Some(e),
                Err(Errno::NOENT) if make_dirs && flags.contains(OFlags::DIRECTORY) => {
                    missing(&at, &mut made)?;
                    todo.push(name);
                    continue;
                }
                Err(e) => return Err(e.into()),
            }
        }
        let fd = match rustix::fs::openat(&at, &name, look, Mode::empty()) {
            Ok(fd) => fd,
            Err(Errno::NOENT) if make_dirs => {
                missing(&at, &mut made)?;
                todo.push(name);
                continue;
            }
            Err(e) => return Err(e.into()),
        };
        let st = rustix::fs::fstat(&fd)?;
        seen.push(&name);
        if FileType::from_raw_mode(st.st_mode) != FileType::Symlink {
            if let Some(e) = refused {
                return Err(e.into());
            }
            if FileType::from_raw_mode(st.st_mode) != FileType::Directory {
                return Err(Errno::NOTDIR.into());
            }
            at = fd;
            continue;
        }
        if !trust.follows(st.st_uid, euid) {
            return Err(io::Error::other(Untrusted::ForeignLink {
                link: seen,
                uid: st.st_uid,
            }));
        }
        links += 1;
        if links > MAX_LINKS {
            return Err(Errno::LOOP.into());
        }
        let target = rustix::fs::readlinkat(&fd, "", Vec::new())?;
        let target = PathBuf::from(OsString::from_vec(target.into_bytes()));
        seen.pop();
        if target.is_absolute() {
            at = root()?;
            seen = PathBuf::from("/");
        }
        push_front(&mut todo, &target);
    }
    // The path ended at a directory (`.`, `..`, `/`, a link to one): open it as asked.
    Ok(rustix::fs::openat(&at, ".", flags | OFlags::CLOEXEC, mode)?)
}

/// Whether `e` is a refusal of [`open_at`] (a symlink another user owns) or of a
/// symlink on an NFS server, which
/// callers that pass over a missing file pass over too, as rsync does.
pub fn is_refusal(e: &io::Error) -> bool {
    e.get_ref().is_some_and(|inner| inner.is::<Untrusted>())
}

/// Reads the file at `path` (absolute, or relative to the working directory),
/// following only the symlinks `trust` allows.
pub fn read(trust: Trust, path: &Path) -> io::Result<Vec<u8>> {
    use std::io::Read;
    let fd = open_at(
        trust,
        rustix::fs::CWD,
        path,
        OFlags::RDONLY | OFlags::NONBLOCK,
        Mode::empty(),
        false,
    )?;
    let mut f = fs::File::from(fd);
    let mut v = Vec::new();
    f.read_to_end(&mut v)?;
    Ok(v)
}

/// Opens (creating it, mode 0644 less the umask) the file at `path` for appending,
/// following only the symlinks `trust` allows: a leaf link of our own is followed,
/// as rsync follows it for `--log-file`.
pub fn open_append(trust: Trust, path: &Path) -> io::Result<fs::File> {
    let fd = open_at(
        trust,
        rustix::fs::CWD,
        path,
        OFlags::WRONLY | OFlags::APPEND | OFlags::CREATE,
        Mode::from_raw_mode(0o644),
        false,
    )?;
    Ok(fs::File::from(fd))
}

/// Opens the directory at `path` (absolute, or relative to `base`), following only
/// the symlinks `trust` allows; see [`open_at`] for `make_dirs`.
pub fn open_dir(
    trust: Trust,
    base: impl AsFd,
    path: &Path,
    make_dirs: bool,
) -> io::Result<OwnedFd> {
    open_at(
        trust,
        base.as_fd(),
        path,
        OFlags::RDONLY | OFlags::DIRECTORY,
        Mode::empty(),
        make_dirs,
    )
}

/// Resolves `path` one component at a time, as the kernel would, refusing at the
/// first symlink owned by anyone but root and `euid`. A component that cannot be
/// looked at ends the check: DEST may still have to be created (its missing parts
/// are ours), and any other failure is the use's to report, in its own words.
pub fn check(trust: Trust, path: &Path, euid: u32) -> Result<(), Untrusted> {
    let mut todo: Vec<OsString> = Vec::new();
    let start = if path.is_absolute() {
        PathBuf::from("/")
    } else {
        match std::env::current_dir() {
            Ok(d) => d,
            Err(_) => return Ok(()),
        }
    };
    push_front(&mut todo, path);
    let mut at = start;
    let mut links = 0;
    while let Some(c) = todo.pop() {
        if c == ".." {
            at.pop();
            continue;
        }
        let next = at.join(&c);
        let Ok(m) = fs::symlink_metadata(&next) else {
            return Ok(());
        };
        if !m.file_type().is_symlink() {
            at = next;
            continue;
        }
        if !trust.follows(m.uid(), euid) {
            return Err(Untrusted::ForeignLink {
                link: next,
                uid: m.uid(),
            });
        }
        links += 1;
        let (true, Ok(target)) = (links <= MAX_LINKS, fs::read_link(&next)) else {
            return Ok(());
        };
        if target.is_absolute() {
            at = PathBuf::from("/");
        }
        push_front(&mut todo, &target);
    }
    Ok(())
}

/// Puts `p`'s components in front of those still to resolve (`todo` is a stack).
fn push_front(todo: &mut Vec<OsString>, p: &Path) {
    for c in p.components().rev() {
        match c {
            Component::Normal(n) => todo.push(n.to_owned()),
            Component::ParentDir => todo.push("..".into()),
            Component::CurDir | Component::RootDir | Component::Prefix(_) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn foreign_links_are_refused_and_ours_followed() {
        let tmp = tempfile::tempdir().unwrap();
        let t = tmp.path();
        fs::create_dir(t.join("real")).unwrap();
        fs::write(t.join("real/f"), b"x").unwrap();
        symlink("real", t.join("ours")).unwrap();
        symlink(t.join("ours"), t.join("abs")).unwrap();
        let me = rustix::process::geteuid().as_raw();
        assert!(check(Trust::OWNED, &t.join("ours/f"), me).is_ok());
        assert!(check(Trust::OWNED, &t.join("abs/f"), me).is_ok());
        assert!(check(Trust::OWNED, &t.join("ours/../real/missing/deeper"), me).is_ok());
        if me == 0 {
            rustix::fs::chownat(
                rustix::fs::CWD,
                t.join("ours"),
                Some(rustix::fs::Uid::from_raw(4321)),
                None,
                rustix::fs::AtFlags::SYMLINK_NOFOLLOW,
            )
            .unwrap();
            let e = check(Trust::OWNED, &t.join("abs/f"), me)
                .unwrap_err()
                .to_string();
            assert!(e.contains("ours: symlink owned by uid 4321"), "{e}");
            assert!(check(Trust::OWNED, &t.join("real/f"), me).is_ok());
        }
    }

    #[test]
    fn the_walk_follows_our_links_makes_dirs_and_refuses_foreign_ones() {
        let tmp = tempfile::tempdir().unwrap();
        let t = tmp.path();
        fs::create_dir_all(t.join("real/sub")).unwrap();
        fs::write(t.join("real/sub/f"), b"x").unwrap();
        symlink("real", t.join("ours")).unwrap();
        symlink("../real/sub/f", t.join("real/leaf")).unwrap();
        let base = fs::File::open(t).unwrap();
        assert_eq!(
            read(Trust::OWNED, &t.join("ours/sub/../sub/f")).unwrap(),
            b"x"
        );
        assert_eq!(read(Trust::OWNED, &t.join("ours/leaf")).unwrap(), b"x");
        open_dir(Trust::OWNED, &base, Path::new("ours/new/deeper"), true).unwrap();
        assert!(t.join("real/new/deeper").is_dir());
        let e = open_dir(Trust::OWNED, &base, Path::new("real/sub/f"), false).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::ENOTDIR));
        if rustix::process::geteuid().is_root() {
            for link in ["ours", "real/leaf"] {
                rustix::fs::chownat(
                    rustix::fs::CWD,
                    t.join(link),
                    Some(rustix::fs::Uid::from_raw(4321)),
                    None,
                    rustix::fs::AtFlags::SYMLINK_NOFOLLOW,
                )
                .unwrap();
            }
            let e = read(Trust::OWNED, &t.join("ours/sub/f")).unwrap_err();
            assert!(is_refusal(&e), "{e}");
            assert!(
                e.to_string().contains("ours: symlink owned by uid 4321"),
                "{e}"
            );
            let e = open_dir(Trust::OWNED, &base, Path::new("ours/new2"), true).unwrap_err();
            assert!(is_refusal(&e) && !t.join("real/new2").exists(), "{e}");
            assert!(is_refusal(
                &read(Trust::OWNED, &t.join("real/leaf")).unwrap_err()
            ));
            // --insecure-links: followed, whoever owns them.
            let insecure = Trust::new(true);
            assert_eq!(read(insecure, &t.join("ours/sub/f")).unwrap(), b"x");
            assert!(check(insecure, &t.join("ours/sub/f"), 0).is_ok());
            assert_eq!(read(Trust::OWNED, &t.join("real/sub/f")).unwrap(), b"x");
        }
    }
}
