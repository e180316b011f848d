//! `--delete`: what it removes, and what it leaves alone.

use std::fs;

use super::{assert_rerun_is_noop, exists, mixed_tree, sync};
use crate::support::{
    Scratch, Target, Tree, assert_target_same, describe, itemized, json_stats, nf, rsync_itemize,
    stat,
};

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
        .arg(t.src_arg(tree.root(), false))
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

/// Every removed entry, each one inside a removed tree too, is itemized (as rsync's
/// `-i` prints it) and counted; `--max-delete N` removes at most N, skips the rest
/// and exits 25; `--max-delete 0` removes nothing. The safety net for a source that
/// came up empty (a mount that failed): `nfsync --delete EMPTY/ DST/`.
pub fn delete_itemizes_every_entry_and_max_delete_limits(t: &dyn Target) {
    let s = Scratch::new();
    let empty = Tree::new(s.join("empty"));
    empty.dir("");
    let dst = t.dest_path("dst");
    let extra = Tree::new(&dst);
    for d in 0..3 {
        for f in 0..10 {
            extra.file(format!("gone/s{d}/f{f}"), "x\n");
        }
    }
    extra.file("top1", "1\n").symlink("top2", "top1");
    const ALL: u64 = 1 + 3 + 30 + 2;
    let deleting = |out: &std::process::Output| -> Vec<String> {
        itemized(out)
            .into_iter()
            .filter_map(|l| l.strip_prefix("*deleting   ").map(str::to_owned))
            .collect()
    };
    let remaining = || count_entries(&dst);
    let run = |extra_args: &[&str]| {
        nf(t)
            .args(["--json", "-i", "--delete"])
            .args(extra_args)
            .arg(t.src_arg(empty.root(), true))
            .arg(t.dest_arg("dst"))
            .output()
            .unwrap()
    };

    // Dry run: the same lines rsync prints, nothing removed.
    let out = run(&["--dry-run"]);
    assert!(out.status.success(), "{}", describe(&out));
    let want: Vec<String> = rsync_itemize(empty.root(), &dst, &["-n", "--delete"])
        .into_iter()
        .filter_map(|l| l.strip_prefix("*deleting   ").map(str::to_owned))
        .collect();
    assert_eq!(want.len() as u64, ALL, "rsync's own count: {want:?}");
    assert_eq!(
        deleting(&out),
        want,
        "dry-run itemization differs from rsync's"
    );
    assert_eq!(stat(&json_stats(&out), "files_deleted"), ALL);
    assert_eq!(remaining(), ALL, "a dry run removed something");

    // --max-delete 0: nothing goes, exit 25, a warning.
    let out = run(&["--max-delete", "0"]);
    assert_eq!(out.status.code(), Some(25), "{}", describe(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--max-delete"));
    assert_eq!(remaining(), ALL);

    // --max-delete 10: exactly ten go, each itemized and counted; exit 25.
    let out = run(&["--max-delete", "10"]);
    assert_eq!(out.status.code(), Some(25), "{}", describe(&out));
    let stats = json_stats(&out);
    assert_eq!(stat(&stats, "files_deleted"), 10, "{stats}");
    // Skipped: the entries refused (directories above them are not asked).
    let skipped = stat(&stats, "deletes_skipped");
    assert!(skipped > 0 && skipped <= ALL - 10, "{stats}");
    // Which ten is nfsync's choice (rsync deletes in its own order): they are counted.
    assert_eq!(deleting(&out).len(), 10, "{}", describe(&out));
    assert_eq!(remaining(), ALL - 10);

    // Without a limit the rest goes, every entry itemized; -v says "deleting".
    let out = nf(t)
        .args(["--json", "-v", "--delete"])
        .arg(t.src_arg(empty.root(), true))
        .arg(t.dest_arg("dst"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", describe(&out));
    let verbose = String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter(|l| l.starts_with("deleting "))
        .count() as u64;
    assert_eq!(verbose, ALL - 10, "{}", describe(&out));
    assert_eq!(stat(&json_stats(&out), "files_deleted"), ALL - 10);
    assert_eq!(remaining(), 0);
    assert_target_same(t, empty.root(), "dst");
}

/// Entries below `root`, not counting `root`.
fn count_entries(root: &std::path::Path) -> u64 {
    let mut n = 0;
    for e in fs::read_dir(root).unwrap() {
        let e = e.unwrap();
        n += 1;
        if e.file_type().unwrap().is_dir() {
            n += count_entries(&e.path());
        }
    }
    n
}
