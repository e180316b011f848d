//! NFSv4.1 (RFC 8881): the protocol EFS speaks, with sessions and COMPOUND.
//!
//! Work in progress (issue 14): the wire format ([`proto`]) and the session
//! ([`session`]) are here and tested against nfs-ganesha; `nfs://…?version=4.1` is
//! not accepted yet, so no run goes through this path until it copies exactly.

pub mod proto;
pub mod session;
