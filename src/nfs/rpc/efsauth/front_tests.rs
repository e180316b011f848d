//! A fake EFS front: a TLS server that requires a client certificate and checks it the
//! way EFS presumably does (efs-utils says what the certificate carries, not how EFS
//! judges it): the handshake proves the key, the SigV4 signature is recomputed from a
//! known secret over the certificate's own key hash, and fs id, access point, token and
//! validity are compared. It accepts nfsync's certificate and refuses a wrong secret, a
//! missing session token and an expired certificate.
//!
//! The certificate is read with a small DER walker written for this test, not with the
//! code that wrote it.

use std::sync::{Arc, Mutex};

use ring::digest;
use rustls::pki_types::CertificateDer;

use crate::nfs::rpc::test_verifier::{Judge, Requiring, server_cert};

use super::cert::Credentials;
use super::client_cert::ClientCert;
use super::creds::Found;
use super::key::ClientKey;
use super::sigv4;
use super::target::EfsTarget;
use super::time::UtcTime;

/// One TLV: (tag, content, what follows).
fn tlv(b: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let (&tag, rest) = b.split_first()?;
    let (&first, rest) = rest.split_first()?;
    let (len, rest) = if first < 0x80 {
        (first as usize, rest)
    } else {
        let n = (first & 0x7f) as usize;
        let (len, rest) = (rest.get(..n)?, rest.get(n..)?);
        (len.iter().fold(0usize, |a, &b| a << 8 | b as usize), rest)
    };
    Some((tag, rest.get(..len)?, rest.get(len..)?))
}

/// The TLVs inside a constructed value.
fn children(mut b: &[u8]) -> Option<Vec<(u8, &[u8])>> {
    let mut out = Vec::new();
    while !b.is_empty() {
        let (t, c, rest) = tlv(b)?;
        out.push((t, c));
        b = rest;
    }
    Some(out)
}

/// `YYMMDDHHMMSSZ` as a Unix time (years 1950–2049, RFC 5280).
fn utc_time(c: &[u8]) -> Option<i64> {
    let s = std::str::from_utf8(c).ok()?;
    let yy: i64 = s.get(0..2)?.parse().ok()?;
    let year = if yy < 50 { 2000 + yy } else { 1900 + yy };
    let iso = format!(
        "{year}-{}-{}T{}:{}:{}Z",
        s.get(2..4)?,
        s.get(4..6)?,
        s.get(6..8)?,
        s.get(8..10)?,
        s.get(10..12)?
    );
    UtcTime::parse_iso(&iso).map(UtcTime::unix)
}

/// What the front knows: the file system, its region, and the secrets of the keys it
/// accepts (with the session token each needs).
#[derive(Debug)]
struct Front {
    fs_id: String,
    region: String,
    access_point: Option<String>,
    known: Vec<Credentials>,
    now: i64,
    verdicts: Mutex<Vec<Result<(), String>>>,
}

impl Front {
    fn check(&self, der: &[u8]) -> Result<(), String> {
        let bad = || "malformed certificate".to_string();
        let (_, cert, _) = tlv(der).ok_or_else(bad)?;
        let (_, tbs, _) = tlv(cert).ok_or_else(bad)?;
        let f = children(tbs).ok_or_else(bad)?;
        // version, serial, algorithm, issuer, validity, subject, spki, [3] extensions
        let validity = children(f[4].1).ok_or_else(bad)?;
        let (nb, na) = (
            utc_time(validity[0].1).ok_or_else(bad)?,
            utc_time(validity[1].1).ok_or_else(bad)?,
        );
        if self.now < nb || self.now > na {
            return Err("certificate not valid now".into());
        }
        let spki = children(f[6].1).ok_or_else(bad)?;
        let rsa_public_key = &spki[1].1[1..];
        let hash: String = digest::digest(&digest::SHA1_FOR_LEGACY_USE_ONLY, rsa_public_key)
            .as_ref()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        let (_, exts, _) = tlv(f[7].1).ok_or_else(bad)?;
        let mut ext = std::collections::HashMap::new();
        for (_, e) in children(exts).ok_or_else(bad)? {
            // extnID, extnValue (OCTET STRING holding the value's DER)
            let parts = children(e).ok_or_else(bad)?;
            ext.insert(parts[0].1.to_vec(), parts[1].1.to_vec());
        }
        let efs = |n: u8| {
            let oid = [0x2b, 6, 1, 4, 1, 0xa5, 0x6b, 7, n];
            ext.get(&oid[..]).cloned()
        };
        let text = |v: Vec<u8>| tlv(&v).map(|(_, c, _)| String::from_utf8_lossy(c).into_owned());
        if efs(3).and_then(text).as_deref() != Some(self.fs_id.as_str()) {
            return Err("wrong file system".into());
        }
        if efs(1).and_then(text) != self.access_point {
            return Err("wrong access point".into());
        }
        let Some(iam) = efs(2) else {
            return Err("no IAM signature".into());
        };
        let (_, seq, _) = tlv(&iam).ok_or_else(bad)?;
        let parts = children(seq).ok_or_else(bad)?;
        let akid = String::from_utf8_lossy(parts[0].1).into_owned();
        let sig = String::from_utf8_lossy(parts[1].1).into_owned();
        let date = utc_time(parts[2].1).ok_or_else(bad)?;
        let token = match parts.get(3) {
            Some((0xa0, inner)) => text(inner.to_vec()),
            _ => None,
        };
        let known = self
            .known
            .iter()
            .find(|c| c.access_key_id == akid)
            .ok_or("unknown access key")?;
        if known.session_token != token {
            return Err("session token missing or wrong".into());
        }
        if (self.now - date).abs() > 15 * 60 {
            return Err("signature date too far from now".into());
        }
        let want = sigv4::signature(
            &known.secret_access_key,
            &sigv4::Request {
                public_key_hash: &hash,
                time: UtcTime::from_unix(date),
                access_key_id: &akid,
                region: &self.region,
                fs_id: &self.fs_id,
                session_token: token.as_deref(),
                service: sigv4::SERVICE,
            },
        );
        if want != sig {
            return Err("signature does not match".into());
        }
        Ok(())
    }
}

impl Judge for Front {
    fn judge(&self, cert: &CertificateDer<'_>) -> Result<(), String> {
        let verdict = self.check(cert);
        self.verdicts.lock().unwrap().push(verdict.clone());
        verdict
    }
}

fn creds(id: &str, secret: &str, token: Option<&str>) -> Credentials {
    Credentials {
        access_key_id: id.into(),
        secret_access_key: secret.into(),
        session_token: token.map(str::to_string),
    }
}

/// nfsync's certificate made at `made` with `c`, judged by the front at `now`.
fn judged(c: Credentials, made: UtcTime, now: UtcTime) -> Result<(), String> {
    let key =
        ClientKey::from_pem(include_bytes!("../../../../tests/fixtures/efs/key.pem")).unwrap();
    let target = EfsTarget {
        fs_id: "fs-0123abcd".into(),
        region: Some("eu-west-1".into()),
        access_point: Some("fsap-0123456789abcdef0".into()),
        iam: true,
        aws_profile: None,
    };
    let fetch = Box::new(move || {
        Ok(Found {
            credentials: c.clone(),
            source: "test".into(),
            expires: None,
        })
    });
    let cert = ClientCert::new(key, target, "client".into(), Some(fetch), made).unwrap();
    let front = Front {
        fs_id: "fs-0123abcd".into(),
        region: "eu-west-1".into(),
        access_point: Some("fsap-0123456789abcdef0".into()),
        known: vec![
            creds("AKIDLONG", "secret-long", None),
            creds("ASIATEMP", "secret-temp", Some("tok/en+=")),
        ],
        now: now.unix(),
        verdicts: Mutex::new(Vec::new()),
    };
    front.check(&cert.current_der())
}

#[test]
fn the_front_accepts_nfsync_and_refuses_what_it_should() {
    let now = UtcTime::now();
    assert_eq!(
        judged(creds("AKIDLONG", "secret-long", None), now, now),
        Ok(())
    );
    assert_eq!(
        judged(creds("ASIATEMP", "secret-temp", Some("tok/en+=")), now, now),
        Ok(())
    );
    let refused = |c, made: UtcTime| judged(c, made, now).unwrap_err();
    assert!(refused(creds("AKIDLONG", "wrong", None), now).contains("signature"));
    assert!(refused(creds("ASIATEMP", "secret-temp", None), now).contains("token"));
    assert!(refused(creds("AKIDLONG", "secret-long", None), now.plus(-4 * 3600)).contains("valid"));
    assert!(refused(creds("NOBODY", "x", None), now).contains("unknown"));
}

/// The same judgement inside a TLS handshake: the front refuses the connection of a
/// wrong secret and takes nfsync's, through [`super::super::tls::Tls`].
#[test]
fn the_front_judges_in_the_handshake() {
    use rustls::pki_types::PrivateKeyDer;
    use rustls::pki_types::pem::PemObject;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let dir = tempfile::tempdir().unwrap();
    let (cert, key) = server_cert(dir.path());
    let front = Arc::new(Front {
        fs_id: "fs-0123abcd".into(),
        region: "eu-west-1".into(),
        access_point: None,
        known: vec![creds("AKIDLONG", "secret-long", None)],
        now: UtcTime::now().unix(),
        verdicts: Mutex::new(Vec::new()),
    });
    let verifier = Requiring::new(front.clone());
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
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = l.local_addr().unwrap().port();
        tokio::spawn(async move {
            while let Ok((tcp, _)) = l.accept().await {
                if let Ok(mut s) = acceptor.accept(tcp).await {
                    let mut b = [0u8; 4];
                    if s.read_exact(&mut b).await.is_ok() {
                        let _ = s.write_all(&b).await;
                    }
                }
            }
        });
        let mut results = Vec::new();
        for secret in ["secret-long", "wrong"] {
            let key = ClientKey::from_pem(include_bytes!("../../../../tests/fixtures/efs/key.pem"))
                .unwrap();
            let target = EfsTarget {
                fs_id: "fs-0123abcd".into(),
                region: Some("eu-west-1".into()),
                access_point: None,
                iam: true,
                aws_profile: None,
            };
            let c = creds("AKIDLONG", secret, None);
            let fetch = Box::new(move || {
                Ok(Found {
                    credentials: c.clone(),
                    source: "test".into(),
                    expires: None,
                })
            });
            let client = Arc::new(
                ClientCert::new(key, target, "h".into(), Some(fetch), UtcTime::now()).unwrap(),
            );
            let tls =
                super::super::tls::Tls::with_client_cert("127.0.0.1", Some(&cert), client).unwrap();
            let tcp = tokio::net::TcpStream::connect(("127.0.0.1", port))
                .await
                .unwrap();
            let ok = match tls.connect(tcp, std::time::Duration::from_secs(5)).await {
                Ok(mut s) => {
                    let _ = s.write_all(b"ping").await;
                    let mut b = [0u8; 4];
                    s.read_exact(&mut b).await.is_ok() && &b == b"ping"
                }
                Err(_) => false,
            };
            results.push(ok);
        }
        assert_eq!(results, [true, false]);
    });
    let v = front.verdicts.lock().unwrap();
    assert_eq!(v.len(), 2);
    assert!(
        v[0].is_ok() && v[1].as_ref().unwrap_err().contains("signature"),
        "{v:?}"
    );
}
