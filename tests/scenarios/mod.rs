//! Sync scenarios shared by every kind of destination.
//!
//! Each scenario is a `pub fn name(t: &dyn Target)`: it builds a source tree in a local
//! temporary directory, runs nfsync with `t.dest_arg(sub)` as DEST, and judges the
//! result by reading `t.dest_path(sub)` back, mostly through an independent comparison
//! (`rsync -anciH --delete`, see `support::rsync_diff`), never through nfsync's own
//! logic. `sub` names are unique within one scenario only: give each scenario a fresh
//! target (or a fresh directory of a shared server).
//!
//! ## Adding a target
//! 1. Implement `support::Target` for it: `dest_arg` is what goes on the command line
//!    (e.g. `nfs://127.0.0.1:PORT/export/SUB`), `dest_path` is the local directory where
//!    that destination can be read back (e.g. the exported directory joined with SUB).
//!    Override `command` to add options or environment the target needs, and `diff` if
//!    the target cannot store something (e.g. owners on a root-squashed export); say
//!    `keeps_symlink_times() == false` if symlink mtimes cannot be set there. Every
//!    comparison of a DEST goes through `diff`, so one override covers all scenarios.
//! 2. In a test file: `mod support; mod scenarios;` then
//!    `scenarios::scenario_tests!(MyTarget::new());` — one `#[test]` per scenario, each
//!    with a fresh target built by that expression. Or loop over [`ALL`] yourself.
//!
//! ## Adding a scenario
//! Write the function below and add its name to the `define_scenarios!` list at the end;
//! every target then runs it.
#![allow(dead_code)]

use std::fs;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::Path;
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

use crate::support::{
    Scratch, Target, Tree, assert_snapshots_eq, assert_target_same, bytes_path, count_files,
    describe, is_root, json_stats, nf, rsync_reference, slash, snapshot, stat,
};

// ---------------------------------------------------------------------------------------
// Helpers

/// Runs `nfsync --json [extra] SRC/ DEST`, asserts success, returns the stats object.
fn sync(t: &dyn Target, extra: &[&str], src: &Path, sub: &str) -> serde_json::Value {
    let out = run(t, extra, src, sub);
    assert!(out.status.success(), "nfsync failed:\n{}", describe(&out));
    json_stats(&out)
}

/// Runs `nfsync --json [extra] SRC/ DEST` and returns whatever happened.
fn run(t: &dyn Target, extra: &[&str], src: &Path, sub: &str) -> Output {
    nf(t)
        .arg("--json")
        .args(extra)
        .arg(slash(src))
        .arg(t.dest_arg(sub))
        .output()
        .expect("spawn nfsync")
}

/// Asserts that a second identical run copies, deletes and creates nothing, and leaves
/// the destination exactly as it was (not even a touched mtime).
fn assert_rerun_is_noop(t: &dyn Target, extra: &[&str], src: &Path, sub: &str) {
    let before = snapshot(&t.dest_path(sub));
    let stats = sync(t, extra, src, sub);
    assert_eq!(
        stat(&stats, "files_copied"),
        0,
        "re-run copied files: {stats}"
    );
    assert_eq!(
        stat(&stats, "bytes_copied"),
        0,
        "re-run copied bytes: {stats}"
    );
    assert_eq!(stat(&stats, "files_deleted"), 0, "re-run deleted: {stats}");
    assert_eq!(
        stat(&stats, "dirs_created"),
        0,
        "re-run created dirs: {stats}"
    );
    assert_eq!(stat(&stats, "errors"), 0, "re-run had errors: {stats}");
    let after = snapshot(&t.dest_path(sub));
    assert_snapshots_eq(&before, &after, "re-run changed the destination");
}

/// Asserts that `rel` has the same mtime, to the nanosecond, in `src` and `dst`.
fn assert_same_mtime_ns(src: &Path, dst: &Path, rel: impl AsRef<Path>) {
    let rel = rel.as_ref();
    // An empty `rel` means the paths themselves (`join("")` would add a slash).
    let join = |p: &Path| {
        if rel.as_os_str().is_empty() {
            p.to_path_buf()
        } else {
            p.join(rel)
        }
    };
    let a = fs::symlink_metadata(join(src)).expect("stat source");
    let b = fs::symlink_metadata(join(dst))
        .unwrap_or_else(|e| panic!("stat {}: {e}", join(dst).display()));
    assert_eq!(
        (a.mtime(), a.mtime_nsec()),
        (b.mtime(), b.mtime_nsec()),
        "mtime of {rel:?} differs (source vs destination)"
    );
}

fn exists(p: &Path) -> bool {
    fs::symlink_metadata(p).is_ok()
}

/// A tree with a bit of everything, used by several scenarios.
fn mixed_tree(root: &Path) -> Tree {
    let t = Tree::new(root);
    t.file("top.txt", "top\n")
        .random_file("a/one.bin", 70_000, 1)
        .random_file("a/b/two.bin", 5_000, 2)
        .file("a/b/c/three.txt", "three\n")
        .file("empty", "")
        .dir("emptydir/nested")
        .symlink("link", "a/one.bin")
        .symlink("dangling", "nowhere")
        .chmod("a/b/two.bin", 0o600)
        .age();
    t
}

// ---------------------------------------------------------------------------------------
// Scenarios

/// Deeply nested directories with files at every level; counters match what was copied.
pub fn nested_tree(t: &dyn Target) {
    let s = Scratch::new();
    let tree = Tree::new(s.join("src"));
    let mut files = 0u64;
    let mut bytes = 0u64;
    let mut dir = String::new();
    for depth in 0..8 {
        for sib in 0..3 {
            let size = depth * 1000 + sib * 77;
            tree.random_file(format!("{dir}f{sib}.dat"), size, depth * 10 + sib);
            files += 1;
            bytes += size;
            tree.file(
                format!("{dir}side{sib}/leaf.txt"),
                format!("{depth}/{sib}\n"),
            );
            files += 1;
            bytes += format!("{depth}/{sib}\n").len() as u64;
        }
        dir.push_str(&format!("level{depth}/"));
    }
    tree.dir(&dir).age();

    let stats = sync(t, &[], tree.root(), "dst");
    assert_target_same(t, tree.root(), "dst");
    assert_eq!(stat(&stats, "files_copied"), files, "files_copied: {stats}");
    assert_eq!(stat(&stats, "bytes_copied"), bytes, "bytes_copied: {stats}");
    assert_eq!(stat(&stats, "errors"), 0, "errors: {stats}");
    assert!(
        stat(&stats, "files_scanned") >= files,
        "files_scanned: {stats}"
    );
}

/// Empty files, empty directories, and directories holding only empty directories.
pub fn empty_files_and_dirs(t: &dyn Target) {
    let s = Scratch::new();
    let tree = Tree::new(s.join("src"));
    tree.file("empty0", "")
        .file("d/empty1", "")
        .file("d/e/f/empty2", "")
        .dir("only_dirs/a/b/c")
        .dir("only_dirs/x")
        .dir("lonely")
        .age();

    sync(t, &[], tree.root(), "dst");
    assert_target_same(t, tree.root(), "dst");
    let dst = t.dest_path("dst");
    assert_eq!(fs::metadata(dst.join("d/e/f/empty2")).unwrap().len(), 0);
    assert!(dst.join("only_dirs/a/b/c").is_dir());
    assert!(dst.join("lonely").is_dir());
}

/// A file over 100 MiB of incompressible data.
pub fn big_file(t: &dyn Target) {
    let s = Scratch::new();
    let tree = Tree::new(s.join("src"));
    let size = 101 * 1024 * 1024 + 7;
    tree.random_file("big.bin", size, 42)
        .file("small.txt", "small\n")
        .age();

    let stats = sync(t, &[], tree.root(), "dst");
    assert_eq!(
        fs::metadata(t.dest_path("dst").join("big.bin"))
            .unwrap()
            .len(),
        size
    );
    assert_target_same(t, tree.root(), "dst");
    assert_eq!(
        stat(&stats, "bytes_copied"),
        size + 6,
        "bytes_copied: {stats}"
    );
}

/// Sizes just around the 4 KiB, 64 KiB and 1 MiB boundaries (block, NFS transfer,
/// and chunk sizes), written fresh and then overwriting longer and shorter files.
pub fn boundary_sizes(t: &dyn Target) {
    let s = Scratch::new();
    let tree = Tree::new(s.join("src"));
    let mut sizes = vec![0u64, 1, 2, 511, 512, 513];
    for base in [4096u64, 65536, 1 << 20, 2 << 20] {
        sizes.extend([base - 1, base, base + 1]);
    }
    for (i, size) in sizes.iter().enumerate() {
        tree.random_file(format!("size_{size}"), *size, 100 + i as u64);
    }
    tree.age();
    sync(t, &[], tree.root(), "dst");
    assert_target_same(t, tree.root(), "dst");
    for size in &sizes {
        let got = fs::metadata(t.dest_path("dst").join(format!("size_{size}")))
            .unwrap()
            .len();
        assert_eq!(got, *size, "size_{size} has {got} bytes");
    }

    // Now every file changes size across a boundary in both directions: dest files must
    // be truncated or extended, never left with stale tails.
    for (i, size) in sizes.iter().enumerate() {
        let new = if i % 2 == 0 { size + 4097 } else { size / 3 };
        tree.random_file(format!("size_{size}"), new, 900 + i as u64);
    }
    sync(t, &[], tree.root(), "dst");
    assert_target_same(t, tree.root(), "dst");
}

/// Symlinks: relative, absolute, dangling, to directories, chains, long targets, all
/// with their own mtimes; none is followed.
pub fn symlinks(t: &dyn Target) {
    let s = Scratch::new();
    let tree = Tree::new(s.join("src"));
    let long_target = "x".repeat(200) + "/" + &"y".repeat(200) + "/" + &"z".repeat(600);
    tree.file("sub/file.txt", "target file\n")
        .file("top.txt", "top\n")
        .symlink("rel", "sub/file.txt")
        .symlink("sub/up", "../top.txt")
        .symlink("abs_dir", "/usr")
        .symlink("abs_dangling", "/nonexistent/nfsync/target")
        .symlink("dangling", "no/such/file")
        .symlink("dirlink", "sub")
        .symlink("chain", "rel")
        .symlink("self_loop", "self_loop")
        .symlink("long", &long_target)
        .symlink(bytes_path(b"weird_target"), bytes_path(b"caf\xe9 \n-x"))
        .age();
    for (i, name) in [
        "rel", "sub/up", "abs_dir", "dangling", "dirlink", "chain", "long",
    ]
    .iter()
    .enumerate()
    {
        tree.mtime(name, 1_300_000_000 + i as i64 * 1000, 123_456_789);
    }

    sync(t, &[], tree.root(), "dst");
    assert_target_same(t, tree.root(), "dst");
    let dst = t.dest_path("dst");
    for name in [
        "rel",
        "abs_dir",
        "dangling",
        "dirlink",
        "chain",
        "long",
        "self_loop",
    ] {
        let m = fs::symlink_metadata(dst.join(name)).unwrap();
        assert!(
            m.file_type().is_symlink(),
            "{name} is not a symlink in DEST"
        );
        assert_eq!(
            fs::read_link(dst.join(name)).unwrap(),
            fs::read_link(tree.path(name)).unwrap()
        );
    }
    assert_eq!(
        fs::read_link(dst.join("weird_target")).unwrap(),
        bytes_path(b"caf\xe9 \n-x")
    );
    if t.keeps_symlink_times() {
        for name in ["rel", "dirlink", "long"] {
            assert_same_mtime_ns(tree.root(), &dst, name);
        }
    }
}

/// Hard links are kept with -H: same inode in DEST, across directories.
pub fn hard_links(t: &dyn Target) {
    let s = Scratch::new();
    let tree = Tree::new(s.join("src"));
    tree.random_file("a/one", 10_000, 7)
        .hardlink("b/two", "a/one")
        .hardlink("three", "a/one")
        .file("pair1", "pair\n")
        .hardlink("deep/er/pair2", "pair1")
        .file("single", "single\n")
        .file("empty1", "")
        .hardlink("empty2", "empty1")
        .age();

    sync(t, &["-H"], tree.root(), "dst");
    assert_target_same(t, tree.root(), "dst");
    let dst = t.dest_path("dst");
    let ino = |rel: &str| fs::metadata(dst.join(rel)).unwrap().ino();
    assert_eq!(ino("a/one"), ino("b/two"));
    assert_eq!(ino("a/one"), ino("three"));
    assert_eq!(ino("pair1"), ino("deep/er/pair2"));
    assert_eq!(ino("empty1"), ino("empty2"));
    assert_ne!(ino("a/one"), ino("pair1"));
    assert_eq!(fs::metadata(dst.join("a/one")).unwrap().nlink(), 3);
    assert_eq!(fs::metadata(dst.join("single")).unwrap().nlink(), 1);
    assert_rerun_is_noop(t, &["-H"], tree.root(), "dst");
}

/// Files first copied without -H (as separate files) become links on a run with -H.
pub fn hard_links_added_later(t: &dyn Target) {
    let s = Scratch::new();
    let tree = Tree::new(s.join("src"));
    tree.random_file("one", 50_000, 9)
        .hardlink("sub/two", "one")
        .age();
    sync(t, &[], tree.root(), "dst");
    sync(t, &["-H"], tree.root(), "dst");
    assert_target_same(t, tree.root(), "dst");
    let dst = t.dest_path("dst");
    assert_eq!(
        fs::metadata(dst.join("one")).unwrap().ino(),
        fs::metadata(dst.join("sub/two")).unwrap().ino(),
        "-H did not link files copied separately before"
    );
}

/// Without -H, hard-linked source files become independent copies (rsync -a).
pub fn hard_links_without_h(t: &dyn Target) {
    let s = Scratch::new();
    let tree = Tree::new(s.join("src"));
    tree.file("one", "same data\n").hardlink("two", "one");

    sync(t, &[], tree.root(), "dst");
    let dst = t.dest_path("dst");
    for name in ["one", "two"] {
        let m = fs::metadata(dst.join(name)).unwrap();
        assert_eq!(m.nlink(), 1, "{name} is hard-linked without -H");
        assert_eq!(fs::read(dst.join(name)).unwrap(), b"same data\n");
    }
}

/// Names that are not UTF-8, or hold newlines, spaces, tabs, glob characters, or start
/// with dashes; and a name of 255 bytes.
pub fn odd_names(t: &dyn Target) {
    let s = Scratch::new();
    let tree = Tree::new(s.join("src"));
    let names: Vec<&[u8]> = vec![
        b"caf\xe9",
        b"\xff\xfe bytes",
        b"with space",
        b" leading space",
        b"trailing space ",
        b"line\nbreak",
        b"\n",
        b"-rf",
        b"--delete",
        b"-",
        b"tab\tname",
        b"back\\slash",
        b"quote'\"",
        b"star*?[x]{a,b}",
        b"#hash",
        b"~tilde",
        b"caf\xc3\xa9 \xf0\x9f\x98\x80",
        b"..dots",
        b".hidden",
    ];
    for (i, n) in names.iter().enumerate() {
        tree.file(bytes_path(n), format!("name #{i}\n"));
    }
    tree.file(bytes_path(b"dir \xe9\n/inner\xff"), "inner\n")
        .file("--exclude/-n", "dashes\n")
        .dir(bytes_path(b"empty \xfe dir"));
    let long = "n".repeat(255);
    tree.file(&long, "long name\n").age();

    sync(t, &[], tree.root(), "dst");
    assert_target_same(t, tree.root(), "dst");
    let dst = t.dest_path("dst");
    for n in &names {
        assert!(
            exists(&dst.join(bytes_path(n))),
            "{:?} missing",
            bytes_path(n)
        );
    }
    assert!(exists(&dst.join(&long)));
}

/// setuid/setgid/sticky bits and read-only files and directories, including updating
/// files inside a read-only directory on a second run.
pub fn modes(t: &dyn Target) {
    let s = Scratch::new();
    let tree = Tree::new(s.join("src"));
    tree.file("suid", "#!/bin/sh\n")
        .file("sgid", "#!/bin/sh\n")
        .file("both", "#!/bin/sh\n")
        .file("ro", "read only\n")
        .file("private", "private\n")
        .file("exec", "#!/bin/sh\n")
        .file("sgid_dir/child", "child\n")
        .file("sticky/child", "child\n")
        .file("ro_dir/a", "a\n")
        .file("ro_dir/sub/b", "b\n")
        .dir("ro_dir/empty_ro")
        .age()
        .chmod("suid", 0o4755)
        .chmod("sgid", 0o2755)
        .chmod("both", 0o6750)
        .chmod("ro", 0o444)
        .chmod("private", 0o600)
        .chmod("exec", 0o711)
        .chmod("sgid_dir", 0o2775)
        .chmod("sticky", 0o1777)
        .chmod("ro_dir/empty_ro", 0o555)
        .chmod("ro_dir/sub", 0o555)
        .chmod("ro_dir", 0o555);

    sync(t, &[], tree.root(), "dst");
    assert_target_same(t, tree.root(), "dst");
    let dst = t.dest_path("dst");
    let mode = |rel: &str| fs::symlink_metadata(dst.join(rel)).unwrap().mode() & 0o7777;
    assert_eq!(mode("suid"), 0o4755);
    assert_eq!(mode("sgid"), 0o2755);
    assert_eq!(mode("both"), 0o6750);
    assert_eq!(mode("ro"), 0o444);
    assert_eq!(mode("sgid_dir"), 0o2775);
    assert_eq!(mode("sticky"), 0o1777);
    assert_eq!(mode("ro_dir"), 0o555);
    assert_eq!(mode("ro_dir/sub"), 0o555);
    assert_rerun_is_noop(t, &[], tree.root(), "dst");

    // Change files below read-only directories and a read-only file; re-run.
    tree.chmod("ro_dir", 0o755).chmod("ro_dir/sub", 0o755);
    tree.file("ro_dir/a", "a changed, longer\n")
        .file("ro_dir/sub/new", "new\n")
        .chmod("ro_dir/sub", 0o555)
        .chmod("ro_dir", 0o555)
        .chmod("ro", 0o644)
        .file("ro", "read only, changed\n")
        .chmod("ro", 0o444);
    sync(t, &[], tree.root(), "dst");
    assert_target_same(t, tree.root(), "dst");
}

/// Nanosecond mtimes on files, directories and symlinks survive exactly.
pub fn nanosecond_mtimes(t: &dyn Target) {
    let s = Scratch::new();
    let tree = Tree::new(s.join("src"));
    let cases: &[(&str, i64, u32)] = &[
        ("f_123456789", 1_600_000_000, 123_456_789),
        ("f_1ns", 1_600_000_001, 1),
        ("f_999999999", 1_600_000_002, 999_999_999),
        ("f_0ns", 1_600_000_003, 0),
        ("f_old", 1, 500_000_000),
        ("f_future", 4_000_000_000, 7),
        ("d/f_nested", 1_234_567_890, 987_654_321),
    ];
    for (name, _, _) in cases {
        tree.file(name, format!("{name}\n"));
    }
    tree.symlink("link", "f_1ns").dir("emptydir");
    for (name, secs, ns) in cases {
        tree.mtime(name, *secs, *ns);
    }
    tree.mtime("link", 1_111_111_111, 222_222_222)
        .mtime("emptydir", 1_333_333_333, 444_444_444)
        .mtime("d", 1_555_555_555, 666_666_666);

    sync(t, &[], tree.root(), "dst");
    assert_target_same(t, tree.root(), "dst");
    let dst = t.dest_path("dst");
    for (name, _, _) in cases {
        assert_same_mtime_ns(tree.root(), &dst, name);
    }
    for name in ["emptydir", "d"] {
        assert_same_mtime_ns(tree.root(), &dst, name);
    }
    if t.keeps_symlink_times() {
        assert_same_mtime_ns(tree.root(), &dst, "link");
    }
    assert_rerun_is_noop(t, &[], tree.root(), "dst");
}

/// Directory mtimes (set after their contents are written), including DEST itself.
pub fn dir_mtimes(t: &dyn Target) {
    let s = Scratch::new();
    let tree = Tree::new(s.join("src"));
    tree.file("a/b/c/file", "deep\n")
        .file("a/file", "shallow\n")
        .random_file("a/b/big", 300_000, 3)
        .dir("a/empty")
        .dir("x/y");
    // Deepest first, so that no later change bumps them.
    let dirs = ["a/b/c", "a/b", "a/empty", "a", "x/y", "x", ""];
    for (i, d) in dirs.iter().enumerate() {
        tree.mtime(d, 1_200_000_000 + i as i64 * 86_400, 100 + i as u32);
    }

    sync(t, &[], tree.root(), "dst");
    assert_target_same(t, tree.root(), "dst");
    for d in dirs {
        assert_same_mtime_ns(tree.root(), &t.dest_path("dst"), d);
    }
}

/// `SRC/` copies the contents of SRC into DEST; `SRC` copies SRC itself into DEST.
pub fn trailing_slash(t: &dyn Target) {
    let s = Scratch::new();
    let tree = Tree::new(s.join("project"));
    tree.file("readme", "hi\n").file("sub/x", "x\n");

    // With the slash: contents.
    sync(t, &[], tree.root(), "contents");
    assert_target_same(t, tree.root(), "contents");
    assert!(!exists(&t.dest_path("contents").join("project")));

    // Without: the directory itself, inside DEST.
    let out = nf(t)
        .arg("--json")
        .arg(tree.root())
        .arg(t.dest_arg("itself"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", describe(&out));
    assert_target_same(t, tree.root(), "itself/project");
    let names: Vec<_> = fs::read_dir(t.dest_path("itself"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, vec!["project"], "DEST holds more than SRC itself");

    // A trailing slash on DEST changes nothing.
    let out = nf(t)
        .arg(slash(tree.root()))
        .arg(format!("{}/", t.dest_arg("dest_slash")))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", describe(&out));
    assert_target_same(t, tree.root(), "dest_slash");
}

/// A second run over an unchanged tree copies nothing and touches nothing.
pub fn rerun_copies_nothing(t: &dyn Target) {
    let s = Scratch::new();
    let tree = mixed_tree(&s.join("src"));
    tree.hardlink("a/hl", "a/one.bin").age();
    let first = sync(t, &["-H"], tree.root(), "dst");
    assert!(stat(&first, "files_copied") >= 5, "first run: {first}");
    assert_target_same(t, tree.root(), "dst");
    assert_rerun_is_noop(t, &["-H"], tree.root(), "dst");
    // Also without -H and with a different job count.
    assert_rerun_is_noop(t, &["-H", "--jobs", "1"], tree.root(), "dst");
}

/// Changed sources are updated: growing, shrinking, same size with new mtime, mtime
/// only, mode only, new files.
pub fn update_changed_files(t: &dyn Target) {
    let s = Scratch::new();
    let tree = Tree::new(s.join("src"));
    tree.random_file("grow", 1000, 1)
        .random_file("shrink", 1 << 20, 2)
        .file("same_size", "aaaa\n")
        .file("mtime_only", "same\n")
        .file("mode_only", "same\n")
        .file("untouched", "untouched\n")
        .symlink("retarget", "old/target")
        .file("dir_mode/x", "x\n")
        .age()
        .mtime("same_size", 1_500_000_000, 0)
        .mtime("mtime_only", 1_500_000_000, 0);
    sync(t, &[], tree.root(), "dst");
    assert_target_same(t, tree.root(), "dst");

    tree.random_file("grow", 300_000, 11)
        .file("shrink", "tiny\n")
        .file("same_size", "bbbb\n")
        .mtime("same_size", 1_600_000_000, 0)
        .mtime("mtime_only", 1_600_000_000, 0)
        .chmod("mode_only", 0o640)
        .chmod("dir_mode", 0o750)
        .file("new/file", "new\n");
    fs::remove_file(tree.path("retarget")).unwrap();
    tree.symlink("retarget", "new/target");
    let stats = sync(t, &[], tree.root(), "dst");
    assert_target_same(t, tree.root(), "dst");
    assert_eq!(
        stat(&stats, "files_copied"),
        5,
        "expected grow, shrink, same_size, mtime_only, new/file to be copied: {stats}"
    );
}

/// Quick check (size+mtime), --checksum, --size-only and --modify-window decide what
/// is up to date the way rsync does.
pub fn compare_modes(t: &dyn Target) {
    let s = Scratch::new();
    let tree = Tree::new(s.join("src"));
    tree.file("f", "source!\n").mtime("f", 1_500_000_000, 0);
    let dst = t.dest_path("dst");
    let dtree = Tree::new(&dst);
    let stale = |secs: i64| {
        dtree.file("f", "stale!!\n").mtime("f", secs, 0);
    };

    // Same size and mtime, different bytes: quick check trusts it.
    stale(1_500_000_000);
    let st = sync(t, &[], tree.root(), "dst");
    assert_eq!(stat(&st, "files_copied"), 0, "quick check copied: {st}");
    assert_eq!(fs::read(dst.join("f")).unwrap(), b"stale!!\n");

    // -c compares contents.
    let st = sync(t, &["-c"], tree.root(), "dst");
    assert_eq!(
        stat(&st, "files_copied"),
        1,
        "--checksum did not copy: {st}"
    );
    assert_target_same(t, tree.root(), "dst");

    // --size-only: a different mtime with the same size is up to date.
    stale(1_400_000_000);
    let st = sync(t, &["--size-only"], tree.root(), "dst");
    assert_eq!(stat(&st, "files_copied"), 0, "--size-only copied: {st}");
    assert_eq!(fs::read(dst.join("f")).unwrap(), b"stale!!\n");

    // --modify-window 2: one second apart counts as the same time.
    stale(1_500_000_001);
    let st = sync(t, &["--modify-window", "2"], tree.root(), "dst");
    assert_eq!(stat(&st, "files_copied"), 0, "--modify-window copied: {st}");
    assert_eq!(fs::read(dst.join("f")).unwrap(), b"stale!!\n");

    // Default: a different mtime means copy.
    let st = sync(t, &[], tree.root(), "dst");
    assert_eq!(
        stat(&st, "files_copied"),
        1,
        "quick check missed mtime: {st}"
    );
    assert_target_same(t, tree.root(), "dst");

    // -c with equal contents but another mtime: no copy, but the mtime is fixed.
    dtree.mtime("f", 1_000_000_000, 0);
    let st = sync(t, &["-c"], tree.root(), "dst");
    assert_eq!(
        stat(&st, "files_copied"),
        0,
        "--checksum copied equal data: {st}"
    );
    assert_target_same(t, tree.root(), "dst");
}

/// --delete removes what the source lacks (files, symlinks, nested and read-only
/// directories); without it, extras stay.
pub fn delete(t: &dyn Target) {
    let s = Scratch::new();
    let tree = mixed_tree(&s.join("src"));
    let dst = t.dest_path("dst");
    let extra = Tree::new(&dst);
    extra
        .file("extra.txt", "extra\n")
        .file("a/extra_in_a", "extra\n")
        .file("gone/deep/er/x", "x\n")
        .symlink("extra_link", "top.txt")
        .file("gone_ro/child", "child\n")
        .chmod("gone_ro", 0o555)
        .dir("emptydir/nested/extra_empty");

    sync(t, &[], tree.root(), "dst");
    for p in [
        "extra.txt",
        "a/extra_in_a",
        "gone/deep/er/x",
        "extra_link",
        "gone_ro/child",
    ] {
        assert!(exists(&dst.join(p)), "{p} deleted without --delete");
    }
    assert!(!t.diff(tree.root(), "dst").is_empty());

    let st = sync(t, &["--delete"], tree.root(), "dst");
    assert_target_same(t, tree.root(), "dst");
    assert!(stat(&st, "files_deleted") >= 4, "files_deleted: {st}");
    assert_rerun_is_noop(t, &["--delete"], tree.root(), "dst");
}

/// `--delete` with `SRC` (no slash) deletes only inside DEST/SRC's name: DEST's other
/// entries are not part of the transfer and stay.
pub fn delete_scope_without_slash(t: &dyn Target) {
    let s = Scratch::new();
    let tree = Tree::new(s.join("project"));
    tree.file("a", "a\n").age();
    let dst = t.dest_path("dst");
    Tree::new(&dst)
        .file("unrelated.txt", "keep me\n")
        .file("other_dir/x", "keep me too\n")
        .file("project/stale", "stale\n");
    let out = nf(t)
        .arg("--delete")
        .arg(tree.root())
        .arg(t.dest_arg("dst"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", describe(&out));
    assert_eq!(fs::read(dst.join("unrelated.txt")).unwrap(), b"keep me\n");
    assert_eq!(fs::read(dst.join("other_dir/x")).unwrap(), b"keep me too\n");
    assert!(
        !exists(&dst.join("project/stale")),
        "stale entry inside DEST/project kept"
    );
    assert_target_same(t, tree.root(), "dst/project");
}

/// -H with link sets only partly inside the transfer (other names outside SRC, or
/// excluded): the names present are copied, linked to each other, nothing waits.
pub fn hard_links_partial_sets(t: &dyn Target) {
    let s = Scratch::new();
    let tree = Tree::new(s.join("src"));
    tree.file("a", "a\n")
        .file("c", "c\n")
        .hardlink("d", "c")
        .file("e", "e\n");
    tree.hardlink("f", "e").hardlink("g", "e");
    fs::hard_link(tree.path("a"), s.join("outside_link")).unwrap();
    tree.age();
    sync(t, &["-H", "--exclude", "d"], tree.root(), "dst");
    let dst = t.dest_path("dst");
    assert_eq!(fs::read(dst.join("a")).unwrap(), b"a\n");
    assert_eq!(fs::read(dst.join("c")).unwrap(), b"c\n");
    assert!(!exists(&dst.join("d")));
    assert_eq!(
        fs::metadata(dst.join("f")).unwrap().ino(),
        fs::metadata(dst.join("g")).unwrap().ino()
    );
    rsync_reference(tree.root(), &s.join("expected"), &["--exclude", "d"]);
    let diff = t.diff(&s.join("expected"), "dst");
    assert!(diff.is_empty(), "differs from rsync's result:\n{diff}");
}

/// --delete does not remove excluded destination files (rsync without
/// --delete-excluded), and does remove the rest.
pub fn delete_keeps_excluded(t: &dyn Target) {
    let s = Scratch::new();
    let tree = Tree::new(s.join("src"));
    tree.file("keep.txt", "keep\n").file("sub/a.txt", "a\n");
    let dst = t.dest_path("dst");
    Tree::new(&dst)
        .file("old.log", "log\n")
        .file("sub/old.log", "log\n")
        .file("stale.txt", "stale\n")
        .file("cache/c1", "c\n")
        .file("sub/cache/c2", "c\n");

    sync(
        t,
        &["--delete", "--exclude", "*.log", "--exclude", "cache/"],
        tree.root(),
        "dst",
    );
    assert!(exists(&dst.join("cache/c1")), "excluded cache/ was deleted");
    assert!(
        exists(&dst.join("sub/cache/c2")),
        "excluded sub/cache/ was deleted"
    );
    assert!(exists(&dst.join("old.log")), "excluded old.log was deleted");
    assert!(
        exists(&dst.join("sub/old.log")),
        "excluded sub/old.log was deleted"
    );
    assert!(
        !exists(&dst.join("stale.txt")),
        "stale.txt survived --delete"
    );
    assert_eq!(fs::read(dst.join("keep.txt")).unwrap(), b"keep\n");
}

/// --dry-run changes nothing: not an existing DEST, not a missing one.
pub fn dry_run(t: &dyn Target) {
    let s = Scratch::new();
    let tree = mixed_tree(&s.join("src"));
    let dst = t.dest_path("dst");
    Tree::new(&dst)
        .file("extra.txt", "extra\n")
        .file("top.txt", "different\n")
        .file("a/b/two.bin", "short\n")
        .dir("gone/deep");
    let before = snapshot(&dst);
    for flags in [
        &["-n"][..],
        &["--dry-run", "--delete", "-H", "-c"],
        &["-n", "-i", "-v"],
    ] {
        let out = nf(t)
            .args(flags)
            .arg(slash(tree.root()))
            .arg(t.dest_arg("dst"))
            .output()
            .unwrap();
        assert!(out.status.success(), "{flags:?}: {}", describe(&out));
        assert_snapshots_eq(&before, &snapshot(&dst), &format!("{flags:?} changed DEST"));
    }

    // A dry run into a missing DEST creates nothing and reports what a real run copies.
    let dry = sync(t, &["-n"], tree.root(), "missing");
    assert!(!exists(&t.dest_path("missing")), "dry run created DEST");
    let real = sync(t, &[], tree.root(), "missing");
    for key in ["files_copied", "bytes_copied", "dirs_created"] {
        assert_eq!(
            stat(&dry, key),
            stat(&real, key),
            "{key}: dry {dry} vs real {real}"
        );
    }
}

/// Copies the tree made by `build` with `filter` into a fresh DEST, checks that `kept`
/// exist and `gone` do not, and compares the whole result with rsync's own.
fn filter_case(
    t: &dyn Target,
    build: impl Fn(&Tree),
    filter: &[&str],
    kept: &[&str],
    gone: &[&str],
) {
    static CASE: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let sub = format!(
        "filtered{}",
        CASE.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    );
    let s = Scratch::new();
    let tree = Tree::new(s.join("src"));
    build(&tree);
    tree.age();
    sync(t, filter, tree.root(), &sub);
    let dst = t.dest_path(&sub);
    for k in kept {
        assert!(
            exists(&dst.join(k)),
            "{filter:?}: {k} should have been copied"
        );
    }
    for g in gone {
        assert!(
            !exists(&dst.join(g)),
            "{filter:?}: {g} should have been excluded"
        );
    }
    // And the whole tree as rsync itself would have made it.
    rsync_reference(tree.root(), &s.join("expected"), filter);
    let diff = t.diff(&s.join("expected"), &sub);
    assert!(
        diff.is_empty(),
        "{filter:?}: differs from rsync's result:\n{diff}"
    );
}

/// `--exclude '*.log'` matches at any depth, files and directories alike.
pub fn exclude_glob(t: &dyn Target) {
    filter_case(
        t,
        |tr| {
            tr.file("a.log", "")
                .file("a.txt", "")
                .file("sub/b.log", "")
                .file("sub/deep/c.log", "");
            tr.file("sub/deep/c.txt", "")
                .file("logs.d.log/inner.txt", "")
                .file("x.logx", "");
        },
        &["--exclude", "*.log"],
        &["a.txt", "sub/deep/c.txt", "x.logx"],
        &["a.log", "sub/b.log", "sub/deep/c.log", "logs.d.log"],
    );
}

/// `--exclude /top-only` is anchored at the transfer root.
pub fn exclude_anchored(t: &dyn Target) {
    filter_case(
        t,
        |tr| {
            tr.file("top-only", "")
                .file("sub/top-only", "")
                .file("top-only-not", "");
            tr.file("d/top-only/x", "");
        },
        &["--exclude", "/top-only"],
        &["sub/top-only", "top-only-not", "d/top-only/x"],
        &["top-only"],
    );
}

/// `--exclude 'cache/'` matches directories only.
pub fn exclude_dir_only(t: &dyn Target) {
    filter_case(
        t,
        |tr| {
            tr.file("cache/x", "")
                .file("sub/cache/y", "")
                .file("other/cache", "file\n");
            tr.dir("deep/er/cache").symlink("linkdir/cache", "../other");
        },
        &["--exclude", "cache/"],
        &["other/cache", "linkdir/cache"],
        &["cache", "sub/cache", "deep/er/cache"],
    );
}

/// `--include keep.log --exclude '*.log'`: the first matching rule wins.
pub fn include_first_match(t: &dyn Target) {
    filter_case(
        t,
        |tr| {
            tr.file("keep.log", "")
                .file("drop.log", "")
                .file("sub/keep.log", "");
            tr.file("sub/drop.log", "").file("plain", "");
        },
        &["--include", "keep.log", "--exclude", "*.log"],
        &["keep.log", "sub/keep.log", "plain"],
        &["drop.log", "sub/drop.log"],
    );
    // Reversed order: the exclude matches first, so keep.log goes too.
    filter_case(
        t,
        |tr| {
            tr.file("keep.log", "").file("plain", "");
        },
        &["--exclude", "*.log", "--include", "keep.log"],
        &["plain"],
        &["keep.log"],
    );
}

/// A pattern with an inner slash matches against the path's trailing components.
pub fn exclude_with_slash(t: &dyn Target) {
    filter_case(
        t,
        |tr| {
            tr.file("build/a.o", "")
                .file("build/a.c", "")
                .file("x/build/b.o", "");
            tr.file("a.o", "").file("buildx/c.o", "");
        },
        &["--exclude", "build/*.o"],
        &["build/a.c", "a.o", "buildx/c.o"],
        &["build/a.o", "x/build/b.o"],
    );
}

/// The classic "only these files" idiom: include all directories and `*.c`, exclude
/// everything else; and character classes.
pub fn include_only_idiom(t: &dyn Target) {
    filter_case(
        t,
        |tr| {
            tr.file("a.c", "").file("a.h", "").file("src/deep/b.c", "");
            tr.file("src/deep/b.o", "").dir("emptydir");
        },
        &["--include", "*/", "--include", "*.c", "--exclude", "*"],
        &["a.c", "src/deep/b.c", "emptydir"],
        &["a.h", "src/deep/b.o"],
    );
    filter_case(
        t,
        |tr| {
            tr.file("f1.bak", "").file("f2.bak", "").file("f3.bak", "");
            tr.file("sub/f2.bak", "").file("f22.bak", "");
        },
        &["--exclude", "f[12].ba?"],
        &["f3.bak", "f22.bak"],
        &["f1.bak", "f2.bak", "sub/f2.bak"],
    );
}

/// `**` matches across slashes; in rsync, `gen/**/z.rs` needs at least one directory
/// between `gen/` and `z.rs` (unlike git's globs), so `gen/z.rs` is kept.
pub fn exclude_double_star(t: &dyn Target) {
    filter_case(
        t,
        |tr| {
            tr.file("gen/x/y/z.rs", "")
                .file("gen/x/z.rs", "")
                .file("gen/z.rs", "");
            tr.file("keep/z.rs", "").file("a/b/c/d.tmp", "");
        },
        &["--exclude", "gen/**/z.rs", "--exclude", "/a/**.tmp"],
        &["keep/z.rs", "gen/z.rs"],
        &["gen/x/y/z.rs", "gen/x/z.rs", "a/b/c/d.tmp"],
    );
}

/// Anchored patterns with `SRC` (no slash) are relative to the transfer root, which
/// then includes SRC's own name.
pub fn exclude_anchored_without_slash(t: &dyn Target) {
    let s = Scratch::new();
    let tree = Tree::new(s.join("project"));
    tree.file("sub/x", "x\n")
        .file("keep/sub", "file\n")
        .file("y", "y\n")
        .age();
    let filter = ["--exclude", "/project/sub"];
    let out = nf(t)
        .args(filter)
        .arg(tree.root())
        .arg(t.dest_arg("dst"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", describe(&out));
    let dst = t.dest_path("dst").join("project");
    assert!(!exists(&dst.join("sub")), "/project/sub was not excluded");
    assert!(exists(&dst.join("keep/sub")) && exists(&dst.join("y")));
    let expected = s.join("expected");
    fs::create_dir(&expected).unwrap();
    let status = std::process::Command::new("rsync")
        .arg("-aH")
        .args(filter)
        .arg(tree.root())
        .arg(&expected)
        .status()
        .unwrap();
    assert!(status.success());
    let diff = t.diff(&expected.join("project"), "dst/project");
    assert!(diff.is_empty(), "differs from rsync's result:\n{diff}");
}

/// `--exclude-from` with rsync's `+ ` / `- ` rule prefixes, and from stdin (`-`).
pub fn exclude_from_prefixed_and_stdin(t: &dyn Target) {
    let s = Scratch::new();
    let tree = Tree::new(s.join("src"));
    tree.file("keep.log", "")
        .file("drop.log", "")
        .file("x.tmp", "")
        .file("ok", "")
        .age();
    let rules = "+ keep.log\n- *.log\n*.tmp\n";
    fs::write(s.join("rules"), rules).unwrap();
    let check = |sub: &str| {
        let dst = t.dest_path(sub);
        assert!(
            exists(&dst.join("keep.log")) && exists(&dst.join("ok")),
            "{sub}"
        );
        assert!(!exists(&dst.join("drop.log")), "{sub}: drop.log copied");
        assert!(!exists(&dst.join("x.tmp")), "{sub}: x.tmp copied");
    };
    let rules_path = s.join("rules");
    let from_file = ["--exclude-from", rules_path.to_str().unwrap()];
    sync(t, &from_file, tree.root(), "file");
    check("file");

    let out = nf(t)
        .args(["--exclude-from", "-"])
        .arg(slash(tree.root()))
        .arg(t.dest_arg("stdin"))
        .write_stdin(rules)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", describe(&out));
    check("stdin");
}

/// Patterns match names that are not UTF-8 byte by byte (`?` is one byte, `*` any
/// bytes), and patterns that are not UTF-8 work, on the command line and in a file.
pub fn exclude_non_utf8(t: &dyn Target) {
    let s = Scratch::new();
    let tree = Tree::new(s.join("src"));
    tree.file(bytes_path(b"x\xff.log"), "")
        .file(bytes_path(b"caf\xe9"), "")
        .file(bytes_path(b"sub/\xfe\xfd"), "")
        .file(bytes_path(b"sub/n\xe8w"), "")
        .file("keep", "")
        .age();
    fs::write(s.join("rules"), b"n\xe8w\n").unwrap();
    let args: Vec<std::ffi::OsString> = vec![
        "--exclude".into(),
        "*.log".into(),
        "--exclude".into(),
        "caf?".into(),
        "--exclude".into(),
        bytes_path(b"\xfe*").into(),
        "--exclude-from".into(),
        s.join("rules").into(),
    ];
    let out = nf(t)
        .args(&args)
        .arg(slash(tree.root()))
        .arg(t.dest_arg("dst"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", describe(&out));
    let dst = t.dest_path("dst");
    assert!(exists(&dst.join("keep")));
    for gone in [
        &b"x\xff.log"[..],
        b"caf\xe9",
        b"sub/\xfe\xfd",
        b"sub/n\xe8w",
    ] {
        assert!(
            !exists(&dst.join(bytes_path(gone))),
            "{:?} not excluded",
            bytes_path(gone)
        );
    }
    let expected = s.join("expected");
    let status = std::process::Command::new("rsync")
        .arg("-aH")
        .args(&args)
        .arg(slash(tree.root()))
        .arg(&expected)
        .status()
        .unwrap();
    assert!(status.success());
    let diff = t.diff(&expected, "dst");
    assert!(diff.is_empty(), "differs from rsync's result:\n{diff}");
}

/// `--exclude-from FILE` with comments and blank lines.
pub fn exclude_from(t: &dyn Target) {
    let s = Scratch::new();
    let rules = s.join("rules.txt");
    fs::write(
        &rules,
        "# comment line\n\n*.tmp\n; another comment\n/build\nnode_modules/\n",
    )
    .unwrap();
    let rules = rules.to_str().unwrap().to_owned();
    filter_case(
        t,
        |tr| {
            tr.file("a.tmp", "")
                .file("sub/b.tmp", "")
                .file("build/out", "");
            tr.file("sub/build/kept", "")
                .file("node_modules/m/index.js", "");
            tr.file("sub/node_modules/x", "").file("src/main.rs", "");
            tr.file("# comment line", "not a rule\n");
        },
        &["--exclude-from", &rules],
        &["sub/build/kept", "src/main.rs", "# comment line"],
        &[
            "a.tmp",
            "sub/b.tmp",
            "build",
            "node_modules",
            "sub/node_modules",
        ],
    );
}

/// DEST is a regular file: exit 3, the path named, the file untouched.
pub fn dest_is_regular_file(t: &dyn Target) {
    let s = Scratch::new();
    let tree = mixed_tree(&s.join("src"));
    let file = t.dest_path("not-a-dir.txt");
    fs::create_dir_all(file.parent().unwrap()).unwrap();
    fs::write(&file, "precious\n").unwrap();

    for dest in [
        t.dest_arg("not-a-dir.txt"),
        t.dest_arg("not-a-dir.txt/inner"),
    ] {
        let out = nf(t).arg(slash(tree.root())).arg(&dest).output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(3),
            "DEST {dest}: {}",
            describe(&out)
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("not-a-dir.txt"),
            "stderr does not name DEST {dest}: {err}"
        );
        assert_eq!(
            fs::read(&file).unwrap(),
            b"precious\n",
            "DEST file was changed"
        );
    }
}

/// Several sources: `a/` (contents), `b` (itself) and a single file, like rsync.
pub fn multiple_sources(t: &dyn Target) {
    let s = Scratch::new();
    Tree::new(s.join("a"))
        .file("from_a", "a\n")
        .file("sub/deep", "deep\n")
        .age();
    Tree::new(s.join("b"))
        .file("from_b", "b\n")
        .dir("empty")
        .age();
    Tree::new(s.path())
        .file("single.txt", "single\n")
        .mtime("single.txt", 1_234_567_890, 5);

    let srcs = [
        slash(&s.join("a")),
        s.join("b").into(),
        s.join("single.txt").into(),
    ];
    let out = nf(t).args(&srcs).arg(t.dest_arg("dst")).output().unwrap();
    assert!(out.status.success(), "{}", describe(&out));

    let expected = s.join("expected");
    let status = std::process::Command::new("rsync")
        .arg("-aH")
        .args(&srcs)
        .arg(&expected)
        .status()
        .unwrap();
    assert!(status.success());
    // rsync creates `expected` with default permissions; compare the contents only.
    let diff = t.diff(&expected, "dst");
    let diff: Vec<_> = diff.lines().filter(|l| !l.ends_with(" ./")).collect();
    assert!(
        diff.is_empty(),
        "differs from rsync's result:\n{}",
        diff.join("\n")
    );
}

/// Special files are skipped with a warning by default, copied with --specials; device
/// nodes with --devices (when the test can make one).
pub fn specials(t: &dyn Target) {
    let s = Scratch::new();
    let tree = Tree::new(s.join("src"));
    tree.file("regular", "r\n")
        .fifo("pipe")
        .fifo("sub/pipe2")
        .age();

    let out = run(t, &[], tree.root(), "plain");
    assert!(out.status.success(), "{}", describe(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("pipe"),
        "no warning naming the skipped fifo: {err}"
    );
    let dst = t.dest_path("plain");
    assert!(!exists(&dst.join("pipe")), "fifo copied without --specials");
    assert_eq!(fs::read(dst.join("regular")).unwrap(), b"r\n");

    let out = run(t, &["--specials"], tree.root(), "with");
    assert!(out.status.success(), "{}", describe(&out));
    let dst = t.dest_path("with");
    for p in ["pipe", "sub/pipe2"] {
        let m = fs::symlink_metadata(dst.join(p)).unwrap_or_else(|e| panic!("{p}: {e}"));
        assert!(m.file_type().is_fifo(), "{p} is not a fifo");
    }
    assert_target_same(t, tree.root(), "with");

    // A character device (like /dev/null), only if this process may make one.
    let dev = tree.path("null_dev");
    let c = std::ffi::CString::new(dev.to_str().unwrap()).unwrap();
    // SAFETY: valid path; makedev/mknod have no other preconditions.
    let made = unsafe { libc::mknod(c.as_ptr(), libc::S_IFCHR | 0o666, libc::makedev(1, 3)) } == 0;
    if made {
        // Without --devices: skipped, with a warning naming it.
        let out = run(t, &["--specials"], tree.root(), "nodev");
        assert!(out.status.success(), "{}", describe(&out));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("null_dev"),
            "no warning naming the device: {err}"
        );
        assert!(!exists(&t.dest_path("nodev").join("null_dev")));

        let out = run(t, &["--specials", "--devices"], tree.root(), "dev");
        assert!(out.status.success(), "{}", describe(&out));
        let m = fs::symlink_metadata(t.dest_path("dev").join("null_dev")).unwrap();
        assert!(
            m.file_type().is_char_device(),
            "device not copied with --devices"
        );
        assert_eq!(m.rdev(), fs::symlink_metadata(&dev).unwrap().rdev());
        assert_target_same(t, tree.root(), "dev");
    }

    // A unix socket is a special file too.
    let sock = tree.path("sock");
    let _listener = std::os::unix::net::UnixListener::bind(&sock).expect("bind unix socket");
    tree.age();
    let out = run(t, &["--specials"], tree.root(), "sock");
    assert!(out.status.success(), "{}", describe(&out));
    let m = fs::symlink_metadata(t.dest_path("sock").join("sock")).unwrap();
    assert!(
        m.file_type().is_socket(),
        "socket not copied with --specials"
    );
}

/// Owners and groups are kept when running as root (files, directories, symlinks).
pub fn owners(t: &dyn Target) {
    if !is_root() {
        eprintln!("owners: not root, skipped");
        return;
    }
    let s = Scratch::new();
    let tree = Tree::new(s.join("src"));
    tree.file("d/f", "f\n")
        .file("g", "g\n")
        .symlink("l", "g")
        .chown("d/f", 1234, 4321)
        .chown("d", 2345, 5432)
        .chown("l", 3456, 6543)
        .chown("g", 0, 4321)
        .file("suid_other", "#!/bin/sh\n")
        .chown("suid_other", 1234, 4321)
        .chmod("suid_other", 0o6755)
        .file("sgid_dir/x", "x\n")
        .chown("sgid_dir", 2345, 5432)
        .chmod("sgid_dir", 0o2775)
        .age();

    sync(t, &[], tree.root(), "dst");
    assert_target_same(t, tree.root(), "dst");
    let dst = t.dest_path("dst");
    for (p, u, g) in [
        ("d/f", 1234, 4321),
        ("d", 2345, 5432),
        ("l", 3456, 6543),
        ("g", 0, 4321),
    ] {
        let m = fs::symlink_metadata(dst.join(p)).unwrap();
        assert_eq!((m.uid(), m.gid()), (u, g), "owner of {p}");
    }
    // chown clears setuid/setgid: they must be set after it.
    let m = fs::metadata(dst.join("suid_other")).unwrap();
    assert_eq!((m.uid(), m.mode() & 0o7777), (1234, 0o6755), "suid_other");

    // --no-owner --no-group: new files belong to the user running nfsync.
    sync(t, &["--no-owner", "--no-group"], tree.root(), "plain");
    let m = fs::symlink_metadata(t.dest_path("plain").join("d/f")).unwrap();
    assert_eq!(
        (m.uid(), m.gid()),
        (0, 0),
        "--no-owner --no-group kept owners"
    );
}

/// The destination holds other types where the source has files, directories or
/// symlinks; they are replaced, and a symlink in DEST is never followed.
pub fn type_changes(t: &dyn Target) {
    let s = Scratch::new();
    let outside = s.join("outside");
    fs::create_dir(&outside).unwrap();
    let tree = Tree::new(s.join("src"));
    tree.file("file_to_dir/inner", "inner\n")
        .file("dir_to_file", "now a file\n")
        .file("link_to_file", "now a file\n")
        .symlink("file_to_link", "dir_to_file")
        .symlink("dir_to_link", "file_to_dir")
        .file("dir_link_to_dir/x", "must stay inside DEST\n")
        .age();
    let dst = t.dest_path("dst");
    Tree::new(&dst)
        .file("file_to_dir", "old file\n")
        .file("dir_to_file/deep/old", "old\n")
        .symlink("link_to_file", "/etc/passwd")
        .file("file_to_link", "old file\n")
        .file("dir_to_link/x/y", "old\n")
        .symlink("dir_link_to_dir", &outside);

    sync(t, &["--delete"], tree.root(), "dst");
    assert_eq!(
        fs::read_dir(&outside).unwrap().count(),
        0,
        "wrote through a symlink in DEST into a directory outside it"
    );
    assert_target_same(t, tree.root(), "dst");
}

/// A DEST file that is hard-linked elsewhere (e.g. a `cp -al` snapshot) is replaced,
/// not written through: the other name keeps the old contents, as with rsync.
pub fn dest_hard_link_not_written_through(t: &dyn Target) {
    let s = Scratch::new();
    let tree = Tree::new(s.join("src"));
    tree.file("f", "new contents\n")
        .file("g", "new too\n")
        .age();
    let dst = t.dest_path("dst");
    Tree::new(&dst)
        .file("f", "old contents\n")
        .file("g", "old too\n");
    let snap = Tree::new(t.dest_path("snapshot"));
    snap.hardlink("f", dst.join("f"))
        .hardlink("g", dst.join("g"));

    sync(t, &[], tree.root(), "dst");
    assert_target_same(t, tree.root(), "dst");
    assert_eq!(
        fs::read(snap.path("f")).unwrap(),
        b"old contents\n",
        "wrote through a link"
    );
    assert_eq!(
        fs::read(snap.path("g")).unwrap(),
        b"old too\n",
        "wrote through a link"
    );
}

/// A run killed with SIGKILL midway, then re-run, ends exact.
pub fn sigkill_then_rerun(t: &dyn Target) {
    let s = Scratch::new();
    let tree = Tree::new(s.join("src"));
    let mut n = 0;
    for d in 0..40 {
        for f in 0..50 {
            tree.random_file(format!("d{d:02}/f{f:02}"), 4096 + (f * 331) as u64, n);
            n += 1;
        }
    }
    for i in 0..4 {
        tree.random_file(format!("big{i}"), 4 << 20, 10_000 + i);
    }
    tree.age();
    let total = count_files(tree.root());
    let dst = t.dest_path("dst");

    let mut child = t
        .command()
        .args(["--jobs", "4"])
        .arg(slash(tree.root()))
        .arg(t.dest_arg("dst"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn nfsync");
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            panic!(
                "nfsync finished ({status}) before it could be killed; {} of {total} files \
                 in DEST after {:?}: make the tree bigger",
                count_files(&dst),
                start.elapsed()
            );
        }
        if count_files(&dst) >= 20 || start.elapsed() > Duration::from_secs(20) {
            break;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    child.kill().expect("SIGKILL nfsync");
    let status = child.wait().unwrap();
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(status.signal(), Some(libc::SIGKILL), "not killed: {status}");
    let copied = count_files(&dst);
    assert!(
        copied < total,
        "kill landed after the copy ended ({copied} of {total})"
    );

    let out = nf(t)
        .args(["--jobs", "4", "--json"])
        .arg(slash(tree.root()))
        .arg(t.dest_arg("dst"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "re-run after SIGKILL: {}",
        describe(&out)
    );
    assert_target_same(t, tree.root(), "dst");
}

/// One directory with thousands of long-named entries (more than one directory-read
/// reply holds), and as many stale entries in DEST for --delete to find.
pub fn large_directory(t: &dyn Target) {
    let s = Scratch::new();
    let tree = Tree::new(s.join("src"));
    let pad = "p".repeat(90);
    for i in 0..1500 {
        tree.file(format!("big/{pad}_{i:05}"), format!("{i}\n"));
    }
    tree.file("other", "x\n").age();
    let dst = t.dest_path("dst");
    let extra = Tree::new(&dst);
    for i in 0..1500 {
        extra.file(format!("big/stale_{pad}_{i:05}"), "old\n");
    }
    let st = sync(t, &["--delete"], tree.root(), "dst");
    assert_target_same(t, tree.root(), "dst");
    assert_eq!(stat(&st, "files_copied"), 1501, "files_copied: {st}");
    assert!(stat(&st, "files_deleted") >= 1500, "files_deleted: {st}");
    assert_eq!(count_files(&dst.join("big")), 1500);
    assert_rerun_is_noop(t, &["--delete"], tree.root(), "dst");
}

/// SIGINT midway: exit 20 after stopping cleanly, and a re-run ends exact.
pub fn sigint_then_rerun(t: &dyn Target) {
    let s = Scratch::new();
    let tree = Tree::new(s.join("src"));
    let mut n = 0;
    for d in 0..30 {
        for f in 0..50 {
            tree.random_file(format!("d{d:02}/f{f:02}"), 2048 + (f * 97) as u64, n);
            n += 1;
        }
    }
    tree.random_file("big", 8 << 20, 77).age();
    let total = count_files(tree.root());
    let dst = t.dest_path("dst");

    let child = t
        .command()
        .args(["--jobs", "4"])
        .arg(slash(tree.root()))
        .arg(t.dest_arg("dst"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn nfsync");
    let start = Instant::now();
    while count_files(&dst) < 20 && start.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(2));
    }
    // SAFETY: kill(2) on our own child's pid.
    let rc = unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
    assert_eq!(rc, 0, "kill -INT: {}", std::io::Error::last_os_error());
    let out = child.wait_with_output().unwrap();
    let copied = count_files(&dst);
    assert!(
        copied < total,
        "SIGINT landed after the copy ended ({copied} of {total})"
    );
    assert_eq!(
        out.status.code(),
        Some(20),
        "after SIGINT: {}",
        describe(&out)
    );

    let out = nf(t)
        .args(["--jobs", "4"])
        .arg(slash(tree.root()))
        .arg(t.dest_arg("dst"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "re-run after SIGINT: {}",
        describe(&out)
    );
    assert_target_same(t, tree.root(), "dst");
}

/// `SRC/.` and `.` (run from inside SRC) copy the contents, like `SRC/`.
pub fn dot_sources(t: &dyn Target) {
    let s = Scratch::new();
    let tree = Tree::new(s.join("src"));
    tree.file("a", "a\n").file("d/b", "b\n").age();

    let mut dot = tree.root().as_os_str().to_owned();
    dot.push("/.");
    let out = nf(t)
        .arg(&dot)
        .arg(t.dest_arg("slash_dot"))
        .output()
        .unwrap();
    assert!(out.status.success(), "SRC/.: {}", describe(&out));
    assert!(
        !exists(&t.dest_path("slash_dot").join("src")),
        "SRC/. copied SRC itself"
    );
    assert_target_same(t, tree.root(), "slash_dot");

    let out = nf(t)
        .current_dir(tree.root())
        .arg(".")
        .arg(t.dest_arg("dot"))
        .output()
        .unwrap();
    assert!(out.status.success(), "`.` as SRC: {}", describe(&out));
    assert_target_same(t, tree.root(), "dot");
}

/// A source that is a symlink to a directory: `link/` copies the directory's contents,
/// `link` copies the link itself.
pub fn symlink_source(t: &dyn Target) {
    let s = Scratch::new();
    let tree = Tree::new(s.join("real"));
    tree.file("a", "a\n").file("d/b", "b\n").age();
    let link = s.join("link");
    std::os::unix::fs::symlink("real", &link).unwrap();

    let out = nf(t)
        .arg(slash(&link))
        .arg(t.dest_arg("followed"))
        .output()
        .unwrap();
    assert!(out.status.success(), "link/: {}", describe(&out));
    assert_target_same(t, tree.root(), "followed");

    fs::create_dir_all(t.dest_path("as_link")).unwrap();
    let out = nf(t)
        .arg(&link)
        .arg(t.dest_arg("as_link"))
        .output()
        .unwrap();
    assert!(out.status.success(), "link: {}", describe(&out));
    let got = t.dest_path("as_link").join("link");
    assert!(
        fs::symlink_metadata(&got).unwrap().file_type().is_symlink(),
        "`link` without a slash was not copied as a symlink"
    );
    assert_eq!(fs::read_link(&got).unwrap(), Path::new("real"));
}

/// A single file as SRC: to a missing DEST it becomes that file; to `DEST/` it goes
/// inside a new directory.
pub fn single_file_source(t: &dyn Target) {
    let s = Scratch::new();
    let tree = Tree::new(s.join("src"));
    tree.random_file("file.bin", 10_000, 3)
        .chmod("file.bin", 0o640)
        .age();
    let file = tree.path("file.bin");

    let out = nf(t)
        .arg(&file)
        .arg(t.dest_arg("renamed.bin"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", describe(&out));
    let got = t.dest_path("renamed.bin");
    assert!(got.is_file(), "DEST was not made a file");
    assert_eq!(fs::read(&got).unwrap(), fs::read(&file).unwrap());
    assert_same_mtime_ns(&file, &got, "");

    let out = nf(t)
        .arg(&file)
        .arg(format!("{}/", t.dest_arg("newdir")))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", describe(&out));
    let got = t.dest_path("newdir").join("file.bin");
    assert_eq!(fs::read(&got).unwrap(), fs::read(&file).unwrap());
    assert_eq!(fs::metadata(&got).unwrap().mode() & 0o7777, 0o640);
}

/// Without --delete, non-directories in the way are still replaced (as rsync does):
/// a file where the source has a directory, a symlink where it has a file, a file
/// where it has a symlink, and an empty directory where it has a file.
pub fn type_changes_without_delete(t: &dyn Target) {
    let s = Scratch::new();
    let tree = Tree::new(s.join("src"));
    tree.file("file_to_dir/inner", "inner\n")
        .file("link_to_file", "now a file\n")
        .symlink("file_to_link", "elsewhere")
        .file("emptydir_to_file", "now a file\n")
        .age();
    let dst = t.dest_path("dst");
    Tree::new(&dst)
        .file("file_to_dir", "old file\n")
        .symlink("link_to_file", "/etc/passwd")
        .file("file_to_link", "old file\n")
        .dir("emptydir_to_file");

    sync(t, &[], tree.root(), "dst");
    assert_target_same(t, tree.root(), "dst");
}

/// Many links to a few files spread over many directories with many jobs; then a new
/// link to an already-copied file joins the existing inode on a re-run.
pub fn hard_links_many(t: &dyn Target) {
    let s = Scratch::new();
    let tree = Tree::new(s.join("src"));
    for k in 0..3 {
        tree.random_file(format!("origin/f{k}"), 200_000 + k, k);
    }
    for d in 0..40 {
        let k = d % 3;
        tree.hardlink(format!("d{d:02}/link{k}"), format!("origin/f{k}"));
    }
    tree.age();
    sync(t, &["-H", "-j", "16"], tree.root(), "dst");
    assert_target_same(t, tree.root(), "dst");
    let dst = t.dest_path("dst");
    for d in 0..40 {
        let k = d % 3;
        assert_eq!(
            fs::metadata(dst.join(format!("d{d:02}/link{k}")))
                .unwrap()
                .ino(),
            fs::metadata(dst.join(format!("origin/f{k}")))
                .unwrap()
                .ino(),
            "d{d:02}/link{k} is not linked to origin/f{k}"
        );
    }

    tree.hardlink("late/new_link", "origin/f0").age();
    let st = sync(t, &["-H"], tree.root(), "dst");
    assert_target_same(t, tree.root(), "dst");
    assert_eq!(
        stat(&st, "bytes_copied"),
        0,
        "linking copied data again: {st}"
    );
}

/// Different job counts give the same result.
pub fn job_counts(t: &dyn Target) {
    let s = Scratch::new();
    let tree = mixed_tree(&s.join("src"));
    for i in 0..30 {
        tree.random_file(format!("many/f{i}"), 1000 * i, i);
    }
    for (i, jobs) in ["1", "2", "16", "auto"].iter().enumerate() {
        let sub = format!("dst{i}");
        sync(t, &["-j", jobs], tree.root(), &sub);
        assert_target_same(t, tree.root(), &sub);
    }
}

/// Verbosity options keep stdout machine-friendly: -q prints nothing on success, -i
/// names changed files and nothing when nothing changed.
pub fn output_options(t: &dyn Target) {
    let s = Scratch::new();
    let tree = mixed_tree(&s.join("src"));

    let out = nf(t)
        .arg("-q")
        .arg(slash(tree.root()))
        .arg(t.dest_arg("q"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", describe(&out));
    assert!(
        out.stdout.is_empty(),
        "-q printed on stdout: {}",
        describe(&out)
    );
    assert!(
        out.stderr.is_empty(),
        "-q printed on stderr: {}",
        describe(&out)
    );

    let out = nf(t)
        .arg("-i")
        .arg(slash(tree.root()))
        .arg(t.dest_arg("i"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", describe(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("top.txt"), "-i did not list top.txt: {text}");
    let out = nf(t)
        .arg("-i")
        .arg(slash(tree.root()))
        .arg(t.dest_arg("i"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", describe(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        !text.contains("top.txt"),
        "-i listed an unchanged file: {text}"
    );

    // Whatever else is asked for, --json keeps stdout to one JSON object.
    let out = nf(t)
        .args(["--json", "--stats", "--progress", "-v", "-i"])
        .arg(slash(tree.root()))
        .arg(t.dest_arg("j"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", describe(&out));
    json_stats(&out);

    let out = nf(t)
        .arg("--stats")
        .arg(slash(tree.root()))
        .arg(t.dest_arg("s"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", describe(&out));
    assert!(
        !out.stdout.is_empty() || !out.stderr.is_empty(),
        "--stats printed nothing"
    );
    assert_target_same(t, tree.root(), "s");
}

// ---------------------------------------------------------------------------------------
// The list

macro_rules! define_scenarios {
    ($($name:ident),* $(,)?) => {
        /// Every scenario, by name.
        pub const ALL: &[(&str, fn(&dyn Target))] = &[$((stringify!($name), $name)),*];

        /// `scenario_tests!(expr)`: one `#[test]` per scenario, each running it against
        /// a fresh target made by evaluating `expr`.
        macro_rules! scenario_tests {
            ($make:expr) => {
                $(
                    #[test]
                    fn $name() {
                        let target = $make;
                        $crate::scenarios::$name(&target);
                    }
                )*
            };
        }
        pub(crate) use scenario_tests;
    };
}

define_scenarios!(
    nested_tree,
    empty_files_and_dirs,
    big_file,
    boundary_sizes,
    symlinks,
    hard_links,
    hard_links_without_h,
    hard_links_added_later,
    odd_names,
    modes,
    nanosecond_mtimes,
    dir_mtimes,
    trailing_slash,
    rerun_copies_nothing,
    update_changed_files,
    compare_modes,
    delete,
    delete_keeps_excluded,
    delete_scope_without_slash,
    hard_links_partial_sets,
    dry_run,
    exclude_glob,
    exclude_anchored,
    exclude_dir_only,
    include_first_match,
    exclude_with_slash,
    exclude_from,
    exclude_non_utf8,
    include_only_idiom,
    exclude_double_star,
    exclude_anchored_without_slash,
    exclude_from_prefixed_and_stdin,
    dest_is_regular_file,
    multiple_sources,
    specials,
    owners,
    type_changes,
    dest_hard_link_not_written_through,
    sigkill_then_rerun,
    large_directory,
    sigint_then_rerun,
    dot_sources,
    symlink_source,
    single_file_source,
    type_changes_without_delete,
    hard_links_many,
    job_counts,
    output_options,
);
