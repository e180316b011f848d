//! Trees, sizes and names: what one run copies.

use std::fs;

use super::{assert_rerun_is_noop, exists, mixed_tree, sync};
use crate::support::{Scratch, Target, Tree, assert_target_same, bytes_path, count_files, stat};

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
