//! An rsync user's command line works unchanged.
//!
//! Each test runs rsync and nfsync with the same options from the same source onto two
//! copies of the same starting destination (with files older, newer and extra there),
//! then compares the two results with `rsync -anciH --delete`: empty output means
//! nfsync did what rsync does. Then the option messages: an unknown option and an
//! rsync option nfsync does not implement both exit 1, in rsync's words.

use std::ffi::OsString;
use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::process::Command;

use crate::support::sides::{Via, against_rsync, against_rsync_via, source};
use crate::support::{Scratch, Tree, describe, nfsync, rsync_diff_with, slash};

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
        "--preallocate", "--super", "--force", "--mkpath", "--ignore-errors",
        "--info=progress2", "--debug=none", "--stats"];
    accepted_delta_and_daemon_no_ops: ["-ay", "--fuzzy", "-B", "8192", "--compress-choice=zlib",
        "--zl=9", "--skip-compress=gz", "--no-motd", "--open-noatime", "--stop-after=60"];
    partial_uninterrupted: ["-a", "--partial"];
    sparse_taken_back: ["-aS", "--no-sparse"];
    omit_link_times: ["-rltJ"] compare ["-J"];
}

/// -E without -p: files that stay keep their mode, but their execute bits follow the
/// source's (added where readable, or all removed), whether the file is copied again
/// (-r alone: times differ) or up to date (-t).
#[test]
fn executability_same_as_rsync() {
    let setup = |src: &std::path::Path, start: &std::path::Path| {
        for (name, src_mode, start_mode) in [
            ("exec_now", 0o755, 0o640),
            ("exec_no_more", 0o644, 0o751),
            ("exec_both", 0o700, 0o710),
            ("exec_neither", 0o600, 0o604),
        ] {
            for (dir, mode) in [(src, src_mode), (start, start_mode)] {
                let p = dir.join(name);
                fs::write(&p, "same bytes\n").unwrap();
                fs::set_permissions(&p, fs::Permissions::from_mode(mode)).unwrap();
                let t = filetime::FileTime::from_unix_time(1_600_000_000, 0);
                filetime::set_file_mtime(&p, t).unwrap();
            }
        }
    };
    for (flags, compare) in [
        (&["-rE"][..], &["--no-t", "-O"][..]),
        (&["-rtE"], &["-O"]),
        (&["-rtE", "--chmod=u+w"], &["-O"]),
    ] {
        let d =
            crate::support::sides::against_rsync_setup(Via::Mount, flags, &[""], compare, &setup);
        assert!(d.is_empty(), "nfsync {flags:?} differs from rsync:\n{d}");
    }
}

/// -U gives each copied file the source's access time, as rsync -U does, and the
/// source's own is left as nfsync found it (it reads with O_NOATIME; rsync without
/// --open-noatime moves it, so nfsync runs first).
#[test]
fn atimes_same_as_rsync() {
    let s = Scratch::new();
    let src = Tree::new(s.join("src"));
    src.file("f", "some bytes\n");
    src.file("sub/g", "more bytes\n");
    let atime = filetime::FileTime::from_unix_time(981_220_662, 0);
    let mtime = filetime::FileTime::from_unix_time(1_600_000_000, 0);
    for f in ["f", "sub/g"] {
        filetime::set_file_times(src.root().join(f), atime, mtime).unwrap();
    }
    let atime_of = |p: std::path::PathBuf| fs::metadata(p).unwrap().atime();
    for name in ["nfsync", "rsync"] {
        let dst = s.join(name);
        let args = [OsString::from("-aU"), slash(src.root()), dst.clone().into()];
        let out = match name {
            "rsync" => Command::new("rsync").args(&args).output(),
            _ => nfsync().args(&args).output(),
        }
        .unwrap();
        assert!(out.status.success(), "{name}: {}", describe(&out));
        for f in ["f", "sub/g"] {
            assert_eq!(atime_of(dst.join(f)), atime.unix_seconds(), "{name} {f}");
            if name == "nfsync" {
                assert_eq!(
                    atime_of(src.root().join(f)),
                    atime.unix_seconds(),
                    "source {f}"
                );
            }
        }
    }
}

/// -U is refused, before any connection, where a side is an NFS server: its atime is
/// neither read with the data nor set with the mtime.
#[test]
fn atimes_are_refused_over_nfs() {
    let s = Scratch::new();
    let src = Tree::new(s.join("src"));
    src.file("f", "f\n");
    for (from, to) in [
        (
            slash(src.root()),
            OsString::from("nfs://127.0.0.1:9/export/dst"),
        ),
        (
            OsString::from("nfs://127.0.0.1:9/export/src/"),
            s.join("dst").into(),
        ),
    ] {
        let out = nfsync().arg("-aU").arg(&from).arg(&to).output().unwrap();
        assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("-U (--atimes) is kept on the mount path only"),
            "{err}"
        );
    }
}

/// `-V` and `-VV` answer in rsync's shapes: `--version`'s first line names a protocol
/// version, and `-VV` is JSON with every capability rsync itself lists (each one
/// nfsync's own answer), whatever else the command line holds.
#[test]
fn version_answers_in_rsyncs_shapes() {
    let out = nfsync()
        .args(["--version", "-a", "x", "y"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", describe(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.lines().next().unwrap().contains("  protocol version "),
        "{text}"
    );
    let json = |out: std::process::Output| -> serde_json::Value {
        assert!(out.status.success(), "{}", describe(&out));
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let ours = json(nfsync().arg("-VV").output().unwrap());
    let theirs = json(Command::new("rsync").arg("-VV").output().unwrap());
    let keys = |v: &serde_json::Value| -> Vec<String> {
        let mut k: Vec<_> = v["capabilities"]
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect();
        k.sort();
        k
    };
    assert_eq!(keys(&ours), keys(&theirs));
    assert_eq!(ours["capabilities"]["ACLs"], true);
    assert_eq!(ours["capabilities"]["xattrs"], true);
    assert_eq!(ours["capabilities"]["atimes"], true);
    assert_eq!(ours["capabilities"]["crtimes"], false);
    // -H links regular files only.
    assert_eq!(ours["capabilities"]["hardlink_symlinks"], false);
    for list in ["checksum_list", "compress_list"] {
        assert_eq!(ours[list], serde_json::json!([]), "{list}");
    }
    // -V -V is -VV.
    assert_eq!(json(nfsync().args(["-V", "-V"]).output().unwrap()), ours);
}

/// A `--stop-at` time not in the future and `--stop-after=0` are refused as rsync
/// refuses them (exit 1, its words); so is `--max-alloc=0`, as rsync's suite
/// (max-alloc-zero-rejected) wants ("max-alloc must be greater than zero").
#[test]
fn max_alloc_zero_and_stop_at_past_are_refused_as_rsync() {
    for (args, words, rsync_too) in [
        (
            &["--max-alloc=0", "a", "b"][..],
            "max-alloc must be greater than zero",
            false,
        ),
        (
            &["--stop-at=2000-01-01T00:00", "a", "b"],
            "--stop-at time is not in the future",
            true,
        ),
        (
            &["--stop-after=0", "a", "b"],
            "invalid --stop-after value",
            true,
        ),
    ] {
        let mut outs = vec![nfsync().args(args).output().unwrap()];
        if rsync_too {
            outs.push(Command::new("rsync").args(args).output().unwrap());
        }
        for out in outs {
            assert_eq!(out.status.code(), Some(1), "{args:?}: {}", describe(&out));
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(err.contains(words), "{args:?}: {err}");
        }
    }
}

/// The selection reaches the NFS path's backend too: modes less the umask and kept
/// modes without -p, no times without -t (nor on symlinks with -J), -u and --existing (symlinks, no specials:
/// the in-process server has no MKNOD).
#[test]
fn nfs_path_same_as_rsync() {
    for (flags, extra) in [
        (&["-rlt"][..], &[][..]),
        (&["-rl"], &["--no-t", "-O"]),
        (&["-a", "--no-D", "-u"], &[]),
        (&["-a", "--no-D", "--existing", "--delete"], &[]),
        (&["-rltJ"], &["-J"]),
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
        crate::support::prerequisite_missing(
            "one_file_system_at_a_mount_point: cannot mount a tmpfs here",
        );
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
        diffs.push(rsync_diff_with(&r, &n, &[]));
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
