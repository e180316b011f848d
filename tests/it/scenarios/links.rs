//! Symlinks, hard links, special files, and entries whose type changes.

use std::fs;
use std::os::unix::fs::{FileTypeExt, MetadataExt};

use super::{assert_rerun_is_noop, assert_same_mtime_ns, exists, run, sync};
use crate::support::{
    Scratch, Target, Tree, assert_target_same, bytes_path, describe, root_or_skip, rsync_reference,
    stat,
};

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

/// Special files are skipped with a warning by default, copied with --specials; device
/// nodes with --devices (only root can make one).
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

    // A character device (like /dev/null).
    let dev = tree.path("null_dev");
    if root_or_skip("device nodes in the specials scenario") {
        tree.device("null_dev", libc::S_IFCHR, 1, 3);
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
///
/// The first name of an inode seen leads its group. Usually that is one already copied
/// and the new name is linked to it (no data sent); when the walk reaches `late/`
/// first (it does on a loaded machine), the new name's data is sent once and the
/// others are linked to it. Never more than once: the names are all linked either way.
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
    assert!(
        stat(&st, "files_copied") <= 1 && stat(&st, "bytes_copied") <= 200_000,
        "linking copied data more than once: {st}"
    );
    let linked = fs::metadata(dst.join("late/new_link")).unwrap().ino();
    for d in (0..40).step_by(3) {
        let name = format!("d{d:02}/link0");
        let ino = fs::metadata(dst.join(&name)).unwrap().ino();
        assert_eq!(ino, linked, "{name} is not linked to late/new_link");
    }
}
