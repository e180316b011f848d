//! `--mpi` (feature `mpi`, Open MPI's `mpirun`, as root with
//! `--allow-run-as-root`): four ranks on the mount path and into nfs-ganesha. Every
//! rank takes units of work as it walks, rank 0 finalizes and reports the totals of
//! all with each rank's part; with `--delete` no rank removes what another copies;
//! a rank held back (`--bwlimit`, started with different arguments by mpirun's
//! `A : B` form) copies less and the others copy the rest; the ranks read an `nfs://`
//! source (NFSv3 and NFSv4.1) with no mount.

#![cfg(feature = "mpi")]

use std::ffi::OsStr;
use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

use crate::shards::{
    compare, node_modules_on_the_server, older_dest_with_extras, on_mount, over_nfs,
    temporaries_left, totals, walkdir,
};
use crate::support::ganesha::Proto;
use crate::support::{Scratch, Tree, bin, describe, json_stats, rsync_diff, slash, stat};

const RANKS: usize = 4;

/// `mpirun` with one `-n N nfsync --mpi --json ARGS SRC/ DEST` per group of ranks;
/// rank 0's JSON (the only one printed), checked: exit 0, the ranks, each rank's part.
fn mpirun(groups: &[(usize, &[&str])], src: &Path, dest: &str) -> Value {
    mpirun_from(groups, &slash(src), dest)
}

/// [`mpirun`] with SRC as given (a path or a URL).
fn mpirun_from(groups: &[(usize, &[&str])], src: &OsStr, dest: &str) -> Value {
    let mut cmd = Command::new("mpirun");
    if crate::support::is_root() {
        cmd.arg("--allow-run-as-root");
    }
    cmd.args(["--oversubscribe", "--bind-to", "none"]);
    for (i, (n, args)) in groups.iter().enumerate() {
        if i > 0 {
            cmd.arg(":");
        }
        cmd.args(["-n", &n.to_string()])
            .arg(bin())
            .args(["--mpi", "--json"])
            .args(*args)
            .arg(src)
            .arg(dest);
    }
    let out: Output = cmd
        .output()
        .expect("run mpirun (apt-get install openmpi-bin)");
    assert!(out.status.success(), "{}", describe(&out));
    let v = json_stats(&out);
    let ranks: usize = groups.iter().map(|g| g.0).sum();
    assert_eq!(v["ranks"], ranks as u64, "{v}");
    assert_eq!(v["per_rank"].as_array().map(Vec::len), Some(ranks), "{v}");
    v
}

/// What each rank copied (files and links), in rank order.
fn parts(v: &Value) -> Vec<u64> {
    v["per_rank"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| stat(p, "files_copied") + stat(p, "links_created"))
        .collect()
}

/// Four ranks into a fresh DEST: each entry copied once, by the ranks (the finalize
/// step copies nothing), and the copy exact.
fn four_ranks(src: &Path, dest_arg: &str, dest_path: &Path, nfs: bool) {
    let (files, links, bytes) = totals(src);
    let v = mpirun(&[(RANKS, &[])], src, dest_arg);
    assert_eq!(stat(&v, "files_copied"), files, "{v}");
    assert_eq!(stat(&v, "links_created"), links, "{v}");
    assert_eq!(stat(&v, "bytes_copied"), bytes, "{v}");
    // The totals are the ranks' own: the finalize step had nothing left to copy.
    assert_eq!(parts(&v).iter().sum::<u64>(), files + links, "{v}");
    // One rank at least walked every directory (SRC/ itself included); none more.
    let dirs = 1 + walkdir(src).iter().filter(|p| p.is_dir()).count() as u64;
    let walked: Vec<u64> = v["per_rank"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| stat(p, "dirs_walked"))
        .collect();
    assert_eq!(walked.iter().max(), Some(&dirs), "{v}");
    let diff = compare(src, dest_path, nfs);
    assert!(diff.is_empty(), "after mpirun:\n{diff}");
}

/// With `--delete` over an older copy with extras: every extra removed once, every
/// file copied once (a file one rank copied and another removed would be copied
/// again by the finalize step, and counted twice), no temporary left.
fn four_ranks_delete(src: &Path, dest_arg: &str, dest_path: &Path, nfs: bool) {
    let extras = older_dest_with_extras(src, dest_path);
    let (files, links, _) = totals(src);
    let v = mpirun(&[(RANKS, &["--delete"])], src, dest_arg);
    // An extra may be counted by each rank that removed it.
    let deleted = stat(&v, "files_deleted");
    assert!(
        (extras..extras + RANKS as u64).contains(&deleted),
        "{deleted} deleted, {extras} extras: {v}"
    );
    assert_eq!(stat(&v, "files_copied"), files, "{v}");
    assert_eq!(stat(&v, "links_created"), links, "{v}");
    assert!(!temporaries_left(dest_path), "a temporary was left behind");
    let diff = compare(src, dest_path, nfs);
    assert!(diff.is_empty(), "after mpirun --delete:\n{diff}");
}

#[test]
fn mpirun_four_ranks_on_the_mount_path() {
    on_mount(four_ranks);
}

#[test]
fn mpirun_four_ranks_over_nfs() {
    over_nfs(four_ranks);
}

/// Four ranks reading an `nfs://` source (no mount anywhere) into a local DEST: each
/// entry copied once, by the ranks, and the copy exact.
fn four_ranks_from_an_nfs_source(proto: Proto) {
    let Some((src, url)) = node_modules_on_the_server(proto, "mpi-from") else {
        return;
    };
    let s = Scratch::new();
    let dst = s.join("dst");
    let (files, links, bytes) = totals(&src);
    let v = mpirun_from(&[(RANKS, &[])], &url, dst.to_str().unwrap());
    assert_eq!(stat(&v, "files_copied"), files, "{v}");
    assert_eq!(stat(&v, "links_created"), links, "{v}");
    assert_eq!(stat(&v, "bytes_copied"), bytes, "{v}");
    assert_eq!(parts(&v).iter().sum::<u64>(), files + links, "{v}");
    let diff = rsync_diff(&src, &dst);
    assert!(diff.is_empty(), "after mpirun:\n{diff}");
}

#[test]
fn mpirun_four_ranks_from_an_nfs_source_over_v3() {
    four_ranks_from_an_nfs_source(Proto::V3);
}

#[test]
fn mpirun_four_ranks_from_an_nfs_source_over_v41() {
    four_ranks_from_an_nfs_source(Proto::V41);
}

#[test]
fn mpirun_with_delete_removes_only_what_the_source_lacks() {
    on_mount(four_ranks_delete);
}

#[test]
fn mpirun_with_delete_over_nfs() {
    over_nfs(four_ranks_delete);
}

/// Rank 1 is held to 48 KiB/s with one worker; ranks 0, 2 and 3 run free. A static
/// deal would give rank 1 a quarter of the files (about 300, 14 s at that rate);
/// taking units as it goes, it takes less than half of what the others take on
/// average, and the copy is exact.
#[test]
fn mpirun_a_slow_rank_takes_less() {
    let s = Scratch::new();
    let src = s.join("src");
    let t = Tree::new(&src);
    for d in 0..40 {
        for f in 0..30 {
            t.random_file(
                format!("d{d:02}/f{f:02}"),
                1000 + (d * 37 + f * 11) % 2000,
                d * 100 + f,
            );
        }
    }
    let dst = s.join("dst");
    let slow: &[&str] = &["--bwlimit=48", "--jobs", "1"];
    let v = mpirun(
        &[(1, &[]), (1, slow), (RANKS - 2, &[])],
        &src,
        dst.to_str().unwrap(),
    );
    let p = parts(&v);
    let others = (p[0] + p[2] + p[3]) as f64 / 3.0;
    assert!(
        (p[1] as f64) < others / 2.0,
        "the slow rank copied {} files, the others {others:.0} on average: {v}",
        p[1]
    );
    assert_eq!(p.iter().sum::<u64>(), 1200, "{v}");
    let diff = compare(&src, &dst, false);
    assert!(diff.is_empty(), "after mpirun:\n{diff}");
}
