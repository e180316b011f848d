//! The client certificate's key: RSA-3072 as efs-utils makes, one per host, kept in a
//! file of mode 0600 so every run (and every concurrent run) signs with the same key.
//!
//! Where: as root `/var/lib/nfsync/efs-client-key.pem`; otherwise
//! `$XDG_STATE_HOME/nfsync/efs-client-key.pem`, `$XDG_STATE_HOME` defaulting to
//! `~/.local/state` (the XDG base directory spec's place for state that survives a
//! reboot but is not worth backing up). `NFSYNC_EFS_KEY` names another file.
//!
//! RSA, not ECDSA, because efs-utils only ever sends RSA-3072 and whether EFS accepts
//! anything else is unknown. The `rsa` crate only makes the key (ring cannot); ring signs.

use std::fs;
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

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

/// Where the host's key lives (see the module doc).
pub fn default_path() -> Option<PathBuf> {
    let is_root = rustix::process::geteuid().is_root();
    path_for(is_root, &|k| std::env::var_os(k).filter(|v| !v.is_empty()))
}

fn path_for(is_root: bool, env: &dyn Fn(&str) -> Option<std::ffi::OsString>) -> Option<PathBuf> {
    if let Some(p) = env("NFSYNC_EFS_KEY") {
        return Some(PathBuf::from(p));
    }
    let dir = if is_root {
        PathBuf::from("/var/lib/nfsync")
    } else if let Some(s) = env("XDG_STATE_HOME") {
        PathBuf::from(s).join("nfsync")
    } else {
        PathBuf::from(env("HOME")?).join(".local/state/nfsync")
    };
    Some(dir.join("efs-client-key.pem"))
}

/// The key at `path`, made (mode 0600, directory 0700) if there is none.
///
/// Concurrent runs may both make one; each writes a private temporary file and links it
/// into place, so the file is never half-written and the loser takes the winner's key.
pub fn load_or_create(path: &Path) -> Result<ClientKey, String> {
    let shown = path.display();
    match fs::read(path) {
        Ok(pem) => return ClientKey::from_pem(&pem).map_err(|e| format!("{shown}: {e}")),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(format!("reading the EFS client key {shown}: {e}")),
    }
    let dir = path.parent().unwrap_or(Path::new("."));
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| format!("making {}: {e}", dir.display()))?;
    let key = ClientKey::generate()?;
    static MADE: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let tmp = dir.join(format!(
        ".efs-client-key.{}.{}.tmp",
        rustix::process::getpid().as_raw_nonzero(),
        MADE.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    ));
    let write = || -> io::Result<()> {
        let mut f = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)?;
        f.write_all(key.to_pem().as_bytes())?;
        f.sync_all()
    };
    let written = write();
    let linked = written.as_ref().map(|()| fs::hard_link(&tmp, path));
    let _ = fs::remove_file(&tmp);
    match linked {
        Ok(Ok(())) => Ok(key),
        Err(e) => Err(format!("writing the EFS client key {}: {e}", tmp.display())),
        // Another run linked its key first: that one is the host's.
        Ok(Err(e)) if e.kind() == io::ErrorKind::AlreadyExists => {
            let pem = fs::read(path).map_err(|e| format!("reading {shown}: {e}"))?;
            ClientKey::from_pem(&pem).map_err(|e| format!("{shown}: {e}"))
        }
        Ok(Err(e)) => Err(format!("writing the EFS client key {shown}: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

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

    #[test]
    fn where_the_key_lives() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |k: &str| {
                pairs
                    .iter()
                    .find(|(n, _)| *n == k)
                    .map(|(_, v)| std::ffi::OsString::from(v))
            }
        };
        let p = |root, e: &dyn Fn(&str) -> Option<std::ffi::OsString>| {
            path_for(root, e).map(|p| p.display().to_string())
        };
        let home = env(&[("HOME", "/home/u")]);
        assert_eq!(
            p(true, &home).unwrap(),
            "/var/lib/nfsync/efs-client-key.pem"
        );
        assert_eq!(
            p(false, &home).unwrap(),
            "/home/u/.local/state/nfsync/efs-client-key.pem"
        );
        let xdg = env(&[("HOME", "/home/u"), ("XDG_STATE_HOME", "/s")]);
        assert_eq!(p(false, &xdg).unwrap(), "/s/nfsync/efs-client-key.pem");
        let named = env(&[("NFSYNC_EFS_KEY", "/k.pem")]);
        assert_eq!(p(true, &named).unwrap(), "/k.pem");
        assert_eq!(p(false, &env(&[])), None);
    }

    /// Two runs making the key at once end up with one key, and no temporary file.
    #[test]
    fn concurrent_makers_agree() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("key.pem");
        let keys: Vec<Vec<u8>> = std::thread::scope(|s| {
            let a = s.spawn(|| load_or_create(&path).unwrap().pkcs8_der().to_vec());
            let b = s.spawn(|| load_or_create(&path).unwrap().pkcs8_der().to_vec());
            vec![a.join().unwrap(), b.join().unwrap()]
        });
        assert_eq!(keys[0], keys[1]);
        let on_disk = ClientKey::from_pem(&fs::read(&path).unwrap()).unwrap();
        assert_eq!(on_disk.pkcs8_der(), &keys[0][..]);
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn made_once_with_mode_0600_and_then_reused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state/nfsync/key.pem");
        let a = load_or_create(&path).unwrap();
        let meta = fs::metadata(&path).unwrap();
        assert_eq!(meta.permissions().mode() & 0o777, 0o600);
        assert_eq!(
            fs::metadata(path.parent().unwrap())
                .unwrap()
                .permissions()
                .mode()
                & 0o777,
            0o700
        );
        assert_eq!(a.pair.public().modulus_len() * 8, BITS);
        let b = load_or_create(&path).unwrap();
        assert_eq!(a.pkcs8_der(), b.pkcs8_der());
        assert_eq!(fs::read_dir(path.parent().unwrap()).unwrap().count(), 1);
    }
}
