//! nfsync: sync directory trees onto network filesystems with many operations in flight.
//!
//! ```text
//! SRC ─▶ walk ─▶ plan ─────▶ engine ─────▶ Destination ─┬─▶ dest::local (a mounted directory)
//!        list    match the   workers,      (the seam)    └─▶ nfs         (NFS on the wire)
//!                listings,   scheduler, tune                  ├─ v4      NFSv4.1 COMPOUNDs
//!                decide         │                             ├─ v3      NFSv3 + MOUNT
//!                               ▼                             └─ rpc     what both stand on
//!                            report ─▶ stderr, stdout, --json
//! ```
//!
//! SRC is read through [`source`], the seam the destination's [`dest`] mirrors: a local
//! path by descriptor, or an `nfs://` tree through the same NFS client the destination
//! side uses; a file's bytes reach the destination as a [`source::Data`].
//!
//! Data flows one way: [`source`] lists the source, [`plan`] matches each directory with
//! the destination's listing and decides what to do, [`engine`] carries that out on many
//! workers through a [`dest::Destination`], and [`report`] adds up what happened. The
//! engine never names a backend; [`dest::Error`] tells it whether a failure is one
//! entry's or the destination's, and [`exit::Error::exit_code`] is the one place a
//! run-ending error becomes an exit code.

pub mod check;
pub mod cli;
pub mod config;
pub mod dest;
pub mod engine;
pub mod exit;
pub mod meta;
#[cfg(feature = "mpi")]
pub mod mpi;
pub mod name;
pub mod nfs;
pub mod options;
pub mod plan;
pub mod report;
pub mod shard;
pub mod source;
pub mod tune;
