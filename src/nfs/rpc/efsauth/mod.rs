//! Authentication to AWS EFS as efs-utils does it: a self-signed TLS client certificate
//! that carries the file system id, and optionally an access point, client information
//! and a SigV4 signature made with AWS credentials.
//!
//! Everything here is byte-exact to efs-utils (checked against certificates its own code
//! made, `tests/fixtures/efs/`), because EFS is the only judge of it and cannot be asked
//! in a test. [`target`] reads the URL's EFS keys; [`creds`] finds AWS credentials;
//! [`key`] is the host's RSA key, which [`key_store`] keeps; [`sigv4`] and [`cert`]
//! (over [`der`] and [`time`]) make the certificate; [`client_cert`] keeps a run's
//! certificate fresh for [`super::tls`], which presents it. What the environment and
//! the endpoints give is untrusted: [`file`] reads the files the environment names,
//! and [`text`] makes an endpoint's words safe to print. [`server_name`] is the name
//! the server's certificate is checked against, as efs-utils checks it.

pub mod cert;
pub mod client_cert;
pub mod creds;
pub mod der;
pub mod file;
pub mod key;
pub mod key_store;
pub mod server_name;
pub mod sigv4;
pub mod target;
pub mod text;
pub mod time;

#[cfg(test)]
mod front_tests;
