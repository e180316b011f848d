//! The options that keep or reuse data: `-b/--backup`, `--suffix`,
//! `--backup-dir`, `--link-dest`, `--compare-dest`, `--copy-dest`,
//! `--remove-source-files`.
//!
//! These options reach beyond DEST (a backup directory, a previous snapshot, the source
//! itself), so each side gets a whole world: `src/` (the source of `support::sides`),
//! `dst/` (its starting destination) and what the test puts beside them. rsync runs in one
//! copy of the world, nfsync in another, and the two worlds are compared whole with
//! `rsync -anciH --delete`: backups, removed sources and hard links between a snapshot
//! and the one before it are all part of the comparison. The side effects are then
//! checked directly too (inode numbers, link counts, files gone).

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::ganesha::{self, Nfs4, Options, Proto};
use crate::support::sides::{Side, Sides, Via, source, start};
use crate::support::tmpfs::Tmpfs;
use crate::support::{Scratch, Tree, describe, nfsync, slash};

/// Two worlds after a run: rsync's and nfsync's.
struct Worlds {
    /// Holds the worlds, `by_rsync` and `by_nfsync`, and the server nfsync wrote
    /// through (kept alive until the checks).
    sides: Sides,
    /// What each printed on stdout, its lines sorted (nfsync's come in the order its
    /// parallel jobs finish).
    printed: (Vec<String>, Vec<String>),
    /// nfsync's stderr.
    warned: String,
}

impl Worlds {
    fn rsync(&self, rel: &str) -> PathBuf {
        self.sides.rsync(rel)
    }

    fn nfsync(&self, rel: &str) -> PathBuf {
        self.sides.nfsync(rel)
    }
}

/// Builds the world (`setup` adds to `src/` and `dst/` or beside them), runs `rsync
/// FLAGS src/ dst/` and `nfsync FLAGS src/ DEST` (DEST: `dst/`, or its `nfs://` URL)
/// in two copies of it, and returns them with their difference. `-b` without
/// `--backup-dir` implies `-O` (rsync's rule): directories keep the time of the run,
/// so their times are not compared then.
fn side_by_side(nfs: bool, flags: &[&str], setup: impl Fn(&Path)) -> (Worlds, String) {
    side_by_side_via(if nfs { Via::InProc } else { Via::Mount }, flags, setup)
}

fn side_by_side_via(via: Via<'_>, flags: &[&str], setup: impl Fn(&Path)) -> (Worlds, String) {
    let sides = Sides::new(via);
    let w = sides.join("w");
    source(&w.join("src"));
    start(&w.join("dst"));
    Tree::new(w.join("dst"))
        .file("gone/f", "f\n")
        .file("gone/deeper/g", "g\n")
        .symlink("gone_link", "nowhere");
    setup(&w);
    sides.copy_start("w");
    let ran = sides.run_ok("dst/", b"", &|side, cmd| {
        cmd.args(flags)
            .arg(slash(&sides.join(side.dir()).join("src")));
    });
    let sorted = |b: &[u8]| {
        // "created directory DEST" names each side's own DEST.
        let mut l: Vec<String> = String::from_utf8_lossy(b)
            .lines()
            .filter(|l| !l.starts_with("created directory "))
            .map(String::from)
            .collect();
        l.sort();
        l
    };
    let printed = (sorted(&ran.rsync.stdout), sorted(&ran.nfsync.stdout));
    let warned = String::from_utf8_lossy(&ran.nfsync.stderr).into_owned();
    // The worlds' own directories differ only in when they were made, and so do
    // backup directories (moving a backup in gives them the time of the run) and the
    // source's with --remove-source-files.
    for side in [Side::Rsync, Side::Nfsync] {
        let world = sides.join(side.dir());
        let ok = Command::new("touch")
            .args(["-h", "-d", "@1600000000"])
            .arg(&world)
            .status()
            .unwrap();
        assert!(ok.success());
        for bk in ["bk", "dst/bk", "src"] {
            let bk = world.join(bk);
            if bk.is_dir() {
                let ok = Command::new("find")
                    .arg(&bk)
                    .args([
                        "-type",
                        "d",
                        "-exec",
                        "touch",
                        "-d",
                        "@1600000000",
                        "{}",
                        "+",
                    ])
                    .status()
                    .unwrap();
                assert!(ok.success());
            }
        }
    }
    let backup = flags.iter().any(|f| *f == "-b" || *f == "--backup");
    let omit = backup && !flags.iter().any(|f| f.starts_with("--backup-dir"));
    let mut compare = Vec::new();
    if omit {
        compare.push("-O");
    }
    // nfs-ganesha keeps no symlink times (nfsync warns once).
    if let Via::Ganesha(_) = via {
        compare.push("--omit-link-times");
    }
    let d = sides.diff(&compare);
    let worlds = Worlds {
        sides,
        printed,
        warned,
    };
    (worlds, d)
}

fn nothing_more(_: &Path) {}

/// The non-directories below `root`, sorted, as paths relative to it.
fn non_dirs(root: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if fs::symlink_metadata(&p).unwrap().is_dir() {
                stack.push(p);
            } else {
                out.push(p.strip_prefix(root).unwrap().display().to_string());
            }
        }
    }
    out.sort();
    out
}

fn read(p: PathBuf) -> String {
    fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// `-b`: a replaced file is kept as `NAME~`, a replaced symlink too; with `--delete`
/// deleted files are renamed, not removed, and their directory stays (rsync: "cannot
/// delete non-empty directory"); backups are not deleted by a later `--delete`.
#[test]
fn backup_beside_with_and_without_suffix() {
    for flags in [
        &["-a", "-b"][..],
        &["-a", "-b", "--delete"],
        &["-a", "--backup", "--suffix=.old", "--delete"],
    ] {
        let (sides, d) = side_by_side(false, flags, nothing_more);
        assert!(d.is_empty(), "{flags:?} differs from rsync:\n{d}");
        let suffix = if flags.len() == 4 { ".old" } else { "~" };
        let n = |p: &str| sides.nfsync(&format!("dst/{p}"));
        assert_eq!(read(n(&format!("older{suffix}"))), "old\n", "{flags:?}");
        assert_eq!(read(n("older")), "new content\n");
        if flags.contains(&"--delete") {
            assert_eq!(read(n(&format!("extra{suffix}"))), "extra\n", "{flags:?}");
            assert_eq!(read(n(&format!("gone/deeper/g{suffix}"))), "g\n");
            assert!(!n("extra").exists());
        }
    }
}

/// `-b` with `--inplace` or `--append`: the old copy is written over where it is, so
/// its backup is a copy of it (beside it, or below `--backup-dir`), with its bytes
/// and attributes, as rsync makes it; over nfs:// the old copy is read back from the
/// server for that.
#[test]
fn backup_with_inplace_and_append() {
    for (nfs, flags, backup) in [
        (false, &["-a", "--inplace", "-b"][..], "dst/older~"),
        (
            false,
            &["-a", "--inplace", "-b", "--backup-dir=bk"],
            "dst/bk/older",
        ),
        (
            false,
            &["-a", "--append", "-b", "--suffix=.old"],
            "dst/older.old",
        ),
        (true, &["-a", "--no-D", "--inplace", "-b"], "dst/older~"),
        (
            true,
            &["-a", "--no-D", "--inplace", "--backup-dir=bk"],
            "dst/bk/older",
        ),
    ] {
        let (sides, d) = side_by_side(nfs, flags, |w| {
            Tree::new(w.join("dst")).file("older~", "an older backup\n");
        });
        assert!(d.is_empty(), "{flags:?} differs from rsync:\n{d}");
        assert_eq!(read(sides.nfsync(backup)), "old\n", "{flags:?}");
        let m = |side: PathBuf| fs::metadata(side).unwrap();
        let (n, r) = (m(sides.nfsync(backup)), m(sides.rsync(backup)));
        assert_eq!((n.mode(), n.mtime()), (r.mode(), r.mtime()), "{flags:?}");
    }
}

/// A second `-b --delete` run keeps the first run's backups (rsync's `P *~` rule) and
/// replaces a backup of the same name.
#[test]
fn backups_survive_the_next_delete() {
    let (sides, d) = side_by_side(false, &["-a", "-b", "--delete"], |w| {
        Tree::new(w.join("dst"))
            .file("older~", "an older backup\n")
            .file("stale~", "kept\n");
    });
    assert!(d.is_empty(), "differs from rsync:\n{d}");
    assert_eq!(read(sides.nfsync("dst/older~")), "old\n");
    assert_eq!(read(sides.nfsync("dst/stale~")), "kept\n");
}

/// A user's `R *~` rule comes before `-b`'s own `P *~`, so `--delete` reaches old
/// backups; one being deleted is removed, not backed up again as `NAME~~` (rsync).
#[test]
fn risk_rule_lets_delete_remove_old_backups() {
    for nfs in [false, true] {
        let flags = ["-a", "--no-D", "-b", "--delete", "--filter=R *~"];
        let (sides, d) = side_by_side(nfs, &flags, |w| {
            Tree::new(w.join("dst")).file("stale~", "an old backup\n");
        });
        assert!(d.is_empty(), "nfs {nfs}: differs from rsync:\n{d}");
        assert!(!sides.nfsync("dst/stale~").exists(), "nfs {nfs}");
        assert!(!sides.nfsync("dst/stale~~").exists(), "nfs {nfs}");
        assert_eq!(read(sides.nfsync("dst/extra~")), "extra\n", "nfs {nfs}");
    }
}

/// `--backup-dir` (relative to DEST, outside and inside it) with `--delete`: replaced and
/// deleted entries move there at their path below DEST, whole deleted directories too;
/// the backup directory itself is compared with rsync's.
#[test]
fn backup_dir_with_delete() {
    for (flags, bk) in [
        (&["-a", "--backup-dir=../bk", "--delete"][..], "bk"),
        (&["-a", "-b", "--backup-dir=bk", "--delete"], "dst/bk"),
        (
            &["-a", "--backup-dir=../bk", "--suffix=.1", "--delete"],
            "bk",
        ),
    ] {
        let (sides, d) = side_by_side(false, flags, nothing_more);
        assert!(d.is_empty(), "{flags:?} differs from rsync:\n{d}");
        let sfx = if flags.contains(&"--suffix=.1") {
            ".1"
        } else {
            ""
        };
        let b = |p: &str| sides.nfsync(&format!("{bk}/{p}{sfx}"));
        assert_eq!(read(b("older")), "old\n", "{flags:?}");
        assert_eq!(read(b("extra")), "extra\n");
        assert_eq!(read(b("sub/extra2")), "extra\n");
        assert_eq!(read(b("gone/deeper/g")), "g\n");
        assert!(!sides.nfsync("dst/gone").exists(), "{flags:?}");
        assert_eq!(
            non_dirs(&sides.nfsync(bk)),
            non_dirs(&sides.rsync(bk)),
            "{flags:?}"
        );
    }
}

/// `--info=backup` names each backup as rsync does (`backed up older to older~`, or
/// below `--backup-dir` as written, after `backup_dir is DIR`), and an empty directory
/// of a backup's name in `--backup-dir` is replaced, as rsync replaces it; on the mount
/// path and over nfs://.
#[test]
fn info_backup_names_each_backup() {
    let in_the_way = |w: &Path| {
        fs::create_dir_all(w.join("bk/extra")).unwrap();
    };
    for (nfs, flags) in [
        (false, &["-a", "--info=backup", "-b", "--delete"][..]),
        (
            false,
            &["-a", "--info=backup", "--backup-dir=../bk", "--delete"],
        ),
        (
            false,
            &["-a", "--info=backup", "--inplace", "--backup-dir=./bk/"],
        ),
        (
            true,
            &[
                "-a",
                "--no-D",
                "--info=backup",
                "--backup-dir=../bk",
                "--delete",
            ],
        ),
        (true, &["-a", "--no-D", "--info=backup", "--inplace", "-b"]),
    ] {
        let (sides, d) = side_by_side(nfs, flags, in_the_way);
        assert!(d.is_empty(), "{flags:?} differs from rsync:\n{d}");
        assert_eq!(sides.printed.1, sides.printed.0, "{flags:?}");
        assert!(
            sides
                .printed
                .0
                .iter()
                .any(|l| l.starts_with("backed up older to ")),
            "{flags:?}: {:?}",
            sides.printed.0
        );
    }
    let (sides, d) = side_by_side(false, &["-a", "--backup-dir=../bk", "--delete"], in_the_way);
    assert!(d.is_empty(), "differs from rsync:\n{d}");
    assert!(sides.printed.1.is_empty(), "{:?}", sides.printed.1);
    assert_eq!(read(sides.nfsync("bk/extra")), "extra\n");
}

/// A non-empty directory of a backup's name in `--backup-dir` may hold older backups:
/// it stays, and the entry it is in the way of is kept too, the run ending 23 with the
/// path and the cause (rsync deletes the directory and all in it).
#[test]
fn backup_dir_keeps_a_non_empty_directory_in_the_way() {
    let s = Scratch::new();
    Tree::new(s.join("src")).file("f", "new content\n");
    Tree::new(s.join("dst"))
        .file("f", "old\n")
        .file("gone", "g\n");
    Tree::new(s.join("bk"))
        .file("f/older", "o\n")
        .file("gone/older", "o\n");
    let out = nfsync()
        .args(["-a", "--delete", "--backup-dir=../bk"])
        .arg(slash(&s.join("src")))
        .arg(slash(&s.join("dst")))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(23), "{}", describe(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("in the way of its backup"),
        "{}",
        describe(&out)
    );
    assert_eq!(read(s.join("bk/f/older")), "o\n");
    assert_eq!(read(s.join("bk/gone/older")), "o\n");
    assert_eq!(read(s.join("dst/gone")), "g\n");
    assert_eq!(read(s.join("dst/f")), "old\n");
    assert_eq!(fs::read_dir(s.join("dst")).unwrap().count(), 2);
}

/// The world for the basis options: `prev/` is the source as a previous run left it,
/// except `older` (other content) and `world` (other mode: same content, so copied
/// locally); `dst/` is a new, empty snapshot directory.
fn previous_snapshot(w: &Path) {
    let ok = Command::new("rsync")
        .arg("-a")
        .arg(slash(&w.join("src")))
        .arg(slash(&w.join("prev")))
        .status()
        .unwrap();
    assert!(ok.success());
    Tree::new(w.join("prev"))
        .file("older", "previous content\n")
        .chmod("world", 0o600)
        .mtime("older", 1_600_000_000, 0);
    fs::remove_dir_all(w.join("dst")).unwrap();
}

/// `--link-dest`: the snapshot rotation. Unchanged files of the new snapshot are hard
/// links to the previous snapshot's (same inode, two links), changed ones and ones
/// whose attributes differ are copies of their own.
#[test]
fn link_dest_snapshot_rotation() {
    let (sides, d) = side_by_side(false, &["-a", "--link-dest=../prev"], previous_snapshot);
    assert!(d.is_empty(), "differs from rsync:\n{d}");
    for (world, label) in [(sides.nfsync(""), "nfsync"), (sides.rsync(""), "rsync")] {
        let m = |p: &str| fs::symlink_metadata(world.join(p)).unwrap();
        for f in ["same", "big", "sub/big2", "newdir/inner", "link"] {
            let (new, old) = (m(&format!("dst/{f}")), m(&format!("prev/{f}")));
            assert_eq!(new.ino(), old.ino(), "{label}: dst/{f} is not prev/{f}");
            assert_eq!(new.nlink(), 2, "{label}: dst/{f}");
        }
        for f in ["older", "world"] {
            assert_eq!(m(&format!("dst/{f}")).nlink(), 1, "{label}: dst/{f}");
        }
    }
}

/// `--link-dest` twice: the first directory holding an exact copy wins; one that does
/// not exist is warned about, as rsync does, and passed over.
#[test]
fn link_dest_repeated() {
    let (sides, d) = side_by_side(
        false,
        &["-a", "--link-dest=../none", "--link-dest=../prev"],
        previous_snapshot,
    );
    assert!(d.is_empty(), "differs from rsync:\n{d}");
    let m = |p: &str| fs::metadata(sides.nfsync(p)).unwrap();
    assert_eq!(m("dst/big").ino(), m("prev/big").ino());
    assert!(
        sides.warned.contains("--link-dest arg does not exist: ")
            && sides.warned.contains("/dst/../none"),
        "{}",
        sides.warned
    );
}

/// `--compare-dest`: what the previous snapshot holds unchanged is left out of DEST;
/// `--copy-dest`: it is copied (no links).
#[test]
fn compare_dest_and_copy_dest() {
    let (sides, d) = side_by_side(false, &["-a", "--compare-dest=../prev"], previous_snapshot);
    assert!(d.is_empty(), "--compare-dest differs from rsync:\n{d}");
    assert!(!sides.nfsync("dst/same").exists());
    assert!(!sides.nfsync("dst/link").exists());
    assert_eq!(read(sides.nfsync("dst/older")), "new content\n");
    assert!(sides.nfsync("dst/world").exists());
    let (sides, d) = side_by_side(false, &["-a", "--copy-dest=../prev"], previous_snapshot);
    assert!(d.is_empty(), "--copy-dest differs from rsync:\n{d}");
    let m = fs::metadata(sides.nfsync("dst/same")).unwrap();
    assert_eq!(m.nlink(), 1);
}

/// `-H --compare-dest`: a group the basis holds whole is left out, every name of it (no
/// link to a first name that was never made, which ended in exit 23 with "No such
/// file"); a group the basis lacks is copied and linked.
#[test]
fn hard_links_left_out_by_compare_dest() {
    let setup = |w: &Path| {
        Tree::new(w.join("src"))
            .file("hl/f", "in basis\n")
            .file("hl/x", "new\n");
        for (name, to) in [("g", "f"), ("y", "x")] {
            fs::hard_link(w.join("src/hl").join(to), w.join("src/hl").join(name)).unwrap();
        }
        previous_snapshot(w);
        for gone in ["hl/x", "hl/y"] {
            fs::remove_file(w.join("prev").join(gone)).unwrap();
        }
    };
    let (sides, d) = side_by_side(false, &["-aH", "--compare-dest=../prev"], setup);
    assert!(d.is_empty(), "differs from rsync:\n{d}");
    assert!(!sides.nfsync("dst/hl/f").exists() && !sides.nfsync("dst/hl/g").exists());
    let m = |p: &str| fs::metadata(sides.nfsync(p)).unwrap();
    assert_eq!(m("dst/hl/x").ino(), m("dst/hl/y").ino());
}

/// `--copy-dest`: a basis copy that passes the quick check is what DEST gets, copied
/// from the basis (rsync copies it locally), not from the source: `same` (also its
/// attributes) and `world` (another mode) have the source's size and time there but
/// other bytes, and both sides end with the basis's bytes; over nfs:// too (the basis
/// copy read back from the server).
#[test]
fn copy_dest_copies_the_basis_copy() {
    let setup = basis_with_other_bytes;
    for (nfs, flags) in [
        (false, &["-a", "--copy-dest=../prev"][..]),
        (true, &["-a", "--no-D", "--copy-dest=../prev"]),
    ] {
        let (sides, d) = side_by_side(nfs, flags, setup);
        assert!(d.is_empty(), "{flags:?} differs from rsync:\n{d}");
        for f in ["dst/same", "dst/world"] {
            let basis = read(sides.rsync(&f.replace("dst", "prev")));
            assert_eq!(read(sides.rsync(f)), basis);
            assert_eq!(read(sides.nfsync(f)), read(sides.rsync(f)), "{flags:?} {f}");
        }
        assert_eq!(fs::metadata(sides.nfsync("dst/same")).unwrap().nlink(), 1);
    }
}

/// [`previous_snapshot`], `same` and `world` there holding other bytes of the source's
/// size, with its time: the quick check passes, the content is the basis's own.
fn basis_with_other_bytes(w: &Path) {
    previous_snapshot(w);
    for (f, other) in [("same", "SAME\n"), ("world", "RW FOR ALL\n")] {
        let t = fs::metadata(w.join("src").join(f))
            .unwrap()
            .modified()
            .unwrap();
        let p = w.join("prev").join(f);
        fs::write(&p, other).unwrap();
        fs::File::options()
            .write(true)
            .open(&p)
            .unwrap()
            .set_modified(t)
            .unwrap();
    }
}

/// `--remove-source-files`: every source non-directory that DEST now holds (copied or
/// already up to date) is gone from the source; directories stay.
#[test]
fn remove_source_files() {
    let (sides, d) = side_by_side(false, &["-a", "--remove-source-files"], nothing_more);
    assert!(d.is_empty(), "differs from rsync:\n{d}");
    assert_eq!(non_dirs(&sides.nfsync("src")), Vec::<String>::new());
    assert!(sides.nfsync("src/sub").is_dir());
    assert!(sides.nfsync("src/newdir").is_dir());
    assert_eq!(read(sides.nfsync("dst/same")), "same\n");
}

/// `--remove-source-files` with `--max-size` or `-u`: what is skipped stays in the
/// source (`-u`: the files newer at the destination).
#[test]
fn remove_source_files_keeps_skipped_files() {
    for (flags, kept) in [
        (
            &["-a", "--remove-source-files", "--max-size=3K"][..],
            &["sub/big2"][..],
        ),
        (
            &["-a", "-u", "--remove-source-files"],
            &["newer", "same_size_newer"],
        ),
    ] {
        let (sides, d) = side_by_side(false, flags, nothing_more);
        assert!(d.is_empty(), "{flags:?} differs from rsync:\n{d}");
        assert_eq!(non_dirs(&sides.nfsync("src")), kept, "{flags:?}");
    }
}

/// Over nfs:// (the in-process NFSv3 server: no LINK, no MKNOD): backups beside and in
/// a backup directory, `--compare-dest`, `--copy-dest` and `--remove-source-files`,
/// the backup directory and the basis directory found on the server.
#[test]
fn nfs_path_same_as_rsync() {
    for flags in [
        &["-a", "--no-D", "-b", "--delete"][..],
        &["-a", "--no-D", "--backup-dir=../bk", "--delete"],
        &["-a", "--no-D", "--remove-source-files"],
    ] {
        let (sides, d) = side_by_side(true, flags, nothing_more);
        assert!(d.is_empty(), "nfs:// {flags:?} differs from rsync:\n{d}");
        if flags.contains(&"--remove-source-files") {
            // --no-D: the fifo (and device, as root) are not sent, so they stay.
            let left = non_dirs(&sides.nfsync("src"));
            assert!(left.contains(&"fifo".to_string()), "{left:?}");
            assert!(!left.contains(&"same".to_string()), "{left:?}");
            assert_eq!(left, non_dirs(&sides.rsync("src")));
        } else if flags.contains(&"-b") {
            assert_eq!(read(sides.nfsync("dst/older~")), "old\n");
        } else {
            assert_eq!(read(sides.nfsync("bk/gone/deeper/g")), "g\n");
        }
    }
    for flags in [
        &["-a", "--no-D", "--compare-dest=../prev"][..],
        &["-a", "--no-D", "--copy-dest=../prev"],
    ] {
        let (sides, d) = side_by_side(true, flags, previous_snapshot);
        assert!(d.is_empty(), "nfs:// {flags:?} differs from rsync:\n{d}");
        let compare = flags[2].starts_with("--compare");
        assert_eq!(sides.nfsync("dst/same").exists(), !compare, "{flags:?}");
    }
}

/// Over a real NFS server (nfs-ganesha, NFSv3 and NFSv4.1): `--link-dest` makes hard
/// links to the previous snapshot with LINK, `--backup-dir` moves entries with RENAME
/// between two directories, `--remove-source-files` removes what the server holds.
#[test]
fn ganesha_same_as_rsync() {
    let Some((_dir, g)) = ganesha::own(Options {
        nfs4: Nfs4::Also,
        ..Options::default()
    }) else {
        return;
    };
    for proto in [Proto::V3, Proto::V41] {
        let export = g.export(proto);
        let via = Via::Ganesha(&export);
        let (sides, d) = side_by_side_via(via, &["-a", "--link-dest=../prev"], previous_snapshot);
        assert!(
            d.is_empty(),
            "{proto:?}: --link-dest differs from rsync:\n{d}"
        );
        let m = |p: &str| fs::symlink_metadata(sides.nfsync(p)).unwrap();
        assert_eq!(m("dst/big").ino(), m("prev/big").ino(), "{proto:?}");
        assert_eq!(m("dst/big").nlink(), 2, "{proto:?}");
        for flags in [
            &["-a", "--backup-dir=../bk", "--delete"][..],
            &["-a", "-b", "--suffix=.old", "--delete"],
            &["-a", "--remove-source-files"],
        ] {
            let (sides, d) = side_by_side_via(via, flags, nothing_more);
            assert!(
                d.is_empty(),
                "{proto:?}: {flags:?} differs from rsync:\n{d}"
            );
            if flags[1] == "--remove-source-files" {
                assert_eq!(non_dirs(&sides.nfsync("src")), Vec::<String>::new());
            } else if flags[1] == "-b" {
                assert_eq!(read(sides.nfsync("dst/older.old")), "old\n");
            } else {
                assert_eq!(read(sides.nfsync("bk/gone/deeper/g")), "g\n");
            }
        }
        // The old copy (--inplace -b) and the basis copy (--copy-dest) are read back
        // from the server.
        let flags = ["-a", "--inplace", "-b"];
        let (sides, d) = side_by_side_via(via, &flags, nothing_more);
        assert!(d.is_empty(), "{proto:?}: {flags:?} differs:\n{d}");
        assert_eq!(read(sides.nfsync("dst/older~")), "old\n", "{proto:?}");
        let flags = ["-a", "--copy-dest=../prev"];
        let (sides, d) = side_by_side_via(via, &flags, basis_with_other_bytes);
        assert!(d.is_empty(), "{proto:?}: {flags:?} differs:\n{d}");
        assert_eq!(read(sides.nfsync("dst/same")), "SAME\n", "{proto:?}");
    }
}

/// `--partial` and `--partial-dir` change nothing in a run not interrupted (see
/// `rsync_partial` for one that is), and a relative partial dir is left out of the
/// transfer, as rsync leaves it out.
#[test]
fn partial_dir_is_accepted() {
    for flags in [
        &["-a", "--partial-dir=.rsync-partial"][..],
        &["-a", "--partial", "--partial-dir", "/tmp/p"],
    ] {
        let (sides, d) = side_by_side(false, flags, |w| {
            Tree::new(w.join("src")).file(".rsync-partial/f", "not sent\n");
        });
        assert!(d.is_empty(), "{flags:?} differs from rsync:\n{d}");
        assert_eq!(read(sides.nfsync("dst/older")), "new content\n");
    }
}

/// What rsync refuses, nfsync refuses in rsync's words: an empty suffix without a
/// backup directory, and basis directories of two kinds.
#[test]
fn refused_combinations() {
    let s = Scratch::new();
    Tree::new(s.join("src")).file("f", "f\n");
    for (flags, says) in [
        (
            &["-a", "-b", "--suffix="][..],
            "--suffix cannot be a null string without --backup-dir",
        ),
        (
            &["-a", "--link-dest=x", "--copy-dest=y"],
            "You may not mix --compare-dest, --copy-dest, and --link-dest.",
        ),
    ] {
        let out = nfsync()
            .args(flags)
            .arg(slash(&s.join("src")))
            .arg(s.join("dst"))
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{flags:?}: {}", describe(&out));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(says), "{flags:?}: {err}");
        assert!(!s.join("dst").exists(), "{flags:?}");
    }
}

/// `-i` says what rsync says: a file sent whole beside a basis copy is itemized against
/// that copy (`>f.s.......`), one copied from a basis copy whose attributes differ is a
/// local change (`cf...p.....`), linked ones are not shown; backups and deletions.
#[test]
fn itemized_as_rsync() {
    let (sides, d) = side_by_side(false, &["-ai", "--link-dest=../prev"], previous_snapshot);
    assert!(d.is_empty(), "differs from rsync:\n{d}");
    assert_eq!(sides.printed.1, sides.printed.0);
    assert!(
        sides
            .printed
            .0
            .iter()
            .any(|l| l.starts_with("cf...p..... "))
    );
    let (sides, d) = side_by_side(
        false,
        &["-ai", "--backup-dir=../bk", "--delete"],
        nothing_more,
    );
    assert!(d.is_empty(), "differs from rsync:\n{d}");
    // An existing directory's attribute lines (`.d..t...... ./`) are not printed by
    // nfsync yet, with or without --backup-dir; the rest must be rsync's.
    let no_dir_attrs = |l: &Vec<String>| -> Vec<String> {
        l.iter().filter(|l| !l.starts_with(".d")).cloned().collect()
    };
    assert_eq!(
        no_dir_attrs(&sides.printed.1),
        no_dir_attrs(&sides.printed.0)
    );
}

/// `-b`: a directory in the way of a file keeps the backups made in it, so the file
/// cannot take its place: reported, exit 23 (rsync: "could not make way"), never a
/// silent skip.
#[test]
fn backup_beside_cannot_make_way_through_a_directory() {
    let s = Scratch::new();
    Tree::new(s.join("src")).file("x", "f\n");
    Tree::new(s.join("dst")).file("x/in", "in\n");
    let out = nfsync()
        .args(["-a", "-b"])
        .arg(slash(&s.join("src")))
        .arg(slash(&s.join("dst")))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(23), "{}", describe(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("could not make way"),
        "{}",
        describe(&out)
    );
    assert!(s.join("dst/x").is_dir());
}

/// `--backup-dir` on another filesystem: each replaced DEST entry is re-made there
/// by its type (a FIFO or a device by mknod, a symlink with its target), never
/// opened, so a FIFO cannot hang the run; a regular file is copied with its mode,
/// owners and mtime. Bounded, so a hang fails the test.
#[test]
fn backup_dir_on_another_filesystem_remakes_each_type() {
    if !crate::support::root_or_skip("backup_dir_on_another_filesystem_remakes_each_type") {
        return;
    }
    let s = Scratch::new();
    let Some(bk) = Tmpfs::mount(&s.join("bk"), "defaults") else {
        return crate::support::prerequisite_missing("cannot mount a tmpfs here");
    };
    let src = Tree::new(s.join("src"));
    src.file("reg", "gen1\ngen1\n")
        .symlink("lnk", "target-gen2")
        .file("fifo", "replaces-fifo\n")
        .file("dev", "replaces-dev\n");
    let dst = Tree::new(s.join("dst"));
    dst.file("reg", "gen1\n")
        .chmod("reg", 0o640)
        .chown("reg", 1234, 5678)
        .symlink("lnk", "target-gen1")
        .fifo("fifo")
        .chmod("fifo", 0o604)
        .device("dev", libc::S_IFCHR, 1, 3)
        .age();
    let before: Vec<_> = ["reg", "lnk", "fifo", "dev"]
        .iter()
        .map(|n| fs::symlink_metadata(dst.path(n)).unwrap())
        .collect();
    let out = nfsync()
        .args(["-rlpD", "--backup"])
        .arg(format!("--backup-dir={}", bk.0.display()))
        .arg(slash(src.root()))
        .arg(slash(dst.root()))
        .timeout(std::time::Duration::from_secs(20))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", describe(&out));
    assert_eq!(fs::read_to_string(bk.0.join("reg")).unwrap(), "gen1\n");
    assert_eq!(
        fs::read_link(bk.0.join("lnk")).unwrap(),
        Path::new("target-gen1")
    );
    for (name, was) in ["reg", "lnk", "fifo", "dev"].iter().zip(&before) {
        let m = fs::symlink_metadata(bk.0.join(name)).unwrap();
        assert_eq!(
            (
                m.mode(),
                m.uid(),
                m.gid(),
                m.rdev(),
                m.mtime(),
                m.mtime_nsec()
            ),
            (
                was.mode(),
                was.uid(),
                was.gid(),
                was.rdev(),
                was.mtime(),
                was.mtime_nsec()
            ),
            "{name} backed up on the tmpfs"
        );
    }
    assert_eq!(
        fs::read_to_string(dst.path("fifo")).unwrap(),
        "replaces-fifo\n"
    );
}
