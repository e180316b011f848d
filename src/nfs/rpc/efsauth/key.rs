//! The client certificate's key: RSA-3072 as efs-utils makes, one per host (kept by
//! [`super::key_store`]).
//!
//! RSA, not ECDSA, because efs-utils only ever sends RSA-3072 and whether EFS accepts
//! anything else is unknown. The `rsa` crate only makes the key (ring cannot); ring signs.

use ring::digest;
use ring::rand::SystemRandom;
use ring::signature::{KeyPair, RSA_PKCS1_SHA256, RsaKeyPair};
use rustls_pki_types::PrivatePkcs8KeyDer;
use rustls_pki_types::pem::PemObject;

use super::der;

/// The key size efs-utils makes (`openssl genpkey … rsa_keygen_bits:3072`).
pub const BITS: usize = 3072;

/// An RSA key pair with what the certificate needs of it.
pub struct ClientKey {
    pair: RsaKeyPair,
    pkcs8: Vec<u8>,
}

impl std::fmt::Debug for ClientKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ClientKey({})", self.public_key_hash())
    }
}

/// rsaEncryption with NULL parameters.
fn rsa_encryption() -> Vec<u8> {
    der::sequence(&[&der::oid(&[1, 2, 840, 113_549, 1, 1, 1]), &der::NULL])
}

impl ClientKey {
    /// A key from its PKCS#8 DER.
    pub fn from_pkcs8(pkcs8: &[u8]) -> Result<ClientKey, String> {
        let pair = RsaKeyPair::from_pkcs8(pkcs8).map_err(|e| format!("not an RSA key: {e}"))?;
        Ok(ClientKey {
            pair,
            pkcs8: pkcs8.to_vec(),
        })
    }

    /// A key from a PEM `PRIVATE KEY` (PKCS#8) text.
    pub fn from_pem(pem: &[u8]) -> Result<ClientKey, String> {
        let der = PrivatePkcs8KeyDer::from_pem_slice(pem)
            .map_err(|e| format!("no PKCS#8 PRIVATE KEY in PEM: {e}"))?;
        ClientKey::from_pkcs8(der.secret_pkcs8_der())
    }

    /// A fresh RSA-3072 key.
    pub fn generate() -> Result<ClientKey, String> {
        use rsa::pkcs8::EncodePrivateKey;
        let key = rsa::RsaPrivateKey::new(&mut rsa::rand_core::OsRng, BITS)
            .map_err(|e| format!("making an RSA key: {e}"))?;
        let der = key
            .to_pkcs8_der()
            .map_err(|e| format!("encoding the RSA key: {e}"))?;
        ClientKey::from_pkcs8(der.as_bytes())
    }

    pub fn pkcs8_der(&self) -> &[u8] {
        &self.pkcs8
    }

    /// The key as PEM, as `openssl genpkey` writes it.
    pub fn to_pem(&self) -> String {
        use rsa::pkcs8::der::pem::{LineEnding, encode_string};
        encode_string("PRIVATE KEY", LineEnding::LF, &self.pkcs8).expect("PEM of a DER key")
    }

    /// The PKCS#1 RSAPublicKey DER.
    pub fn rsa_public_key(&self) -> &[u8] {
        self.pair.public_key().as_ref()
    }

    /// SubjectPublicKeyInfo DER.
    pub fn spki(&self) -> Vec<u8> {
        der::sequence(&[&rsa_encryption(), &der::bit_string(self.rsa_public_key())])
    }

    /// SHA-1 of the RSAPublicKey: the subject key identifier and, in hex, SigV4's
    /// `PublicKeyHash`.
    pub fn key_id(&self) -> [u8; 20] {
        let d = digest::digest(&digest::SHA1_FOR_LEGACY_USE_ONLY, self.rsa_public_key());
        d.as_ref().try_into().expect("SHA-1 is 20 bytes")
    }

    pub fn public_key_hash(&self) -> String {
        self.key_id().iter().map(|b| format!("{b:02x}")).collect()
    }

    /// An RSASSA-PKCS1-v1_5 SHA-256 signature (deterministic).
    pub fn sign(&self, msg: &[u8]) -> Vec<u8> {
        let mut sig = vec![0; self.pair.public().modulus_len()];
        self.pair
            .sign(&RSA_PKCS1_SHA256, &SystemRandom::new(), msg, &mut sig)
            .expect("RSA signing with a valid key");
        sig
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The hash is the subject key id openssl computed for the fixture key (RFC 5280
    /// method 1), and the key writes back as the PEM `openssl genpkey` wrote.
    #[test]
    fn key_hash_is_openssls_subject_key_id_and_pem_round_trips() {
        let pem = include_bytes!("../../../../tests/fixtures/efs/key.pem");
        let key = ClientKey::from_pem(pem).unwrap();
        assert_eq!(
            key.public_key_hash(),
            "67b4b42c63be5924bf4f73500880db494ea57d86"
        );
        assert_eq!(key.spki().len(), 422);
        assert_eq!(key.to_pem().as_bytes(), &pem[..]);
    }
}
