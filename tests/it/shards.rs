//! One tree, many processes. Four `--shard K/4` runs started at once into one
//! DEST, on the mount path and over NFSv3 to nfs-ganesha, then the finalize run (the
//! same command without `--shard`): every share's totals, the union, what the finalize
//! run still had to do (nothing but directory attributes),
//! `--delete` between shards, `--shard slurm` / `k8s/N` reading their schedulers'
//! variables, and shards reading an `nfs://` source (NFSv3 and NFSv4.1) with no mount.

use std::ffi::{OsStr, OsString};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;

use crate::support::ganesha::{self, Ganesha, Options, Proto};
use crate::support::{
    Scratch, Tree, XorShift, bin, count_files, describe, json_stats, rsync_diff, rsync_diff_with,
    slash, stat,
};

const SHARDS: u64 = 4;

/// A node_modules-like tree: many tiny packages (some scoped, some with a nested
/// node_modules and a `.bin` link) and one huge package with a bundle of a quarter of
/// the tree's bytes and a few large chunks among hundreds of files; a read-only directory; old, nanosecond mtimes everywhere.
pub(crate) fn node_modules(root: &Path) -> Tree {
    let t = Tree::new(root);
    let mut rng = XorShift::new(17);
    let mut seed = 0;
    let mut file = |t: &Tree, rel: &str, size: u64| {
        seed += 1;
        t.random_file(rel, size, seed);
    };
    for p in 0..160 {
        let pkg = if p % 10 == 0 {
            format!("node_modules/@org{}/pkg{p}", p % 3)
        } else {
            format!("node_modules/pkg{p}")
        };
        file(&t, &format!("{pkg}/package.json"), 200 + rng.next() % 600);
        file(&t, &format!("{pkg}/README.md"), 500 + rng.next() % 3000);
        file(&t, &format!("{pkg}/lib/index.js"), 100 + rng.next() % 8000);
        if p % 4 == 0 {
            file(&t, &format!("{pkg}/bin/cli.js"), 100 + rng.next() % 500);
            t.symlink(
                format!("node_modules/.bin/cli{p}"),
                format!("../pkg{p}/bin/cli.js"),
            );
        }
        if p % 9 == 0 {
            file(
                &t,
                &format!("{pkg}/node_modules/dep/index.js"),
                50 + rng.next() % 2000,
            );
        }
    }
    for i in 0..300 {
        let sub = ["lib", "esm", "cjs", "types"][i % 4];
        file(
            &t,
            &format!("node_modules/huge/{sub}/m{i}.js"),
            200 + rng.next() % 30_000,
        );
    }
    // One bundle a quarter of the tree's bytes: only a deal over the whole tree
    // balances it (with fewer small files elsewhere).
    file(&t, "node_modules/huge/dist/bundle.js", 3_000_000);
    for i in 0..3 {
        file(
            &t,
            &format!("node_modules/huge/dist/chunk{i}.js"),
            900_000 + rng.next() % 300_000,
        );
    }
    t.age();
    t.chmod("node_modules/pkg3/lib", 0o555);
    t
}

/// Source regular files and symlinks: (files, links, bytes of files).
pub(crate) fn totals(root: &Path) -> (u64, u64, u64) {
    let mut acc = (0, 0, 0);
    for e in walkdir(root) {
        let m = std::fs::symlink_metadata(&e).unwrap();
        if m.is_file() {
            acc.0 += 1;
            acc.2 += m.len();
        } else if m.file_type().is_symlink() {
            acc.1 += 1;
        }
    }
    acc
}

pub(crate) fn walkdir(root: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(root).unwrap().flatten() {
        let p = e.path();
        if e.file_type().unwrap().is_dir() {
            out.extend(walkdir(&p));
        }
        out.push(p);
    }
    out
}

/// Starts `nfsync --json --shard K/4 ARGS SRC/ DEST` for every K at once and waits for
/// all: their outputs, in K order.
fn run_shards(args: &[&str], src: &Path, dest: &str) -> Vec<Output> {
    run_n_shards(SHARDS, args, &slash(src), dest)
}

/// Starts `nfsync --json --shard K/N ARGS SRC DEST` for every K of `n` at once, SRC as
/// given (a path or a URL), and waits for all: their outputs, in K order.
fn run_n_shards(n: u64, args: &[&str], src: &OsStr, dest: &str) -> Vec<Output> {
    let children: Vec<_> = (0..n)
        .map(|k| {
            Command::new(bin())
                .args(["--json", "--shard", &format!("{k}/{n}")])
                .args(args)
                .arg(src)
                .arg(dest)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("start nfsync")
        })
        .collect();
    children
        .into_iter()
        .map(|c| c.wait_with_output().expect("wait for nfsync"))
        .collect()
}

/// Each share's JSON, checked: exit 0, its `shard` field (K of as many as `outs`).
fn shard_stats(outs: &[Output]) -> Vec<Value> {
    let n = outs.len();
    outs.iter()
        .enumerate()
        .map(|(k, out)| {
            assert!(out.status.success(), "shard {k}: {}", describe(out));
            let v = json_stats(out);
            assert_eq!(v["shard"], format!("{k}/{n}"), "{v}");
            v
        })
        .collect()
}

/// Every value within 20 % of their mean.
fn assert_balanced(what: &str, values: &[u64]) {
    let mean = values.iter().sum::<u64>() as f64 / values.len() as f64;
    for (k, &v) in values.iter().enumerate() {
        assert!(
            (v as f64 - mean).abs() <= 0.2 * mean,
            "{what}: shard {k} has {v}, mean {mean:.0}: {values:?}"
        );
    }
}

/// The finalize run: the same command without `--shard`; it must copy nothing.
fn finalize(args: &[&str], src: &Path, dest: &str) -> Value {
    finalize_from(args, &slash(src), dest)
}

/// [`finalize`] with SRC as given (a path or a URL).
fn finalize_from(args: &[&str], src: &OsStr, dest: &str) -> Value {
    let out = Command::new(bin())
        .arg("--json")
        .args(args)
        .arg(src)
        .arg(dest)
        .output()
        .expect("run nfsync");
    assert!(out.status.success(), "finalize: {}", describe(&out));
    let v = json_stats(&out);
    for key in [
        "files_copied",
        "links_created",
        "bytes_copied",
        "files_deleted",
    ] {
        assert_eq!(stat(&v, key), 0, "finalize run {key}: {v}");
    }
    assert!(v.get("shard").is_none(), "{v}");
    v
}

/// Four shards at once into a fresh DEST, then the finalize run.
/// `rsync -anciH --delete` of `src` and `dst`; `nfs`: nfs-ganesha's VFS backend
/// cannot store a symlink's mtime (see tests/it/ganesha.rs), so those are not compared.
pub(crate) fn compare(src: &Path, dst: &Path, nfs: bool) -> String {
    rsync_diff_with(src, dst, if nfs { &["--omit-link-times"] } else { &[] })
}

fn four_shards_then_finalize(src: &Path, dest_arg: &str, dest_path: &Path, nfs: bool) {
    let (files, links, bytes) = totals(src);
    let stats = shard_stats(&run_shards(&[], src, dest_arg));
    let of = |key: &str| -> Vec<u64> { stats.iter().map(|v| stat(v, key)).collect() };
    // Each entry copied by exactly one share, and the shares alike in files and bytes.
    assert_eq!(of("files_copied").iter().sum::<u64>(), files, "{stats:?}");
    assert_eq!(of("links_created").iter().sum::<u64>(), links, "{stats:?}");
    assert_eq!(of("bytes_copied").iter().sum::<u64>(), bytes, "{stats:?}");
    assert_balanced("files_copied", &of("files_copied"));
    assert_balanced("bytes_copied", &of("bytes_copied"));
    assert_eq!(count_files(dest_path), count_files(src));
    // No share set a directory's attributes: the read-only one is still writable.
    let ro = dest_path.join("node_modules/pkg3/lib");
    let mode = std::fs::metadata(&ro).unwrap().permissions().mode() & 0o7777;
    assert_eq!(mode, 0o755, "{} before the finalize run", ro.display());
    assert!(!compare(src, dest_path, nfs).is_empty());

    finalize(&[], src, dest_arg);
    let diff = compare(src, dest_path, nfs);
    assert!(diff.is_empty(), "after the finalize run:\n{diff}");
}

/// A case: (source, DEST as given, DEST's path here, whether DEST is nfs://).
pub(crate) type Case = fn(&Path, &str, &Path, bool);

/// Runs `case` on the node_modules corpus into a local directory.
pub(crate) fn on_mount(case: Case) {
    let s = Scratch::new();
    node_modules(&s.join("src"));
    let dst = s.join("dst");
    case(&s.join("src"), dst.to_str().unwrap(), &dst, false);
}

/// Runs `case` on the node_modules corpus into an nfs-ganesha export.
pub(crate) fn over_nfs(case: Case) {
    if !ganesha::available() {
        return;
    }
    let s = Scratch::new();
    node_modules(&s.join("src"));
    let server = Ganesha::start(&s.join("export"), &s.join("state"), Options::default())
        .unwrap_or_else(|e| panic!("{e}"));
    let url = server.url("dst", "");
    case(&s.join("src"), &url, &server.export.join("dst"), true);
}

#[test]
fn four_shards_at_once_on_the_mount_path() {
    on_mount(four_shards_then_finalize);
}

#[test]
fn four_shards_at_once_over_nfs() {
    over_nfs(four_shards_then_finalize);
}

/// A tree `build` writes into a new directory of the export the tests of `proto`
/// share: (its path here, its `nfs://` URL with a trailing slash, for `SRC/`). `None`
/// when ganesha cannot run here.
pub(crate) fn on_the_server(
    proto: Proto,
    what: &str,
    build: impl FnOnce(&Path),
) -> Option<(PathBuf, OsString)> {
    let export = ganesha::shared(proto)?;
    let holder = format!("{what}-{}", std::process::id());
    let src = export.path.join(&holder).join("src");
    build(&src);
    let url = export.url(&format!("{holder}/src/"), "");
    Some((src, url.into()))
}

/// The node_modules corpus on the server of `proto` (see [`on_the_server`]).
pub(crate) fn node_modules_on_the_server(proto: Proto, what: &str) -> Option<(PathBuf, OsString)> {
    on_the_server(proto, what, |src| {
        node_modules(src);
    })
}

/// Two `--shard K/2` runs at once reading an `nfs://` source (no mount anywhere) into
/// one local DEST, then the finalize run from the same URL: each shard copied part of
/// the tree, together all of it once, and the copy is exact.
fn two_shards_from_an_nfs_source(proto: Proto) {
    let Some((src, url)) = node_modules_on_the_server(proto, "shards-from") else {
        return;
    };
    let s = Scratch::new();
    let dst = s.join("dst");
    let dest = dst.to_str().unwrap();
    let (files, links, bytes) = totals(&src);
    let stats = shard_stats(&run_n_shards(2, &[], &url, dest));
    let of = |key: &str| -> Vec<u64> { stats.iter().map(|v| stat(v, key)).collect() };
    assert_eq!(of("files_copied").iter().sum::<u64>(), files, "{stats:?}");
    assert_eq!(of("links_created").iter().sum::<u64>(), links, "{stats:?}");
    assert_eq!(of("bytes_copied").iter().sum::<u64>(), bytes, "{stats:?}");
    for (k, n) in of("files_copied").into_iter().enumerate() {
        assert!(
            0 < n && n < files,
            "shard {k} copied {n} of {files} files: {stats:?}"
        );
    }
    assert_eq!(count_files(&dst), count_files(&src));
    // Directory attributes are the finalize run's: the read-only one is not yet.
    assert!(!rsync_diff(&src, &dst).is_empty());

    let v = finalize_from(&[], &url, dest);
    assert!(v.get("shard").is_none(), "{v}");
    let diff = rsync_diff(&src, &dst);
    assert!(diff.is_empty(), "after the finalize run:\n{diff}");
}

#[test]
fn two_shards_from_an_nfs_source_over_v3() {
    two_shards_from_an_nfs_source(Proto::V3);
}

#[test]
fn two_shards_from_an_nfs_source_over_v41() {
    two_shards_from_an_nfs_source(Proto::V41);
}

/// With `-H` from an `nfs://` source, the files with several links (by the server's
/// link count) are no shard's: the finalize run, reading the same URL, copies one
/// name and links the other to it.
fn shards_from_an_nfs_source_leave_hard_links_to_the_finalize_run(proto: Proto) {
    let Some((src, url)) = on_the_server(proto, "shards-links", |src| {
        let t = Tree::new(src);
        for d in 0..4 {
            for f in 0..10 {
                t.random_file(format!("d{d}/f{f}"), 100 + d * 1000 + f * 7, d * 10 + f);
            }
        }
        t.file("d0/linked", "one file, two names\n")
            .hardlink("d3/also", "d0/linked");
        t.age();
    }) else {
        return;
    };
    let s = Scratch::new();
    let dst = s.join("dst");
    let dest = dst.to_str().unwrap();
    let stats = shard_stats(&run_n_shards(2, &["-H"], &url, dest));
    let copied: Vec<u64> = stats.iter().map(|v| stat(v, "files_copied")).collect();
    assert_eq!(copied.iter().sum::<u64>(), 40, "{stats:?}");
    assert!(copied.iter().all(|&n| 0 < n && n < 40), "{stats:?}");
    assert!(!dst.join("d0/linked").exists() && !dst.join("d3/also").exists());

    let out = Command::new(bin())
        .args(["--json", "-H"])
        .arg(&url)
        .arg(dest)
        .output()
        .expect("run nfsync");
    assert!(out.status.success(), "finalize: {}", describe(&out));
    let v = json_stats(&out);
    assert_eq!(stat(&v, "files_copied"), 1, "{v}");
    let diff = rsync_diff(&src, &dst);
    assert!(diff.is_empty(), "after the finalize run:\n{diff}");
    let ino =
        |p: &str| std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(dst.join(p)).unwrap());
    assert_eq!(ino("d0/linked"), ino("d3/also"));
}

#[test]
fn shards_from_an_nfs_source_leave_hard_links_to_the_finalize_run_over_v3() {
    shards_from_an_nfs_source_leave_hard_links_to_the_finalize_run(Proto::V3);
}

#[test]
fn shards_from_an_nfs_source_leave_hard_links_to_the_finalize_run_over_v41() {
    shards_from_an_nfs_source_leave_hard_links_to_the_finalize_run(Proto::V41);
}

/// Makes DEST an older copy of everything in `src` (so every file is updated through a
/// temporary), plus extras the source lacks; returns how many entries `--delete` must
/// remove.
pub(crate) fn older_dest_with_extras(src: &Path, dest_path: &Path) -> u64 {
    let old = Tree::new(dest_path);
    for e in walkdir(src) {
        let rel = e.strip_prefix(src).unwrap();
        let m = std::fs::symlink_metadata(&e).unwrap();
        if m.is_file() {
            old.file(rel, b"old");
        } else if m.is_dir() {
            old.dir(rel);
        }
    }
    let mut extras = 0;
    for p in (0..40).filter(|p| p % 10 != 0) {
        old.file(format!("node_modules/pkg{p}/extra{p}.js"), b"x");
        extras += 1;
    }
    old.file("node_modules/gone/index.js", b"x")
        .file("node_modules/gone/lib/a.js", b"x");
    extras += 4; // gone/, gone/index.js, gone/lib/, gone/lib/a.js
    // A file where the source has a directory: every share walks that directory, so
    // all try to replace the file; one does, the others find the directory.
    // (Made room for, as rsync: not counted as a deletion.)
    std::fs::remove_dir_all(dest_path.join("node_modules/pkg7/lib")).unwrap();
    old.file("node_modules/pkg7/lib", b"in the way");
    extras
}

/// Whether an nfsync temporary is left anywhere under `dest_path`.
pub(crate) fn temporaries_left(dest_path: &Path) -> bool {
    walkdir(dest_path).iter().any(|p| {
        p.file_name()
            .unwrap()
            .to_string_lossy()
            .contains(".nfsync-")
    })
}

/// With `--delete`, shards remove exactly what the source lacks, once, and never what
/// another share copies (updates there go through temporaries the others must leave).
fn shards_delete_only_extras(src: &Path, dest_arg: &str, dest_path: &Path, nfs: bool) {
    let extras = older_dest_with_extras(src, dest_path);
    let (files, links, _) = totals(src);

    let stats = shard_stats(&run_shards(&["--delete"], src, dest_arg));
    let of = |key: &str| -> u64 { stats.iter().map(|v| stat(v, key)).sum() };
    // An extra may be counted by each shard that removed it (over NFS a REMOVE
    // answered NOENT counts as done: another shard was first).
    let deleted = of("files_deleted");
    assert!(
        (extras..extras + SHARDS).contains(&deleted),
        "{deleted} deleted, {extras} extras: {stats:?}"
    );
    assert_eq!(of("files_copied"), files, "{stats:?}");
    assert_eq!(of("links_created"), links, "{stats:?}");
    // Before the finalize run only directory attributes may differ: nothing a share
    // copied was removed by another, nothing extra is left.
    let diff = compare(src, dest_path, nfs);
    let wrong: Vec<&str> = diff.lines().filter(|l| !l.starts_with(".d")).collect();
    assert!(wrong.is_empty(), "after the shards:\n{diff}");
    assert!(!temporaries_left(dest_path), "a temporary was left behind");
    finalize(&["--delete"], src, dest_arg);
    let diff = compare(src, dest_path, nfs);
    assert!(diff.is_empty(), "after the finalize run:\n{diff}");
}

#[test]
fn shards_with_delete_remove_only_what_the_source_lacks() {
    on_mount(shards_delete_only_extras);
}

#[test]
fn shards_with_delete_over_nfs() {
    over_nfs(shards_delete_only_extras);
}

/// `nfsync --json --shard SPEC` with exactly `vars` from the schedulers' set.
fn with_vars(spec: &str, vars: &[(&str, &str)]) -> Output {
    let s = Scratch::new();
    Tree::new(s.join("src")).file("a", "a");
    let mut cmd = Command::new(bin());
    for v in [
        "SLURM_ARRAY_TASK_ID",
        "SLURM_ARRAY_TASK_COUNT",
        "SLURM_ARRAY_TASK_MIN",
        "SLURM_ARRAY_TASK_STEP",
        "JOB_COMPLETION_INDEX",
    ] {
        cmd.env_remove(v);
    }
    cmd.envs(vars.iter().copied())
        .args(["--json", "--shard", spec])
        .arg(slash(&s.join("src")))
        .arg(s.join("dst"))
        .output()
        .expect("run nfsync")
}

#[test]
fn shard_slurm_and_k8s_read_their_variables() {
    let slurm = [
        ("SLURM_ARRAY_TASK_ID", "7"),
        ("SLURM_ARRAY_TASK_COUNT", "3"),
        ("SLURM_ARRAY_TASK_MIN", "5"),
    ];
    let out = with_vars("slurm", &slurm);
    assert!(out.status.success(), "{}", describe(&out));
    assert_eq!(json_stats(&out)["shard"], "2/3");
    let out = with_vars("k8s/5", &[("JOB_COMPLETION_INDEX", "4")]);
    assert!(out.status.success(), "{}", describe(&out));
    assert_eq!(json_stats(&out)["shard"], "4/5");

    for (spec, vars, says) in [
        ("slurm", &[][..], "SLURM_ARRAY_TASK_ID is not set"),
        ("slurm", &slurm[..1], "SLURM_ARRAY_TASK_COUNT is not set"),
        ("k8s/5", &[][..], "JOB_COMPLETION_INDEX is not set"),
        (
            "k8s/4",
            &[("JOB_COMPLETION_INDEX", "4")][..],
            "shard 4 of 4 does not exist",
        ),
        ("3/3", &[][..], "shard 3 of 3 does not exist"),
    ] {
        let out = with_vars(spec, vars);
        assert_eq!(out.status.code(), Some(1), "{spec}: {}", describe(&out));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.lines().count() == 1 && err.contains(says),
            "{spec}: want one line saying {says:?}, got:\n{err}"
        );
    }
}

#[cfg(not(feature = "mpi"))]
#[test]
fn mpi_without_the_feature_is_refused() {
    let s = Scratch::new();
    let out = Command::new(bin())
        .args(["--mpi", "a/", "b"])
        .current_dir(s.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("built without MPI"));
}
