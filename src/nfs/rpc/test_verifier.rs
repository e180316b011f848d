//! For tests of the TLS client: a client-certificate verifier (a server that requires
//! a certificate and lets a [`Judge`] decide each one, the handshake's own signatures
//! checked as rustls checks them), and a server certificate for 127.0.0.1.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::DigitallySignedStruct;
use rustls::client::danger::HandshakeSignatureValid;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, UnixTime};
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};

/// Decides a client certificate: `Err` refuses the handshake with that reason.
pub trait Judge: Send + Sync + std::fmt::Debug {
    fn judge(&self, cert: &CertificateDer<'_>) -> Result<(), String>;
}

/// Requires a client certificate and asks `judge` about it.
#[derive(Debug)]
pub struct Requiring<J> {
    pub judge: Arc<J>,
    pub provider: Arc<CryptoProvider>,
}

impl<J: Judge> Requiring<J> {
    /// A verifier for `judge` with ring's algorithms.
    pub fn new(judge: Arc<J>) -> Arc<Requiring<J>> {
        Arc::new(Requiring {
            judge,
            provider: Arc::new(rustls::crypto::ring::default_provider()),
        })
    }
}

impl<J: Judge> ClientCertVerifier for Requiring<J> {
    fn root_hint_subjects(&self) -> &[rustls::DistinguishedName] {
        &[]
    }
    fn verify_client_cert(
        &self,
        cert: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        self.judge
            .judge(cert)
            .map(|()| ClientCertVerified::assertion())
            .map_err(rustls::Error::General)
    }
    fn verify_tls12_signature(
        &self,
        m: &[u8],
        c: &CertificateDer<'_>,
        d: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        let algs = &self.provider.signature_verification_algorithms;
        rustls::crypto::verify_tls12_signature(m, c, d, algs)
    }
    fn verify_tls13_signature(
        &self,
        m: &[u8],
        c: &CertificateDer<'_>,
        d: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        let algs = &self.provider.signature_verification_algorithms;
        rustls::crypto::verify_tls13_signature(m, c, d, algs)
    }
    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

/// A self-signed server certificate for 127.0.0.1 made in `dir` by the `openssl` CLI
/// (another implementation than the one checking it): (cert PEM path, key PEM path).
pub fn server_cert(dir: &Path) -> (PathBuf, PathBuf) {
    let (cert, key) = (dir.join("srv.pem"), dir.join("srv.key"));
    let out = std::process::Command::new("openssl")
        .args([
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
        ])
        .args([
            "-subj",
            "/CN=127.0.0.1",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
        ])
        .args(["-addext", "basicConstraints=critical,CA:FALSE"])
        .arg("-keyout")
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .output()
        .expect("openssl is installed");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    (cert, key)
}
