//! The side-by-side harness: rsync and nfsync run with the same options from the same
//! source onto two copies of the same starting destination, and the two results compared
//! with `rsync -anciH --delete` (empty: nfsync did what rsync does).

use std::fs;
use std::path::Path;
use std::process::Command;

use super::dirfs::DirFs;
use super::inproc::Server;
use super::{Scratch, Tree, copy_tree, describe, is_root, nfsync, slash};

/// The source: files of several sizes and modes (one setuid, one 0666 for the umask),
/// a symlink, a fifo, a device and another owner's file when root, a subdirectory.
pub fn source(root: &Path) -> Tree {
    let t = Tree::new(root);
    t.file("same", "same\n")
        .file("older", "new content\n")
        .file("newer", "source\n")
        .file("same_size_newer", "AAAA\n")
        .file("ns_only", "source\n")
        .file("world", "rw for all\n")
        .file("setuid", "#!/bin/sh\n")
        .random_file("big", 3000, 1)
        .random_file("sub/big2", 5000, 2)
        .file("sub/small", "s\n")
        .file("newdir/inner", "inner\n")
        .symlink("link", "same")
        .fifo("fifo")
        .chmod("world", 0o666)
        .chmod("setuid", 0o4755)
        .chmod("sub", 0o750);
    if is_root() {
        t.chown("sub/small", 1234, 2345);
        mknod_null(&t.path("dev"));
    }
    t.age()
        .mtime("same", 1_600_000_000, 0)
        .mtime("older", 1_600_000_000, 0)
        .mtime("newer", 1_600_000_000, 0)
        .mtime("same_size_newer", 1_600_000_000, 0)
        .mtime("ns_only", 1_600_000_000, 100);
    t
}

/// A character device like /dev/null.
fn mknod_null(p: &Path) {
    let c = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    let rc = unsafe { libc::mknod(c.as_ptr(), libc::S_IFCHR | 0o666, libc::makedev(1, 3)) };
    assert_eq!(rc, 0, "mknod: {}", std::io::Error::last_os_error());
}

/// The destination before the run: one file up to date, one older, one newer, one of
/// the same size but newer, one differing only in nanoseconds (and content), a mode
/// that differs, extras the source lacks.
pub fn start(root: &Path) -> Tree {
    let t = Tree::new(root);
    t.file("same", "same\n")
        .file("older", "old\n")
        .file("newer", "destination, newer\n")
        .file("same_size_newer", "BBBB\n")
        .file("ns_only", "dest!!\n")
        .file("extra", "extra\n")
        .file("sub/extra2", "extra\n")
        .file("sub/small", "x\n")
        .chmod("older", 0o600)
        .chmod("sub", 0o700)
        .age()
        .mtime("same", 1_600_000_000, 0)
        .mtime("older", 1_500_000_000, 0)
        .mtime("newer", 1_700_000_000, 0)
        .mtime("same_size_newer", 1_700_000_000, 0)
        .mtime("ns_only", 1_600_000_000, 900);
    t
}

/// Runs `rsync FLAGS SRCS DEST` and `nfsync FLAGS SRCS DEST` (SRCS: `operands` below
/// the source, `""` for `SRC/` itself) onto copies of [`start`], and returns the
/// difference between the two results (`rsync -anciH --delete` and `compare_extra`:
/// e.g. `--no-t` where neither keeps times, so the copy's own clock does not count).
pub fn against_rsync(flags: &[&str], operands: &[&str], compare_extra: &[&str]) -> String {
    against_rsync_via(Via::Mount, flags, operands, compare_extra)
}

/// Where nfsync writes in [`against_rsync_via`].
#[derive(Clone, Copy, PartialEq)]
pub enum Via {
    /// A local directory (the mount path).
    Mount,
    /// The in-process NFSv3 server's export (the NFS path; no MKNOD, no LINK there).
    InProc,
}

pub fn against_rsync_via(
    via: Via,
    flags: &[&str],
    operands: &[&str],
    compare_extra: &[&str],
) -> String {
    against_rsync_setup(via, flags, operands, compare_extra, &|_, _| {})
}

/// [`against_rsync_via`] with `setup(SRC, START)` run on the source and the starting
/// destination once they are built, for trees a test needs beyond [`source`] and [`start`].
pub fn against_rsync_setup(
    via: Via,
    flags: &[&str],
    operands: &[&str],
    compare_extra: &[&str],
    setup: &dyn Fn(&Path, &Path),
) -> String {
    let Sides {
        s,
        src,
        server: _server,
        dest,
    } = Sides::new(via, setup);
    let srcs: Vec<_> = operands
        .iter()
        .map(|o| match *o {
            "" => slash(src.root()),
            o => src.path(o).into_os_string(),
        })
        .collect();
    let out = Command::new("rsync")
        .args(flags)
        .args(&srcs)
        .arg(slash(&s.join("by_rsync")))
        .output()
        .unwrap();
    assert!(out.status.success(), "rsync {flags:?}: {}", describe(&out));
    let out = nfsync()
        .args(flags)
        .args(&srcs)
        .arg(&dest)
        .output()
        .unwrap();
    assert!(out.status.success(), "nfsync {flags:?}: {}", describe(&out));
    // Without a `SRC/` operand the destination root is no source directory's copy:
    // neither tool sets its mtime, which is when each last created something in it
    // (seconds apart on a loaded machine). It is compared as the start's.
    if !operands.contains(&"") {
        let start = fs::symlink_metadata(s.join("start")).unwrap();
        let t = filetime::FileTime::from_last_modification_time(&start);
        for side in ["by_rsync", "by_nfsync"] {
            filetime::set_file_mtime(s.join(side), t).unwrap();
        }
    }
    // The run must have changed something, or the comparison proves nothing.
    let changed = diff(&s.join("start"), &s.join("by_rsync"), &[]);
    assert!(!changed.is_empty(), "rsync {flags:?} changed nothing");
    diff(&s.join("by_rsync"), &s.join("by_nfsync"), compare_extra)
}

/// The scratch of a side-by-side run: the source tree, and the start tree copied to
/// `by_rsync` and `by_nfsync` (after `setup(source, start)`); `dest` is nfsync's
/// destination, through an in-process server with [`Via::InProc`], which lives as
/// long as this.
pub struct Sides {
    pub s: Scratch,
    pub src: Tree,
    pub server: Option<Server>,
    pub dest: std::ffi::OsString,
}

impl Sides {
    pub fn new(via: Via, setup: &dyn Fn(&Path, &Path)) -> Sides {
        let s = Scratch::new();
        let src = source(&s.join("src"));
        start(&s.join("start"));
        setup(src.root(), &s.join("start"));
        copy_tree(&s.join("start"), &s.join("by_rsync"));
        copy_tree(&s.join("start"), &s.join("by_nfsync"));
        let server = (via == Via::InProc).then(|| Server::start(None, DirFs::new(s.path())));
        let dest = match &server {
            Some(server) => server.url("/by_nfsync").into(),
            None => slash(&s.join("by_nfsync")),
        };
        Sides {
            s,
            src,
            server,
            dest,
        }
    }
}

/// `rsync -anciH --delete EXTRA A/ B/`: what would change to make B like A.
pub fn diff(a: &Path, b: &Path, extra: &[&str]) -> String {
    let out = Command::new("rsync")
        .args(["-anciH", "--delete"])
        .args(extra)
        .arg(slash(a))
        .arg(slash(b))
        .output()
        .unwrap();
    assert!(out.status.success(), "rsync compare: {}", describe(&out));
    String::from_utf8_lossy(&out.stdout).into_owned()
}
