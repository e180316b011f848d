//! TLS around the RPC connection, as EFS's `tls` mount option does (efs-utils runs
//! stunnel in front of the kernel client; the server side is plain TLS on port 2049,
//! not RFC 9289's STARTTLS).
//!
//! The server's certificate is checked against the URL's host name, with the Mozilla
//! roots compiled in (`webpki-roots`: the same on every machine, no dependency on the
//! host's CA bundle; EFS certificates chain to Amazon's public roots, which are in it),
//! or with only the CAs of a PEM file (`?tls-ca=FILE`) for a private CA.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use rustls::ClientConfig;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, ServerName};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;

use super::rpc::RpcError;

/// The longest a TLS handshake may take, whatever `--timeout` says.
const HANDSHAKE_MAX: Duration = Duration::from_secs(10);

/// What a TLS connection needs: the client configuration and the name to check.
#[derive(Clone)]
pub struct Tls {
    config: Arc<ClientConfig>,
    server_name: ServerName<'static>,
}

impl std::fmt::Debug for Tls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Tls({:?})", self.server_name)
    }
}

impl Tls {
    /// TLS to `host` (a DNS name or an IP address), trusting the CAs in `ca` (PEM)
    /// or, without it, the compiled-in public roots.
    pub fn new(host: &str, ca: Option<&Path>) -> Result<Tls, String> {
        let mut roots = rustls::RootCertStore::empty();
        match ca {
            Some(path) => {
                let certs = CertificateDer::pem_file_iter(path)
                    .map_err(|e| format!("?tls-ca={}: {}", path.display(), pem_error(e)))?
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(|e| format!("?tls-ca={}: {}", path.display(), pem_error(e)))?;
                if certs.is_empty() {
                    return Err(format!(
                        "?tls-ca={}: no certificate in it (a PEM file with \
                         -----BEGIN CERTIFICATE----- blocks is expected)",
                        path.display()
                    ));
                }
                for c in certs {
                    roots.add(c).map_err(|e| {
                        format!(
                            "?tls-ca={}: not a usable CA certificate: {e}",
                            path.display()
                        )
                    })?;
                }
            }
            None => roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned()),
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| format!("TLS set-up: {e}"))?
            .with_root_certificates(roots)
            .with_no_client_auth();
        let server_name = ServerName::try_from(host.to_string()).map_err(|_| {
            format!("{host:?} is not a name a TLS certificate can be checked against")
        })?;
        Ok(Tls {
            config: Arc::new(config),
            server_name,
        })
    }

    /// The TLS handshake on a connected socket, within `timeout`. A refused
    /// certificate is not worth retrying: it ends the connection attempt for good.
    pub async fn connect(
        &self,
        tcp: TcpStream,
        addr: SocketAddr,
        timeout: Duration,
    ) -> Result<TlsStream<TcpStream>, RpcError> {
        let connector = TlsConnector::from(self.config.clone());
        let hs = connector.connect(self.server_name.clone(), tcp);
        // A real handshake takes a few round trips; a server that does not speak TLS
        // may sit waiting for the rest of what it takes for a huge RPC record.
        let timeout = timeout.min(HANDSHAKE_MAX);
        match tokio::time::timeout(timeout, hs).await {
            Ok(Ok(s)) => Ok(s),
            Ok(Err(e)) => Err(RpcError::Tls {
                addr,
                what: handshake_error(&e),
            }),
            Err(_) => Err(RpcError::Tls {
                addr,
                what: format!(
                    "no TLS handshake within {} s: does the server speak TLS on this port?",
                    timeout.as_secs()
                ),
            }),
        }
    }
}

fn pem_error(e: rustls_pki_types::pem::Error) -> String {
    match e {
        rustls_pki_types::pem::Error::Io(io) => io.to_string(),
        e => format!("not a PEM file ({e:?})"),
    }
}

/// A handshake failure in words a user can act on.
fn handshake_error(e: &std::io::Error) -> String {
    let inner = e
        .get_ref()
        .map(|i| i.to_string())
        .unwrap_or_else(|| e.to_string());
    let hint = if inner.contains("certificate") {
        " — is ?tls-ca= the CA that signed the server's certificate, and is the URL's host \
         the name in it?"
    } else if inner.contains("corrupt message") || inner.contains("InvalidContentType") {
        " — the server does not seem to speak TLS on this port"
    } else {
        ""
    };
    format!("TLS handshake failed: {inner}{hint}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ca_file_that_is_missing_or_holds_no_certificate_is_named() {
        let e = Tls::new("h", Some(Path::new("/nonexistent/ca.pem"))).unwrap_err();
        assert!(
            e.contains("/nonexistent/ca.pem") && e.contains("No such file"),
            "{e}"
        );
        let dir = std::env::temp_dir().join(format!("nfsync-tls-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("empty.pem");
        std::fs::write(&f, "not a certificate\n").unwrap();
        let e = Tls::new("h", Some(&f)).unwrap_err();
        assert!(e.contains("no certificate"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn names_and_addresses_are_accepted_and_the_public_roots_load() {
        assert!(Tls::new("fs-1.efs.eu-west-1.amazonaws.com", None).is_ok());
        assert!(Tls::new("127.0.0.1", None).is_ok());
        assert!(Tls::new("bad name!", None).is_err());
    }
}
