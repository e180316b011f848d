//! What both NFS versions stand on, and what they do alike; nothing here names a
//! version's module.
//!
//! Layers, bottom up: [`url`] parses DEST; [`wire`] frames and decodes records, after
//! [`shape`] has checked every length in them against the record (the NFSv3 and MOUNT
//! layouts are here too: they are the record layer's first users); [`tls`] wraps a
//! connection as EFS's `tls` mount option does, with the client certificate of
//! [`efsauth`]; [`transport`] is the multiplexed RPC client, whose failures
//! ([`error`]) say whether the server is gone (after `--timeout` on one clock for all
//! its calls, `liveness`); on EFS it binds each connection to one partition first
//! ([`efs_bind`] is the call, [`partition`] the rules); [`setup`] makes the
//! credentials and words a failure to connect.
//!
//! Above the calls: a version implements the small traits of [`ops`] and gets the
//! engine's `Destination` from `seam`, with its file data kept in flight by
//! `pipeline`, trees removed by `tree`, and owners given up on, once, by [`policy`].

pub mod efs_bind;
pub mod efsauth;
pub mod error;
mod liveness;
pub mod names;
pub mod ops;
pub mod partition;
pub(crate) mod pipeline;
pub mod policy;
mod seam;
pub mod setup;
pub mod shape;
pub mod source;
mod stream;
#[cfg(test)]
mod test_verifier;
pub mod tls;
pub mod transport;
pub(crate) mod tree;
pub mod url;
pub mod wire;

pub use error::{Gone, RpcError};
pub use transport::{Endpoint, RpcClient};
pub use wire::{MAX_RECORD, decode_reply, read_record};
