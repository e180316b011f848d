//! nfsync's integration tests: one binary (one link step), as ripgrep and fd do.
//!
//! - [`scenarios`]: sync scenarios shared by every kind of destination, each judged by an
//!   independent comparison (`rsync -anciH --delete`); [`mount`], [`inproc`] and
//!   [`ganesha`] run them against a local directory, the in-process NFSv3 server and
//!   nfs-ganesha over NFSv3 and NFSv4.1.
//! - [`mount`]: the command line and the mount path (permissions, full disks, races).
//! - [`ganesha`]: a real NFS server (nfs-ganesha) over NFSv3 and NFSv4.1, crashed,
//!   reconfigured and cut off; and checks of those servers themselves.
//! - [`memfs`]: the NFSv3 path against the in-process memfs and small fake servers.
//! - [`hostile`]: servers whose replies lie about lengths (a counting allocator).
//! - [`hostile_input`]: merge files, file names and numbers chosen to break a run.
//! - [`hostile_names`]: names with terminal escapes, newlines, bytes not UTF-8: every
//!   line printed about them escaped as rsync escapes them.
//! - [`rsync_cli`]: rsync's command lines, each run by rsync and nfsync and the results
//!   compared; unknown and unsupported options.
//! - [`rsync_filters`]: rsync's filter rules (`-f`, `-F`, `-C`, `--include-from`,
//!   `--delete-excluded`), each compared with rsync the same way.
//! - [`rsync_output`]: what nfsync prints (`--stats`, `--out-format`, `--log-file`, `-v`)
//!   beside what rsync prints for the same change.
//! - [`rsync_links`]: the link options (-L, -k, -K, --safe-links, --copy-unsafe-links),
//!   --chmod, --chown, -X, -A.
//! - [`rsync_fake_super`]: `-X` through a basis directory, `--fake-super`, default ACLs.
//! - [`rsync_unsafe_links`]: links a hostile tree holds (`--safe-links` with rsync 3.4's
//!   test, also for backups; source directory loops; `-K` links leading out of DEST).
//! - [`rsync_data`]: how file data is written (-S, --inplace, --append, --temp-dir,
//!   --delay-updates, --bwlimit).
//! - [`rsync_safety`]: `--backup`, `--link-dest` and its kin, `--remove-source-files`.
//! - [`rsync_scripts`]: command lines from public scripts where nfsync differed
//!   (`-H --ignore-existing`, a file where the source has a directory, owners without `-p`).
//! - [`rsync_trust`]: symlinks owned by another user in the paths options name and in
//!   merge files are not followed (`--insecure-links` follows them).
//! - [`rsync_partial`]: `--partial`, `--partial-dir`: what an interrupted copy keeps,
//!   and the resume.
//! - [`rsync_paths`]: which paths are sent (`-R`, `--files-from`, `-d`, `-m`,
//!   `--list-only`), against rsync the same way.
//! - [`shards`]: `--shard K/N` processes at once into one DEST, then the finalize run;
//!   [`mpi`]: `mpirun -n 4 nfsync --mpi` (feature `mpi`).
//! - [`efs_front`]: nfsync through a fake EFS front that judges its client certificate
//!   (signature, token, access point, dates) in front of nfs-ganesha; `--check` there.
//!   [`tls_efs_name`]: the certificate checked against the file system's name when the
//!   URL names a mount target by address or by its AZ-specific name.
//! - [`interrupt`]: Ctrl-C; [`generated`]: completions and man page are up to date.
//! - [`support`]: what they share (trees, comparisons, servers, privilege helpers).
//!
//! Tests that need root (nfs-ganesha, runs as `nobody`, mounting a tmpfs, owners) print
//! one line `skipping …: not root` when run by another user and pass; as root nothing
//! is skipped: a missing server or tool fails the test.

mod check;
mod efs_front;
mod ganesha;
mod generated;
mod hostile;
mod hostile_input;
mod hostile_names;
mod inproc;
mod interrupt;
mod itemize;
mod itemize_unchanged;
mod memfs;
mod mount;
mod mpi;
mod progress;
mod progress_log;
mod rsync_cli;
mod rsync_data;
mod rsync_fake_super;
mod rsync_filters;
mod rsync_links;
mod rsync_order;
mod rsync_output;
mod rsync_partial;
mod rsync_paths;
mod rsync_safety;
mod rsync_scripts;
mod rsync_source_change;
mod rsync_trust;
mod rsync_unsafe_links;
mod scenarios;
mod shards;
mod support;
mod tls;
mod tls_efs_cert;
mod tls_efs_name;
