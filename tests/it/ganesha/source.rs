//! The shared scenarios with the source on nfs-ganesha: NFSv3 and NFSv4.1 to a local
//! directory, to the same server (ganesha → ganesha), and to the other version's server
//! (two servers, one run speaking both versions).
//!
//! [`SourceOn`] wraps a destination target: each time a scenario names a local source
//! tree, the tree is copied (`rsync -aH`, locally) into a new directory of the export
//! unless the last copy still equals it (`rsync -aHcn --delete -i` prints nothing), so
//! a scenario that changes its source between runs reads the change, and nfsync is
//! given that copy's `nfs://` URL as SRC. A new directory for a change, not the last
//! copy brought up to date: ganesha caches directory entries, and would go on listing
//! a file replaced behind its back with the old file's attributes. The result is
//! judged against the local tree, as for every target, so what the server serves must
//! be that tree to the nanosecond. The few scenarios that build a source operand the
//! copy cannot stand for (`.` as the working directory, a symlink to the source) still
//! read the local path.
//!
//! And `--list-only` of an `nfs://` tree prints what rsync prints for the local tree the
//! export holds a copy of, byte for byte.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::support::ganesha::{self, Export, Proto};
use crate::support::{LocalTarget, Scratch, Target, Tree, describe, nfsync};

/// A destination target whose sources are read from an export of a ganesha server.
pub struct SourceOn<T> {
    dest: T,
    export: Export,
    /// This target's directory in the export, holding one copy per source tree.
    prefix: String,
    /// The local source trees copied so far, in order: the n-th copy is in `src{n}`.
    copies: Mutex<Vec<PathBuf>>,
}

static NEXT: AtomicUsize = AtomicUsize::new(0);

impl<T: Target> SourceOn<T> {
    /// Sources on the shared server of `proto`, copies to `dest`; `None` when either
    /// cannot run here.
    pub fn new(proto: Proto, dest: Option<T>) -> Option<SourceOn<T>> {
        let export = ganesha::shared(proto)?;
        let dest = dest?;
        let prefix = format!("s{}", NEXT.fetch_add(1, Ordering::SeqCst));
        std::fs::create_dir_all(export.path.join(&prefix)).unwrap();
        Some(SourceOn {
            dest,
            export,
            prefix,
            copies: Mutex::new(Vec::new()),
        })
    }

    /// The path from the export of a copy of `src` (itself, under its own name) as it
    /// is now: the last one made, when `src` has not changed since, else a new one.
    /// (Copies are left in place: a run started earlier may still be reading one.)
    fn refresh(&self, src: &Path) -> String {
        let name = src
            .file_name()
            .and_then(|n| n.to_str())
            .expect("source trees have UTF-8 names");
        let mut copies = self.copies.lock().unwrap();
        if let Some(n) = copies.iter().rposition(|p| p == src) {
            let holder = format!("{}/src{n}", self.prefix);
            // -c and times to the nanosecond: a scenario may change a file and keep its
            // size and its mtime's second.
            let differs = rsync(
                &["-aHcn", "--delete", "-i", "--modify-window=-1"],
                src,
                &self.export.path.join(&holder),
            );
            if differs.is_empty() {
                return format!("{holder}/{name}");
            }
        }
        copies.push(src.to_owned());
        let holder = format!("{}/src{}", self.prefix, copies.len() - 1);
        let into = self.export.path.join(&holder);
        std::fs::create_dir_all(&into).unwrap();
        rsync(&["-aH", "--modify-window=-1"], src, &into);
        format!("{holder}/{name}")
    }
}

/// `rsync ARGS SRC INTO/`, which must succeed; its output. (`--modify-window=-1` makes
/// rsync set every time to the nanosecond: by default it leaves a time alone that is
/// already right to the second, such as a directory's made within the same second.)
fn rsync(args: &[&str], src: &Path, into: &Path) -> Vec<u8> {
    let out = Command::new("rsync")
        .args(args)
        .arg(src)
        .arg(format!("{}/", into.display()))
        .output()
        .expect("run rsync");
    assert!(out.status.success(), "rsync {args:?}: {}", describe(&out));
    out.stdout
}

impl<T: Target> Target for SourceOn<T> {
    fn src_arg(&self, src: &Path, contents: bool) -> OsString {
        let mut rel = self.refresh(src);
        if contents {
            rel.push('/');
        }
        self.export.url(&rel, "").into()
    }

    fn dest_arg(&self, sub: &str) -> String {
        self.dest.dest_arg(sub)
    }

    fn dest_path(&self, sub: &str) -> PathBuf {
        self.dest.dest_path(sub)
    }

    fn command(&self) -> Command {
        self.dest.command()
    }

    fn diff(&self, src: &Path, sub: &str) -> String {
        self.dest.diff(src, sub)
    }

    fn keeps_symlink_times(&self) -> bool {
        self.dest.keeps_symlink_times()
    }

    /// NFSv3 carries times as unsigned 32-bit seconds on the way out of the server too.
    fn clamps_times(&self) -> bool {
        self.export.proto == Proto::V3 || self.dest.clamps_times()
    }
}

/// A re-run reads the very copy the run before read, and a change, even one that keeps
/// a file's size and its mtime's second, is read from a new copy.
#[test]
fn a_source_is_copied_again_only_when_it_changed() {
    let Some(t) = SourceOn::new(Proto::V3, Some(LocalTarget::new())) else {
        return;
    };
    let s = Scratch::new();
    let tree = Tree::new(s.join("src"));
    tree.file("f", "one\n")
        .dir("d/e")
        .symlink("l", "f")
        .hardlink("h", "f");
    let first = t.src_arg(tree.root(), true);
    assert_eq!(
        t.src_arg(tree.root(), true),
        first,
        "an unchanged tree copied again"
    );
    tree.file("f", "two\n");
    let second = t.src_arg(tree.root(), true);
    assert_ne!(second, first, "a changed file not copied again");
    let copy = t.export.path.join(format!("{}/src1/src", t.prefix));
    assert_eq!(std::fs::read(copy.join("f")).unwrap(), b"two\n");
    assert_eq!(t.src_arg(tree.root(), true), second);
}

/// `nfs://…/link/`, a symlink to a directory on the server named with a trailing
/// slash, asks for the directory's contents (a path's `link/` is followed by the
/// kernel): refused as any symlink on the way over nfs://, never copied as the link
/// itself; `nfs://…/link` copies the link.
fn a_symlink_named_with_a_slash_is_refused(proto: Proto) {
    let Some(export) = ganesha::shared(proto) else {
        return;
    };
    let s = Scratch::new();
    let tree = Tree::new(s.join("side"));
    tree.file("real/a", "a\n").symlink("link", "real");
    let copy = copy_into(&export, tree.root());
    let dst = s.join("dst");
    let out = nfsync()
        .arg("-a")
        .arg(export.url(&format!("{copy}/link/"), ""))
        .arg(&dst)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", describe(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("/link: symlink on the NFS server is not followed"),
        "{err}"
    );
    assert!(!dst.exists(), "DEST made for a refused SRC");

    let out = nfsync()
        .arg("-a")
        .arg(export.url(&format!("{copy}/link"), ""))
        .arg(format!("{}/", dst.display()))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", describe(&out));
    assert_eq!(
        std::fs::read_link(dst.join("link")).unwrap(),
        Path::new("real")
    );
}

#[test]
fn a_symlink_named_with_a_slash_is_refused_over_v3() {
    a_symlink_named_with_a_slash_is_refused(Proto::V3);
}

#[test]
fn a_symlink_named_with_a_slash_is_refused_over_v41() {
    a_symlink_named_with_a_slash_is_refused(Proto::V41);
}

/// `-X`/`-A` from an `nfs://` source, which gives neither: one warning line, the files
/// copied as without them, exit 0, and DEST's own attributes left alone (with a local
/// source lacking them, rsync would strip them; not knowing the source's, nfsync must
/// not).
fn xattrs_and_acls_are_warned_about_not_refused(proto: Proto) {
    use crate::rsync_links::{acl_granting, setxattr, xattrs_of};
    let Some(export) = ganesha::shared(proto) else {
        return;
    };
    let s = Scratch::new();
    let tree = Tree::new(s.join("src"));
    tree.file("same", "kept\n")
        .file("new", "copied\n")
        .file("d/g", "deep\n");
    let copy = copy_into(&export, tree.root());
    let served = export.path.join(&copy);
    for (i, flags) in ["-aX", "-aA", "-aXA"].into_iter().enumerate() {
        let dst = s.join(format!("dst{i}"));
        // DEST holds `same` and `d` up to date, with attributes the source lacks.
        let pre = Command::new("rsync")
            .args(["-a", "--exclude=new", "--exclude=g"])
            .arg(format!("{}/", served.display()))
            .arg(&dst)
            .output()
            .unwrap();
        assert!(pre.status.success(), "{}", describe(&pre));
        // (An ACL whose mask is the file's group bits, r--: its mode stays as served.)
        setxattr(&dst.join("same"), "user.k", b"v").unwrap();
        setxattr(&dst.join("d"), "user.k", b"v").unwrap();
        setxattr(
            &dst.join("same"),
            "system.posix_acl_access",
            &acl_granting(65534),
        )
        .unwrap();
        let before = [xattrs_of(&dst.join("same")), xattrs_of(&dst.join("d"))];
        assert_eq!(before[0].len(), 2, "{flags}: {:?}", before[0]);

        let out = nfsync()
            .arg(flags)
            .arg(export.url(&format!("{copy}/"), ""))
            .arg(&dst)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{flags}: {}", describe(&out));
        let err = String::from_utf8_lossy(&out.stderr);
        let lines: Vec<&str> = err.lines().collect();
        assert_eq!(lines.len(), 1, "{flags}: one warning line: {err}");
        assert!(
            lines[0].starts_with("nfsync: warning: -")
                && lines[0].contains("not read from an nfs:// source"),
            "{flags}: {err}"
        );
        let d = crate::support::rsync_diff(&served, &dst);
        assert!(d.is_empty(), "{flags}: DEST differs:\n{d}");
        let after = [xattrs_of(&dst.join("same")), xattrs_of(&dst.join("d"))];
        assert_eq!(after, before, "{flags}: DEST's own attributes changed");
    }
}

#[test]
fn xattrs_and_acls_over_v3_are_warned_about_not_refused() {
    xattrs_and_acls_are_warned_about_not_refused(Proto::V3);
}

#[test]
fn xattrs_and_acls_over_v41_are_warned_about_not_refused() {
    xattrs_and_acls_are_warned_about_not_refused(Proto::V41);
}

/// `-R` from an `nfs://` source: `nfs://…/src/./a/b` recreates `a/b` under DEST as
/// `rsync -aR LOCAL/src/./a/b` does from the tree the export holds (the directories on
/// the way with their attributes, `./a` giving DEST the attributes of that `.`, a
/// trailing slash, a file); a URL with no `/./` is refused with the reason.
fn relative_paths_are_rsyncs(proto: Proto) {
    let Some(export) = ganesha::shared(proto) else {
        return;
    };
    let s = Scratch::new();
    let tree = Tree::new(s.join("src"));
    tree.file("a/b/f", "f\n")
        .file("a/b/c/g", "g\n")
        .symlink("a/b/l", "f")
        .file("a/other", "not sent\n")
        .file("a/top", "t\n")
        .file("elsewhere/h", "not sent\n");
    std::fs::set_permissions(
        tree.root().join("a"),
        std::os::unix::fs::PermissionsExt::from_mode(0o750),
    )
    .unwrap();
    let copy = copy_into(&export, tree.root());
    let served = export.path.join(&copy);
    for (i, rel) in ["a/b", "a/b/", "a/b/c/g", "./a/b", "a/b/c"]
        .into_iter()
        .enumerate()
    {
        let ours = s.join(format!("ours{i}"));
        let theirs = s.join(format!("theirs{i}"));
        let r = Command::new("rsync")
            .arg("-aR")
            .arg(format!("{}/./{rel}", served.display()))
            .arg(&theirs)
            .output()
            .unwrap();
        assert!(r.status.success(), "rsync -aR {rel}: {}", describe(&r));
        let out = nfsync()
            .arg("-aR")
            .arg(export.url(&format!("{copy}/./{rel}"), ""))
            .arg(&ours)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "-aR {rel}: {}", describe(&out));
        if !rel.starts_with("./") {
            // DEST itself is sent nothing (no `.`): each keeps the time it was made at.
            let t = filetime::FileTime::from_last_modification_time(
                &std::fs::metadata(&theirs).unwrap(),
            );
            filetime::set_file_mtime(&ours, t).unwrap();
        }
        let d = crate::support::rsync_diff(&theirs, &ours);
        assert!(d.is_empty(), "-aR {rel}: DEST differs from rsync's:\n{d}");
    }

    // Without a /./, or with a percent escape after it (recreated as written, so the
    // name would be looked up and made encoded): refused with the reason.
    for refused in [format!("{copy}/a/b"), format!("{copy}/./a%2Fb")] {
        let dst = s.join("refused");
        let out = nfsync()
            .arg("-aR")
            .arg(export.url(&refused, ""))
            .arg(&dst)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{refused}: {}", describe(&out));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("needs a /./"), "{err}");
        assert!(!dst.exists(), "DEST made for a refused run");
    }
}

#[test]
fn relative_paths_over_v3_are_rsyncs() {
    relative_paths_are_rsyncs(Proto::V3);
}

#[test]
fn relative_paths_over_v41_are_rsyncs() {
    relative_paths_are_rsyncs(Proto::V41);
}

/// One `#[test]` per shared scenario of the groups an NFS source and the destination
/// made by `$dest` can hold, with the source on the shared server of `$proto`.
macro_rules! source_tests {
    ($proto:expr, $dest:expr) => {
        use super::SourceOn;
        use crate::scenarios::scenario_tests;
        scenario_tests!(files, SourceOn::new($proto, $dest));
        scenario_tests!(symlinks, SourceOn::new($proto, $dest));
        scenario_tests!(read_only_dirs, SourceOn::new($proto, $dest));
        scenario_tests!(hard_links, SourceOn::new($proto, $dest));
        scenario_tests!(specials, SourceOn::new($proto, $dest));
        scenario_tests!(owners, SourceOn::new($proto, $dest));
    };
    ($proto:expr, $dest:expr, wide_times) => {
        source_tests!($proto, $dest);
        crate::scenarios::scenario_tests!(wide_times, super::SourceOn::new($proto, $dest));
    };
}

mod v3_to_local {
    use crate::support::LocalTarget;
    use crate::support::ganesha::Proto;
    source_tests!(Proto::V3, Some(LocalTarget::new()));
}

mod v41_to_local {
    use crate::support::LocalTarget;
    use crate::support::ganesha::Proto;
    source_tests!(Proto::V41, Some(LocalTarget::new()), wide_times);
}

mod v3_to_v3 {
    use crate::ganesha::GaneshaTarget;
    use crate::support::ganesha::Proto;
    source_tests!(Proto::V3, GaneshaTarget::new(Proto::V3));
}

mod v41_to_v41 {
    use crate::ganesha::GaneshaTarget;
    use crate::support::ganesha::Proto;
    source_tests!(Proto::V41, GaneshaTarget::new(Proto::V41), wide_times);
}

/// Two servers, one per version: the source read over NFSv3, the copy written over
/// NFSv4.1, in one run.
mod v3_to_v41 {
    use crate::ganesha::GaneshaTarget;
    use crate::support::ganesha::Proto;
    source_tests!(Proto::V3, GaneshaTarget::new(Proto::V41));
}

mod v41_to_v3 {
    use crate::ganesha::GaneshaTarget;
    use crate::support::ganesha::Proto;
    source_tests!(Proto::V41, GaneshaTarget::new(Proto::V3), wide_times);
}

/// A copy of the local tree `tree` in a new directory of `export`; its path from the
/// export (the copy keeps the tree's name).
fn copy_into(export: &Export, tree: &Path) -> String {
    let holder = format!("list{}", NEXT.fetch_add(1, Ordering::SeqCst));
    let into = export.path.join(&holder);
    std::fs::create_dir(&into).unwrap();
    rsync(&["-aHS", "--modify-window=-1"], tree, &into);
    let name = tree.file_name().unwrap().to_str().unwrap();
    format!("{holder}/{name}")
}

/// Asserts that `nfsync FLAGS --list-only URL[/]` prints what `rsync FLAGS --list-only
/// LOCAL[/]` prints, byte for byte.
fn assert_listing_is_rsyncs(flags: &[&str], local: &Path, url: &str, contents: bool) {
    let slash = if contents { "/" } else { "" };
    let r = Command::new("rsync")
        .args(flags)
        .arg("--list-only")
        .arg(format!("{}{slash}", local.display()))
        .output()
        .unwrap();
    assert!(r.status.success(), "rsync {flags:?}: {}", describe(&r));
    assert!(!r.stdout.is_empty(), "{flags:?}: rsync listed nothing");
    let n = nfsync()
        .args(flags)
        .arg("--list-only")
        .arg(url)
        .output()
        .unwrap();
    assert!(
        n.status.success(),
        "nfsync {flags:?} {url}: {}",
        describe(&n)
    );
    assert_eq!(
        String::from_utf8_lossy(&n.stdout),
        String::from_utf8_lossy(&r.stdout),
        "--list-only {flags:?} {url}"
    );
}

/// `nfsync --list-only nfs://…/tricky[/]` prints what `rsync --list-only LOCAL/tricky[/]`
/// prints, LOCAL/tricky being the tree the export holds a copy of.
fn list_only_is_rsyncs_listing(proto: Proto) {
    let Some(export) = ganesha::shared(proto) else {
        return;
    };
    let s = Scratch::new();
    let tree = crate::rsync_paths::tricky_tree(&s.join("tricky"));
    let copy = copy_into(&export, tree.root());
    for flags in [
        &["-r"][..],
        &["-a"],
        &[],
        &["-a", "--exclude=*.o"],
        &["-rh"],
    ] {
        for contents in [true, false] {
            let slash = if contents { "/" } else { "" };
            let url = export.url(&format!("{copy}{slash}"), "");
            assert_listing_is_rsyncs(flags, tree.root(), &url, contents);
        }
    }
}

/// The listing of a tree with more directories than are listed ahead at once, made by
/// many threads each reading the server, is rsync's, in its order.
fn list_only_of_many_directories_is_rsyncs_listing(proto: Proto) {
    let Some(export) = ganesha::shared(proto) else {
        return;
    };
    let s = Scratch::new();
    let tree = crate::rsync_paths::many_directories(&s.join("many"));
    let copy = copy_into(&export, tree.root());
    let url = export.url(&format!("{copy}/"), "");
    assert_listing_is_rsyncs(&["-r"], tree.root(), &url, true);
}

#[test]
fn list_only_of_many_directories_over_v3_is_rsyncs_listing() {
    list_only_of_many_directories_is_rsyncs_listing(Proto::V3);
}

#[test]
fn list_only_of_many_directories_over_v41_is_rsyncs_listing() {
    list_only_of_many_directories_is_rsyncs_listing(Proto::V41);
}

#[test]
fn list_only_over_v3_is_rsyncs_listing() {
    list_only_is_rsyncs_listing(Proto::V3);
}

#[test]
fn list_only_over_v41_is_rsyncs_listing() {
    list_only_is_rsyncs_listing(Proto::V41);
}

/// A tree with per-directory filter files at three depths, a `.cvsignore` in two
/// directories, and names each of them (and rsync's CVS list) decides.
fn filtered_tree(root: &Path) -> Tree {
    let tree = Tree::new(root);
    tree.file(".rsync-filter", "- *.log\n")
        .file("top.log", "x\n")
        .file("top.txt", "x\n")
        .file("secret-top", "x\n")
        .file("keep.tmp", "x\n")
        .file("x.o", "x\n")
        .file(".cvsignore", "ignored-top *.cvs\n")
        .file("ignored-top", "x\n")
        .file("a.cvs", "x\n")
        .file(".rules", ". rules-inc\n- *.r\n")
        .file("rules-inc", "- inc-*\n")
        .file("inc-x", "x\n")
        .file("y.r", "x\n")
        .file("sub/.rsync-filter", "- secret*\n")
        .file("sub/secret-a", "x\n")
        .file("sub/open.log", "x\n")
        .file("sub/open.txt", "x\n")
        .file("sub/ignored-top", "x\n")
        .file("sub/b.cvs", "x\n")
        .file("sub/.cvsignore", "ignored-sub\n")
        .file("sub/ignored-sub", "x\n")
        .file("sub/.rules", "!\n- *.s\n")
        .file("sub/y.r", "x\n")
        .file("sub/z.s", "x\n")
        .file("sub/deeper/.rsync-filter", "+ keep.tmp\n- *.tmp\n")
        .file("sub/deeper/keep.tmp", "x\n")
        .file("sub/deeper/drop.tmp", "x\n")
        .file("sub/deeper/secret-b", "x\n")
        .file("sub/deeper/deep.log", "x\n")
        .file("sub/deeper/ignored-sub", "x\n")
        .file("sub/deeper/c.cvs", "x\n")
        .file("sub/deeper/z.s", "x\n")
        .file("sub/deeper/y.r", "x\n")
        .file("other/secret-c", "x\n")
        .file("other/d.tmp", "x\n");
    tree
}

/// Per-directory filter files (`-F`, `-FF`, `-C`'s `.cvsignore`, a `dir-merge` rule whose
/// files merge another) are read from an `nfs://` source through the server: the copy
/// is the one rsync makes of the tree the export holds.
fn per_directory_filters_are_read_on_the_server(proto: Proto) {
    let Some(export) = ganesha::shared(proto) else {
        return;
    };
    let s = Scratch::new();
    let tree = filtered_tree(&s.join("filtered"));
    let copy = copy_into(&export, tree.root());
    let local = export.path.join(&copy);
    let url = export.url(&format!("{copy}/"), "");
    let cases: [(&[&str], &str, &str); 4] = [
        (&["-aF"], "sub/secret-a", "sub/open.txt"),
        (&["-aFF"], "sub/.rsync-filter", "sub/deeper/keep.tmp"),
        (&["-aC"], "sub/ignored-sub", "sub/ignored-top"),
        (&["-a", "--filter=: .rules"], "sub/z.s", "sub/y.r"),
    ];
    for (i, (flags, left_out, kept)) in cases.into_iter().enumerate() {
        let by_rsync = s.join(format!("rsync{i}"));
        let by_nfsync = s.join(format!("nfsync{i}"));
        let r = Command::new("rsync")
            .args(flags)
            .arg(format!("{}/", local.display()))
            .arg(&by_rsync)
            .output()
            .unwrap();
        assert!(r.status.success(), "rsync {flags:?}: {}", describe(&r));
        // The oracle does filter: what the case is about is left out, not everything.
        assert!(!by_rsync.join(left_out).exists(), "{flags:?}: {left_out}");
        assert!(by_rsync.join(kept).exists(), "{flags:?}: {kept}");
        let n = nfsync()
            .args(flags)
            .arg(&url)
            .arg(&by_nfsync)
            .output()
            .unwrap();
        assert!(
            n.status.success(),
            "nfsync {flags:?} {url}: {}",
            describe(&n)
        );
        let diff = crate::support::rsync_diff(&by_rsync, &by_nfsync);
        assert!(
            diff.is_empty(),
            "nfsync {flags:?} {url} differs from rsync:\n{diff}"
        );
    }
}

#[test]
fn per_directory_filters_over_v3_are_rsyncs() {
    per_directory_filters_are_read_on_the_server(Proto::V3);
}

#[test]
fn per_directory_filters_over_v41_are_rsyncs() {
    per_directory_filters_are_read_on_the_server(Proto::V41);
}

/// A per-directory filter file that is a symlink on the server is not followed (its text
/// is a path in the server's namespace) and is reported, never read as absent: the run
/// ends 23 naming it, the rest copied.
fn a_filter_file_that_is_a_symlink_on_the_server_is_reported(proto: Proto) {
    let Some(export) = ganesha::shared(proto) else {
        return;
    };
    let s = Scratch::new();
    let tree = Tree::new(s.join("linked"));
    tree.file("rules", "- *.log\n")
        .symlink("sub/.rsync-filter", "../rules")
        .file("sub/a.log", "x\n")
        .file("sub/a.txt", "x\n");
    let copy = copy_into(&export, tree.root());
    let dst = s.join("dst");
    let out = nfsync()
        .arg("-aF")
        .arg(export.url(&format!("{copy}/"), ""))
        .arg(&dst)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(23), "{}", describe(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("sub/.rsync-filter") && err.contains("symlink on the NFS server"),
        "{err}"
    );
    assert!(dst.join("sub/a.txt").exists());
}

#[test]
fn a_filter_file_that_is_a_symlink_on_the_server_is_reported_over_v3() {
    a_filter_file_that_is_a_symlink_on_the_server_is_reported(Proto::V3);
}

#[test]
fn a_filter_file_that_is_a_symlink_on_the_server_is_reported_over_v41() {
    a_filter_file_that_is_a_symlink_on_the_server_is_reported(Proto::V41);
}
