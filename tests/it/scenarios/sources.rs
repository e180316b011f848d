//! How SRC and DEST arguments are understood: trailing slashes, `.`, single files, symlinks, several sources, a DEST that is a file.

use std::ffi::OsString;
use std::fs;
use std::os::unix::ffi::OsStringExt;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use super::{assert_same_mtime_ns, exists, mixed_tree, sync};
use crate::support::{Scratch, Target, Tree, assert_target_same, describe, nf, slash};

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
        .arg(t.src_arg(tree.root(), false))
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
        .arg(t.src_arg(tree.root(), true))
        .arg(format!("{}/", t.dest_arg("dest_slash")))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", describe(&out));
    assert_target_same(t, tree.root(), "dest_slash");
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
        let out = nf(t)
            .arg(t.src_arg(tree.root(), true))
            .arg(&dest)
            .output()
            .unwrap();
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
    let given = [
        t.src_arg(&s.join("a"), true),
        t.src_arg(&s.join("b"), false),
        t.src_arg(&s.join("single.txt"), false),
    ];
    let out = nf(t).args(&given).arg(t.dest_arg("dst")).output().unwrap();
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

/// `SRC/.` and `.` (run from inside SRC) copy the contents, like `SRC/`.
pub fn dot_sources(t: &dyn Target) {
    let s = Scratch::new();
    let tree = Tree::new(s.join("src"));
    tree.file("a", "a\n").file("d/b", "b\n").age();

    let dot = with_dot(t.src_arg(tree.root(), true));
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

/// `SRC/` as `SRC/.`: the dot goes before an `nfs://` URL's query.
fn with_dot(src: OsString) -> OsString {
    let mut bytes = src.into_vec();
    let at = match bytes.starts_with(b"nfs://") {
        true => bytes.iter().position(|&b| b == b'?'),
        false => None,
    };
    bytes.insert(at.unwrap_or(bytes.len()), b'.');
    OsString::from_vec(bytes)
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
        .arg(t.src_arg(&file, false))
        .arg(t.dest_arg("renamed.bin"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", describe(&out));
    let got = t.dest_path("renamed.bin");
    assert!(got.is_file(), "DEST was not made a file");
    assert_eq!(fs::read(&got).unwrap(), fs::read(&file).unwrap());
    assert_same_mtime_ns(&file, &got, "");

    let out = nf(t)
        .arg(t.src_arg(&file, false))
        .arg(format!("{}/", t.dest_arg("newdir")))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", describe(&out));
    let got = t.dest_path("newdir").join("file.bin");
    assert_eq!(fs::read(&got).unwrap(), fs::read(&file).unwrap());
    assert_eq!(fs::metadata(&got).unwrap().mode() & 0o7777, 0o640);
}
