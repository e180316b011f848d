//! A source file that changes after the listing, side by side with rsync: one that grew
//! before its copy opened it is sent as it is then (rsync sends what it reads), one
//! that shrinks while it is read is reported in rsync's words and ends the run 23,
//! the files after it copied all the same. On the mount path and over nfs://.

use std::fs::{self, OpenOptions};
use std::io::Write;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::time::{Duration, Instant};

use crate::support::sides::{Ran, Side, Sides, Via};
use crate::support::{Tree, describe, nfsync, slash};

/// Runs `flags SRC/ DEST/` on both sides, nfsync one job at a time (so files are copied
/// in rsync's order, the first one slowed by `--bwlimit` in the flags), and calls
/// `change` with each side's source once that side's copy has begun (its DEST holds an
/// entry): after the listing, before the later files are read.
fn run_changing(
    via: Via<'_>,
    flags: &[&str],
    setup: impl Fn(&Tree),
    change: impl Fn(&Path) + Sync,
) -> (Sides, Ran) {
    let sides = Sides::new(via);
    let t = Tree::new(sides.join("start/src"));
    setup(&t);
    t.age();
    fs::create_dir_all(sides.join("start/dst")).unwrap();
    sides.copy_start("start");
    let ran = std::thread::scope(|s| {
        s.spawn(|| {
            for side in [Side::Rsync, Side::Nfsync] {
                let dst = sides.join(side.dir()).join("dst");
                let started = Instant::now();
                while fs::read_dir(&dst).unwrap().next().is_none() {
                    assert!(
                        started.elapsed() < Duration::from_secs(60),
                        "{} never began its copy",
                        side.name()
                    );
                    std::thread::sleep(Duration::from_millis(5));
                }
                std::thread::sleep(Duration::from_millis(200));
                change(&sides.join(side.dir()).join("src"));
            }
        });
        sides.run("dst/", b"", &|side, cmd| {
            cmd.args(flags);
            if side == Side::Nfsync {
                cmd.args(["--jobs", "1"]);
            }
            cmd.arg(slash(&sides.join(side.dir()).join("src")));
        })
    });
    (sides, ran)
}

/// A file appended to after the listing and before its copy (a log written during a
/// nightly backup) is copied whole as it is then, exit 0, as rsync does; a re-run finds
/// it up to date (it has the time it had when read).
#[test]
fn file_grown_before_its_copy_is_sent_as_read() {
    for via in [Via::Mount, Via::InProc] {
        let (sides, ran) = run_changing(
            via,
            &["-a", "--bwlimit=1000"],
            |t| {
                t.random_file("aaa_big", 2 << 20, 1)
                    .random_file("zzz_grow", 4096, 2);
            },
            |src| {
                let mut f = OpenOptions::new()
                    .append(true)
                    .open(src.join("zzz_grow"))
                    .unwrap();
                f.write_all(&[7u8; 256 << 10]).unwrap();
            },
        );
        for (side, out) in [(Side::Rsync, &ran.rsync), (Side::Nfsync, &ran.nfsync)] {
            assert!(out.status.success(), "{}: {}", side.name(), describe(out));
            let world = sides.join(side.dir());
            let grown = fs::read(world.join("src/zzz_grow")).unwrap();
            assert_eq!(grown.len(), 4096 + (256 << 10));
            assert!(
                fs::read(world.join("dst/zzz_grow")).unwrap() == grown,
                "{}: the grown file is not what was read",
                side.name()
            );
        }
        let again = nfsync()
            .arg("-ai")
            .arg(slash(&sides.nfsync("src")))
            .arg(sides.dest("by_nfsync/dst/"))
            .output()
            .unwrap();
        assert!(again.status.success(), "{}", describe(&again));
        assert_eq!(String::from_utf8_lossy(&again.stdout), "", "re-run copied");
    }
}

/// A file cut short while it is read: "read errors mapping" (rsync's words), naming it,
/// exit 23, the file after it copied; the copy left does not have the source's time,
/// so a re-run copies it again, exactly.
#[test]
fn file_shrinking_while_read_is_reported_in_rsyncs_words() {
    for via in [Via::Mount, Via::InProc] {
        let (sides, ran) = run_changing(
            via,
            &["-a", "--bwlimit=5000"],
            |t| {
                t.random_file("a_big", 20_000_000, 1)
                    .file("b_later", "later\n");
            },
            |src| {
                OpenOptions::new()
                    .write(true)
                    .open(src.join("a_big"))
                    .unwrap()
                    .set_len(1_000_000)
                    .unwrap();
            },
        );
        for (side, out) in [(Side::Rsync, &ran.rsync), (Side::Nfsync, &ran.nfsync)] {
            assert_eq!(
                out.status.code(),
                Some(23),
                "{}: {}",
                side.name(),
                describe(out)
            );
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(
                err.lines()
                    .any(|l| l.contains("read errors mapping") && l.contains("src/a_big")),
                "{}: {}",
                side.name(),
                describe(out)
            );
            let world = sides.join(side.dir());
            assert_eq!(fs::read(world.join("dst/b_later")).unwrap(), b"later\n");
        }
        let src = sides.nfsync("src/a_big");
        if let Ok(left) = fs::metadata(sides.nfsync("dst/a_big")) {
            let now = fs::metadata(&src).unwrap();
            assert!(
                (left.mtime(), left.mtime_nsec()) != (now.mtime(), now.mtime_nsec()),
                "the cut-short copy has the source's time"
            );
            // Not the time of its last write either, which can be the very tick of the
            // source's change.
            assert_eq!(left.mtime(), 0, "the cut-short copy's mtime");
        }
        let again = nfsync()
            .arg("-a")
            .arg(slash(&sides.nfsync("src")))
            .arg(sides.dest("by_nfsync/dst/"))
            .output()
            .unwrap();
        assert!(again.status.success(), "{}", describe(&again));
        assert_eq!(
            fs::read(sides.nfsync("dst/a_big")).unwrap(),
            fs::read(&src).unwrap()
        );
    }
}
