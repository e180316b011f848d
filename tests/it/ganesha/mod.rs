//! nfsync against a real NFS server, nfs-ganesha (VFS FSAL, no root squash) on free
//! loopback ports, started and stopped by the tests. Ganesha needs root: other users
//! skip these tests (one line says so).
//!
//! - [`v3`]: the NFSv3 path, crashed, reconfigured and cut off.
//! - [`v41`]: the same and more over NFSv4.1, against an NFSv4-only server.
//! - [`servers`]: the servers themselves, as those tests rely on them (no nfsync).

mod servers;
mod v3;
mod v41;
