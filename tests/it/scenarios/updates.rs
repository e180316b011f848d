//! Runs over an existing DEST: re-runs, updates, comparison modes, --dry-run, output options.

use std::fs;

use super::{assert_rerun_is_noop, exists, mixed_tree, sync};
use crate::support::{
    Scratch, Target, Tree, assert_snapshots_eq, assert_target_same, copy_tree, describe, itemized,
    json_stats, nf, rsync_itemize, snapshot, stat,
};

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

/// nfsync's temporary name for `name` as made by process `pid` started at `start` on a
/// host whose name hashes to `host` (`.NAME.nfsync-HOST-PID-START-SEQ`).
fn temp_of(name: &str, host: u32, pid: u32, start: u64) -> String {
    format!(".{name}.nfsync-{host:08x}-{pid:x}-{start:x}-0")
}

/// FNV-1a of this host's name, as nfsync puts it in its temporaries.
fn host_hash() -> u32 {
    let name = fs::read("/proc/sys/kernel/hostname").unwrap();
    name.trim_ascii().iter().fold(0x811c_9dc5u32, |h, &b| {
        (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
    })
}

/// This test process's start time in clock ticks since boot (`/proc/self/stat`).
fn own_start() -> u64 {
    let stat = fs::read_to_string("/proc/self/stat").unwrap();
    let rest = &stat[stat.rfind(')').unwrap() + 1..];
    rest.split_whitespace().nth(19).unwrap().parse().unwrap()
}

/// A temporary left by a run killed mid-update is removed by the next run even without
/// --delete, but only when its name proves its owner gone (this host, a process that no
/// longer runs): a live run's temporary, another host's, and names that only look
/// similar stay, with and without --delete.
pub fn leftover_temporaries_are_removed(t: &dyn Target) {
    let s = Scratch::new();
    let tree = Tree::new(s.join("src"));
    tree.file("doc", "doc\n").file("sub/x", "x\n");
    sync(t, &[], tree.root(), "dst");
    let dst = t.dest_path("dst");
    let host = host_hash();
    let dead = [
        temp_of("doc", host, 0x7fff_fff0, 0),
        format!("sub/{}", temp_of("x", host, 0x7fff_fff1, 5)),
    ];
    let kept = [
        // Alive: this test process.
        temp_of("doc", host, std::process::id(), own_start()),
        // Another host's: nothing proves its owner gone.
        temp_of("doc", host.wrapping_add(1), 0x7fff_fff0, 0),
        format!("{}.keep", temp_of("doc", host, 0x7fff_fff0, 0)),
        "doc.nfsync-1-2".to_string(),
        ".notes.nfsync-1-2".to_string(),
        ".a.nfsync-dead-beef".to_string(),
        ".doc.nfsync-3039-0".to_string(),
    ];
    for name in dead.iter().chain(&kept) {
        fs::write(dst.join(name), "torn").unwrap();
    }
    // A dead run's temporary, but excluded: excluded names are never touched.
    let excluded_dead = temp_of("notes", host, 0x7fff_fff0, 0);
    fs::write(dst.join(&excluded_dead), "torn").unwrap();
    let skip_notes = ["--exclude", ".notes*"];
    let stats = sync(t, &skip_notes, tree.root(), "dst");
    assert_eq!(stat(&stats, "files_deleted"), 2, "{stats}");
    assert!(
        exists(&dst.join(&excluded_dead)),
        "excluded temporary removed"
    );
    let stats = sync(t, &[], tree.root(), "dst");
    assert_eq!(stat(&stats, "files_deleted"), 1, "{stats}");
    assert!(
        !exists(&dst.join(&excluded_dead)),
        "{excluded_dead} left behind"
    );
    for name in &dead {
        assert!(!exists(&dst.join(name)), "{name} left behind");
    }
    for name in &kept {
        assert!(exists(&dst.join(name)), "{name} removed without --delete");
    }
    // --delete removes the look-alikes (the source lacks them) but not live temporaries.
    let excl = ["--delete", "--exclude", ".notes*"];
    sync(t, &excl, tree.root(), "dst");
    for name in &kept[..2] {
        assert!(exists(&dst.join(name)), "{name} removed by --delete");
    }
    assert!(
        exists(&dst.join(".notes.nfsync-1-2")),
        "excluded name removed"
    );
    assert!(!exists(&dst.join("doc.nfsync-1-2")));
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
            .arg(t.src_arg(tree.root(), true))
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

/// Verbosity options keep stdout machine-friendly: -q prints nothing on success, -i
/// itemizes what changed as rsync does, and nothing when nothing changed.
pub fn output_options(t: &dyn Target) {
    let s = Scratch::new();
    let tree = mixed_tree(&s.join("src"));

    let out = nf(t)
        .arg("-q")
        .arg(t.src_arg(tree.root(), true))
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

    // -i prints what `rsync -ai` prints for the same change: run on a copy of DEST as
    // it was before (first missing, then up to date: nothing to print, but where the
    // target cannot keep a symlink's time, rsync too finds it different every time).
    for (i, what) in ["a new tree", "an unchanged tree"].iter().enumerate() {
        let before = s.join(format!("before{i}"));
        copy_tree(&t.dest_path("i"), &before);
        let out = nf(t)
            .arg("-i")
            .arg(t.src_arg(tree.root(), true))
            .arg(t.dest_arg("i"))
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", describe(&out));
        assert_eq!(
            itemized(&out),
            rsync_itemize(tree.root(), &before, &[]),
            "-i for {what} differs from rsync -ai"
        );
    }

    // Whatever else is asked for, --json keeps stdout to one JSON object.
    let out = nf(t)
        .args(["--json", "--stats", "--progress", "-v", "-i"])
        .arg(t.src_arg(tree.root(), true))
        .arg(t.dest_arg("j"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", describe(&out));
    json_stats(&out);

    let out = nf(t)
        .arg("--stats")
        .arg(t.src_arg(tree.root(), true))
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
