//! Sync scenarios shared by every kind of destination.
//!
//! Each scenario is a `pub fn name(t: &dyn Target)`: it builds a source tree in a local
//! temporary directory, runs nfsync with `t.src_arg(tree, contents)` as SRC (the tree's
//! path, or a copy of the tree on a server) and `t.dest_arg(sub)` as DEST, and judges the
//! result by reading `t.dest_path(sub)` back, mostly through an independent comparison
//! (`rsync -anciH --delete`, see `support::rsync_diff`), never through nfsync's own
//! logic. `sub` names are unique within one scenario only: give each scenario a fresh
//! target (or a fresh directory of a shared server).
//!
//! ## Adding a target
//! 1. Implement `support::Target` for it: `dest_arg` is what goes on the command line
//!    (e.g. `nfs://127.0.0.1:PORT/export/SUB`), `dest_path` is the local directory where
//!    that destination can be read back (e.g. the exported directory joined with SUB).
//!    Override `command` to add options or environment the target needs, and `diff` if
//!    the target cannot store something (e.g. owners on a root-squashed export); say
//!    `keeps_symlink_times() == false` if symlink mtimes cannot be set there, and
//!    `clamps_times() == true` if times travel as NFSv3's unsigned 32-bit seconds. Every
//!    comparison of a DEST goes through `diff`, so one override covers all scenarios.
//!    A target that reads its sources from elsewhere overrides `src_arg` (see
//!    `ganesha::source`); a scenario names every SRC through it, but for the operands
//!    that only a local path can be (`.` as the working directory, a symlink).
//! 2. In its test module, one line per group of the list at the end that the target can
//!    hold: `scenarios::scenario_tests!(symlinks, Some(MyTarget::new()));` makes one
//!    `#[test]` per scenario of the group, each with a fresh target (`None` when the
//!    target cannot run here, having said why). A group the target cannot hold (hard
//!    links where the server has no LINK) is left out, and so are its scenarios.
//!
//! ## Adding a scenario
//! Write the function in the topic file it belongs to (`basics.rs`, `links.rs`, ...),
//! re-export it with `pub use` below, and add its name to the group of the
//! `define_scenarios!` list at the end that says what nfsync must create for it; every
//! target that holds that group then runs it.

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::process::Output;

use crate::support::{Target, Tree, assert_snapshots_eq, describe, json_stats, nf, snapshot, stat};

// ---------------------------------------------------------------------------------------
// Helpers

/// Runs `nfsync --json [extra] SRC/ DEST`, asserts success, returns the stats object.
fn sync(t: &dyn Target, extra: &[&str], src: &Path, sub: &str) -> serde_json::Value {
    let out = run(t, extra, src, sub);
    assert!(out.status.success(), "nfsync failed:\n{}", describe(&out));
    json_stats(&out)
}

/// Runs `nfsync --json [extra] SRC/ DEST` and returns whatever happened.
fn run(t: &dyn Target, extra: &[&str], src: &Path, sub: &str) -> Output {
    nf(t)
        .arg("--json")
        .args(extra)
        .arg(t.src_arg(src, true))
        .arg(t.dest_arg(sub))
        .output()
        .expect("spawn nfsync")
}

/// Asserts that a second identical run copies, deletes and creates nothing, and leaves
/// the destination exactly as it was (not even a touched mtime).
fn assert_rerun_is_noop(t: &dyn Target, extra: &[&str], src: &Path, sub: &str) {
    let before = snapshot(&t.dest_path(sub));
    let stats = sync(t, extra, src, sub);
    assert_eq!(
        stat(&stats, "files_copied"),
        0,
        "re-run copied files: {stats}"
    );
    assert_eq!(
        stat(&stats, "bytes_copied"),
        0,
        "re-run copied bytes: {stats}"
    );
    assert_eq!(stat(&stats, "files_deleted"), 0, "re-run deleted: {stats}");
    assert_eq!(
        stat(&stats, "dirs_created"),
        0,
        "re-run created dirs: {stats}"
    );
    assert_eq!(stat(&stats, "errors"), 0, "re-run had errors: {stats}");
    let after = snapshot(&t.dest_path(sub));
    assert_snapshots_eq(&before, &after, "re-run changed the destination");
}

/// Asserts that `rel` has the same mtime, to the nanosecond, in `src` and `dst`.
fn assert_same_mtime_ns(src: &Path, dst: &Path, rel: impl AsRef<Path>) {
    let rel = rel.as_ref();
    // An empty `rel` means the paths themselves (`join("")` would add a slash).
    let join = |p: &Path| {
        if rel.as_os_str().is_empty() {
            p.to_path_buf()
        } else {
            p.join(rel)
        }
    };
    let a = fs::symlink_metadata(join(src)).expect("stat source");
    let b = fs::symlink_metadata(join(dst))
        .unwrap_or_else(|e| panic!("stat {}: {e}", join(dst).display()));
    assert_eq!(
        (a.mtime(), a.mtime_nsec()),
        (b.mtime(), b.mtime_nsec()),
        "mtime of {rel:?} differs (source vs destination)"
    );
}

fn exists(p: &Path) -> bool {
    fs::symlink_metadata(p).is_ok()
}

/// A tree with a bit of everything, used by several scenarios.
fn mixed_tree(root: &Path) -> Tree {
    let t = Tree::new(root);
    t.file("top.txt", "top\n")
        .random_file("a/one.bin", 70_000, 1)
        .random_file("a/b/two.bin", 5_000, 2)
        .file("a/b/c/three.txt", "three\n")
        .file("empty", "")
        .dir("emptydir/nested")
        .symlink("link", "a/one.bin")
        .symlink("dangling", "nowhere")
        .chmod("a/b/two.bin", 0o600)
        .age();
    t
}

// ---------------------------------------------------------------------------------------
// Scenarios, by topic

mod attrs;
mod basics;
mod concurrent;
mod delete;
mod filters;
mod interrupt;
mod links;
mod sources;
mod updates;

pub use attrs::{dir_mtimes, modes, nanosecond_mtimes, out_of_range_times, owners};
pub use basics::{
    big_file, boundary_sizes, empty_files_and_dirs, job_counts, large_directory, nested_tree,
    odd_names,
};
pub use concurrent::{concurrent_hard_link_runs, concurrent_runs};
pub use delete::{
    delete, delete_itemizes_every_entry_and_max_delete_limits, delete_keeps_excluded,
    delete_scope_without_slash,
};
pub use filters::{
    exclude_anchored, exclude_anchored_without_slash, exclude_dir_only, exclude_double_star,
    exclude_from, exclude_from_prefixed_and_stdin, exclude_glob, exclude_non_utf8,
    exclude_with_slash, include_first_match, include_only_idiom,
};
pub use interrupt::{sigint_then_rerun, sigkill_then_rerun};
pub use links::{
    dest_hard_link_not_written_through, hard_links, hard_links_added_later, hard_links_many,
    hard_links_partial_sets, hard_links_without_h, specials, symlinks, type_changes,
    type_changes_without_delete,
};
pub use sources::{
    dest_is_regular_file, dot_sources, multiple_sources, single_file_source, symlink_source,
    trailing_slash,
};
pub use updates::{
    compare_modes, dry_run, leftover_temporaries_are_removed, output_options, rerun_copies_nothing,
    update_changed_files,
};

// ---------------------------------------------------------------------------------------
// The list, by what nfsync must create at the destination

macro_rules! define_scenarios {
    ($($needs:ident: [$($name:ident),* $(,)?]),* $(,)?) => {
        /// `scenario_tests!(needs, make)`: one `#[test]` per scenario that needs `needs`
        /// (a group of the list below), each running it against a fresh target made by
        /// evaluating `make`, an `Option`: `None` when the target cannot run here (it
        /// has said why).
        macro_rules! scenario_tests {
            $(($needs, $make:expr) => {
                $(
                    #[test]
                    fn $name() {
                        if let Some(target) = $make {
                            $crate::scenarios::$name(&target);
                        }
                    }
                )*
            };)*
        }
        pub(crate) use scenario_tests;
    };
}

define_scenarios!(
    // Regular files and directories with their modes and mtimes: what every target holds.
    // (Some set up a destination with links of its own: nfsync makes none.)
    files: [
        nested_tree,
        empty_files_and_dirs,
        big_file,
        boundary_sizes,
        hard_links_without_h,
        odd_names,
        dir_mtimes,
        trailing_slash,
        leftover_temporaries_are_removed,
        compare_modes,
        delete_keeps_excluded,
        delete_scope_without_slash,
        exclude_glob,
        exclude_anchored,
        include_first_match,
        exclude_with_slash,
        exclude_from,
        exclude_non_utf8,
        include_only_idiom,
        exclude_double_star,
        exclude_anchored_without_slash,
        exclude_from_prefixed_and_stdin,
        multiple_sources,
        dest_hard_link_not_written_through,
        sigkill_then_rerun,
        large_directory,
        sigint_then_rerun,
        dot_sources,
        single_file_source,
        delete_itemizes_every_entry_and_max_delete_limits,
    ],
    // Symbolic links too (NFS SYMLINK).
    symlinks: [
        symlinks,
        nanosecond_mtimes,
        update_changed_files,
        dry_run,
        exclude_dir_only,
        dest_is_regular_file,
        type_changes,
        symlink_source,
        type_changes_without_delete,
        job_counts,
        output_options,
    ],
    // Entries created in and deleted from read-only directories (and symbolic links):
    // the mount path opens such a directory up for a moment; over NFS it takes a
    // server that acts as root.
    read_only_dirs: [modes, delete],
    // Hard links with -H (NFS LINK), and symbolic links.
    hard_links: [
        hard_links,
        hard_links_added_later,
        hard_links_partial_sets,
        rerun_copies_nothing,
        hard_links_many,
        concurrent_runs,
        concurrent_hard_link_runs,
    ],
    // Fifos, sockets and devices (NFS MKNOD).
    specials: [specials],
    // Other users' files (root, at both ends), and symbolic links.
    owners: [owners],
    // Times before 1970 and after 2106: kept, or the nearest storable one and a warning
    // where the destination cannot store them (NFSv3). Not from an NFSv3 source, which
    // cannot carry them (the server sends them wrapped to 32 bits).
    wide_times: [out_of_range_times],
);
