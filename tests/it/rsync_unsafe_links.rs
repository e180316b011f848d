//! Links a hostile tree can hold: `--safe-links` with rsync 3.4's test (a `..` after
//! any other component is unsafe), also for DEST's links that `--backup` would keep,
//! each side by side with rsync on the mount path and over NFS.

use std::fs;
use std::path::Path;

use crate::support::sides::{Sides, Via};
use crate::support::{Tree, describe, nfsync, slash};

/// `-a --safe-links EXTRA src/` by both onto `start`'s copies: the same tree, both
/// successful. Returns the sides for the caller's own checks.
fn safe_links_side_by_side(via: Via<'_>, setup: impl FnOnce(&Path), extra: &[&str]) -> Sides {
    let s = Sides::new(via);
    setup(s.path());
    s.copy_start("start");
    let src = slash(&s.join("src"));
    let ran = s.run_ok("", b"", &|_, cmd| {
        cmd.args(["-a", "--safe-links"]).args(extra).arg(&src);
    });
    if extra.contains(&"-b") {
        // Both tools rename the backups into DEST after they set its time, so DEST's
        // own mtime is when each run ended: equal but for the second the runs fell in.
        s.set_dest_mtimes(filetime::FileTime::from_unix_time(1_600_000_000, 0));
    }
    let d = s.diff(&[]);
    assert!(
        d.is_empty(),
        "{extra:?}: nfsync differs from rsync:\n{d}\n{}",
        describe(&ran.nfsync)
    );
    s
}

/// A link through a link to `.` (`p -> a/../outside_secret`, `a -> .`) escapes, so
/// rsync 3.4 leaves out every target with a `..` after a normal component; the older
/// depth count nfsync used kept `p`, and DEST then held a link to outside data.
fn escaping_source(root: &Path) {
    Tree::new(root).file("outside_secret", "SECRET\n");
    Tree::new(root.join("src"))
        .file("f", "f\n")
        .file("links/a/a/a/g", "g\n")
        .symlink("a", ".")
        .symlink("p", "a/../outside_secret")
        .symlink("links/unsafe2", "a/a/a/../../../unsafe2")
        .symlink("links/down", "a/a/a/g")
        .symlink("links/up", "../f")
        .symlink("links/end", "a/..")
        .age();
    Tree::new(root.join("start")).file("old", "old\n").age();
}

#[test]
fn safe_links_refuse_a_dotdot_after_a_name() {
    for via in [Via::Mount, Via::InProc] {
        let s = safe_links_side_by_side(via, escaping_source, &[]);
        for gone in ["p", "links/unsafe2", "links/end"] {
            assert!(
                fs::symlink_metadata(s.nfsync(gone)).is_err(),
                "{gone} kept: {:?}",
                fs::read_link(s.nfsync(gone))
            );
        }
        for kept in ["a", "links/down", "links/up"] {
            assert!(fs::read_link(s.nfsync(kept)).is_ok(), "{kept} left out");
        }
    }
}

/// DEST's own links that an update replaces or `--delete` removes: with `--backup`
/// and `--safe-links` an unsafe one is removed, not kept as a backup (a backup is a
/// link DEST goes on holding); a safe one is backed up (rsync's ki72-safe-links-backup,
/// and its `--delete` twin).
fn replaced_links(root: &Path) {
    Tree::new(root.join("src"))
        .file("keep.txt", "keep\n")
        .file("escape", "replacement\n")
        .file("link", "replacement\n")
        .age();
    Tree::new(root.join("start"))
        .symlink("escape", "../../sensitive")
        .symlink("link", "keep.txt")
        .symlink("gone", "a/../x")
        .symlink("gone_safe", "keep.txt")
        .age();
}

#[test]
fn safe_links_keep_no_unsafe_backup() {
    for via in [Via::Mount, Via::InProc] {
        for extra in [
            &["-b", "--suffix=.bak"][..],
            &["-b", "--suffix=.bak", "--delete"],
        ] {
            let s = safe_links_side_by_side(via, replaced_links, extra);
            assert!(
                fs::symlink_metadata(s.nfsync("escape.bak")).is_err(),
                "{extra:?}"
            );
            assert!(s.nfsync("escape").is_file(), "{extra:?}");
            assert_eq!(
                fs::read_link(s.nfsync("link.bak")).unwrap(),
                Path::new("keep.txt")
            );
            let deleting = extra.contains(&"--delete");
            assert!(
                fs::symlink_metadata(s.nfsync("gone.bak")).is_err(),
                "{extra:?}"
            );
            assert_eq!(fs::symlink_metadata(s.nfsync("gone")).is_ok(), !deleting);
            assert_eq!(fs::read_link(s.nfsync("gone_safe.bak")).is_ok(), deleting);
        }
    }
}

/// A followed link back to its own directory (`a/self -> ../a`): rsync goes down it
/// until the kernel's path walk gives up forty levels deep (exit 23); nfsync opened
/// the referent by its own short path, so the walk never failed and DEST grew until
/// descriptors ran out. Now the referent is recognized by the ancestors' (dev, ino):
/// the link is left out with rsync's error and code, the rest copied.
#[test]
fn a_source_directory_loop_ends_at_once() {
    for via in [Via::Mount, Via::InProc] {
        for flags in [&["-aL"][..], &["-ak"], &["-a", "--copy-unsafe-links"]] {
            let s = Sides::new(via);
            // Unsafe only when it climbs out (for --copy-unsafe-links to follow it).
            let (me, up) = if flags.len() == 2 {
                ("../../s/a", "../../s")
            } else {
                ("../a", "..")
            };
            Tree::new(s.join("s"))
                .file("a/f", "f\n")
                .file("top", "top\n")
                .symlink("a/self", me)
                .symlink("a/up", up);
            let out = nfsync()
                .args(flags)
                .arg(slash(&s.join("s")))
                .arg(s.dest("d/"))
                .output()
                .unwrap();
            assert_eq!(out.status.code(), Some(23), "{flags:?}: {}", describe(&out));
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(err.contains("Too many levels of symbolic links"), "{err}");
            assert!(
                s.join("d/a/f").is_file() && s.join("d/top").is_file(),
                "{flags:?}"
            );
            for gone in ["d/a/self", "d/a/up"] {
                assert!(
                    fs::symlink_metadata(s.join(gone)).is_err(),
                    "{flags:?}: {gone}"
                );
            }
        }
    }
}

/// `-K` follows DEST's directory links that stay inside DEST (also through `..`
/// that does not climb above it) and refuses one leading out, absolute or relative:
/// nothing is written outside, the link stays, and the run ends 23 with rsync 3.5's
/// error, as rsync does.
#[test]
fn keep_dirlinks_refuse_a_link_out_of_dest() {
    let s = Sides::new(Via::Mount);
    Tree::new(s.join("src"))
        .file("abs/f", "f\n")
        .file("rel/f", "f\n")
        .file("in/x/y", "y\n")
        .file("deep/back/z", "z\n")
        .age();
    Tree::new(s.join("start"))
        .dir("realdir/x")
        .dir("deep")
        .symlink("abs", s.join("outside"))
        .symlink("rel", "../outside")
        .symlink("in", "realdir")
        .symlink("deep/back", "../realdir")
        .age();
    fs::create_dir(s.join("outside")).unwrap();
    s.copy_start("start");
    let src = slash(&s.join("src"));
    let ran = s.run("", b"", &|_, cmd| {
        cmd.arg("-aK").arg(&src);
    });
    let d = s.diff(&["-O", "-J"]);
    assert!(
        d.is_empty(),
        "nfsync differs from rsync:\n{d}\n{}",
        describe(&ran.nfsync)
    );
    assert_eq!(
        ran.rsync.status.code(),
        Some(23),
        "{}",
        describe(&ran.rsync)
    );
    assert_eq!(
        ran.nfsync.status.code(),
        Some(23),
        "{}",
        describe(&ran.nfsync)
    );
    let err = String::from_utf8_lossy(&ran.nfsync.stderr);
    assert!(err.contains("Too many levels of symbolic links"), "{err}");
    assert_eq!(
        fs::read_dir(s.join("outside")).unwrap().count(),
        0,
        "written outside"
    );
    for link in ["abs", "rel", "in", "deep/back"] {
        assert!(fs::read_link(s.nfsync(link)).is_ok(), "{link} replaced");
    }
    assert!(s.nfsync("realdir/x/y").is_file() && s.nfsync("realdir/z").is_file());
}
