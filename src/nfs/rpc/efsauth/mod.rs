//! Authentication to AWS EFS as efs-utils does it: a self-signed TLS client certificate
//! that carries the file system id, and optionally an access point, client information
//! and a SigV4 signature made with AWS credentials.
//!
//! Everything here is byte-exact to efs-utils (checked against certificates its own code
//! made, `tests/fixtures/efs/`), because EFS is the only judge of it and cannot be asked
//! in a test. [`target`] reads the URL's EFS keys; [`creds`] finds AWS credentials;
//! [`key`] keeps the host's RSA key; [`sigv4`] and [`cert`] (over [`der`] and [`time`])
//! make the certificate; [`client_cert`] keeps a run's certificate fresh for
//! [`super::tls`], which presents it.

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
