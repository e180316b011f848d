//! Exclude and include rules.

use std::fs;

use super::{exists, sync};
use crate::support::{Scratch, Target, Tree, bytes_path, describe, nf, rsync_reference, slash};

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
        .arg(t.src_arg(tree.root(), false))
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
        .arg(t.src_arg(tree.root(), true))
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
        .arg(t.src_arg(tree.root(), true))
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
