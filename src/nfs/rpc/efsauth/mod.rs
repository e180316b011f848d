//! Authentication to AWS EFS as efs-utils does it: a self-signed TLS client certificate
//! that carries the file system id, and optionally an access point, client information
//! and a SigV4 signature made with AWS credentials.
//!
//! Everything here is byte-exact to efs-utils (checked against certificates its own code
//! made, `tests/fixtures/efs/`), because EFS is the only judge of it and cannot be asked
//! in a test.

pub mod cert;
pub mod client_cert;
pub mod creds;
pub mod der;
pub mod key;
pub mod sigv4;
pub mod target;
pub mod time;

#[cfg(test)]
mod front_tests;
