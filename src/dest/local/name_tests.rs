//! Every entry point of the mount backend refuses a name that is not one path
//! component, before it touches anything: the backstop against a hostile sender's
//! or server's `../x` (see `dest::name`).
//!
//! The names that would reach outside DEST point at `victim`, a file beside DEST in
//! the same temporary directory, so that a check gone missing shows up as a changed
//! tree there rather than as damage elsewhere; `/etc/passwd` itself is only given to
//! the calls that read.

use std::collections::BTreeMap;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;

use super::*;
use crate::options::xattrs::XattrSet;

/// Lets everything go (for `remove_tree`).
struct All;

impl Removal for All {
    fn may_remove(&self, _: &Path, _: Kind) -> bool {
        true
    }
    fn removed(&self, _: &Path, _: Kind) {}
}

/// Every entry below `top` (itself included): kind and mode, size, inode, mtime.
fn snapshot(top: &Path) -> BTreeMap<PathBuf, (u32, u64, u64, i64, i64)> {
    let mut out = BTreeMap::new();
    let mut todo = vec![top.to_path_buf()];
    while let Some(p) = todo.pop() {
        let m = fs::symlink_metadata(&p).unwrap();
        if m.is_dir() {
            todo.extend(fs::read_dir(&p).unwrap().map(|e| e.unwrap().path()));
        }
        let at = (m.mode(), m.len(), m.ino(), m.mtime(), m.mtime_nsec());
        out.insert(p, at);
    }
    out
}

/// A temporary directory holding `victim` (a file), `src` (a source file) and DEST
/// (`dest/` with a file `f`, a directory `d` and a symlink `l` to it).
fn tree() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    fs::write(tmp.path().join("victim"), b"outside DEST").unwrap();
    fs::write(tmp.path().join("src"), b"source").unwrap();
    let root = tmp.path().join("dest");
    fs::create_dir(&root).unwrap();
    fs::write(root.join("f"), b"source").unwrap();
    fs::create_dir(root.join("d")).unwrap();
    std::os::unix::fs::symlink("d", root.join("l")).unwrap();
    (tmp, root)
}

fn assert_refused<T: std::fmt::Debug>(call: &str, bad: &OsStr, r: dest::Result<T>) {
    match r {
        Err(dest::Error::Entry(e)) => {
            assert_eq!(
                e.kind(),
                io::ErrorKind::InvalidInput,
                "{call}({bad:?}): {e}"
            );
            let m = e.to_string();
            assert!(m.starts_with("refusing the "), "{call}({bad:?}): {m}");
        }
        other => panic!("{call}({bad:?}) was not refused: {other:?}"),
    }
}

fn copy_refused<T: std::fmt::Debug>(call: &str, bad: &OsStr, r: Result<T, CopyError>) {
    match r {
        Err(CopyError::Dest(e)) => assert_refused(call, bad, Err::<(), _>(e)),
        other => panic!("{call}({bad:?}) was not refused: {other:?}"),
    }
}

/// The calls that only read: given `/etc/passwd` too.
fn reads(d: &LocalDest, dir: &LocalDir, src: &Path, bad: &OsStr) {
    let set = XattrSet {
        xattrs: true,
        ..XattrSet::default()
    };
    assert_refused("stat", bad, d.stat(dir, bad));
    assert_refused("open_dir", bad, d.open_dir(dir, bad));
    assert_refused("read_link", bad, d.read_link(dir, bad));
    assert_refused("open_file", bad, d.open_file(dir, bad));
    let file = crate::source::Data::from_file(File::open(src).unwrap());
    assert_refused("same_content", bad, d.same_content(dir, bad, file));
    assert_refused("xattrs", bad, d.xattrs(dir, Some(bad), set));
    assert_refused(
        "open_dir_link",
        bad,
        d.open_dir_link(dir, bad, Path::new("l")),
    );
}

/// The calls that write, with `bad` in each name they take; the other name is one
/// that would let the call succeed.
fn writes(d: &LocalDest, dir: &LocalDir, src_path: &Path, bad: &OsStr) {
    let listed = Meta::from_std(&fs::metadata(src_path).unwrap());
    let src = SourceFile {
        data: crate::source::Data::from_file(File::open(src_path).unwrap()),
        meta: &listed,
        listed: &listed,
        path: src_path,
        sparse: false,
        limit: None,
        stop: None,
        keep_partial: false,
        moving: None,
    };
    let dir_meta = Meta::from_std(&fs::metadata(src_path.parent().unwrap()).unwrap());
    let fifo = Meta {
        kind: Kind::Fifo,
        mode: 0o644,
        ..listed
    };
    let (ok, new) = (OsStr::new("f"), OsStr::new("new"));
    copy_refused("write_file", bad, d.write_file(dir, bad, &src));
    copy_refused("write_into", bad, d.write_into(dir, bad, &src, 0));
    assert_refused("mkdir", bad, d.mkdir(dir, bad, &dir_meta));
    assert_refused(
        "symlink",
        bad,
        d.symlink(dir, bad, OsStr::new("f"), &listed),
    );
    assert_refused("mknod", bad, d.mknod(dir, bad, &fifo));
    assert_refused("rename from", bad, d.rename(dir, bad, new));
    assert_refused("rename to", bad, d.rename(dir, ok, bad));
    assert_refused("rename_into from", bad, d.rename_into(dir, bad, dir, new));
    assert_refused("rename_into to", bad, d.rename_into(dir, ok, dir, bad));
    assert_refused("hard_link name", bad, d.hard_link(dir, bad, dir, ok));
    assert_refused("hard_link target", bad, d.hard_link(dir, new, dir, bad));
    let current = d.hard_link_current(dir, bad, dir, ok);
    assert_refused("hard_link_current name", bad, current);
    let current = d.hard_link_current(dir, new, dir, bad);
    assert_refused("hard_link_current target", bad, current);
    assert_refused("remove", bad, d.remove(dir, bad, Kind::File));
    assert_refused("remove dir", bad, d.remove(dir, bad, Kind::Dir));
    assert_refused("remove_tree", bad, d.remove_tree(dir, bad, &All));
    let attrs = d.set_attrs(
        dir,
        bad,
        &Meta {
            mode: 0o600,
            ..listed
        },
        AttrSet::ALL,
    );
    assert_refused("set_attrs", bad, attrs);
    let want = vec![(OsString::from("user.x"), b"y".to_vec())];
    assert_refused(
        "set_xattrs",
        bad,
        d.set_xattrs(dir, Some(bad), &vec![], &want),
    );
}

#[test]
fn every_entry_point_refuses_what_is_not_one_name() {
    let (tmp, root) = tree();
    let victim = tmp.path().join("victim");
    let long = "n".repeat(256);
    let bad: Vec<&OsStr> = vec![
        OsStr::new(""),
        OsStr::new("."),
        OsStr::new(".."),
        OsStr::new("../victim"),
        OsStr::new("../x"),
        OsStr::new("a/b"),
        OsStr::new("d/../../victim"),
        victim.as_os_str(),
        OsStr::new("a\0b"),
        OsStr::new(&long),
    ];
    let before = snapshot(tmp.path());
    for fake_super in [false, true] {
        let d = LocalDest::new(&root, OwnerPolicy::default()).with_fake_super(fake_super);
        let dir = d.root_dir().unwrap();
        let src = tmp.path().join("src");
        for &name in &bad {
            reads(&d, &dir, &src, name);
            writes(&d, &dir, &src, name);
        }
        reads(&d, &dir, &src, OsStr::new("/etc/passwd"));
        // -K's path below DEST is made of names too.
        let r = d.open_dir_link(&dir, OsStr::new("l"), Path::new("../victim"));
        assert_refused("open_dir_link rel", OsStr::new("../victim"), r);
    }
    assert_eq!(snapshot(tmp.path()), before, "something changed");
}

#[test]
fn a_refusal_names_the_name_escaped_and_why() {
    let (_tmp, root) = tree();
    let d = LocalDest::new(&root, OwnerPolicy::default());
    let dir = d.root_dir().unwrap();
    let e = d.stat(&dir, OsStr::new("..\x1b[31m/x")).unwrap_err();
    assert_eq!(
        e.to_string(),
        "refusing the name \"..\\#033[31m/x\": contains /: not a single path component"
    );
}

#[test]
fn long_and_strange_single_names_still_work() {
    let (tmp, root) = tree();
    let d = LocalDest::new(&root, OwnerPolicy::default());
    let dir = d.root_dir().unwrap();
    let src_path = tmp.path().join("src");
    let listed = Meta::from_std(&fs::metadata(&src_path).unwrap());
    let long = "n".repeat(255);
    for name in [long.as_str(), "\x1b[31m", "..x", ".hidden", "a\\#000"] {
        let name = OsStr::new(name);
        let src = SourceFile {
            data: crate::source::Data::from_file(File::open(&src_path).unwrap()),
            meta: &listed,
            listed: &listed,
            path: &src_path,
            sparse: false,
            limit: None,
            stop: None,
            keep_partial: false,
            moving: None,
        };
        assert_eq!(d.write_file(&dir, name, &src).unwrap(), 6);
        assert_eq!(d.stat(&dir, name).unwrap().unwrap().size, 6);
        let again = crate::source::Data::from_file(File::open(&src_path).unwrap());
        assert!(d.same_content(&dir, name, again).unwrap());
        d.set_attrs(&dir, name, &listed, AttrSet::MTIME).unwrap();
        d.rename_into(&dir, name, &dir, OsStr::new("moved"))
            .unwrap();
        d.rename(&dir, OsStr::new("moved"), name).unwrap();
        d.hard_link(&dir, OsStr::new("linked"), &dir, name).unwrap();
        d.remove(&dir, OsStr::new("linked"), Kind::File).unwrap();
        d.remove(&dir, name, Kind::File).unwrap();
        d.symlink(&dir, name, OsStr::new("../../anywhere"), &listed)
            .unwrap();
        // The target is data: stored verbatim, not refused, not followed.
        assert_eq!(d.read_link(&dir, name).unwrap(), "../../anywhere");
        d.remove(&dir, name, Kind::Symlink).unwrap();
        let dir_meta = Meta::from_std(&fs::metadata(&root).unwrap());
        let (sub, todo) = d.mkdir(&dir, name, &dir_meta).unwrap();
        d.set_dir_attrs(&sub, &dir_meta, todo).unwrap();
        d.open_dir(&dir, name).unwrap();
        assert!(d.remove_tree(&dir, name, &All).unwrap());
        assert!(root.join(name).symlink_metadata().is_err());
        assert!(name.as_bytes().len() <= 255);
    }
    assert!(tmp.path().join("victim").exists());
}
