//! The client certificate, DER-identical to what efs-utils' `openssl ca -selfsign` makes.
//!
//! Self-signed with the host's key, subject = issuer = one CN (the host name), valid
//! from 15 minutes before to 3 hours after the instant it is made, with extensions in
//! efs-utils' order: subject key id, access point, IAM signature, fs id, client info.
//! There is no CA: without the IAM extension the certificate proves nothing; with it,
//! the SigV4 signature over the key's hash is what EFS can check.

use super::der;
use super::key::ClientKey;
use super::sigv4;
use super::time::UtcTime;

/// AWS credentials, as the SDKs name their parts. `Debug` shows the key id only (it
/// names the key, as AWS's own logs do; the secret and the token are the key).
#[derive(Clone, PartialEq, Eq)]
pub struct Credentials {
    pub access_key_id: String,
    pub secret_access_key: String,
    pub session_token: Option<String>,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials")
            .field("access_key_id", &self.access_key_id)
            .field("secret_access_key", &"<redacted>")
            .field(
                "session_token",
                &self.session_token.as_ref().map(|_| "<redacted>"),
            )
            .finish()
    }
}

/// The client-info extension: who is mounting, and which efs-utils behaviour it follows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClientInfo {
    pub source: String,
    pub efs_utils_version: String,
}

impl ClientInfo {
    /// What nfsync sends: its own name as the source, and the efs-utils release whose
    /// certificate and partition binding it reproduces.
    pub fn nfsync() -> ClientInfo {
        ClientInfo {
            source: "nfsync".to_string(),
            efs_utils_version: "3.2.0".to_string(),
        }
    }
}

/// Everything a certificate says.
#[derive(Clone, Debug)]
pub struct CertRequest<'a> {
    /// The host name; efs-utils keeps its first 64 characters.
    pub common_name: &'a str,
    /// 0 for a run's first certificate, one more per renewal (as efs-utils' counter).
    pub serial: u64,
    pub time: UtcTime,
    pub region: &'a str,
    pub fs_id: &'a str,
    pub access_point: Option<&'a str>,
    pub credentials: Option<&'a Credentials>,
    pub client_info: Option<&'a ClientInfo>,
}

/// efs-utils' `NOT_BEFORE_MINS` and `NOT_AFTER_HOURS`.
pub const NOT_BEFORE_SECS: i64 = 15 * 60;
pub const NOT_AFTER_SECS: i64 = 3 * 3600;

const EFS_ARC: [u64; 8] = [1, 3, 6, 1, 4, 1, 4843, 7];

fn efs_oid(n: u64) -> Vec<u8> {
    let mut arcs = EFS_ARC.to_vec();
    arcs.push(n);
    der::oid(&arcs)
}

fn extension(oid: &[u8], value: &[u8]) -> Vec<u8> {
    der::sequence(&[oid, &der::octet_string(value)])
}

fn sha256_with_rsa() -> Vec<u8> {
    der::sequence(&[&der::oid(&[1, 2, 840, 113_549, 1, 1, 11]), &der::NULL])
}

/// The IAM extension's value: key id, signature (as hex text), date, token.
fn iam_value(key: &ClientKey, req: &CertRequest, creds: &Credentials) -> Vec<u8> {
    let token = creds.session_token.as_deref().filter(|t| !t.is_empty());
    let sig = sigv4::signature(
        &creds.secret_access_key,
        &sigv4::Request {
            public_key_hash: &key.public_key_hash(),
            time: req.time,
            access_key_id: &creds.access_key_id,
            region: req.region,
            fs_id: req.fs_id,
            session_token: token,
            service: sigv4::SERVICE,
        },
    );
    let mut parts = vec![
        der::utf8_string(&creds.access_key_id),
        der::octet_string(sig.as_bytes()),
        der::utc_time(&req.time.utc_time()),
    ];
    if let Some(t) = token {
        parts.push(der::explicit(0, &der::utf8_string(t)));
    }
    der::sequence(&parts.iter().map(Vec::as_slice).collect::<Vec<_>>())
}

/// The certificate's DER.
pub fn build(key: &ClientKey, req: &CertRequest) -> Vec<u8> {
    let cn: String = req.common_name.chars().take(64).collect();
    let name = der::sequence(&[&der::set(&[&der::sequence(&[
        &der::oid(&[2, 5, 4, 3]),
        &der::utf8_string(&cn),
    ])])]);
    let validity = der::sequence(&[
        &der::utc_time(&req.time.plus(-NOT_BEFORE_SECS).utc_time()),
        &der::utc_time(&req.time.plus(NOT_AFTER_SECS).utc_time()),
    ]);
    let mut exts = vec![extension(
        &der::oid(&[2, 5, 29, 14]),
        &der::octet_string(&key.key_id()),
    )];
    if let Some(ap) = req.access_point {
        exts.push(extension(&efs_oid(1), &der::utf8_string(ap)));
    }
    if let Some(creds) = req.credentials {
        exts.push(extension(&efs_oid(2), &iam_value(key, req, creds)));
    }
    exts.push(extension(&efs_oid(3), &der::utf8_string(req.fs_id)));
    if let Some(ci) = req.client_info {
        let v = der::sequence(&[
            &der::utf8_string(&ci.source),
            &der::utf8_string(&ci.efs_utils_version),
        ]);
        exts.push(extension(&efs_oid(4), &v));
    }
    let exts = der::sequence(&exts.iter().map(Vec::as_slice).collect::<Vec<_>>());
    let tbs = der::sequence(&[
        &der::explicit(0, &der::uint(2)),
        &der::uint(req.serial),
        &sha256_with_rsa(),
        &name,
        &validity,
        &name,
        &key.spki(),
        &der::explicit(3, &exts),
    ]);
    let sig = key.sign(&tbs);
    der::sequence(&[&tbs, &sha256_with_rsa(), &der::bit_string(&sig)])
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustls_pki_types::CertificateDer;
    use rustls_pki_types::pem::PemObject;
    use std::path::Path;

    const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/efs");

    /// Every combination efs-utils' own code made (see the fixtures' README) comes out
    /// byte for byte the same.
    #[test]
    fn der_equals_efs_utils_for_every_combination() {
        let dir = Path::new(FIXTURES);
        let key = ClientKey::from_pem(&std::fs::read(dir.join("key.pem")).unwrap()).unwrap();
        let creds = |token: Option<&str>| Credentials {
            access_key_id: "FAKE_AWS_ACCESS_KEY_ID".into(),
            secret_access_key: "FAKE_AWS_SECRET_ACCESS_KEY".into(),
            session_token: token.map(str::to_string),
        };
        let info = ClientInfo {
            source: "test".into(),
            efs_utils_version: "3.2.0".into(),
        };
        let mut checked = 0;
        for ap in [false, true] {
            for (iam, c) in [
                ("none", None),
                ("iam", Some(creds(None))),
                (
                    "token",
                    Some(creds(Some("FAKE_SESSION_TOKEN/with+odd=chars"))),
                ),
            ] {
                for ci in [false, true] {
                    let name = format!("cert-ap{}-{iam}-ci{}.pem", ap as u8, ci as u8);
                    let want = CertificateDer::from_pem_file(dir.join(&name)).unwrap();
                    let got = build(
                        &key,
                        &CertRequest {
                            common_name: "nfsync-test-host",
                            serial: 0,
                            time: UtcTime::from_unix(946_728_000),
                            region: "us-east-1",
                            fs_id: "fs-deadbeef",
                            access_point: ap.then_some("fsap-0123456789abcdef0"),
                            credentials: c.as_ref(),
                            client_info: ci.then_some(&info),
                        },
                    );
                    assert!(got == want.as_ref(), "{name} differs");
                    checked += 1;
                }
            }
        }
        assert_eq!(checked, 12);
    }

    #[test]
    fn common_name_is_cut_at_64_characters_and_serial_counts() {
        let key = ClientKey::from_pem(&std::fs::read(Path::new(FIXTURES).join("key.pem")).unwrap())
            .unwrap();
        let long = "h".repeat(80);
        let req = CertRequest {
            common_name: &long,
            serial: 300,
            time: UtcTime::from_unix(1_790_000_000),
            region: "eu-west-1",
            fs_id: "fs-0123",
            access_point: None,
            credentials: None,
            client_info: None,
        };
        let der = build(&key, &req);
        let cn = [&[0x0c, 64][..], "h".repeat(64).as_bytes()].concat();
        assert!(der.windows(66).any(|w| w == cn));
        assert!(!der.windows(67).any(|w| w[..2] == [0x0c, 65]));
        assert!(der.windows(4).any(|w| w == [2, 2, 1, 0x2c]));
    }
}
