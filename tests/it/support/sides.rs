//! Side by side with rsync: rsync and nfsync run with the same options from the same
//! source onto two copies of the same starting destination, `by_rsync` and `by_nfsync`
//! in one scratch directory, and the two results are compared with
//! `rsync -anciH --delete` (empty: nfsync did what rsync does). rsync writes its copy
//! locally; nfsync reaches its own [`Via`] the mount path or an NFS server.
//!
//! [`Sides`] is the scratch directory and the two runs. Most comparisons start from
//! [`source`] and [`start`] ([`Sides::standard`]), and [`against_rsync`] is the whole
//! comparison of a command line on them. A test with trees of its own builds them in
//! the scratch directory and copies its start to both sides ([`Sides::copy_start`]); one
//! whose options reach beyond DEST (a backup directory, a previous snapshot, the source
//! itself) makes that start a whole world and runs into a directory of it.

use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use filetime::FileTime;

use super::dirfs::DirFs;
use super::ganesha::Export;
use super::inproc::Server;
use super::{
    RUN_TIMEOUT, Scratch, Tree, bin, copy_tree, describe, is_root, rsync_diff_with, slash,
};

/// Where nfsync writes its copy.
#[derive(Clone, Copy)]
pub enum Via<'a> {
    /// A local directory (the mount path).
    Mount,
    /// The in-process NFSv3 server, serving the scratch directory (no MKNOD, no LINK).
    InProc,
    /// An nfs-ganesha export, which then holds the scratch directory.
    Ganesha(&'a Export),
}

/// One of the two programs, and its copy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    Rsync,
    Nfsync,
}

impl Side {
    /// `rsync` or `nfsync`.
    pub fn name(self) -> &'static str {
        match self {
            Side::Rsync => "rsync",
            Side::Nfsync => "nfsync",
        }
    }

    /// Its copy's directory below the scratch directory: `by_rsync` or `by_nfsync`.
    pub fn dir(self) -> &'static str {
        match self {
            Side::Rsync => "by_rsync",
            Side::Nfsync => "by_nfsync",
        }
    }
}

/// What the two runs gave.
pub struct Ran {
    pub rsync: Output,
    pub nfsync: Output,
    pub nfsync_took: Duration,
}

/// The scratch directory of a side-by-side comparison, which nfsync reaches [`Via`] its
/// way: the in-process server serving it lives as long as this.
pub struct Sides {
    /// Stopped before the directory it serves goes.
    server: Option<Server>,
    /// The ganesha export that holds the directory.
    export: Option<Export>,
    s: Scratch,
}

impl Sides {
    /// An empty scratch directory.
    pub fn new(via: Via<'_>) -> Sides {
        let s = match via {
            Via::Ganesha(export) => Scratch::new_in(&export.path),
            Via::Mount | Via::InProc => Scratch::new(),
        };
        let server = matches!(via, Via::InProc).then(|| Server::start(None, DirFs::new(s.path())));
        let export = match via {
            Via::Ganesha(export) => Some(export.clone()),
            Via::Mount | Via::InProc => None,
        };
        Sides { server, export, s }
    }

    /// [`source`] in `src`, [`start`] in `start`, `setup(src, start)` for what a test
    /// needs beyond them, and that start copied to both sides.
    pub fn standard(via: Via<'_>, setup: impl FnOnce(&Tree, &Tree)) -> Sides {
        let sides = Sides::new(via);
        setup(&source(&sides.join("src")), &start(&sides.join("start")));
        sides.copy_start("start");
        sides
    }

    pub fn path(&self) -> &Path {
        self.s.path()
    }

    pub fn join(&self, rel: impl AsRef<Path>) -> PathBuf {
        self.s.join(rel)
    }

    /// `rel` in rsync's copy.
    pub fn rsync(&self, rel: &str) -> PathBuf {
        self.join(Side::Rsync.dir()).join(rel)
    }

    /// `rel` in nfsync's copy.
    pub fn nfsync(&self, rel: &str) -> PathBuf {
        self.join(Side::Nfsync.dir()).join(rel)
    }

    /// Copies the tree `start` (below the scratch directory) to both sides, in place of
    /// what they held.
    pub fn copy_start(&self, start: &str) {
        for side in [Side::Rsync, Side::Nfsync] {
            let _ = fs::remove_dir_all(self.join(side.dir()));
            copy_tree(&self.join(start), &self.join(side.dir()));
        }
    }

    /// `rel` (below the scratch directory) as nfsync's DEST: its path as written (a
    /// trailing slash kept) on the mount path, else its `nfs://` URL.
    pub fn dest(&self, rel: &str) -> OsString {
        match (&self.server, &self.export) {
            (Some(server), _) => server
                .url(&format!("/{}", rel.trim_end_matches('/')))
                .into(),
            (None, Some(export)) => {
                let path = self.join(rel.trim_end_matches('/'));
                let rel = path.strip_prefix(&export.path).unwrap().to_str().unwrap();
                export.url(rel, "").into()
            }
            (None, None) => self.join(rel).into_os_string(),
        }
    }

    /// Runs rsync, then nfsync, each with what `args` gives its side (options, SRC
    /// operands, environment) and then its DEST: `into` below the side's directory, as
    /// written (`""`: the directory itself, `DIR/`), through [`Sides::dest`] for nfsync.
    /// Both read `stdin`.
    pub fn run(&self, into: &str, stdin: &[u8], args: &dyn Fn(Side, &mut Command)) -> Ran {
        self.run_both(into, stdin, args, false)
    }

    /// [`Sides::run`], where both must succeed.
    pub fn run_ok(&self, into: &str, stdin: &[u8], args: &dyn Fn(Side, &mut Command)) -> Ran {
        self.run_both(into, stdin, args, true)
    }

    fn run_both(
        &self,
        into: &str,
        stdin: &[u8],
        args: &dyn Fn(Side, &mut Command),
        must_succeed: bool,
    ) -> Ran {
        let run = |side: Side, mut cmd: Command| {
            args(side, &mut cmd);
            let dest = format!("{}/{into}", side.dir());
            cmd.arg(match side {
                Side::Rsync => self.join(&dest).into_os_string(),
                Side::Nfsync => self.dest(&dest),
            });
            let line = format!("{cmd:?}");
            let out = assert_cmd::Command::from_std(cmd)
                .timeout(RUN_TIMEOUT)
                .write_stdin(stdin)
                .output()
                .unwrap_or_else(|e| panic!("{line}: {e}"));
            assert!(
                out.status.success() || !must_succeed,
                "{line}: {}",
                describe(&out)
            );
            out
        };
        let rsync = run(Side::Rsync, Command::new("rsync"));
        let started = Instant::now();
        let nfsync = run(Side::Nfsync, Command::new(bin()));
        Ran {
            rsync,
            nfsync,
            nfsync_took: started.elapsed(),
        }
    }

    /// Asserts that rsync changed its copy of the tree `start` (compared with `extra`,
    /// as [`Sides::diff`] will be): else comparing the two copies proves nothing.
    pub fn assert_rsync_changed(&self, start: &str, extra: &[&str], what: &str) {
        let changed = rsync_diff_with(&self.join(start), &self.join(Side::Rsync.dir()), extra);
        assert!(!changed.is_empty(), "rsync {what} changed nothing");
    }

    /// Gives both copies' own directory the mtime `t`. Where no source directory is
    /// their copy (no `SRC/` operand), neither tool sets it: it is when each last
    /// created something in it, seconds apart on a loaded machine.
    pub fn set_dest_mtimes(&self, t: FileTime) {
        for side in [Side::Rsync, Side::Nfsync] {
            filetime::set_file_mtime(self.join(side.dir()), t).unwrap();
        }
    }

    /// `rsync -anciH --delete EXTRA by_rsync/ by_nfsync/`: what would change to make
    /// nfsync's copy rsync's, empty when it is.
    pub fn diff(&self, extra: &[&str]) -> String {
        rsync_diff_with(
            &self.join(Side::Rsync.dir()),
            &self.join(Side::Nfsync.dir()),
            extra,
        )
    }
}

/// Runs `rsync FLAGS SRCS DEST` and `nfsync FLAGS SRCS DEST` (SRCS: `operands` below
/// the source, `""` for `SRC/` itself) onto copies of [`start`], and returns the
/// difference between the two results (`rsync -anciH --delete` and `compare_extra`:
/// e.g. `--no-t` where neither keeps times, so the copy's own clock does not count).
pub fn against_rsync(flags: &[&str], operands: &[&str], compare_extra: &[&str]) -> String {
    against_rsync_via(Via::Mount, flags, operands, compare_extra)
}

/// [`against_rsync`], nfsync writing `via`.
pub fn against_rsync_via(
    via: Via<'_>,
    flags: &[&str],
    operands: &[&str],
    compare_extra: &[&str],
) -> String {
    against_rsync_setup(via, flags, operands, compare_extra, &|_, _| {})
}

/// [`against_rsync_via`] with `setup(SRC, START)` run on the source and the starting
/// destination once they are built, for trees a test needs beyond [`source`] and [`start`].
pub fn against_rsync_setup(
    via: Via<'_>,
    flags: &[&str],
    operands: &[&str],
    compare_extra: &[&str],
    setup: &dyn Fn(&Path, &Path),
) -> String {
    let sides = Sides::standard(via, |src, start| setup(src.root(), start.root()));
    let srcs: Vec<OsString> = operands
        .iter()
        .map(|o| match *o {
            "" => slash(&sides.join("src")),
            o => sides.join("src").join(o).into_os_string(),
        })
        .collect();
    sides.run_ok("", b"", &|_, cmd| {
        cmd.args(flags).args(&srcs);
    });
    // Without a `SRC/` operand the destination root is no source directory's copy: it
    // is compared as the start's.
    if !operands.contains(&"") {
        let start = fs::symlink_metadata(sides.join("start")).unwrap();
        sides.set_dest_mtimes(FileTime::from_last_modification_time(&start));
    }
    sides.assert_rsync_changed("start", &[], &format!("{flags:?}"));
    sides.diff(compare_extra)
}

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
        t.device("dev", libc::S_IFCHR, 1, 3);
    }
    t.age()
        .mtime("same", 1_600_000_000, 0)
        .mtime("older", 1_600_000_000, 0)
        .mtime("newer", 1_600_000_000, 0)
        .mtime("same_size_newer", 1_600_000_000, 0)
        .mtime("ns_only", 1_600_000_000, 100);
    t
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
