//! The SigV4 variant efs-utils puts in the client certificate.
//!
//! It is a presigned `GET /?Action=Connect` to the file system, with two differences from
//! the SigV4 of AWS's documentation that make a generic library sign something else: the
//! canonical request has no blank line between the header block and the signed-headers
//! line, and the `host` header is the file system id, not a DNS name. `PublicKeyHash`
//! ties the signature to the certificate's key, so a captured certificate cannot be
//! reused with another key.

use ring::{digest, hmac};

use super::time::UtcTime;

/// The service name efs-utils signs for EFS mounts.
pub const SERVICE: &str = "elasticfilesystem";

/// SHA-256 of the empty payload.
const EMPTY_PAYLOAD_SHA256: &str =
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

/// What the signature covers, besides the secret. The session token is a bearer
/// credential, so `Debug` leaves it out.
#[derive(Clone)]
pub struct Request<'a> {
    /// Lowercase hex SHA-1 of the certificate's RSAPublicKey.
    pub public_key_hash: &'a str,
    /// The one instant of the certificate: signature date and validity start from it.
    pub time: UtcTime,
    pub access_key_id: &'a str,
    pub region: &'a str,
    pub fs_id: &'a str,
    pub session_token: Option<&'a str>,
    /// [`SERVICE`] for EFS.
    pub service: &'a str,
}

impl std::fmt::Debug for Request<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Request")
            .field("public_key_hash", &self.public_key_hash)
            .field("time", &self.time)
            .field("access_key_id", &self.access_key_id)
            .field("region", &self.region)
            .field("fs_id", &self.fs_id)
            .field("session_token", &self.session_token.map(|_| "<redacted>"))
            .field("service", &self.service)
            .finish()
    }
}

/// Python's `urllib.parse.quote_plus`, which efs-utils uses: unreserved characters stay,
/// space becomes `+`, every other byte `%XX` in uppercase.
pub fn quote_plus(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for &b in s.as_bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'_' | b'.' | b'-' | b'~' => {
                out.push(b as char)
            }
            b' ' => out.push('+'),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn scope(r: &Request) -> String {
    format!(
        "{}/{}/{}/aws4_request",
        r.time.date_compact(),
        r.region,
        r.service
    )
}

/// The canonical request, as efs-utils builds it (no trailing newline).
pub fn canonical_request(r: &Request) -> String {
    let credential = quote_plus(&format!("{}/{}", r.access_key_id, scope(r)));
    let mut query = vec![
        ("Action", "Connect".to_string()),
        ("PublicKeyHash", quote_plus(r.public_key_hash)),
        ("X-Amz-Algorithm", "AWS4-HMAC-SHA256".to_string()),
        ("X-Amz-Credential", credential),
        ("X-Amz-Date", quote_plus(&r.time.amz_date())),
        ("X-Amz-Expires", "86400".to_string()),
        ("X-Amz-SignedHeaders", "host".to_string()),
    ];
    if let Some(token) = r.session_token.filter(|t| !t.is_empty()) {
        query.push(("X-Amz-Security-Token", quote_plus(token)));
    }
    query.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
    let query: Vec<String> = query.iter().map(|(k, v)| format!("{k}={v}")).collect();
    format!(
        "GET\n/\n{}\nhost:{}\nhost\n{EMPTY_PAYLOAD_SHA256}",
        query.join("&"),
        r.fs_id
    )
}

/// The string to sign for a canonical request.
pub fn string_to_sign(r: &Request, canonical_request: &str) -> String {
    let hash = digest::digest(&digest::SHA256, canonical_request.as_bytes());
    format!(
        "AWS4-HMAC-SHA256\n{}\n{}\n{}",
        r.time.amz_date(),
        scope(r),
        hex(hash.as_ref())
    )
}

/// The signing key chain of SigV4: date, region, service, `aws4_request`.
fn signing_key(secret: &str, r: &Request) -> hmac::Tag {
    let step =
        |key: &[u8], msg: &str| hmac::sign(&hmac::Key::new(hmac::HMAC_SHA256, key), msg.as_bytes());
    let k = step(format!("AWS4{secret}").as_bytes(), &r.time.date_compact());
    let k = step(k.as_ref(), r.region);
    let k = step(k.as_ref(), r.service);
    step(k.as_ref(), "aws4_request")
}

/// The lowercase hex signature of a string to sign.
pub fn sign_string(secret: &str, r: &Request, string_to_sign: &str) -> String {
    let key = hmac::Key::new(hmac::HMAC_SHA256, signing_key(secret, r).as_ref());
    hex(hmac::sign(&key, string_to_sign.as_bytes()).as_ref())
}

/// The signature that goes into the certificate (64 lowercase hex characters).
pub fn signature(secret: &str, r: &Request) -> String {
    sign_string(secret, r, &string_to_sign(r, &canonical_request(r)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// efs-utils' tests' inputs: 2000-01-01 12:00:00 UTC, us-east-1, fs-deadbeef.
    fn request<'a>(hash: &'a str, token: Option<&'a str>) -> Request<'a> {
        Request {
            public_key_hash: hash,
            time: UtcTime::from_unix(946_728_000),
            access_key_id: "FAKE_AWS_ACCESS_KEY_ID",
            region: "us-east-1",
            fs_id: "fs-deadbeef",
            session_token: token,
            service: SERVICE,
        }
    }
    const SECRET: &str = "FAKE_AWS_SECRET_ACCESS_KEY";

    #[test]
    fn canonical_request_is_efs_utils_own() {
        assert_eq!(
            canonical_request(&request("fake_public_key_hash", None)),
            "GET\n/\nAction=Connect&PublicKeyHash=fake_public_key_hash&X-Amz-Algorithm=AWS4-HMAC-SHA256\
             &X-Amz-Credential=FAKE_AWS_ACCESS_KEY_ID%2F20000101%2Fus-east-1%2Felasticfilesystem%2Faws4_request\
             &X-Amz-Date=20000101T120000Z&X-Amz-Expires=86400&X-Amz-SignedHeaders=host\nhost:fs-deadbeef\nhost\n\
             e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        assert_eq!(
            canonical_request(&request("fake_public_key_hash", Some("FAKE_SESSION_TOKEN"))),
            "GET\n/\nAction=Connect&PublicKeyHash=fake_public_key_hash&X-Amz-Algorithm=AWS4-HMAC-SHA256\
             &X-Amz-Credential=FAKE_AWS_ACCESS_KEY_ID%2F20000101%2Fus-east-1%2Felasticfilesystem%2Faws4_request\
             &X-Amz-Date=20000101T120000Z&X-Amz-Expires=86400&X-Amz-Security-Token=FAKE_SESSION_TOKEN\
             &X-Amz-SignedHeaders=host\nhost:fs-deadbeef\nhost\n\
             e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }

    #[test]
    fn string_to_sign_and_signature_match_efs_utils_tests() {
        let r = request("x", None);
        assert_eq!(
            string_to_sign(&r, "canonical_request"),
            "AWS4-HMAC-SHA256\n20000101T120000Z\n20000101/us-east-1/elasticfilesystem/aws4_request\n\
             572b1e335109068b81e4def81524c5fe5d0e385143b5656cbf2f7c88e5c1a51e"
        );
        assert_eq!(
            sign_string(SECRET, &r, "string_to_sign"),
            "6aa643803d4a1b07c5ac87bff96347ef28dab1cb5a5c5d63969c90ca11454c4a"
        );
    }

    #[test]
    fn end_to_end_with_and_without_token() {
        let hash = "d9c2a68f2c4de49982e310d95e539a89abd6bc13";
        for (token, sts, sig) in [
            (
                None,
                "ffbd83907f0f517fff1d703e17ffbe7eac76fac318334e6764a80cf1bf42bc1e",
                "2dac14f3502501eb8f8c7b31489f10ae208309303262228d02ab1db77b19d985",
            ),
            (
                Some("FAKE_SESSION_TOKEN"),
                "e7d4cf8cc49eba46358d4bba8d3d88bb982455602211c8a0692296a198f8ee04",
                "6ecac889393bad36373b96bd95e7ba94f0692e0e46d65c5c1773ad2460e19be9",
            ),
        ] {
            let r = request(hash, token);
            let s = string_to_sign(&r, &canonical_request(&r));
            assert!(s.ends_with(sts), "{s}");
            assert_eq!(signature(SECRET, &r), sig);
        }
    }

    /// The key chain is standard SigV4: AWS's published "get-vanilla" vector.
    #[test]
    fn signing_key_matches_aws_published_vector() {
        let mut r = request("x", None);
        r.time = UtcTime::from_unix(1_440_938_160); // 2015-08-30T12:36:00Z
        r.service = "iam";
        let secret = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";
        assert_eq!(
            hex(signing_key(secret, &r).as_ref()),
            "c4afb1cc5771d871763a393e44b703571b55cc28424d1a5e86da6ed3c154a4b9"
        );
        r.service = "service";
        let vanilla = "AWS4-HMAC-SHA256\n20150830T123600Z\n20150830/us-east-1/service/aws4_request\n\
                       bb579772317eb040ac9ed261061d46c1f17a8133879d6129b6e1c25292927e63";
        assert_eq!(
            sign_string(secret, &r, vanilla),
            "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"
        );
    }

    #[test]
    fn quote_plus_is_pythons() {
        assert_eq!(quote_plus("a/b+c=d e~_.-"), "a%2Fb%2Bc%3Dd+e~_.-");
        assert_eq!(quote_plus("é"), "%C3%A9");
    }

    #[test]
    fn debug_hides_the_session_token() {
        let shown = format!("{:?}", request("h", Some("FwoGZXIvYXdzSECRET")));
        assert!(!shown.contains("FwoGZXIvYXdzSECRET"), "{shown}");
        assert!(
            shown.contains("<redacted>") && shown.contains("fs-deadbeef"),
            "{shown}"
        );
    }
}
