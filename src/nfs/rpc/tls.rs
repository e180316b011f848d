//! TLS around the RPC connection, as EFS's `tls` mount option does (efs-utils runs
//! stunnel in front of the kernel client; the server side is plain TLS on port 2049,
//! not RFC 9289's STARTTLS).
//!
//! The server's certificate is checked against the URL's host (a DNS name, or an IP
//! address that must be in the certificate's IP SANs), with either the Mozilla roots
//! compiled in or only the CAs of a PEM file (`?tls-ca=FILE`) for a private CA. To an
//! EFS file system it is checked against the file system's DNS name instead, which is
//! also sent as SNI, as efs-utils does ([`super::efsauth::server_name`]): EFS
//! certificates name neither a mount target's address nor its zone.
//!
//! The roots come from `webpki-roots` rather than `rustls-native-certs`: EFS
//! certificates chain to Amazon's public roots, which are in it, and a compiled-in set
//! is the same on every machine (a minimal container without `ca-certificates`, an old
//! host bundle) with no file to read at start-up. A private CA, or a host bundle, is
//! what `?tls-ca=` is for.
//!
//! rustls with the `ring` provider, not `aws-lc-rs`, which needs cmake and nasm to
//! build.
//!
//! To an EFS file system (the URL names one) the connection also presents efs-utils'
//! client certificate ([`super::efsauth`]) in a full handshake every time: session
//! resumption is off there, because a resumed session shows no certificate and how EFS
//! treats that is unknown.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use rustls::{CertificateError, ClientConfig};

use super::efsauth::client_cert::{ClientCert, Resolver};
use super::efsauth::server_name::{self, Named};
use super::efsauth::time::UtcTime;
use super::url::NfsUrl;
use crate::exit::{Error, Why};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, ServerName};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;

/// The longest a TLS handshake may take, whatever `--timeout` says: a real one takes a
/// few round trips, and a server that does not speak TLS says nothing at all (it reads
/// the ClientHello as the start of a 369 MB RPC record and waits for the rest).
const HANDSHAKE_MAX: Duration = Duration::from_secs(10);

/// What a TLS connection needs: the client configuration and the name to check.
#[derive(Clone)]
pub struct Tls {
    config: Arc<ClientConfig>,
    server_name: ServerName<'static>,
    /// Whose name `server_name` is, for the advice on a certificate for another name.
    named: Named,
    /// The `?tls-ca=` file, if the roots are its CAs (named in the advice on refusal).
    ca: Option<PathBuf>,
    /// The EFS client certificate, renewed before a handshake when stale.
    client: Option<Arc<ClientCert>>,
}

impl std::fmt::Debug for Tls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Tls({:?}, ca: {:?})", self.server_name, self.ca)
    }
}

/// Why [`Tls::new`] could not make a TLS configuration.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The CA file cannot be read.
    #[error("?tls-ca={}: {source}", path.display())]
    CaUnreadable {
        /// The file.
        path: PathBuf,
        /// The read error.
        source: io::Error,
    },
    /// The CA file is not PEM.
    #[error("?tls-ca={}: not a PEM file: {source}", path.display())]
    CaNotPem {
        /// The file.
        path: PathBuf,
        /// What the PEM parser found wrong.
        source: rustls_pki_types::pem::Error,
    },
    /// The CA file holds no certificate (empty, or only keys).
    #[error(
        "?tls-ca={}: no certificate in it (a PEM file with -----BEGIN CERTIFICATE----- \
         blocks is expected)",
        path.display()
    )]
    CaEmpty {
        /// The file.
        path: PathBuf,
    },
    /// A certificate in the CA file cannot be a trust anchor.
    #[error("?tls-ca={}: not a usable CA certificate: {source}", path.display())]
    CaUnusable {
        /// The file.
        path: PathBuf,
        /// Why the certificate was refused.
        source: rustls::Error,
    },
    /// The host is neither a DNS name nor an IP address.
    #[error("{host:?} is not a name a TLS certificate can be checked against")]
    BadHost {
        /// The URL's host.
        host: String,
    },
    /// The crypto provider refused the protocol versions (not expected with `ring`).
    #[error("TLS set-up: {0}")]
    Setup(#[source] rustls::Error),
}

/// Why a TLS handshake did not complete.
#[derive(Debug, thiserror::Error)]
pub enum HandshakeError {
    /// The server's side made it fail for good.
    #[error(transparent)]
    Refused(Refused),
    /// The connection closed, reset or stayed silent during the handshake: like a TCP
    /// connect that failed, worth another try.
    #[error(transparent)]
    Connection(io::Error),
}

/// A handshake the server's side made fail for good: rustls refused its certificate,
/// or it broke the protocol (it does not speak TLS). Trying again cannot help, unlike
/// a connection closed or timed out during the handshake
/// ([`HandshakeError::Connection`]).
#[derive(Debug, thiserror::Error)]
#[error("{source}{hint}")]
pub struct Refused {
    /// What rustls refused.
    pub source: rustls::Error,
    /// Advice for the user (empty when there is none).
    hint: String,
}

impl Refused {
    /// The server's TLS alert in place of the first reply, if `e` is one. In TLS 1.3
    /// the client has finished its handshake before the server judges the client
    /// certificate, so a refused certificate shows here, not in the handshake; EFS
    /// connections all start with the bind call, whose reply is the first read.
    pub(crate) fn alert_after_handshake(e: &io::Error) -> Option<Refused> {
        let source = e.get_ref()?.downcast_ref::<rustls::Error>()?;
        matches!(source, rustls::Error::AlertReceived(_)).then(|| Refused {
            source: source.clone(),
            hint: " — the server refused the client certificate (for EFS: the file \
                   system policy, the IAM credentials of ?iam, the access point, or this \
                   machine's clock)"
                .into(),
        })
    }
}

impl Tls {
    /// TLS to `host` (a DNS name or an IP address), trusting only the CAs in `ca` (a
    /// PEM file) or, without it, the compiled-in public roots.
    pub fn new(host: &str, ca: Option<&Path>) -> Result<Tls, ConfigError> {
        Tls::build(host, Named::Host, ca, None)
    }

    /// TLS as [`Tls::new`], presenting `client` whenever the server asks for a
    /// certificate, with session resumption off.
    pub fn with_client_cert(
        host: &str,
        ca: Option<&Path>,
        client: Arc<ClientCert>,
    ) -> Result<Tls, ConfigError> {
        Tls::build(host, Named::Host, ca, Some(client))
    }

    /// The TLS a URL asks for: for an EFS file system with the client certificate
    /// (making the host's key and fetching credentials first). A CA file that cannot be
    /// used is the command line's problem (exit 1); credentials that cannot be had are
    /// the connection's (exit 10).
    ///
    /// `kept` says why the EFS client key is one for this run only, if it is.
    pub fn for_url(url: &NfsUrl, kept: &mut Option<String>) -> Result<Tls, Error> {
        let usage = |e: ConfigError| Error::Usage(Why::of(e));
        let ca = url.tls_ca.as_deref();
        let Some(target) = &url.efs else {
            return Tls::new(&url.host, ca).map_err(usage);
        };
        let (name, named) = server_name::for_efs(&url.host, target);
        use super::efsauth::client_cert::CertError;
        let client = ClientCert::for_target(target, kept).map_err(|e| match e {
            CertError::Credentials(e) => Error::Connect(Why::of(e)),
            CertError::Key(what) => Error::Local {
                what: "the EFS client certificate".into(),
                source: io::Error::other(what),
            },
        })?;
        Tls::build(&name, named, ca, Some(Arc::new(client))).map_err(usage)
    }

    /// TLS checking the certificate against `name` (and sending it as SNI).
    fn build(
        name: &str,
        named: Named,
        ca: Option<&Path>,
        client: Option<Arc<ClientCert>>,
    ) -> Result<Tls, ConfigError> {
        let mut roots = rustls::RootCertStore::empty();
        match ca {
            Some(path) => {
                for cert in read_cas(path)? {
                    roots.add(cert).map_err(|source| ConfigError::CaUnusable {
                        path: path.to_owned(),
                        source,
                    })?;
                }
            }
            None => roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned()),
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(ConfigError::Setup)?
            .with_root_certificates(roots);
        let config = match &client {
            None => builder.with_no_client_auth(),
            Some(c) => {
                let mut config = builder.with_client_cert_resolver(Arc::new(Resolver(c.clone())));
                config.resumption = rustls::client::Resumption::disabled();
                config
            }
        };
        let server_name =
            ServerName::try_from(name.to_string()).map_err(|_| ConfigError::BadHost {
                host: name.to_string(),
            })?;
        Ok(Tls {
            config: Arc::new(config),
            server_name,
            named,
            ca: ca.map(Path::to_owned),
            client,
        })
    }

    /// The EFS client certificate, if this TLS presents one.
    pub fn client_cert(&self) -> Option<&Arc<ClientCert>> {
        self.client.as_ref()
    }

    /// The TLS handshake on a connected socket, within `timeout` (at most
    /// `HANDSHAKE_MAX`).
    pub async fn connect(
        &self,
        tcp: TcpStream,
        timeout: Duration,
    ) -> Result<TlsStream<TcpStream>, HandshakeError> {
        if let Some(client) = &self.client {
            // Renewing may fetch credentials over the network: off the async threads.
            let c = client.clone();
            let renewed = tokio::task::spawn_blocking(move || c.for_new_connection(UtcTime::now()))
                .await
                .map_err(|e| e.to_string())
                .and_then(|r| r.map_err(|e| e.to_string()));
            if let Err(why) = renewed {
                return Err(HandshakeError::Refused(Refused {
                    source: rustls::Error::General(format!(
                        "renewing the EFS client certificate: {why}"
                    )),
                    hint: String::new(),
                }));
            }
        }
        let connector = TlsConnector::from(self.config.clone());
        let hs = connector.connect(self.server_name.clone(), tcp);
        let timeout = timeout.min(HANDSHAKE_MAX);
        let no_tls = ": does the server speak TLS on this port?";
        let connect = |kind, msg: String| HandshakeError::Connection(io::Error::new(kind, msg));
        match tokio::time::timeout(timeout, hs).await {
            Ok(Ok(s)) => Ok(s),
            Ok(Err(e)) => Err(match rustls_error(e) {
                Ok(source) => HandshakeError::Refused(Refused {
                    hint: self.hint(&source),
                    source,
                }),
                Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => connect(
                    e.kind(),
                    format!("the server closed the connection during the TLS handshake{no_tls}"),
                ),
                Err(e) => connect(e.kind(), format!("TLS handshake: {e}")),
            }),
            Err(_) => Err(connect(
                io::ErrorKind::TimedOut,
                format!("no TLS handshake within {timeout:?}{no_tls}"),
            )),
        }
    }

    /// Advice for a refused handshake, in the terms of the URL.
    fn hint(&self, e: &rustls::Error) -> String {
        use CertificateError as C;
        let cert = match e {
            rustls::Error::InvalidCertificate(c) => c,
            rustls::Error::InvalidMessage(_)
            | rustls::Error::InappropriateMessage { .. }
            | rustls::Error::InappropriateHandshakeMessage { .. } => {
                return " — the server does not seem to speak TLS on this port".into();
            }
            _ => return String::new(),
        };
        match (cert, &self.ca) {
            (C::UnknownIssuer, Some(ca)) => format!(
                " — is ?tls-ca={} the CA that signed the server's certificate?",
                ca.display()
            ),
            (C::UnknownIssuer, None) => " — the server's certificate is not from a public CA: \
                 name the CA that signed it with ?tls-ca=FILE"
                .into(),
            (C::NotValidForName | C::NotValidForNameContext { .. }, _) => {
                self.named.advice(&self.server_name.to_str())
            }
            (
                C::Expired
                | C::ExpiredContext { .. }
                | C::NotValidYet
                | C::NotValidYetContext { .. },
                _,
            ) => " — check the dates of the server's certificate and this machine's clock".into(),
            _ => String::new(),
        }
    }
}

/// The certificates of a PEM file, at least one.
fn read_cas(path: &Path) -> Result<Vec<CertificateDer<'static>>, ConfigError> {
    let pem = |e| match e {
        rustls_pki_types::pem::Error::Io(source) => ConfigError::CaUnreadable {
            path: path.to_owned(),
            source,
        },
        source => ConfigError::CaNotPem {
            path: path.to_owned(),
            source,
        },
    };
    // Read as the environment's files are: bounded, never blocking on a FIFO.
    let bytes = super::efsauth::file::read_small(path, "the CA file").map_err(|e| {
        let source = match e {
            None => io::Error::from_raw_os_error(libc::ENOENT),
            Some(why) => io::Error::new(io::ErrorKind::InvalidInput, why),
        };
        ConfigError::CaUnreadable {
            path: path.to_owned(),
            source,
        }
    })?;
    let certs = CertificateDer::pem_slice_iter(&bytes)
        .collect::<Result<Vec<_>, _>>()
        .map_err(pem)?;
    if certs.is_empty() {
        return Err(ConfigError::CaEmpty {
            path: path.to_owned(),
        });
    }
    Ok(certs)
}

/// The rustls error inside a handshake's I/O error, or the I/O error itself (the
/// connection closed or failed: not the server's certificate).
fn rustls_error(e: io::Error) -> Result<rustls::Error, io::Error> {
    if let Some(r) = e.get_ref().and_then(|i| i.downcast_ref::<rustls::Error>()) {
        return Ok(r.clone());
    }
    Err(e)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_alert_after_the_handshake_is_a_refused_client_certificate() {
        let alert = rustls::Error::AlertReceived(rustls::AlertDescription::HandshakeFailure);
        let e = io::Error::new(io::ErrorKind::InvalidData, alert);
        let r = Refused::alert_after_handshake(&e).expect("an alert");
        assert!(
            r.to_string().contains("refused the client certificate"),
            "{r}"
        );
        for other in [
            io::Error::new(io::ErrorKind::InvalidData, "record too large"),
            io::Error::new(io::ErrorKind::InvalidData, rustls::Error::DecryptError),
            io::Error::from(io::ErrorKind::UnexpectedEof),
        ] {
            assert!(Refused::alert_after_handshake(&other).is_none(), "{other}");
        }
    }

    #[test]
    fn a_ca_file_that_is_missing_or_holds_no_certificate_is_named() {
        let e = Tls::new("h", Some(Path::new("/nonexistent/ca.pem"))).unwrap_err();
        assert!(matches!(e, ConfigError::CaUnreadable { .. }), "{e:?}");
        assert_eq!(
            e.to_string(),
            "?tls-ca=/nonexistent/ca.pem: No such file or directory (os error 2)"
        );

        let dir = tempfile::tempdir().unwrap();
        let e = Tls::new("h", Some(dir.path())).unwrap_err();
        assert!(matches!(e, ConfigError::CaUnreadable { .. }), "{e:?}");
        assert!(e.to_string().contains("not a regular file"), "{e}");

        for (name, text) in [
            ("empty.pem", ""),
            ("text.pem", "not a certificate\n"),
            (
                "key.pem",
                "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n",
            ),
        ] {
            let f = dir.path().join(name);
            std::fs::write(&f, text).unwrap();
            let e = Tls::new("h", Some(&f)).unwrap_err();
            assert!(matches!(e, ConfigError::CaEmpty { .. }), "{name}: {e:?}");
            assert!(
                e.to_string().contains(name) && e.to_string().contains("no certificate"),
                "{e}"
            );
        }

        let f = dir.path().join("cut.pem");
        std::fs::write(&f, "-----BEGIN CERTIFICATE-----\nMIIB\n").unwrap();
        let e = Tls::new("h", Some(&f)).unwrap_err();
        assert!(matches!(e, ConfigError::CaNotPem { .. }), "{e:?}");

        let f = dir.path().join("junk.pem");
        std::fs::write(
            &f,
            "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n",
        )
        .unwrap();
        let e = Tls::new("h", Some(&f)).unwrap_err();
        assert!(matches!(e, ConfigError::CaUnusable { .. }), "{e:?}");
        assert!(e.to_string().contains("junk.pem"), "{e}");
    }

    #[test]
    fn names_and_addresses_are_accepted_and_the_public_roots_load() {
        assert!(Tls::new("fs-1.efs.eu-west-1.amazonaws.com", None).is_ok());
        assert!(Tls::new("127.0.0.1", None).is_ok());
        assert!(Tls::new("::1", None).is_ok());
        let e = Tls::new("bad name!", None).unwrap_err();
        assert!(matches!(e, ConfigError::BadHost { .. }), "{e:?}");
    }

    /// A TLS server on 127.0.0.1 that requires a client certificate (any, self-signed
    /// included; the handshake signature is still checked) and records each one shown.
    mod client_auth {
        use crate::nfs::rpc::test_verifier::{Judge, Requiring, server_cert};
        use crate::nfs::rpc::tls::*;
        use rustls::pki_types::PrivateKeyDer;
        use std::sync::Mutex;
        use tokio::io::{AsyncReadExt, AsyncWriteExt};

        /// Keeps every client certificate shown and accepts it.
        #[derive(Debug)]
        pub struct Recorder {
            pub seen: Mutex<Vec<CertificateDer<'static>>>,
        }

        impl Judge for Recorder {
            fn judge(&self, cert: &CertificateDer<'_>) -> Result<(), String> {
                self.seen.lock().unwrap().push(cert.clone().into_owned());
                Ok(())
            }
        }

        /// Serves `conns` connections (each: read 4 bytes, echo them), then returns.
        pub async fn serve(
            dir: &Path,
            conns: usize,
        ) -> (u16, PathBuf, Arc<Recorder>, tokio::task::JoinHandle<usize>) {
            let (cert, key) = server_cert(dir);
            let rec = Arc::new(Recorder {
                seen: Mutex::new(Vec::new()),
            });
            let verifier = Requiring::new(rec.clone());
            let config = rustls::ServerConfig::builder_with_provider(verifier.provider.clone())
                .with_safe_default_protocol_versions()
                .unwrap()
                .with_client_cert_verifier(verifier)
                .with_single_cert(
                    vec![CertificateDer::from_pem_file(&cert).unwrap()],
                    PrivateKeyDer::from_pem_file(&key).unwrap(),
                )
                .unwrap();
            let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
            let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let port = l.local_addr().unwrap().port();
            let task = tokio::spawn(async move {
                let mut ok = 0;
                for _ in 0..conns {
                    let (tcp, _) = l.accept().await.unwrap();
                    if let Ok(mut s) = acceptor.accept(tcp).await {
                        let mut b = [0u8; 4];
                        if s.read_exact(&mut b).await.is_ok() {
                            let _ = s.write_all(&b).await;
                            let _ = s.flush().await;
                            ok += 1;
                        }
                    }
                }
                ok
            });
            (port, cert, rec, task)
        }
    }

    fn test_client_cert() -> Arc<ClientCert> {
        use crate::nfs::rpc::efsauth::key::ClientKey;
        use crate::nfs::rpc::efsauth::target::EfsTarget;
        let key =
            ClientKey::from_pem(include_bytes!("../../../tests/fixtures/efs/key.pem")).unwrap();
        let target = EfsTarget {
            fs_id: "fs-deadbeef".into(),
            region: Some("us-east-1".into()),
            access_point: Some("fsap-0123456789abcdef0".into()),
            iam: false,
            aws_profile: None,
        };
        Arc::new(ClientCert::new(key, target, "h".into(), None, UtcTime::now()).unwrap())
    }

    /// Every connection shows the certificate in a full handshake (with resumption on,
    /// rustls would resume the second and the server would see one certificate), and
    /// without one the server's demand for it fails the handshake.
    #[test]
    fn the_efs_certificate_is_shown_in_every_handshake() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let dir = tempfile::tempdir().unwrap();
        rt.block_on(async {
            let (port, ca, rec, server) = client_auth::serve(dir.path(), 4).await;
            let client = test_client_cert();
            let tls = Tls::with_client_cert("127.0.0.1", Some(&ca), client.clone()).unwrap();
            for _ in 0..3 {
                let tcp = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
                let mut s = tls.connect(tcp, Duration::from_secs(5)).await.unwrap();
                s.write_all(b"ping").await.unwrap();
                let mut b = [0u8; 4];
                s.read_exact(&mut b).await.unwrap();
                assert_eq!(&b, b"ping");
            }
            let plain = Tls::new("127.0.0.1", Some(&ca)).unwrap();
            let tcp = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
            let refused = match plain.connect(tcp, Duration::from_secs(5)).await {
                Ok(mut s) => {
                    // TLS 1.3: the client learns of the refusal on its first read.
                    let _ = s.write_all(b"ping").await;
                    let mut b = [0u8; 4];
                    s.read_exact(&mut b).await.is_err()
                }
                Err(_) => true,
            };
            assert!(refused, "a server that requires a certificate took none");
            assert_eq!(server.await.unwrap(), 3);
            let seen = rec.seen.lock().unwrap();
            assert_eq!(
                seen.len(),
                3,
                "one full handshake with the certificate each"
            );
            assert!(seen.iter().all(|c| *c == client.current_der()));
        });
    }

    #[test]
    fn refusals_say_what_to_change() {
        let ca = Tls::new("h", None).unwrap();
        let refused = |e| ca.hint(&rustls::Error::InvalidCertificate(e));
        assert!(refused(CertificateError::UnknownIssuer).contains("?tls-ca=FILE"));
        assert!(refused(CertificateError::NotValidForName).contains("?fsid= and ?region="));
        assert!(refused(CertificateError::Expired).contains("clock"));
        let not_tls = rustls::Error::InvalidMessage(rustls::InvalidMessage::InvalidContentType);
        assert!(ca.hint(&not_tls).contains("does not seem to speak TLS"));
    }
}
