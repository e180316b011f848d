//! rsync's filter rules (`-f`, `-F`, `-C`, `--include-from`,
//! `--delete-excluded`), each run by rsync and nfsync from the same source onto copies
//! of the same destination, the two results compared with `rsync -anciH --delete`.
//!
//! The destinations start with what makes the rules matter: files the source lacks
//! (for `--delete` and protect rules), excluded files already there, and a directory
//! the source lacks holding a protected file.

use std::ffi::OsString;
use std::fs;
use std::path::Path;

use crate::support::sides::{Sides, Via};
use crate::support::{Tree, slash};

/// Options for one comparison besides the flags.
#[derive(Default)]
struct Run<'a> {
    /// Environment for both programs (`HOME`, `CVSIGNORE`).
    env: Vec<(&'a str, OsString)>,
    /// Bytes both programs read on stdin.
    stdin: Option<&'a [u8]>,
}

/// Runs `rsync FLAGS src/ by_rsync/` and `nfsync FLAGS src/ DEST` (DEST: `by_nfsync`,
/// or its nfs:// URL) from `src` onto copies of `start`, and returns the difference
/// between the two results (empty when nfsync did what rsync did).
fn compare(s: &Sides, flags: &[OsString], run: &Run<'_>) -> String {
    s.copy_start("start");
    let src = slash(&s.join("src"));
    s.run_ok("", run.stdin.unwrap_or_default(), &|_, cmd| {
        cmd.args(flags)
            .arg(&src)
            .envs(run.env.iter().map(|(k, v)| (k, v)));
    });
    s.assert_rsync_changed("start", &[], &format!("{flags:?}"));
    // A directory the source lacks, kept because of a protected file in it, has the
    // mtime of its deletions: the clock's, which the two runs cannot share.
    let kept = |root: &str| fs::metadata(s.join(root).join("gone")).ok();
    if let (Some(r), Some(_)) = (kept("by_rsync"), kept("by_nfsync")) {
        let t = filetime::FileTime::from_last_modification_time(&r);
        filetime::set_file_mtime(s.nfsync("gone"), t).unwrap();
    }
    s.diff(&[])
}

fn os(flags: &[&str]) -> Vec<OsString> {
    flags.iter().map(OsString::from).collect()
}

/// Asserts nfsync and rsync agree on `flags`, and that the rules did something: the
/// result differs from what the same run without `rule_flags` gives.
fn same_as_rsync(s: &Sides, flags: &[OsString], run: &Run<'_>) {
    let d = compare(s, flags, run);
    assert!(d.is_empty(), "nfsync {flags:?} differs from rsync:\n{d}");
}

/// A source with names the rules pick out at several depths.
fn source(root: &Path) -> Tree {
    let t = Tree::new(root);
    t.file("a.c", "a\n")
        .file("a.o", "obj\n")
        .file("keep.log", "keep\n")
        .file("x.log", "log\n")
        .file("hidden", "hidden, source\n")
        .file("shown", "shown\n")
        .file("only_here", "top\n")
        .file("top.tmp", "tmp\n")
        .file("sub/b.c", "b\n")
        .file("sub/b.o", "obj\n")
        .file("sub/only_here", "sub\n")
        .file("sub/keep.tmp", "keep\n")
        .file("sub/drop.tmp", "drop\n")
        .file("sub/deep/c.c", "c\n")
        .file("sub/deep/c.o", "obj\n")
        .file("sub/deep/only_here", "deep\n")
        .file("sub/deep/x.tmp", "x\n")
        .file("other/d.c", "d\n")
        .file("other/only_here", "other\n");
    t
}

/// The destination before the run: an older file, extras the source lacks (some of
/// them excluded or protected), a directory the source lacks with a protected file.
fn start(root: &Path) -> Tree {
    let t = Tree::new(root);
    t.file("a.c", "old\n")
        .file("hidden", "hidden, dest\n")
        .file("extra", "extra\n")
        .file("extra.o", "extra obj\n")
        .file("prot1", "protected\n")
        .file("prot_risk", "risked\n")
        .file("x.keep", "kept\n")
        .file("sub/extra.log", "extra\n")
        .file("sub/b.o", "old obj\n")
        .file("sub/old.tmp", "old tmp\n")
        .file("gone/x", "x\n")
        .file("gone/y.keep", "kept\n")
        .file("gone/z.o", "obj\n")
        .file("gone/inner/w", "w\n");
    t
}

/// The scratch directory with [`source`] and [`start`], nfsync writing `via`.
fn scratch(via: Via) -> Sides {
    let s = Sides::new(via);
    source(&s.join("src")).age();
    start(&s.join("start")).age();
    s
}

#[test]
fn each_rule_kind() {
    let s = scratch(Via::Mount);
    let flags = os(&[
        "-a",
        "--delete",
        "-f",
        "- *.o",
        "-f",
        "+ keep.log",
        "-f",
        "exclude *.log",
        "-f",
        "H hidden",
        "-f",
        "R prot_risk",
        "-f",
        "P prot*",
        "-f",
        "show shown",
        "-f",
        "- shown",
        "-f",
        "protect,p *.keep",
        "-f",
        "-s only_here",
        "-f",
        "include,r other/",
    ]);
    same_as_rsync(&s, &flags, &Run::default());
    // The rules did something: protected extras stay, hidden and risked go.
    let d = s.join("by_nfsync");
    assert!(d.join("prot1").exists() && !d.join("prot_risk").exists());
    assert!(!d.join("hidden").exists() && !d.join("a.o").exists());
    assert!(d.join("keep.log").exists() && !d.join("x.log").exists());
    assert!(d.join("x.keep").exists());
    // Inside a deleted directory `- *.o` protects, the perishable `protect,p` not.
    assert!(d.join("gone/z.o").exists() && !d.join("gone/y.keep").exists());
}

#[test]
fn negated_and_anchored_rules() {
    let s = scratch(Via::Mount);
    let flags = os(&[
        "-a",
        "--delete",
        "-f",
        "- /sub/deep/",
        "-f",
        "+ */",
        "-f",
        "-! *.c",
    ]);
    same_as_rsync(&s, &flags, &Run::default());
    assert!(!s.join("by_nfsync/sub/deep").exists());
    assert!(s.join("by_nfsync/other/d.c").exists());
    assert!(!s.join("by_nfsync/other/only_here").exists());
}

#[test]
fn clear_forgets_the_rules_before_it() {
    for flags in [
        &["-a", "-f", "- *.o", "-f", "!", "-f", "- *.log"][..],
        &[
            "-a",
            "--exclude",
            "*.o",
            "--exclude",
            "!",
            "--exclude=*.log",
        ],
    ] {
        let s = scratch(Via::Mount);
        same_as_rsync(&s, &os(flags), &Run::default());
        assert!(s.join("by_nfsync/a.o").exists(), "{flags:?}");
        assert!(!s.join("by_nfsync/x.log").exists(), "{flags:?}");
    }
}

/// Per-directory `.rsync-filter` files: one at the top, one in `sub` that excludes
/// `only_here` in `sub` and below only and includes `keep.tmp` there, and a
/// non-inherited (`n`) merge file whose rules stop at its own directory. The
/// destination already has the merge files (a re-run), which rsync's receiver reads.
fn with_rsync_filters(s: &Sides) {
    for root in ["src", "start"] {
        let t = Tree::new(s.join(root));
        t.file(".rsync-filter", "- *.tmp\n")
            .file("sub/.rsync-filter", "- only_here\n+ keep.tmp\n")
            .file("sub/.local", "- *.o\n")
            .file("sub/deep/.rsync-filter", "# nothing new\n");
    }
}

#[test]
fn dir_merge_rsync_filter_files() {
    for flags in [
        &["-a", "-F"][..],
        &["-a", "--delete", "-F", "-f", ":n .local"],
        &["-a", "--delete", "-FF"],
        &["-a", "--delete", "-f", "dir-merge,e .rsync-filter"],
    ] {
        let s = scratch(Via::Mount);
        with_rsync_filters(&s);
        same_as_rsync(&s, &os(flags), &Run::default());
        let d = s.join("by_nfsync");
        assert!(!d.join("top.tmp").exists(), "{flags:?}");
        assert!(d.join("only_here").exists(), "{flags:?}");
        assert!(d.join("other/only_here").exists(), "{flags:?}");
        assert!(!d.join("sub/deep/only_here").exists(), "{flags:?}");
        assert!(d.join("sub/keep.tmp").exists() && !d.join("sub/drop.tmp").exists());
    }
    // `n`: sub's .local excludes sub/b.o, not sub/deep/c.o.
    let s = scratch(Via::Mount);
    with_rsync_filters(&s);
    same_as_rsync(&s, &os(&["-a", "-f", ":n .local"]), &Run::default());
    let d = s.join("by_nfsync");
    assert!(d.join("sub/deep/c.o").exists());
    assert_eq!(fs::read(d.join("sub/b.o")).unwrap(), b"old obj\n");
}

#[test]
fn dir_merge_over_nfs() {
    let s = scratch(Via::InProc);
    with_rsync_filters(&s);
    same_as_rsync(&s, &os(&["-a", "--delete", "-F"]), &Run::default());
    assert!(!s.join("by_nfsync/sub/deep/only_here").exists());
}

#[test]
fn cvs_exclude() {
    let s = scratch(Via::Mount);
    let home = s.join("home");
    Tree::new(&home).file(".cvsignore", "*.home\n");
    let src = Tree::new(s.join("src"));
    src.file("sub/.cvsignore", "*.x  b.c\nfoo")
        .file("sub/a.x", "x\n")
        .file("sub/foo", "foo\n")
        .file("sub/deep/a.x", "not inherited\n")
        .file("a.x", "top\n")
        .file("core", "core\n")
        .file("f.bak", "bak\n")
        .file("g.home", "home\n")
        .file("h.env", "env\n")
        .file(".git/HEAD", "ref\n");
    Tree::new(s.join("start")).file("old.o", "kept: excluded\n");
    let run = Run {
        env: vec![("HOME", home.into()), ("CVSIGNORE", "*.env".into())],
        stdin: None,
    };
    same_as_rsync(&s, &os(&["-a", "--delete", "-C"]), &run);
    let d = s.join("by_nfsync");
    assert!(!d.join("sub/a.x").exists() && !d.join("sub/b.c").exists());
    assert!(d.join("sub/deep/a.x").exists() && d.join("a.x").exists());
    for gone in ["core", "f.bak", "g.home", "h.env", ".git", "a.o"] {
        assert!(!d.join(gone).exists(), "{gone}");
    }
    // Perishable: the built-in names do not keep a deleted directory.
    assert!(d.join("old.o").exists() && !d.join("gone").exists());
}

#[test]
fn include_from_file_and_stdin_in_command_line_order() {
    let s = scratch(Via::Mount);
    let list = s.join("list");
    fs::write(&list, "# comment\n*.c\n- sub/deep/\n*/\n").unwrap();
    let flags = [
        OsString::from("-a"),
        "--exclude=other/".into(),
        "--include-from".into(),
        list.clone().into(),
        "--exclude".into(),
        "*".into(),
    ];
    same_as_rsync(&s, &flags, &Run::default());
    let d = s.join("by_nfsync");
    assert!(d.join("sub/b.c").exists());
    assert_eq!(fs::read(d.join("sub/b.o")).unwrap(), b"old obj\n");
    assert!(!d.join("other").exists() && !d.join("sub/deep").exists());

    let s = scratch(Via::Mount);
    let flags = os(&["-a", "--include-from=-", "--exclude=*"]);
    let run = Run {
        stdin: Some(b"*.c\n*/\n"),
        ..Run::default()
    };
    same_as_rsync(&s, &flags, &run);
    assert!(s.join("by_nfsync/other/d.c").exists());
    assert!(!s.join("by_nfsync/other/only_here").exists());
}

#[test]
fn delete_excluded_keeps_what_protect_rules_protect() {
    for via in [Via::Mount, Via::InProc] {
        let s = scratch(via);
        let flags = os(&[
            "-a",
            "--delete-excluded",
            "-f",
            "P *.keep",
            "--exclude",
            "*.o",
            "-f",
            "-s *.log",
        ]);
        same_as_rsync(&s, &flags, &Run::default());
        let d = s.join("by_nfsync");
        assert!(!d.join("extra.o").exists() && !d.join("sub/b.o").exists());
        assert!(!d.join("sub/extra.log").exists() && !d.join("extra").exists());
        assert!(d.join("x.keep").exists() && d.join("gone/y.keep").exists());
        assert!(!d.join("gone/x").exists() && !d.join("gone/inner").exists());
    }
}

/// `dir-merge /PATH/NAME` with PATH above the transfer: rsync reads NAME in PATH and in
/// each directory down to the transfer, anchored patterns at the directory they are in.
#[test]
fn dir_merge_with_a_path_reads_the_parents_files() {
    let s = scratch(Via::Mount);
    fs::write(s.join(".f"), "- /src/only_here\n- *.c\n").unwrap();
    fs::write(s.join("src/.f"), "+ a.c\n").unwrap();
    let rule = format!(": {}", s.join(".f").display());
    let flags = [OsString::from("-a"), "-f".into(), rule.into()];
    same_as_rsync(&s, &flags, &Run::default());
    let d = s.join("by_nfsync");
    assert!(!d.join("only_here").exists() && d.join("sub/only_here").exists());
    assert!(!d.join("sub/b.c").exists() && d.join("a.c").exists());
}

/// `--delete-excluded` with `-F`: the rules read from each `.rsync-filter` lose their
/// receiver side too, so what they exclude is deleted; over nfs:// as well.
#[test]
fn delete_excluded_with_rsync_filter_files() {
    for via in [Via::Mount, Via::InProc] {
        let s = scratch(via);
        with_rsync_filters(&s);
        Tree::new(s.join("start")).file("sub/deep/only_here", "excluded here\n");
        same_as_rsync(&s, &os(&["-a", "--delete-excluded", "-F"]), &Run::default());
        let d = s.join("by_nfsync");
        assert!(!d.join("sub/deep/only_here").exists() && !d.join("sub/old.tmp").exists());
        assert!(d.join("sub/keep.tmp").exists() && d.join("only_here").exists());
    }
}

/// A `dir-merge` rule inside a per-directory merge file, as rsync reads it: sub's
/// `.rsync-filter` names `.more`, read in sub and below it (not in `other`); one
/// named with `../` is read from sub's parent first. `-vv` names the rule that hid
/// a file by where it was read, never by its text (another user may have chosen
/// the file). Mount path and nfs://.
#[test]
fn dir_merge_inside_a_merge_file() {
    for via in [Via::Mount, Via::InProc] {
        let s = scratch(via);
        for root in ["src", "start"] {
            Tree::new(s.join(root))
                .file(".rsync-filter", "- *.tmp\n")
                .file("sub/.rsync-filter", ": .more\n: ../.up\n")
                .file("sub/deep/.more", "- c.c\n")
                .file("sub/.more", "- b.c\n")
                .file("other/.more", "- d.c\n")
                .file(".up", "- b.o\n");
        }
        same_as_rsync(&s, &os(&["-a", "--delete", "-F"]), &Run::default());
        let d = s.join("by_nfsync");
        assert!(!d.join("sub/b.c").exists() && !d.join("sub/deep/c.c").exists());
        assert!(d.join("other/d.c").exists() && d.join("sub/deep/c.o").exists());
        // Excluded, so not sent, and protected from --delete: the old copy stays.
        assert_eq!(fs::read(d.join("sub/b.o")).unwrap(), b"old obj\n");
    }
    let s = scratch(Via::Mount);
    Tree::new(s.join("src"))
        .file(".rsync-filter", "- sec[r]et\n")
        .file("secret", "x\n");
    let out = crate::support::nfsync()
        .args(["-r", "-F", "-vv"])
        .arg(slash(&s.join("src")))
        .arg(s.join("by_nfsync"))
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    let place = format!("{}/.rsync-filter line 1", s.join("src").display());
    assert!(
        said.contains(&format!(
            "[sender] hiding file secret because of pattern <rule from {place}>"
        )),
        "{said}"
    );
    assert!(!said.contains("sec[r]et"), "{said}");
}
