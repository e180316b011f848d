//! `-ii` and `-vv` speak of entries already up to date too, as rsync does: `-ii` (or
//! `-i` with `-vv`) itemizes them with blank columns (`.f          NAME`,
//! `hf          NAME` for a name already linked), `-vv` says `NAME is uptodate`; with a
//! basis directory (`--compare-dest`, `--copy-dest`) the entries it holds are spoken of
//! against it. Each run side by side with rsync, lines compared sorted (nfsync's order
//! is rsync's file-list order; rsync's `-vv` interleaves two processes).

use std::path::Path;
use std::process::Command;

use crate::support::sides::{Sides, Via};
use crate::support::{Scratch, Tree, bin, copy_tree, describe, slash};

/// A source and an older copy of it: `b` changed, `sub/e` new, the rest the same
/// (`h2` a hard link of `h1` in both, `l` a symlink).
fn mostly_unchanged(s: &Scratch) -> (Tree, Tree) {
    let src = Tree::new(s.join("src"));
    src.file("a", "a")
        .file("b", "new b")
        .file("c", "c")
        .file("h1", "h")
        .file("sub/d", "d")
        .file("sub/e", "e")
        .symlink("l", "a")
        .hardlink("h2", "h1")
        .age();
    let old = Tree::new(s.join("old"));
    old.file("a", "a")
        .file("b", "old")
        .file("c", "c")
        .file("h1", "h")
        .file("sub/d", "d")
        .symlink("l", "a")
        .hardlink("h2", "h1")
        .age();
    (src, old)
}

/// rsync's `v_filt` of its own tests: the per-file lines, without the banners and
/// from the first blank line on (the totals).
fn per_file_lines(stdout: &[u8]) -> Vec<String> {
    let skip = [
        "sending incremental file list",
        "building file list",
        "delta-transmission disabled",
        "created directory ",
        "total: ",
    ];
    let mut l: Vec<String> = String::from_utf8_lossy(stdout)
        .lines()
        .take_while(|l| !l.is_empty())
        .filter(|l| !skip.iter().any(|s| l.starts_with(s)))
        .map(String::from)
        .collect();
    l.sort();
    l
}

/// `rsync ARGS SRC/ dst` and `nfsync ARGS SRC/ dst`, each from a copy of `start` (or
/// no DEST), run from their own directory below `name` (relative basis directories
/// name `../old`): their per-file lines, which must be equal and are returned.
fn compare(
    src: &Path,
    start: Option<&Path>,
    s: &Scratch,
    name: &str,
    args: &[&str],
) -> Vec<String> {
    let mut got = Vec::new();
    for tool in ["rsync", "nfsync"] {
        let w = s.join(format!("{name}/{tool}"));
        std::fs::create_dir_all(&w).unwrap();
        if let Some(start) = start {
            copy_tree(start, &w.join("dst"));
        }
        let mut cmd = Command::new(if tool == "rsync" {
            "rsync".into()
        } else {
            bin()
        });
        let out = cmd
            .current_dir(&w)
            .env("LANG", "C.UTF-8")
            .args(args)
            .arg(slash(src))
            .arg("dst")
            .output()
            .unwrap();
        assert!(out.status.success(), "{tool} {args:?}: {}", describe(&out));
        got.push(per_file_lines(&out.stdout));
    }
    assert_eq!(got[0], got[1], "{name}: {args:?}: rsync, then nfsync");
    got.pop().unwrap()
}

#[test]
fn ii_and_vv_name_what_is_up_to_date() {
    let s = Scratch::new();
    let (src, old) = mostly_unchanged(&s);
    let start = Some(old.root());
    let ii = compare(src.root(), start, &s, "ii", &["-aiiH"]);
    // Blank columns for what is unchanged, the usual code for what changed.
    for want in [
        ".f          a",
        "hf          h2",
        ".L          l -> a",
        ">f.s....... b",
    ] {
        assert!(ii.iter().any(|l| l == want), "no {want:?} in {ii:?}");
    }
    compare(src.root(), start, &s, "ivv", &["-aivvH"]);
    let vv = compare(src.root(), start, &s, "vv", &["-avvH"]);
    for want in [
        "a is uptodate",
        "h2 is uptodate",
        "l is uptodate",
        "b",
        "sub/e",
    ] {
        assert!(vv.iter().any(|l| l == want), "no {want:?} in {vv:?}");
    }
    // One -i and one -v say nothing of them.
    let i = compare(src.root(), start, &s, "i", &["-aiH"]);
    assert!(!i.iter().any(|l| l.ends_with(" a")), "{i:?}");
    let v = compare(src.root(), start, &s, "v", &["-avH"]);
    assert!(!v.iter().any(|l| l.contains("uptodate")), "{v:?}");
}

#[test]
fn ii_and_vv_with_a_basis_directory() {
    let s = Scratch::new();
    let (src, old) = mostly_unchanged(&s);
    for (name, basis) in [
        ("cmp-ii", "--compare-dest=../old"),
        ("cmp-vv", "--compare-dest=../old"),
        ("copy-ii", "--copy-dest=../old"),
        ("copy-i", "--copy-dest=../old"),
        ("copy-vv", "--copy-dest=../old"),
        ("link-ii", "--link-dest=../old"),
        ("link-i", "--link-dest=../old"),
        ("link-vv", "--link-dest=../old"),
        // A dry run into a DEST not there yet: `../old` is still found.
        ("link-n", "--link-dest=../old"),
    ] {
        for tool in ["rsync", "nfsync"] {
            let w = s.join(format!("{name}/{tool}"));
            std::fs::create_dir_all(&w).unwrap();
            copy_tree(old.root(), &w.join("old"));
        }
        let flags = match &name[name.find('-').unwrap() + 1..] {
            "ii" => "-aiiH",
            "i" => "-aiH",
            "n" => "-ainH",
            _ => "-avvH",
        };
        let lines = compare(src.root(), None, &s, name, &[flags, basis]);
        assert!(!lines.is_empty(), "{name}: no lines");
    }
}

/// The same lines with DEST over nfs:// (the in-process server; no `-H`, which it
/// cannot link).
#[test]
fn ii_and_vv_over_nfs() {
    let sides = Sides::new(Via::InProc);
    let s = sides.join("w");
    let src = Tree::new(s.join("src"));
    src.file("a", "a")
        .file("b", "new b")
        .file("sub/d", "d")
        .symlink("l", "a")
        .age();
    let old = Tree::new(s.join("dst"));
    old.file("a", "a")
        .file("b", "old")
        .file("sub/d", "d")
        .symlink("l", "a")
        .age();
    for flags in ["-aii", "-avv"] {
        sides.copy_start("w");
        let ran = sides.run_ok("dst", b"", &|side, cmd| {
            cmd.arg(flags)
                .arg(slash(&sides.join(side.dir()).join("src")));
        });
        let (want, got) = (
            per_file_lines(&ran.rsync.stdout),
            per_file_lines(&ran.nfsync.stdout),
        );
        assert_eq!(want, got, "{flags}: rsync, then nfsync");
        assert!(
            got.iter()
                .any(|l| l == ".f          a" || l == "a is uptodate"),
            "{flags}: {got:?}"
        );
    }
}
