//! The NFSv3 client.

mod attrs;
pub mod client;
pub mod dest;
pub mod error;
pub mod mount;
mod objects;
mod paths;
mod write;

pub use dest::{NfsDest, NfsDir};
