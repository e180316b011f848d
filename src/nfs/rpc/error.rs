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
    /// The server was away for the whole `--timeout`, as `why` says: this call and every
    /// later one of the client fail so, at once.
    #[error("{addr} {why} for {secs} s (--timeout)")]
    Gone {
        /// Server address.
        addr: SocketAddr,
        /// The timeout.
        secs: u64,
        /// How it was away.
        why: Gone,
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

/// Why a client gave its server up (see [`RpcError::Gone`]): one reason per run, so
/// one exit code per cause.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Gone {
    /// Nothing came back for the whole timeout, though connections were open: a
    /// stopped or hung server, or a network that drops everything (exit 30, as rsync's
    /// "timeout in data send/receive").
    Silent,
    /// Every connection was closed or refused for the whole timeout: the server is not
    /// running (exit 10, as rsync's "error in socket I/O").
    Refused,
}

impl std::fmt::Display for Gone {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Gone::Silent => "sent nothing",
            Gone::Refused => "refused or closed every connection",
        })
    }
}

impl RpcError {
    /// True when the server did not answer in time (exit 30), as opposed to refusing
    /// or dropping us (exit 10).
    pub fn is_timeout(&self) -> bool {
        matches!(
            self,
            RpcError::Timeout { .. }
                | RpcError::Gone {
                    why: Gone::Silent,
                    ..
                }
        )
    }

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
        RpcError::Timeout { .. }
        | RpcError::Gone {
            why: Gone::Silent, ..
        } => dest::Error::TimedOut(io(io::ErrorKind::TimedOut)),
        RpcError::Gone {
            why: Gone::Refused, ..
        } => dest::Error::Unreachable(io(io::ErrorKind::ConnectionRefused)),
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

    /// A server given up on ends the run with one code per cause: silent 30, refused 10.
    #[test]
    fn a_server_gone_has_one_code_per_cause() {
        let addr = SocketAddr::from(([127, 0, 0, 1], 2049));
        let code = |why| {
            let e = RpcError::Gone { addr, secs: 3, why };
            assert!(!e.is_transient());
            crate::exit::Error::Dest {
                path: "d".into(),
                source: transport(e),
            }
            .exit_code()
        };
        assert_eq!(code(Gone::Silent), crate::exit::ExitCode::Timeout);
        assert_eq!(code(Gone::Refused), crate::exit::ExitCode::Connect);
    }

    /// Every RPC result carries an `RpcError`: TLS must not make it bigger.
    #[test]
    fn a_refusal_does_not_grow_rpc_errors() {
        assert!(std::mem::size_of::<RpcError>() <= 64);
    }
}
