//! A fake EFS front: a TLS server on 127.0.0.1 that requires a client certificate and
//! judges it as EFS presumably does, then relays the decrypted stream to a real NFS
//! server (through the [`PartitionShim`](super::efs_shim::PartitionShim), which answers
//! EFS's bind call).
//!
//! efs-utils says what its certificate carries (`shared/efs-protocols.md` §1), not how
//! EFS judges it; this front checks what can be checked from the outside: the validity
//! times against its own clock (which a test may set ahead), the file system id (OID
//! 7.3), the access point (7.1), and for IAM (7.2) the access key, the session token and
//! the SigV4 signature, recomputed from a secret the front knows over the certificate's
//! own key hash. The TLS handshake itself proves the client holds that key.
//!
//! Everything here is written from the spec, not with nfsync's code: a DER walker, the
//! canonical request and the signing-key chain over `ring`'s HMAC. A test through this
//! front then checks nfsync's certificate and signature against a second reading of the
//! spec, not against themselves.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use ring::{digest, hmac};
use rustls::DigitallySignedStruct;
use rustls::client::danger::HandshakeSignatureValid;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, UnixTime};
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};

use super::tls::Ca;

/// AWS credentials the front knows: a key id, its secret, and the session token a
/// temporary key must come with.
#[derive(Clone, Debug)]
pub struct Known {
    pub access_key_id: String,
    pub secret: String,
    pub token: Option<String>,
}

/// What the front serves and demands.
#[derive(Clone, Debug)]
pub struct Policy {
    pub fs_id: String,
    pub region: String,
    /// The access point a certificate must name (`None`: it must name none).
    pub access_point: Option<String>,
    /// A file system policy that requires IAM authorization: no 7.2, no access.
    pub require_iam: bool,
    pub known: Vec<Known>,
    /// Seconds the front's clock is ahead of the real one.
    pub clock_ahead: i64,
}

/// The front's verdicts so far, one per client certificate judged.
type Verdicts = Arc<Mutex<Vec<Result<(), String>>>>;

/// A running front; it stops on drop.
pub struct EfsFront {
    /// Where nfsync connects.
    pub port: u16,
    verdicts: Verdicts,
    handshakes: Arc<Mutex<usize>>,
    rt: Option<tokio::runtime::Runtime>,
}

impl EfsFront {
    /// A front on a free port with a server certificate from `ca` for only the DNS name
    /// `server` (as EFS's name only the file system), made in `dir`, judging by `policy`
    /// and relaying to 127.0.0.1:`target`.
    pub fn start(
        ca: &Ca,
        dir: &std::path::Path,
        server: &str,
        policy: Policy,
        target: u16,
    ) -> EfsFront {
        let (cert, key) = ca.server_cert_for(dir, &format!("DNS:{server}"));
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let verdicts = Verdicts::default();
        let judge = Arc::new(Judge {
            policy,
            provider: provider.clone(),
            verdicts: verdicts.clone(),
        });
        let config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_client_cert_verifier(judge)
            .with_single_cert(
                vec![CertificateDer::from_pem_file(&cert).unwrap()],
                PrivateKeyDer::from_pem_file(&key).unwrap(),
            )
            .unwrap();
        // Resumption stays on as rustls has it by default: a client that resumed would
        // finish a handshake without its certificate being judged, which
        // `handshakes_without_certificate` shows.
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let listener = rt
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap();
        let port = listener.local_addr().unwrap().port();
        let handshakes = Arc::new(Mutex::new(0));
        let done = handshakes.clone();
        rt.spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                let (acceptor, done) = (acceptor.clone(), done.clone());
                tokio::spawn(async move {
                    let Ok(mut tls) = acceptor.accept(tcp).await else {
                        return;
                    };
                    *done.lock().unwrap() += 1;
                    let Ok(mut up) = tokio::net::TcpStream::connect(("127.0.0.1", target)).await
                    else {
                        return;
                    };
                    let _ = tokio::io::copy_bidirectional(&mut tls, &mut up).await;
                });
            }
        });
        EfsFront {
            port,
            verdicts,
            handshakes,
            rt: Some(rt),
        }
    }

    /// Every verdict so far, in order.
    pub fn verdicts(&self) -> Vec<Result<(), String>> {
        self.verdicts.lock().unwrap().clone()
    }

    /// Handshakes that completed with no certificate judged for them (a resumed TLS
    /// session shows none): completed handshakes less certificates accepted.
    pub fn handshakes_without_certificate(&self) -> usize {
        let accepted = self.verdicts().iter().filter(|v| v.is_ok()).count();
        self.handshakes.lock().unwrap().saturating_sub(accepted)
    }
}

impl Drop for EfsFront {
    fn drop(&mut self) {
        if let Some(rt) = self.rt.take() {
            rt.shutdown_background();
        }
    }
}

/// The client-certificate verifier: judges, records the verdict, refuses on any fault.
#[derive(Debug)]
struct Judge {
    policy: Policy,
    provider: Arc<CryptoProvider>,
    verdicts: Verdicts,
}

impl ClientCertVerifier for Judge {
    fn root_hint_subjects(&self) -> &[rustls::DistinguishedName] {
        &[]
    }
    fn verify_client_cert(
        &self,
        cert: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        let now = now_unix() + self.policy.clock_ahead;
        let verdict = judge(&self.policy, cert, now);
        self.verdicts.lock().unwrap().push(verdict.clone());
        verdict
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

fn now_unix() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

/// Accepts or refuses one client certificate (DER) at Unix time `now`.
pub fn judge(p: &Policy, der: &[u8], now: i64) -> Result<(), String> {
    let bad = |what: &str| format!("malformed certificate: {what}");
    let (_, cert, _) = tlv(der).ok_or_else(|| bad("outer"))?;
    let (_, tbs, _) = tlv(cert).ok_or_else(|| bad("tbs"))?;
    // [0] version, serial, signature algorithm, issuer, validity, subject, SPKI, [3] exts
    let f = children(tbs).ok_or_else(|| bad("tbs fields"))?;
    let field = |i: usize, tag: u8| match f.get(i) {
        Some(&(t, c)) if t == tag => Ok(c),
        _ => Err(bad(&format!("field {i}"))),
    };
    let validity = children(field(4, 0x30)?).ok_or_else(|| bad("validity"))?;
    let time = |i: usize| {
        validity
            .get(i)
            .filter(|(t, _)| *t == 0x17)
            .and_then(|(_, c)| utc_time_unix(c))
            .ok_or_else(|| bad("validity time"))
    };
    let (not_before, not_after) = (time(0)?, time(1)?);
    if now < not_before || now > not_after {
        return Err(format!(
            "certificate not valid now ({not_before}..{not_after}, now {now})"
        ));
    }
    // The key hash efs-utils signs: SHA-1 of the RSAPublicKey inside the SPKI's BIT
    // STRING, after its unused-bits octet.
    let spki = children(field(6, 0x30)?).ok_or_else(|| bad("spki"))?;
    let bits = match spki.get(1) {
        Some(&(0x03, c)) if c.first() == Some(&0) => &c[1..],
        _ => return Err(bad("spki key")),
    };
    let key_hash = hex(digest::digest(&digest::SHA1_FOR_LEGACY_USE_ONLY, bits).as_ref());
    let (_, exts, _) = tlv(field(7, 0xa3)?).ok_or_else(|| bad("extensions"))?;
    let mut ext = HashMap::new();
    for (_, e) in children(exts).ok_or_else(|| bad("extensions"))? {
        let parts = children(e).ok_or_else(|| bad("extension"))?;
        match parts.as_slice() {
            [(0x06, oid), (0x04, value)] => ext.insert(oid.to_vec(), value.to_vec()),
            _ => return Err(bad("extension (critical or odd)")),
        };
    }
    // 1.3.6.1.4.1.4843.7.n
    let efs = |n: u8| ext.get(&[0x2b, 6, 1, 4, 1, 0xa5, 0x6b, 7, n][..]).cloned();
    let utf8 = |v: &[u8]| match tlv(v) {
        Some((0x0c, c, [])) => String::from_utf8(c.to_vec()).ok(),
        _ => None,
    };
    match efs(3).as_deref().map(utf8) {
        Some(Some(id)) if id == p.fs_id => {}
        other => return Err(format!("wrong file system: {other:?}")),
    }
    let ap = efs(1).map(|v| utf8(&v).ok_or_else(|| bad("access point")));
    if ap.transpose()? != p.access_point {
        return Err("wrong access point".into());
    }
    let Some(iam) = efs(2) else {
        return match p.require_iam {
            true => Err("no IAM signature: the file system policy requires IAM".into()),
            false => Ok(()),
        };
    };
    iam_check(p, &iam, &key_hash, now)
}

/// The 7.2 extension: SEQUENCE { UTF8String key id, OCTET STRING hex signature,
/// UTCTime date, [0] EXPLICIT UTF8String token OPTIONAL }.
fn iam_check(p: &Policy, iam: &[u8], key_hash: &str, now: i64) -> Result<(), String> {
    let bad = || "malformed IAM extension".to_string();
    let (_, seq, _) = tlv(iam).filter(|(t, _, _)| *t == 0x30).ok_or_else(bad)?;
    let parts = children(seq).ok_or_else(bad)?;
    let (akid, sig, date) = match parts.as_slice() {
        [(0x0c, a), (0x04, s), (0x17, d), ..] => (*a, *s, *d),
        _ => return Err(bad()),
    };
    let token = match parts.get(3) {
        None => None,
        Some(&(0xa0, inner)) => match tlv(inner) {
            Some((0x0c, t, [])) => Some(String::from_utf8_lossy(t).into_owned()),
            _ => return Err(bad()),
        },
        Some(_) => return Err(bad()),
    };
    let akid = String::from_utf8_lossy(akid).into_owned();
    let known = p
        .known
        .iter()
        .find(|k| k.access_key_id == akid)
        .ok_or_else(|| format!("unknown access key {akid}"))?;
    if known.token != token {
        return Err("session token missing or wrong".into());
    }
    let signed_at = utc_time_unix(date).ok_or_else(bad)?;
    if (now - signed_at).abs() > 15 * 60 {
        return Err("signature date too far from now".into());
    }
    let date = std::str::from_utf8(date).map_err(|_| bad())?;
    let want = signature(p, &known.secret, &akid, token.as_deref(), key_hash, date);
    if sig != want.as_bytes() {
        return Err("signature does not match".into());
    }
    Ok(())
}

/// efs-utils' SigV4 over its `Connect` request (`shared/efs-protocols.md` §1.5), for a
/// signing time given as the certificate's UTCTime `YYMMDDHHMMSSZ`.
fn signature(
    p: &Policy,
    secret: &str,
    akid: &str,
    token: Option<&str>,
    key_hash: &str,
    utc: &str,
) -> String {
    let day = format!("20{}", &utc[0..6]);
    let amz_date = format!("{day}T{}Z", &utc[6..12]);
    let scope = format!("{day}/{}/elasticfilesystem/aws4_request", p.region);
    let mut query = format!(
        "Action=Connect&PublicKeyHash={key_hash}&X-Amz-Algorithm=AWS4-HMAC-SHA256\
         &X-Amz-Credential={}&X-Amz-Date={amz_date}&X-Amz-Expires=86400",
        quote_plus(&format!("{akid}/{scope}"))
    );
    if let Some(t) = token {
        query += &format!("&X-Amz-Security-Token={}", quote_plus(t));
    }
    query += "&X-Amz-SignedHeaders=host";
    let empty = hex(digest::digest(&digest::SHA256, b"").as_ref());
    let canonical = format!("GET\n/\n{query}\nhost:{}\nhost\n{empty}", p.fs_id);
    let to_sign = format!(
        "AWS4-HMAC-SHA256\n{amz_date}\n{scope}\n{}",
        hex(digest::digest(&digest::SHA256, canonical.as_bytes()).as_ref())
    );
    let mac = |key: &[u8], data: &str| {
        hmac::sign(&hmac::Key::new(hmac::HMAC_SHA256, key), data.as_bytes())
            .as_ref()
            .to_vec()
    };
    let mut key = mac(format!("AWS4{secret}").as_bytes(), &day);
    for part in [p.region.as_str(), "elasticfilesystem", "aws4_request"] {
        key = mac(&key, part);
    }
    hex(&mac(&key, &to_sign))
}

/// Python's `quote_plus`: unreserved bytes stay, a space is `+`, all else `%XX`.
fn quote_plus(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'_' | b'.' | b'-' | b'~' => {
                (b as char).to_string()
            }
            b' ' => "+".into(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|b| format!("{b:02x}")).collect()
}

/// One DER TLV: (tag, contents, what follows).
fn tlv(b: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let (&tag, rest) = b.split_first()?;
    let (&first, rest) = rest.split_first()?;
    let (len, rest) = if first < 0x80 {
        (first as usize, rest)
    } else {
        let n = (first & 0x7f) as usize;
        let len = rest
            .get(..n)?
            .iter()
            .fold(0usize, |a, &b| a << 8 | b as usize);
        (len, rest.get(n..)?)
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

/// A UTCTime `YYMMDDHHMMSSZ` (years 1950–2049, RFC 5280) as Unix time.
fn utc_time_unix(c: &[u8]) -> Option<i64> {
    let s = std::str::from_utf8(c).ok()?;
    if s.len() != 13 || !s.ends_with('Z') {
        return None;
    }
    let n = |i: usize| s.get(i..i + 2)?.parse::<i64>().ok();
    let yy = n(0)?;
    let year = if yy < 50 { 2000 + yy } else { 1900 + yy };
    let days = days_from_civil(year, n(2)?, n(4)?);
    Some(days * 86400 + n(6)? * 3600 + n(8)? * 60 + n(10)?)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The front's own arithmetic against the spec's published values, so a fault in it is
/// not mistaken for one in nfsync.
#[test]
fn the_front_computes_the_spec_vectors() {
    assert_eq!(utc_time_unix(b"000101120000Z"), Some(946_728_000));
    assert_eq!(utc_time_unix(b"491231235959Z"), Some(2_524_607_999));
    let p = Policy {
        fs_id: "fs-deadbeef".into(),
        region: "us-east-1".into(),
        access_point: None,
        require_iam: true,
        known: vec![],
        clock_ahead: 0,
    };
    let hash = "d9c2a68f2c4de49982e310d95e539a89abd6bc13";
    let (akid, secret) = ("FAKE_AWS_ACCESS_KEY_ID", "FAKE_AWS_SECRET_ACCESS_KEY");
    assert_eq!(
        signature(&p, secret, akid, None, hash, "000101120000Z"),
        "2dac14f3502501eb8f8c7b31489f10ae208309303262228d02ab1db77b19d985"
    );
    assert_eq!(
        signature(
            &p,
            secret,
            akid,
            Some("FAKE_SESSION_TOKEN"),
            hash,
            "000101120000Z"
        ),
        "6ecac889393bad36373b96bd95e7ba94f0692e0e46d65c5c1773ad2460e19be9"
    );
    assert_eq!(quote_plus("a/b+c= d~"), "a%2Fb%2Bc%3D+d~");
}
