//! The ONC RPC toolkit both NFS versions stand on: nothing here knows NFSv3 from
//! NFSv4.1.
//!
//! Layers, bottom up: [`url`] parses DEST; [`wire`] frames and decodes records, after
//! [`shape`] has checked every length in them against the record; [`tls`] wraps a
//! connection as EFS's `tls` mount option does; [`transport`] is the multiplexed RPC
//! client over many connections. Above the calls, what both versions do the same way:
//! `pipeline` keeps a file's data in flight, and `tree` removes a directory tree.

pub mod error;
pub mod ops;
pub(crate) mod pipeline;
pub mod policy;
mod seam;
pub mod setup;
pub mod shape;
pub mod tls;
pub mod transport;
pub(crate) mod tree;
pub mod url;
pub mod wire;

pub use error::RpcError;
pub use transport::{Endpoint, RpcClient};
pub use wire::{MAX_RECORD, decode_reply, read_record};
