//! `-i` prints what `rsync -ai` prints for the same change, byte for byte, so tools that
//! parse rsync's itemized lines keep working: escaped names (a newline, a byte that is not
//! UTF-8), a symlink's target, a changed file, a new directory, deletions, and rsync's
//! `created directory` line.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::process::Command;

use crate::support::{Scratch, Tree, copy_tree, describe, nfsync, slash};

/// Every stdout line of a run, sorted (nfsync's come in the order its jobs finish).
fn lines(stdout: &[u8]) -> Vec<Vec<u8>> {
    let mut l: Vec<Vec<u8>> = stdout
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .map(<[u8]>::to_vec)
        .collect();
    l.sort();
    l
}

fn show(lines: &[Vec<u8>]) -> String {
    lines
        .iter()
        .map(|l| String::from_utf8_lossy(l).into_owned())
        .collect::<Vec<_>>()
        .join("\n")
}

/// `rsync -ai EXTRA SRC/ DST` and `nfsync -i EXTRA SRC/ DST` from identical copies of
/// `start` (or no DST at all), compared line for line.
fn compare(src: &Path, start: Option<&Path>, s: &Scratch, name: &str, extra: &[&str]) {
    // The same DEST name from two working directories: rsync's `created directory`
    // line names it as given.
    let (wa, wb) = (
        s.join(format!("{name}/rsync")),
        s.join(format!("{name}/nfsync")),
    );
    std::fs::create_dir_all(&wa).unwrap();
    std::fs::create_dir_all(&wb).unwrap();
    if let Some(start) = start {
        copy_tree(start, &wa.join("dst"));
        copy_tree(start, &wb.join("dst"));
    }
    let rsync = Command::new("rsync")
        .current_dir(&wa)
        .env("LANG", "C.UTF-8")
        .arg("-ai")
        .args(extra)
        .arg(slash(src))
        .arg("dst")
        .output()
        .expect("run rsync");
    assert!(rsync.status.success(), "rsync: {}", describe(&rsync));
    let ours = nfsync()
        .current_dir(&wb)
        .arg("-ai")
        .args(extra)
        .arg(slash(src))
        .arg("dst")
        .output()
        .unwrap();
    assert!(ours.status.success(), "nfsync: {}", describe(&ours));
    let (want, got) = (lines(&rsync.stdout), lines(&ours.stdout));
    assert!(
        want == got,
        "{name}: -i differs from rsync -ai\n--- rsync\n{}\n--- nfsync\n{}",
        show(&want),
        show(&got)
    );
}

#[test]
fn itemized_lines_are_rsyncs_byte_for_byte() {
    let s = Scratch::new();
    let src = Tree::new(s.join("src"));
    src.file("changed", "new and longer content")
        .file("same", "same")
        .file("nl\nname", "x")
        .file("tab\tname", "t")
        .file("esc\\#123", "e")
        .file("new dir/inner/f", "f")
        .symlink("link", "changed")
        .symlink("retarget", "same");
    let bad = OsStr::from_bytes(b"bad\xffname");
    src.file(bad, "b");
    src.age()
        .mtime("changed", 1_700_000_100, 0)
        .mtime("same", 1_600_000_000, 0);

    let old = Tree::new(s.join("old"));
    old.file("changed", "old")
        .file("same", "same")
        .symlink("retarget", "elsewhere")
        .file("extra", "x")
        .file("gone/sub/z", "z")
        .file(OsStr::from_bytes(b"gone\xfe"), "g");
    old.age()
        .mtime("changed", 1_600_000_000, 0)
        .mtime("same", 1_600_000_000, 0);

    compare(src.root(), None, &s, "fresh", &[]);
    compare(src.root(), Some(old.root()), &s, "update", &["--delete"]);
    compare(src.root(), Some(old.root()), &s, "dry", &["--delete", "-n"]);
}

/// With `-c` a file sent over an old copy has rsync's `c` (checksum) column, whether
/// its size differs or not; one whose content is the same has only its time fixed.
#[test]
fn checksum_column_with_dash_c() {
    let s = Scratch::new();
    let src = Tree::new(s.join("src"));
    src.file("same_size", "aaaa")
        .file("longer", "aaaaaa")
        .file("equal", "eq");
    src.age();
    let old = Tree::new(s.join("old"));
    old.file("same_size", "bbbb")
        .file("longer", "b")
        .file("equal", "eq");
    old.age().mtime("equal", 1_000_000_000, 0);
    compare(src.root(), Some(old.root()), &s, "checksum", &["-c"]);
    compare(
        src.root(),
        Some(old.root()),
        &s,
        "checksum dry",
        &["-c", "-n"],
    );
}

/// `-H` over a DEST where a later name of a group is a separate copy: the link that
/// replaces it is itemized against that copy (`hf..t......`, `hf.st......`), as rsync does,
/// not as new.
#[test]
fn a_hard_link_over_an_old_copy_itemizes_what_differs() {
    let s = Scratch::new();
    let src = Tree::new(s.join("src"));
    src.file("a", "shared").file("d/e", "other");
    src.hardlink("b", "a").hardlink("d/g", "d/e");
    src.age();
    let old = Tree::new(s.join("old"));
    old.file("a", "shared")
        .file("b", "shared")
        .file("d/e", "other")
        .file("d/g", "x");
    old.age().mtime("b", 1_500_000_000, 0);
    compare(src.root(), Some(old.root()), &s, "-H", &["-H"]);
}

/// `-H` copies the first name of a group in rsync's order, whichever job starts
/// first: with many groups in one directory, each later name is the one linked and
/// itemized against its old copy, every time.
#[test]
fn the_first_name_of_a_group_is_the_one_copied() {
    let s = Scratch::new();
    let src = Tree::new(s.join("src"));
    let old = Tree::new(s.join("old"));
    for i in 0..96 {
        let (a, b) = (format!("g{i:02}_a"), format!("g{i:02}_b"));
        src.file(&a, "same");
        src.hardlink(&b, &a);
        old.file(&a, "same").file(&b, "stale");
    }
    src.age();
    old.age();
    compare(src.root(), Some(old.root()), &s, "many", &["-H"]);
}

/// An entry replaced by one of another type is not itemized as deleted (rsync's
/// "make room" removals are not logged; a script counting `*deleting` lines counts
/// what the source lacks), what was inside a replaced directory is; the same with
/// `--stats`' count of deleted files.
#[test]
fn type_changes_itemize_only_what_was_inside() {
    let s = Scratch::new();
    let src = Tree::new(s.join("src"));
    src.file("was_dir", "now a file")
        .file("was_link/f", "now a directory")
        .symlink("was_file", "was_dir");
    src.age();
    let old = Tree::new(s.join("old"));
    old.file("was_dir/f", "f")
        .file("was_dir/sub/g", "g")
        .symlink("was_link", "elsewhere")
        .file("was_file", "a file");
    old.age();
    for (i, extra) in [&["--delete"][..], &["--force"], &["--delete", "-n"]]
        .iter()
        .enumerate()
    {
        compare(src.root(), Some(old.root()), &s, &format!("tc{i}"), extra);
    }
    let dst = s.join("stats");
    copy_tree(old.root(), &dst);
    let out = nfsync()
        .args(["-a", "--stats", "--delete"])
        .arg(slash(src.root()))
        .arg(&dst)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("Number of deleted files: 3 (reg: 2, dir: 1)"),
        "{}",
        describe(&out)
    );
}

/// Without `--delete` or `--force` a non-empty directory in the way of a file stays,
/// with rsync's two lines and exit 23; an empty one is replaced.
#[test]
fn a_non_empty_directory_in_the_way_needs_force_or_delete() {
    let s = Scratch::new();
    let src = Tree::new(s.join("src"));
    src.file("full", "a file").file("empty", "a file").age();
    let old = Tree::new(s.join("old"));
    old.file("full/f", "f").dir("empty").age();
    for (tool, dst) in [("rsync", s.join("r")), ("nfsync", s.join("n"))] {
        copy_tree(old.root(), &dst);
        let args = [OsStr::new("-ai"), &slash(src.root()), dst.as_os_str()];
        let out = match tool {
            "rsync" => Command::new("rsync").args(args).output().unwrap(),
            _ => nfsync().args(args).output().unwrap(),
        };
        let (stdout, stderr) = (
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
        );
        assert_eq!(out.status.code(), Some(23), "{tool}: {}", describe(&out));
        assert!(
            stdout
                .lines()
                .any(|l| l == "cannot delete non-empty directory: full"),
            "{tool}: {stdout}"
        );
        assert!(
            stderr.contains("could not make way for new regular file: full"),
            "{tool}: {stderr}"
        );
        assert!(dst.join("full/f").is_file(), "{tool} removed full/");
        assert!(dst.join("empty").is_file(), "{tool} kept empty/");
    }
}
