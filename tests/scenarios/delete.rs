//! `--delete`: what it removes, and what it leaves alone.

use std::fs;

use super::{assert_rerun_is_noop, exists, mixed_tree, sync};
use crate::support::{Scratch, Target, Tree, assert_target_same, describe, nf, stat};

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
