//! Which paths are sent: `-R` (whole paths and `/./` anchors), `--files-from`
//! (rsync's implied `-R` and `-d`, `-a` without `-r`, `--from0`, stdin), `-d`, `-m` and
//! `--list-only`. Each runs under rsync and nfsync on the same trees (the harness of
//! [`crate::support::sides`]) and the results must be identical by
//! `rsync -anciH --delete`; `--list-only`'s output must be rsync's, byte for byte.

use std::fs;
use std::path::Path;
use std::process::Command;

use crate::support::sides::{Sides, Via, against_rsync_setup, against_rsync_via};
use crate::support::{Scratch, Tree, describe, nfsync, slash};

fn same_as_rsync(via: Via, flags: &[&str], operands: &[&str]) {
    let d = against_rsync_via(via, flags, operands, &[]);
    assert!(
        d.is_empty(),
        "nfsync {flags:?} {operands:?} differs from rsync:\n{d}"
    );
}

/// [`same_as_rsync`] where the run creates an entry in DEST itself, which neither
/// tool then gives a time of the source's (rsync sends no `.`): DEST's mtime is the
/// moment of each run, which may fall in different seconds, so directory times are
/// not compared (their modes, owners and contents are).
fn same_as_rsync_but_dest_time(via: Via, flags: &[&str], operands: &[&str]) {
    let d = against_rsync_via(via, flags, operands, &["-O"]);
    assert!(
        d.is_empty(),
        "nfsync {flags:?} {operands:?} differs from rsync:\n{d}"
    );
}

/// A `--files-from` list in its own directory (outside both trees).
fn list_file(s: &Scratch, data: &[u8]) -> String {
    let p = s.join("list");
    fs::write(&p, data).unwrap();
    format!("--files-from={}", p.display())
}

#[test]
fn relative_recreates_the_whole_path() {
    same_as_rsync_but_dest_time(Via::Mount, &["-a", "-R"], &["sub/small", "newdir"]);
}

#[test]
fn relative_starts_at_the_anchor() {
    same_as_rsync_but_dest_time(
        Via::Mount,
        &["-a", "-R"],
        &["./sub/small", "./newdir/", "./link"],
    );
    same_as_rsync(Via::Mount, &["-a", "-R", "--delete"], &["./sub", "./same"]);
}

/// A -R path starting with `./` sends that `.` too (rsync's implied `.`): DEST takes
/// the source directory's attributes; `sub/./x` does not, and DEST keeps its own.
#[test]
fn relative_dot_slash_gives_dest_the_source_attributes() {
    use std::os::unix::fs::PermissionsExt;
    for via in [Via::Mount, Via::InProc] {
        for operands in [&["./a/b/f", "./c"][..], &["a/./b/f"]] {
            let s = Sides::new(via);
            let src = Tree::new(s.join("src"));
            src.file("a/b/f", "f\n").file("c", "c\n");
            fs::set_permissions(src.root(), fs::Permissions::from_mode(0o750)).unwrap();
            let old = filetime::FileTime::from_unix_time(1_500_000_000, 0);
            filetime::set_file_mtime(src.root(), old).unwrap();
            s.run_ok("", b"", &|_, cmd| {
                cmd.current_dir(src.root())
                    .args(["-a", "-R"])
                    .args(operands);
            });
            let root = fs::metadata(s.nfsync("")).unwrap();
            let dotted = operands[0].starts_with("./");
            assert_eq!(root.permissions().mode() & 0o777 == 0o750, dotted);
            let had = filetime::FileTime::from_last_modification_time(&root);
            assert_eq!(had == old, dotted, "{operands:?}: DEST's mtime");
            if !dotted {
                // DEST keeps its own time: when each tool last made something in it.
                s.set_dest_mtimes(old);
            }
            let d = s.diff(&[]);
            assert!(d.is_empty(), "{operands:?} differs from rsync:\n{d}");
        }
    }
}

/// Without -r a directory named by -R is skipped, and so are the implied directories
/// above it; a file's implied directories are sent with their source attributes.
#[test]
fn relative_without_recursion() {
    same_as_rsync(Via::Mount, &["-lptgoD", "-R"], &["./sub/small", "./newdir"]);
    same_as_rsync_but_dest_time(
        Via::Mount,
        &["-lptgoD", "-R", "-d"],
        &["./sub/", "./newdir"],
    );
}

/// With --files-from, -a does not recurse: a listed directory is created, not filled.
#[test]
fn files_from_with_archive_does_not_recurse() {
    let s = Scratch::new();
    let list = list_file(&s, b"# comment\nsub\nnewdir/inner\r\n\nsame\n/older\n");
    same_as_rsync_but_dest_time(Via::Mount, &["-a", &list], &[""]);
    same_as_rsync_but_dest_time(Via::Mount, &["-a", "--delete", &list], &[""]);
}

/// An explicit -r recurses into the listed directories (and --delete deletes there).
#[test]
fn files_from_with_recursive() {
    let s = Scratch::new();
    let list = list_file(&s, b"sub\nnewdir/\nsame\n");
    same_as_rsync_but_dest_time(Via::Mount, &["-ar", &list], &[""]);
    same_as_rsync_but_dest_time(Via::Mount, &["-ar", "--delete", &list], &[""]);
    same_as_rsync(Via::Mount, &["-ar", "--no-R", &list], &[""]);
}

/// A listed `..` cannot climb above SRC: rsync clamps it there (`../older` is SRC's
/// `older`), on the mount path and over nfs://.
#[test]
fn files_from_dot_dots_stay_in_the_source() {
    let s = Scratch::new();
    let list = list_file(&s, b"../older\nsub/../same\n/../sub/./small\n");
    for via in [Via::Mount, Via::InProc] {
        same_as_rsync_but_dest_time(via, &["-a", &list], &[""]);
    }
}

#[test]
fn files_from_nul_separated() {
    let s = Scratch::new();
    let list = list_file(&s, b"sub/small\0#older\0newdir/inner\0");
    let d = against_rsync_setup(
        Via::Mount,
        &["-a", "--from0", &list],
        &[""],
        &["-O"],
        &|src, _| {
            fs::write(src.join("#older"), "hash\n").unwrap();
        },
    );
    assert!(d.is_empty(), "differs from rsync:\n{d}");
}

/// `--files-from=-` reads the names from stdin.
#[test]
fn files_from_stdin() {
    let s = Sides::new(Via::Mount);
    let src = Tree::new(s.join("src"));
    src.file("a/b/f", "f\n")
        .file("a/g", "g\n")
        .file("c", "c\n")
        .dir("d/e");
    s.run_ok("", b"a/b/f\nc\nd\n", &|_, cmd| {
        cmd.args(["-a", "--files-from=-"]).arg(src.root());
    });
    assert!(s.nfsync("d").is_dir() && !s.nfsync("a/g").exists());
    let d = s.diff(&["-O"]);
    assert!(d.is_empty(), "differs from rsync:\n{d}");
}

/// -d without -r: directories named or at `SRC/`'s top level are created, empty.
#[test]
fn dirs_without_recursion() {
    same_as_rsync(Via::Mount, &["-lptgoD", "-d"], &[""]);
    same_as_rsync(Via::Mount, &["-lptgoD", "-d", "--delete"], &[""]);
    same_as_rsync_but_dest_time(Via::Mount, &["-lptgoD", "-d"], &["sub", "newdir", "same"]);
}

/// The trees -m decides on: a directory holding only an empty directory, one holding
/// only an excluded file (both pruned, the second left alone where DEST has it), one
/// with a file deep down (kept, with the directories above it).
fn prune_trees(src: &Path, start: &Path) {
    let t = Tree::new(src);
    t.dir("prune/onlyempty/empty")
        .file("prune/exonly/a.o", "o\n")
        .file("prune/keep/deep/er/f", "f\n")
        .dir("prune/keep/empty");
    Tree::new(start)
        .file("prune/exonly/old", "old\n")
        .dir("prune/onlyempty/old")
        .chmod("prune/exonly", 0o700);
}

#[test]
fn prune_empty_dirs() {
    for flags in [
        &["-a", "-m", "--exclude=*.o"][..],
        &["-a", "-m", "--exclude=*.o", "--delete"],
        &["-a", "-m"],
    ] {
        let d = against_rsync_setup(Via::Mount, flags, &[""], &[], &prune_trees);
        assert!(d.is_empty(), "nfsync {flags:?} differs from rsync:\n{d}");
    }
    // Without -r nothing below a directory is sent, so each one is pruned; on a -R path
    // a named directory holding no file is pruned, and so are the implied ones above
    // it that are left holding nothing.
    for (flags, operands) in [
        (&["-lptgoD", "-d", "-m"][..], &[""][..]),
        (
            &["-a", "-m", "-R"],
            &["./prune/onlyempty", "./prune/keep/deep", "./prune/exonly"],
        ),
        (
            &["-a", "-m", "-R"],
            &["./prune/onlyempty/empty", "./sub/small"],
        ),
    ] {
        let d = against_rsync_setup(Via::Mount, flags, operands, &[], &prune_trees);
        assert!(
            d.is_empty(),
            "nfsync {flags:?} {operands:?} differs from rsync:\n{d}"
        );
    }
}

/// The NFS path (in-process NFSv3 server) sends the same paths.
#[test]
fn nfs_path_same_as_rsync() {
    let s = Scratch::new();
    let list = list_file(&s, b"sub\nnewdir/inner\nsame\n");
    same_as_rsync_but_dest_time(
        Via::InProc,
        &["-a", "--no-D", "-R"],
        &["./sub/small", "./newdir"],
    );
    same_as_rsync_but_dest_time(Via::InProc, &["-a", &list], &[""]);
    same_as_rsync_but_dest_time(Via::InProc, &["-ar", "--delete", &list], &[""]);
    for flags in [
        &["-a", "--no-D", "-m", "--exclude=*.o"][..],
        &["-a", "--no-D", "-m", "--exclude=*.o", "--delete"],
    ] {
        let d = against_rsync_setup(Via::InProc, flags, &[""], &[], &prune_trees);
        assert!(d.is_empty(), "nfs:// {flags:?} differs from rsync:\n{d}");
    }
}

/// More directories (about 4,900) than are listed ahead at once (4,096), deep and wide.
pub(crate) fn many_directories(root: &Path) -> Tree {
    let t = Tree::new(root);
    for a in 0..18 {
        for b in 0..16 {
            for c in 0..16 {
                t.dir(format!("d{a:02}/e{b}/f{c}"));
            }
            t.file(format!("d{a:02}/e{b}/file"), "x\n");
        }
    }
    t.file("d03/e7/f2/deep/er/still", "s\n").age();
    t
}

/// `--list-only` prints what rsync prints, in its order (no sorting needed: both list
/// the top level, then each directory's files before its subdirectories).
/// A tree with more directories than are listed ahead at once (4,096), deep and wide:
/// the listing made by many threads is rsync's, byte for byte, and in its order.
#[test]
fn list_only_of_many_directories_is_rsyncs_listing() {
    let s = Scratch::new();
    let t = many_directories(&s.join("src"));
    let src = format!("{}/", t.root().display());
    let r = Command::new("rsync")
        .args(["-r", "--list-only", &src])
        .output()
        .unwrap();
    let n = nfsync().args(["-r", "--list-only", &src]).output().unwrap();
    assert_eq!(n.status.code(), r.status.code(), "{}", describe(&n));
    assert!(String::from_utf8_lossy(&r.stdout).lines().count() > 4_600);
    assert_eq!(
        String::from_utf8_lossy(&n.stdout),
        String::from_utf8_lossy(&r.stdout),
        "--list-only -r over {} directories",
        18 * 16 * 17
    );
}

/// The tree the `--list-only` tests list: names that sort oddly, are not UTF-8 or hold
/// a newline, a tab, a backslash, spaces, a leading dot or dash, 255 bytes; symlinks,
/// an empty directory, a set-uid file, a directory only its owner reads, a large sparse
/// file (sizes with thousands separators).
pub(crate) fn tricky_tree(root: &Path) -> Tree {
    let t = Tree::new(root);
    t.file("a/top", "top\n")
        .file("a/b/c/f", "f\n")
        .file("zfile", "z\n")
        .file("0file", "0\n")
        .file(crate::support::bytes_path(b"x/n\nl\xff"), "odd\n")
        .file("x/skip.o", "o\n")
        .file(
            crate::support::bytes_path(b"x/caf\xc3\xa9 \\ tab\there"),
            "u\n",
        )
        .file("x/.hidden", "h\n")
        .file("x/-dash", "d\n")
        .file(format!("x/{}", "l".repeat(255)), "long\n")
        .symlink("a/lnk", "top")
        .symlink("x/sp ace", "../a/b/c/f")
        .dir("e/empty")
        .chmod("a/top", 0o4755)
        .chmod("a", 0o700);
    fs::File::create(t.path("e/big"))
        .unwrap()
        .set_len(123_456_789)
        .unwrap();
    t.age();
    t
}

#[test]
fn list_only_is_rsyncs_listing() {
    let s = Scratch::new();
    let t = tricky_tree(&s.join("src"));
    let root = t.root().display().to_string();
    let sub = |p: &str| format!("{root}/{p}");
    let cases: Vec<Vec<String>> = vec![
        vec![format!("{root}/")],
        vec!["-r".into(), format!("{root}/")],
        vec!["-a".into(), format!("{root}/")],
        vec!["-h".into(), format!("{root}/")],
        vec!["-hh".into(), "-r".into(), sub("a/")],
        vec![root.clone()],
        vec!["-a".into(), sub("a/lnk"), sub("a/top")],
        vec![
            "-a".into(),
            sub("e/big"),
            s.join("nowhere").display().to_string(),
        ],
        vec!["-r".into(), sub("e"), sub("a/top"), sub("x/")],
        vec!["-rR".into(), sub("./a/b")],
        vec!["-aR".into(), sub("./a/b/c"), sub("./x")],
        vec!["-aR".into(), "--no-implied-dirs".into(), sub("./a/b/c")],
        vec!["-a".into(), "--exclude=*.o".into(), format!("{root}/")],
    ];
    for args in cases {
        let r = Command::new("rsync")
            .arg("--list-only")
            .args(&args)
            .output()
            .unwrap();
        assert!(r.status.success(), "rsync {args:?}: {}", describe(&r));
        let n = nfsync().arg("--list-only").args(&args).output().unwrap();
        assert!(n.status.success(), "nfsync {args:?}: {}", describe(&n));
        assert!(!r.stdout.is_empty(), "{args:?}: rsync listed nothing");
        assert_eq!(
            String::from_utf8_lossy(&n.stdout),
            String::from_utf8_lossy(&r.stdout),
            "--list-only {args:?}"
        );
    }
    assert!(!s.join("nowhere").exists(), "--list-only wrote to DEST");
    // A lone SRC is listed, as rsync infers --list-only then.
    let r = Command::new("rsync")
        .arg(format!("{root}/"))
        .output()
        .unwrap();
    let n = nfsync().arg(format!("{root}/")).output().unwrap();
    assert!(n.status.success(), "{}", describe(&n));
    assert_eq!(
        String::from_utf8_lossy(&n.stdout),
        String::from_utf8_lossy(&r.stdout)
    );
}

/// A `..` in the part of a path -R recreates is refused, as rsync refuses it.
#[test]
fn relative_refuses_dot_dot() {
    let s = Scratch::new();
    let src = Tree::new(s.join("src"));
    src.file("a/f", "f\n");
    let op = format!("{}/./a/../a/f", src.root().display());
    for cmd in [
        &mut Command::new("rsync"),
        &mut Command::new(crate::support::bin()),
    ] {
        let out = cmd.args(["-aR", &op]).arg(s.join("dst")).output().unwrap();
        assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("found \"..\" dir in relative path: a/../a/f"),
            "{err}"
        );
    }
    assert!(!s.join("dst/a").exists());
}

/// --no-implied-dirs: the directories above a -R path are not sent: DEST's own keep
/// their attributes (`sub` keeps its mode), missing ones get default permissions.
/// Their times are those of the runs (each makes entries in them), so not compared.
#[test]
fn no_implied_dirs() {
    for via in [Via::Mount, Via::InProc] {
        let flags = &["-a", "--no-D", "-R", "--no-implied-dirs"];
        let d = against_rsync_via(via, flags, &["./sub/small", "./newdir/inner"], &["-O"]);
        assert!(d.is_empty(), "{flags:?} differs from rsync:\n{d}");
    }
}

/// --no-implied-dirs uses DEST's path elements as they are: a symlink there to a
/// directory in DEST is followed, and the file lands in that directory (rsync); the
/// default replaces the link by a directory.
#[test]
fn no_implied_dirs_follows_a_dest_link() {
    for implied in [false, true] {
        let s = Sides::new(Via::Mount);
        Tree::new(s.join("src")).file("path/file", "NEW\n");
        Tree::new(s.join("start"))
            .dir("real")
            .symlink("path", "real");
        s.copy_start("start");
        let operand = format!("{}/./path/file", s.join("src").display());
        s.run_ok("", b"", &|_, cmd| {
            cmd.args(["-a", "-R"]);
            if !implied {
                cmd.arg("--no-implied-dirs");
            }
            cmd.arg(&operand);
        });
        let d = s.diff(&["-O"]);
        assert!(d.is_empty(), "implied {implied}: differs from rsync:\n{d}");
        let through = s.nfsync("real/file");
        assert_eq!(through.exists(), !implied, "implied {implied}");
        assert_eq!(s.nfsync("path").is_symlink(), !implied);
    }
}

/// Several `SRC/` with directories of one name: their contents are merged (the first
/// source's entry wins a name both have), and DEST takes the first `SRC/`'s attributes,
/// as rsync keeps the first `.` sent; on the mount path and over nfs://.
#[test]
fn several_sources_merge_their_directories() {
    use std::os::unix::fs::PermissionsExt;
    for via in [Via::Mount, Via::InProc] {
        let s = Sides::new(via);
        Tree::new(s.join("a"))
            .file("sub/one", "a1\n")
            .file("sub/both", "from a\n")
            .file("sub/deeper/x", "ax\n")
            .file("top", "a\n");
        Tree::new(s.join("b"))
            .file("sub/two", "b2\n")
            .file("sub/both", "from b, longer\n")
            .file("sub/deeper/y", "by\n")
            .file("top", "b\n");
        fs::write(s.join("f"), "f\n").unwrap();
        fs::set_permissions(s.join("b"), fs::Permissions::from_mode(0o700)).unwrap();
        let old = filetime::FileTime::from_unix_time(1_400_000_000, 0);
        filetime::set_file_mtime(s.join("b"), old).unwrap();
        let (f, b, a) = (s.join("f"), slash(&s.join("b")), slash(&s.join("a")));
        s.run_ok("", b"", &|_, cmd| {
            cmd.args(["-a", "--delete"]).arg(&f).arg(&b).arg(&a);
        });
        let d = s.diff(&[]);
        assert!(d.is_empty(), "differs from rsync:\n{d}");
        for p in ["sub/one", "sub/two", "sub/deeper/x", "sub/deeper/y"] {
            assert!(s.nfsync(p).exists(), "{p}");
        }
        assert_eq!(
            fs::read_to_string(s.nfsync("sub/both")).unwrap(),
            "from b, longer\n"
        );
        let root = fs::metadata(s.nfsync("")).unwrap();
        assert_eq!(root.permissions().mode() & 0o777, 0o700);
    }
}
