//! A client-certificate verifier for tests of the TLS client: a server that requires a
//! certificate and lets a [`Judge`] decide each one, the handshake's own signatures
//! checked as rustls checks them.

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
