//! Why a call failed at the RPC level, and what that means for the engine.
//!
//! An [`RpcError`] is the transport's; the engine's seam wants a [`dest::Error`] that
//! says whether one entry failed or the server is gone, which [`transport`] decides
//! once for both NFS versions.

use std::io;
use std::net::SocketAddr;

use nfs3_types::rpc::auth_stat;

use super::tls::Refused;
use crate::dest;

/// Why a call failed at the RPC level (as opposed to an NFS status in the reply).
#[derive(Debug, thiserror::Error)]
pub enum RpcError {
    /// Could not open a connection.
    #[error("cannot connect to {addr}: {source}")]
    Connect {
        /// Server address.
        addr: SocketAddr,
        /// The socket error.
        source: io::Error,
    },
    /// The connection broke. `sent` tells whether the call may have reached the
    /// server (then its effect is unknown: the retry must treat the answer as ambiguous).
    #[error("connection to {addr} lost")]
    Disconnected {
        /// Server address.
        addr: SocketAddr,
        /// Whether the call was written before the connection broke.
        sent: bool,
    },
    /// No reply within the timeout.
    #[error("no reply from {addr} within {secs} s")]
    Timeout {
        /// Server address.
        addr: SocketAddr,
        /// The timeout.
        secs: u64,
    },
    /// The server sent something that is not a valid reply to our call.
    #[error("{addr} sent an invalid RPC reply: {what}")]
    Garbage {
        /// Server address.
        addr: SocketAddr,
        /// What was wrong.
        what: String,
    },
    /// The server rejected our credentials (e.g. AUTH_TOOWEAK for an unprivileged port).
    #[error("{addr} rejected the call: {stat}")]
    Auth {
        /// Server address.
        addr: SocketAddr,
        /// The reason.
        stat: auth_stat,
    },
    /// The TLS handshake was refused (the server's certificate, or no TLS on that port).
    #[error("TLS handshake with {addr} failed: {source}")]
    Tls {
        /// Server address.
        addr: SocketAddr,
        /// What rustls refused, with advice (boxed: every call's result carries an
        /// `RpcError`).
        source: Box<Refused>,
    },
    /// The program, version or procedure is not served there.
    #[error("{addr}: {what}")]
    Unavailable {
        /// Server address.
        addr: SocketAddr,
        /// PROG_UNAVAIL and friends.
        what: String,
    },
}

impl RpcError {
    /// True for failures where trying again (on a new connection) may help.
    pub fn is_transient(&self) -> bool {
        matches!(
            self,
            RpcError::Connect { .. } | RpcError::Disconnected { .. }
        )
    }
}

/// A transport failure: run-ending when the server is gone or silent, a per-entry
/// error when it refuses our credentials or speaks garbage for one call.
pub fn transport(e: RpcError) -> dest::Error {
    transport_msg(&e, e.to_string())
}

/// [`transport`] with a message of the caller's own.
pub fn transport_msg(e: &RpcError, msg: String) -> dest::Error {
    let io = |kind| io::Error::new(kind, msg);
    match e {
        RpcError::Timeout { .. } => dest::Error::TimedOut(io(io::ErrorKind::TimedOut)),
        RpcError::Connect { .. } | RpcError::Disconnected { .. } => {
            dest::Error::Unreachable(io(io::ErrorKind::NotConnected))
        }
        RpcError::Auth { .. } => dest::Error::Entry(io(io::ErrorKind::PermissionDenied)),
        RpcError::Tls { .. } => dest::Error::Unreachable(io(io::ErrorKind::ConnectionRefused)),
        RpcError::Garbage { .. } | RpcError::Unavailable { .. } => {
            dest::Error::Entry(io(io::ErrorKind::InvalidData))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every RPC result carries an `RpcError`: TLS must not make it bigger.
    #[test]
    fn a_refusal_does_not_grow_rpc_errors() {
        assert!(std::mem::size_of::<RpcError>() <= 64);
    }
}
