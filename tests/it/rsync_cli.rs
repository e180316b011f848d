//! Issue 16: an rsync user's command line works unchanged.
//!
//! Each test runs rsync and nfsync with the same options from the same source onto two
//! copies of the same starting destination (with files older, newer and extra there),
//! then compares the two results with `rsync -anciH --delete`: empty output means
//! nfsync did what rsync does. Then the option messages: an unknown option and an
//! rsync option nfsync does not implement both exit 1, in rsync's words.

use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use std::process::Command;

use crate::support::dirfs::DirFs;
use crate::support::inproc::Server;
use crate::support::{Scratch, Tree, copy_tree, describe, is_root, nfsync, slash};

/// The source: files of several sizes and modes (one setuid, one 0666 for the umask),
/// a symlink, a fifo, a device and another owner's file when root, a subdirectory.
pub(crate) fn source(root: &Path) -> Tree {
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
pub(crate) fn start(root: &Path) -> Tree {
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
pub(crate) fn against_rsync(flags: &[&str], operands: &[&str], compare_extra: &[&str]) -> String {
    against_rsync_via(Via::Mount, flags, operands, compare_extra)
}

/// Where nfsync writes in [`against_rsync_via`].
#[derive(Clone, Copy, PartialEq)]
pub(crate) enum Via {
    /// A local directory (the mount path).
    Mount,
    /// The in-process NFSv3 server's export (the NFS path; no MKNOD, no LINK there).
    InProc,
}

pub(crate) fn against_rsync_via(
    via: Via,
    flags: &[&str],
    operands: &[&str],
    compare_extra: &[&str],
) -> String {
    against_rsync_setup(via, flags, operands, compare_extra, &|_, _| {})
}

/// [`against_rsync_via`] with `setup(SRC, START)` run on the source and the starting
/// destination once they are built, for trees a test needs beyond [`source`] and [`start`].
pub(crate) fn against_rsync_setup(
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
pub(crate) struct Sides {
    pub s: Scratch,
    pub src: Tree,
    pub server: Option<Server>,
    pub dest: std::ffi::OsString,
}

impl Sides {
    pub(crate) fn new(via: Via, setup: &dyn Fn(&Path, &Path)) -> Sides {
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
pub(crate) fn diff(a: &Path, b: &Path, extra: &[&str]) -> String {
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

macro_rules! same_as_rsync {
    ($($name:ident: [$($flag:literal),*] $(compare [$($c:literal),*])?;)*) => {$(
        #[test]
        fn $name() {
            let flags: &[&str] = &[$($flag),*];
            let d = against_rsync(flags, &[""], &[$($($c),*)?]);
            assert!(d.is_empty(), "nfsync {flags:?} differs from rsync {flags:?}:\n{d}");
        }
    )*};
}

same_as_rsync! {
    archive: ["-a"];
    bundle_avz: ["-avz"];
    bundle_rlptgod: ["-rlptgoD"];
    bundle_avzp: ["-avzP"];
    bundle_ahv: ["-aHv"];
    bundle_avh_progress: ["-avh", "--progress"];
    recursive_only: ["-r"] compare ["--no-t", "-O"];
    no_perms: ["-rlt"];
    a_no_perms: ["-a", "--no-p"];
    no_times: ["-rlp"] compare ["--no-t", "-O"];
    a_no_times: ["-a", "--no-times"] compare ["--no-t", "-O"];
    a_no_owner_group: ["-a", "--no-o", "--no-g"];
    a_no_devices_specials: ["-a", "--no-D"];
    a_no_links: ["-a", "--no-l"];
    update: ["-au"];
    update_window_ns: ["-au", "--modify-window=-1"];
    ignore_existing: ["-a", "--ignore-existing"];
    existing: ["-a", "--existing"];
    ignore_non_existing: ["-a", "--ignore-non-existing"];
    max_size: ["-a", "--max-size=3K"];
    max_size_minus_one: ["-a", "--max-size=3000b-1"];
    min_size: ["-a", "--min-size=1K"];
    ignore_times: ["-aI"];
    omit_dir_times: ["-aO"] compare ["-O"];
    modify_window_ns: ["-a", "--modify-window=-1"];
    modify_window_wide: ["-a", "--modify-window=2"];
    one_file_system: ["-ax"];
    delete: ["-a", "--delete"];
    del: ["-a", "--del"];
    delete_before: ["-a", "--delete-before"];
    delete_during: ["-a", "--delete-during"];
    delete_after: ["-a", "--delete-after"];
    accepted_no_ops: ["-aW", "--no-whole-file", "--no-inc-recursive", "--max-alloc=1G",
        "--preallocate", "--super", "--force", "--mkpath", "--partial", "--ignore-errors",
        "--info=progress2", "--debug=none", "--stats"];
}

/// The selection reaches the NFS path's backend too: modes less the umask and kept
/// modes without -p, no times without -t, -u and --existing (symlinks, no specials:
/// the in-process server has no MKNOD).
#[test]
fn nfs_path_same_as_rsync() {
    for (flags, extra) in [
        (&["-rlt"][..], &[][..]),
        (&["-rl"], &["--no-t", "-O"]),
        (&["-a", "--no-D", "-u"], &[]),
        (&["-a", "--no-D", "--existing", "--delete"], &[]),
    ] {
        let d = against_rsync_via(Via::InProc, flags, &[""], extra);
        assert!(d.is_empty(), "nfs:// {flags:?} differs from rsync:\n{d}");
    }
}

/// `nfsync SRC/ SRC/ DEST`: the source is copied once, as rsync does, not reported
/// as `File exists`.
#[test]
fn source_named_twice() {
    let d = against_rsync(&["-a"], &["", ""], &[]);
    assert!(d.is_empty(), "differs from rsync:\n{d}");
}

/// Without -r a directory operand is skipped ("skipping directory"), files are copied.
#[test]
fn no_recursive_skips_directories() {
    let d = against_rsync(&["-a", "--no-r"], &["same", "older", "sub", "link"], &[]);
    assert!(d.is_empty(), "differs from rsync:\n{d}");
}

/// `-x` leaves another filesystem's contents out (its mount point is created empty),
/// `-xx` leaves the mount point out too, as rsync does.
#[test]
fn one_file_system_at_a_mount_point() {
    if !crate::support::root_or_skip("one_file_system_at_a_mount_point") {
        return;
    }
    let s = Scratch::new();
    let src = Tree::new(s.join("src"));
    src.file("top", "top\n").dir("mnt");
    let mnt = src.path("mnt");
    let ok = Command::new("mount")
        .args(["-t", "tmpfs", "tmpfs"])
        .arg(&mnt)
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        eprintln!("skipping one_file_system_at_a_mount_point: cannot mount a tmpfs here");
        return;
    }
    fs::write(mnt.join("inside"), "inside\n").unwrap();
    let mut diffs = Vec::new();
    for flags in [&["-ax"][..], &["-axx"]] {
        let (r, n) = (
            s.join(format!("r{}", flags[0])),
            s.join(format!("n{}", flags[0])),
        );
        let ok_r = Command::new("rsync")
            .args(flags)
            .arg(slash(src.root()))
            .arg(&r)
            .status();
        let ok_n = nfsync().args(flags).arg(slash(src.root())).arg(&n).output();
        assert!(ok_r.unwrap().success() && ok_n.unwrap().status.success());
        diffs.push(diff(&r, &n, &[]));
    }
    let _ = Command::new("umount").arg(&mnt).status();
    assert!(
        diffs.iter().all(|d| d.is_empty()),
        "-x/-xx differ: {diffs:?}"
    );
}

/// Without -p a new file gets the source's bits less the umask and no setuid bit;
/// checked directly too, beside the comparison with rsync.
#[test]
fn without_perms_new_files_are_masked_by_the_umask() {
    let s = Scratch::new();
    let src = source(&s.join("src"));
    let out = nfsync()
        .arg("-rlt")
        .arg(slash(src.root()))
        .arg(s.join("dst"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", describe(&out));
    let mode = |p: &str| {
        fs::metadata(s.join("dst").join(p))
            .unwrap()
            .permissions()
            .mode()
            & 0o7777
    };
    let umask = {
        // SAFETY: umask only swaps the process's mask; put back at once.
        let u = unsafe { libc::umask(0o022) };
        unsafe { libc::umask(u) };
        u
    };
    assert_eq!(mode("world"), 0o666 & !umask);
    assert_eq!(mode("setuid"), 0o755 & !umask);
    let _ = fs::metadata(s.join("dst/setuid")).unwrap().mode();
}

/// Scripts probe for an option by looking for "unknown option", as rsync prints it.
#[test]
fn unknown_option_is_named_as_rsync_does() {
    for (args, expected) in [
        (
            &["--frobnicate", "a", "b"][..],
            "nfsync: --frobnicate: unknown option\n",
        ),
        (&["-avQ", "a", "b"], "nfsync: -Q: unknown option\n"),
    ] {
        let out = nfsync().args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(1), "{args:?}: {}", describe(&out));
        assert_eq!(String::from_utf8_lossy(&out.stderr), expected, "{args:?}");
    }
}

/// An rsync option nfsync does not implement is refused by name, never ignored.
#[test]
fn unsupported_rsync_options_are_refused() {
    for (args, start) in [
        (
            &["-e", "ssh", "a", "b"][..],
            "nfsync: -e (--rsh) is not supported (",
        ),
        (
            &["-av4", "a", "b"],
            "nfsync: -4 (--ipv4) is not supported (",
        ),
        (
            &["--rsync-path=x", "a", "b"],
            "nfsync: --rsync-path is not supported (",
        ),
        (&["--daemon"], "nfsync: --daemon is not supported ("),
        (
            &["-a", "--write-batch=x", "a", "b"],
            "nfsync: --write-batch is not supported (",
        ),
        (
            &["--address=x", "a", "b"],
            "nfsync: --address is not supported (",
        ),
        (
            &["--read-batch", "x", "a", "b"],
            "nfsync: --read-batch is not supported (",
        ),
    ] {
        let out = nfsync().args(args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(
            err.starts_with(start) && err.ends_with(")\n"),
            "{args:?}: {err}"
        );
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
    }
}

/// `-z` is accepted and, under -v, says why it does nothing.
#[test]
fn compress_says_it_does_nothing_under_verbose() {
    let s = Scratch::new();
    let src = Tree::new(s.join("src"));
    src.file("f", "f\n");
    let out = nfsync()
        .arg("-avz")
        .arg(slash(src.root()))
        .arg(s.join("dst"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", describe(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("nothing to compress"),
        "{}",
        describe(&out)
    );
}

/// rsync's `-h` alone is its help; in a bundle it is `--human-readable`.
#[test]
fn h_alone_is_help() {
    let out = nfsync().arg("-h").output().unwrap();
    assert!(out.status.success(), "{}", describe(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("rsync options"));
}
