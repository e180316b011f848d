//! nfsync against a real NFS server: nfs-ganesha (VFS FSAL, no root squash) on free
//! loopback ports, started and stopped by the tests. Ganesha needs root: other users
//! skip these tests (one line says so).
//!
//! What both NFS versions must do is written once and run once per version: every
//! shared scenario, against the server the tests of that version share (each in its own
//! directory of the export, judged by reading that directory back locally with
//! `rsync -anciH --delete`), and every case of [`faults`] (the server killed mid-run,
//! stopped or killed for good, connections cut) and of [`source_faults`] (the same
//! and more with the server as the source), against a server of its own. [`v3`]
//! and [`v41`] each expand [`protocol_tests!`] for their version, beside the tests of
//! that version alone.
//!
//! - [`v3`]: NFSv3 alone: refused and wrong exports, root squash, identities.
//! - [`v41`]: NFSv4.1 alone (an NFSv4-only server): 64-bit times, session slots,
//!   COMPOUNDs counted, NFSv4.0 refused.
//! - [`operator_paths`]: the paths options name on the server, through symlinks
//!   (both versions, in [`protocol_tests!`]).
//! - [`efs`]: EFS's bound connections, through a partition shim in front of NFSv4.1.
//! - [`source`]: every shared scenario with the source on the server, to a local
//!   directory and to the server itself; `--list-only` of an `nfs://` tree.
//! - [`source_stream`]: a source's files streamed, never staged: any `$TMPDIR`, no
//!   local file per file, memory bounded, `--bwlimit` pacing the reads (both versions,
//!   in [`protocol_tests!`]).
//! - [`servers`]: the servers themselves, as those tests rely on them (no nfsync).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::support::ganesha::{self, Export, Proto};
use crate::support::{Target, rsync_diff_with};

mod efs;
mod faults;
mod hostile_names;
mod operator_paths;
mod servers;
mod source;
mod source_faults;
mod source_stream;
mod v3;
mod v41;

/// One scenario's corner of the export its version's tests share.
struct GaneshaTarget {
    export: Export,
    prefix: String,
}

static NEXT: AtomicUsize = AtomicUsize::new(0);

impl GaneshaTarget {
    /// `None` when ganesha cannot run here.
    fn new(proto: Proto) -> Option<GaneshaTarget> {
        let export = ganesha::shared(proto)?;
        let prefix = format!("t{}", NEXT.fetch_add(1, Ordering::SeqCst));
        std::fs::create_dir_all(export.path.join(&prefix)).unwrap();
        Some(GaneshaTarget { export, prefix })
    }
}

impl Target for GaneshaTarget {
    fn dest_arg(&self, sub: &str) -> String {
        self.export.url(&format!("{}/{sub}", self.prefix), "")
    }

    fn dest_path(&self, sub: &str) -> PathBuf {
        self.export.path.join(&self.prefix).join(sub)
    }

    /// nfs-ganesha's VFS backend answers SETATTR of a symlink's times with OK and
    /// changes nothing ("Setting time on symlinks is illegal", FSAL_VFS/file.c), over
    /// NFSv3 and NFSv4.1 alike, so symlink mtimes cannot be stored there: compare
    /// everything else.
    fn diff(&self, src: &Path, sub: &str) -> String {
        rsync_diff_with(src, &self.dest_path(sub), &["--omit-link-times"])
    }

    fn keeps_symlink_times(&self) -> bool {
        false
    }

    /// NFSv3 carries times as unsigned 32-bit seconds, NFSv4.1 as signed 64-bit ones.
    fn clamps_times(&self) -> bool {
        self.export.proto == Proto::V3
    }
}

/// The tests every NFS version runs, as `#[test]`s of the module that expands it for
/// its version `$proto`: each scenario group a server can hold, and each case of
/// [`faults`] and [`source_faults`].
macro_rules! protocol_tests {
    ($proto:expr) => {
        crate::scenarios::scenario_tests!(files, super::GaneshaTarget::new($proto));
        crate::scenarios::scenario_tests!(symlinks, super::GaneshaTarget::new($proto));
        crate::scenarios::scenario_tests!(read_only_dirs, super::GaneshaTarget::new($proto));
        crate::scenarios::scenario_tests!(hard_links, super::GaneshaTarget::new($proto));
        crate::scenarios::scenario_tests!(specials, super::GaneshaTarget::new($proto));
        crate::scenarios::scenario_tests!(owners, super::GaneshaTarget::new($proto));
        crate::scenarios::scenario_tests!(wide_times, super::GaneshaTarget::new($proto));

        super::operator_paths::operator_path_tests!($proto);

        #[test]
        fn server_killed_mid_run_then_restarted() {
            super::faults::server_killed_mid_run_then_restarted($proto);
        }

        #[test]
        fn server_stopped_mid_run_ends_within_timeout() {
            super::faults::server_stopped_mid_run_ends_within_timeout($proto);
        }

        #[test]
        fn server_stopped_briefly_is_waited_for() {
            super::faults::server_stopped_briefly_is_waited_for($proto);
        }

        #[test]
        fn server_killed_mid_run_ends_within_timeout() {
            super::faults::server_killed_mid_run_ends_within_timeout($proto);
        }

        #[test]
        fn connections_cut_mid_run_end_exact() {
            super::faults::connections_cut_mid_run_end_exact($proto);
        }

        #[test]
        fn source_killed_mid_run_then_restarted() {
            super::source_faults::source_killed_mid_run_then_restarted($proto);
        }

        #[test]
        fn source_gone_mid_run_ends_within_timeout() {
            super::source_faults::source_gone_mid_run_ends_within_timeout($proto);
        }

        #[test]
        fn source_connections_cut_mid_run_end_exact() {
            super::source_faults::source_connections_cut_mid_run_end_exact($proto);
        }

        #[test]
        fn source_file_changing_while_read_is_reported() {
            super::source_faults::source_file_changing_while_read_is_reported($proto);
        }

        #[test]
        fn source_file_permission_denied_is_named() {
            super::source_faults::source_file_permission_denied_is_named($proto);
        }

        #[test]
        fn source_files_vanishing_mid_run_end_24() {
            super::source_faults::source_files_vanishing_mid_run_end_24($proto);
        }

        #[test]
        fn source_files_replaced_mid_run_are_reported() {
            super::source_faults::source_files_replaced_mid_run_are_reported($proto);
        }

        #[test]
        fn source_dirs_vanishing_mid_run_end_24() {
            super::source_faults::source_dirs_vanishing_mid_run_end_24($proto);
        }

        #[test]
        fn any_tmpdir_copies_exact() {
            super::source_stream::any_tmpdir_copies_exact($proto);
        }

        #[test]
        fn no_local_file_is_made_per_file() {
            super::source_stream::no_local_file_is_made_per_file($proto);
        }

        #[test]
        fn memory_stays_bounded_with_large_files() {
            super::source_stream::memory_stays_bounded_with_large_files($proto);
        }

        #[test]
        fn bwlimit_paces_the_reads() {
            super::source_stream::bwlimit_paces_the_reads($proto);
        }
    };
}
use protocol_tests;
