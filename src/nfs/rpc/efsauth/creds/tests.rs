//! The chain against loopback fakes of IMDSv2, the container endpoint and STS, and
//! profile files in a temporary HOME. No test reads or changes the process environment.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::*;

/// A fake HTTP server on 127.0.0.1: answers each request (each connection on its own
/// thread, so a hung one does not hold up the next) with `answer(request head)` and
/// keeps the heads it saw.
pub(super) struct Fake {
    port: u16,
    seen: Arc<Mutex<Vec<String>>>,
}

impl Fake {
    pub(super) fn start(
        answer: impl Fn(&str) -> Option<(u16, String)> + Send + Sync + 'static,
    ) -> Fake {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let s = seen.clone();
        let answer = Arc::new(answer);
        std::thread::spawn(move || {
            for conn in l.incoming() {
                let Ok(mut c) = conn else { return };
                let (s, answer) = (s.clone(), answer.clone());
                std::thread::spawn(move || {
                    c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
                    let mut head = Vec::new();
                    let mut b = [0u8; 1];
                    while !head.ends_with(b"\r\n\r\n") && c.read(&mut b).unwrap_or(0) == 1 {
                        head.push(b[0]);
                    }
                    let head = String::from_utf8_lossy(&head).into_owned();
                    s.lock().unwrap().push(head.clone());
                    match answer(&head) {
                        Some((status, body)) => {
                            let _ = write!(
                                c,
                                "HTTP/1.1 {status} X\r\nContent-Length: {}\r\n\r\n{body}",
                                body.len()
                            );
                        }
                        // Say nothing and keep the connection open: a hung endpoint.
                        None => std::thread::sleep(Duration::from_secs(10)),
                    }
                });
            }
        });
        Fake { port, seen }
    }

    pub(super) fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub(super) fn seen(&self) -> Vec<String> {
        self.seen.lock().unwrap().clone()
    }
}

/// An environment of `pairs`, with instance metadata pointed at a closed loopback port
/// unless a pair says otherwise (nothing here may reach 169.254.169.254).
pub(super) fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> + use<> {
    let closed = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut m: HashMap<String, String> = HashMap::from([(
        "AWS_EC2_METADATA_SERVICE_ENDPOINT".to_string(),
        format!("http://127.0.0.1:{closed}"),
    )]);
    for (k, v) in pairs {
        m.insert(k.to_string(), v.to_string());
    }
    move |k: &str| m.get(k).cloned()
}

pub(super) const CREDS_JSON: &str = r#"{"Code":"Success","AccessKeyId":"ASIAFAKE","SecretAccessKey":"fakesecret","Token":"faketoken","Expiration":"2030-01-02T03:04:05Z"}"#;

pub(super) fn keys(f: &Found) -> (&str, &str, Option<&str>) {
    let c = &f.credentials;
    (
        &c.access_key_id,
        &c.secret_access_key,
        c.session_token.as_deref(),
    )
}

#[test]
fn environment_keys_come_first() {
    let env = env_of(&[
        ("AWS_ACCESS_KEY_ID", "AKIDENV"),
        ("AWS_SECRET_ACCESS_KEY", "s"),
        ("AWS_SESSION_TOKEN", "t"),
        ("AWS_PROFILE", "nonexistent"),
    ]);
    let f = resolve(None, "us-east-1", &env).unwrap();
    assert_eq!(keys(&f), ("AKIDENV", "s", Some("t")));
    assert!(f.source.contains("environment"));
    let env = env_of(&[("AWS_ACCESS_KEY_ID", "AKIDENV")]);
    let e = resolve(None, "us-east-1", &env).unwrap_err().to_string();
    assert!(e.contains("AWS_SECRET_ACCESS_KEY is not"), "{e}");
}

#[test]
fn profiles_from_a_temporary_home() {
    let home = tempfile::tempdir().unwrap();
    let aws = home.path().join(".aws");
    std::fs::create_dir(&aws).unwrap();
    std::fs::write(
        aws.join("credentials"),
        "[default]\naws_access_key_id = AKIDDEF\naws_secret_access_key = sdef\n",
    )
    .unwrap();
    std::fs::write(
        aws.join("config"),
        "[profile ci]\naws_access_key_id=AKIDCI\naws_secret_access_key=sci\naws_session_token=tci\n\
         [profile sso]\nsso_session = corp\n",
    )
    .unwrap();
    let h = home.path().to_str().unwrap();
    let f = resolve(None, "r", &env_of(&[("HOME", h)])).unwrap();
    assert_eq!(keys(&f), ("AKIDDEF", "sdef", None));
    assert!(f.source.contains("profile default"), "{}", f.source);
    let f = resolve(None, "r", &env_of(&[("HOME", h), ("AWS_PROFILE", "ci")])).unwrap();
    assert_eq!(keys(&f), ("AKIDCI", "sci", Some("tci")));
    // The URL's profile wins over the environment's keys.
    let env = env_of(&[
        ("HOME", h),
        ("AWS_ACCESS_KEY_ID", "A"),
        ("AWS_SECRET_ACCESS_KEY", "B"),
    ]);
    assert_eq!(keys(&resolve(Some("ci"), "r", &env).unwrap()).0, "AKIDCI");
    let e = resolve(Some("nope"), "r", &env).unwrap_err().to_string();
    assert!(
        e.contains("profile nope") && e.contains(".aws/credentials"),
        "{e}"
    );
    let e = resolve(Some("sso"), "r", &env).unwrap_err().to_string();
    assert!(e.contains("sso_session"), "{e}");
    let e = resolve(None, "r", &env_of(&[("HOME", h), ("AWS_PROFILE", "x")]))
        .unwrap_err()
        .to_string();
    assert!(e.contains("profile x"), "{e}");
}

#[test]
fn imds_v2_token_then_role_then_credentials() {
    let fake = Fake::start(|head| {
        let token_ok = head.contains("\r\nX-aws-ec2-metadata-token: TOKEN42\r\n");
        Some(if head.starts_with("PUT /latest/api/token ") {
            assert!(head.contains("X-aws-ec2-metadata-token-ttl-seconds: 21600"));
            (200, "TOKEN42".into())
        } else if !token_ok {
            (401, String::new())
        } else if head.starts_with("GET /latest/meta-data/iam/security-credentials/ ") {
            (200, "my-role\n".into())
        } else if head.starts_with("GET /latest/meta-data/iam/security-credentials/my-role ") {
            (200, CREDS_JSON.into())
        } else {
            (404, String::new())
        })
    });
    let env = env_of(&[("AWS_EC2_METADATA_SERVICE_ENDPOINT", &fake.url())]);
    let f = resolve(None, "r", &env).unwrap();
    assert_eq!(keys(&f), ("ASIAFAKE", "fakesecret", Some("faketoken")));
    assert_eq!(f.source, "EC2 instance metadata, role my-role");
    assert_eq!(f.expires, UtcTime::parse_iso("2030-01-02T03:04:05Z"));
    assert_eq!(fake.seen().len(), 3);
}

/// An instance that refuses the token call (IMDSv1 only) is asked without a token; one
/// without a role is named as such.
#[test]
fn imds_without_a_token_and_without_a_role() {
    let v1 = Fake::start(|head| {
        Some(if head.starts_with("PUT ") {
            (405, String::new())
        } else if head.contains("metadata-token") {
            (400, String::new())
        } else if head.starts_with("GET /latest/meta-data/iam/security-credentials/ ") {
            (200, "r1".into())
        } else if head.starts_with("GET /latest/meta-data/iam/security-credentials/r1 ") {
            (200, CREDS_JSON.into())
        } else {
            (404, String::new())
        })
    });
    let env = env_of(&[("AWS_EC2_METADATA_SERVICE_ENDPOINT", &v1.url())]);
    assert_eq!(keys(&resolve(None, "r", &env).unwrap()).0, "ASIAFAKE");
    let no_role = Fake::start(|head| {
        Some(if head.starts_with("PUT ") {
            (200, "T".into())
        } else {
            (404, String::new())
        })
    });
    let env = env_of(&[("AWS_EC2_METADATA_SERVICE_ENDPOINT", &no_role.url())]);
    let e = resolve(None, "r", &env).unwrap_err().to_string();
    assert!(e.contains("no IAM role"), "{e}");
}

#[test]
fn pod_identity_sends_the_token_files_authorization() {
    let fake = Fake::start(|head| {
        Some(if head.contains("\r\nAuthorization: pod-token\r\n") {
            (200, CREDS_JSON.into())
        } else {
            (401, r#"{"message":"bad token"}"#.into())
        })
    });
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("token");
    std::fs::write(&file, "pod-token\n").unwrap();
    let uri = format!("{}/v1/credentials", fake.url());
    let env = env_of(&[
        ("AWS_CONTAINER_CREDENTIALS_FULL_URI", &uri),
        (
            "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE",
            file.to_str().unwrap(),
        ),
    ]);
    let f = resolve(None, "r", &env).unwrap();
    assert_eq!(keys(&f).0, "ASIAFAKE");
    assert!(fake.seen()[0].starts_with("GET /v1/credentials "));
    std::fs::write(&file, "wrong\n").unwrap();
    let e = resolve(None, "r", &env).unwrap_err().to_string();
    assert!(e.contains("401") && e.contains("FULL_URI"), "{e}");
    std::fs::write(&file, "two\nlines\n").unwrap();
    let e = resolve(None, "r", &env).unwrap_err().to_string();
    assert!(e.contains("line break"), "{e}");
}

#[test]
fn web_identity_through_sts() {
    let fake = Fake::start(|head| {
        let ok = head.starts_with("GET /?Version=2011-06-15&Action=AssumeRoleWithWebIdentity&RoleArn=arn%3Aaws%3Aiam%3A%3A1%3Arole%2Fr&RoleSessionName=nfsync&WebIdentityToken=jwt.x%2By ")
            && head.contains("\r\nAccept: application/json\r\n");
        Some(if ok {
            (200, r#"{"AssumeRoleWithWebIdentityResponse":{"AssumeRoleWithWebIdentityResult":{"Credentials":{"AccessKeyId":"ASIASTS","SecretAccessKey":"ssts","SessionToken":"tsts","Expiration":1.8934848E9}}}}"#.into())
        } else {
            (400, "bad request".into())
        })
    });
    let dir = tempfile::tempdir().unwrap();
    let jwt = dir.path().join("jwt");
    std::fs::write(&jwt, "jwt.x+y").unwrap();
    let env = env_of(&[
        ("AWS_ROLE_ARN", "arn:aws:iam::1:role/r"),
        ("AWS_WEB_IDENTITY_TOKEN_FILE", jwt.to_str().unwrap()),
        ("AWS_ENDPOINT_URL_STS", &fake.url()),
    ]);
    let f = resolve(None, "eu-west-1", &env).unwrap();
    assert_eq!(keys(&f), ("ASIASTS", "ssts", Some("tsts")));
    assert_eq!(f.expires.map(UtcTime::unix), Some(1_893_484_800));
    assert!(f.source.contains("web identity"), "{}", f.source);
}

/// Nothing configured, instance metadata closed or silent: one line naming every
/// source, within a few seconds.
#[test]
fn missing_credentials_name_what_was_tried_in_bounded_time() {
    let home = tempfile::tempdir().unwrap();
    let h = home.path().to_str().unwrap();
    let t = Instant::now();
    let e = resolve(None, "r", &env_of(&[("HOME", h)])).unwrap_err();
    let msg = e.to_string();
    assert!(matches!(e, CredError::Missing(_)));
    for what in [
        "AWS_ACCESS_KEY_ID",
        "AWS_ROLE_ARN",
        "profile default",
        "AWS_CONTAINER_CREDENTIALS",
        "EC2 instance metadata",
    ] {
        assert!(msg.contains(what), "{what} not in {msg}");
    }
    assert!(!msg.contains('\n'));
    let silent = Fake::start(|_| None);
    let env = env_of(&[
        ("HOME", h),
        ("AWS_EC2_METADATA_SERVICE_ENDPOINT", &silent.url()),
    ]);
    let e = resolve(None, "r", &env).unwrap_err();
    assert!(matches!(e, CredError::Missing(_)), "{e}");
    assert!(t.elapsed() < Duration::from_secs(8), "{:?}", t.elapsed());
    let e = resolve(None, "r", &env_of(&[("AWS_EC2_METADATA_DISABLED", "true")])).unwrap_err();
    assert!(e.to_string().contains("AWS_EC2_METADATA_DISABLED"), "{e}");
}

/// A one-shot HTTPS server on 127.0.0.1 (certificate for 127.0.0.1 by the `openssl`
/// CLI, the CA file for `AWS_CA_BUNDLE`) answering every request with `body`.
fn https_fake(dir: &std::path::Path, body: &'static str) -> (u16, std::path::PathBuf) {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let (cert, key) = crate::nfs::rpc::test_verifier::server_cert(dir);
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(
        vec![CertificateDer::from_pem_file(&cert).unwrap()],
        PrivateKeyDer::from_pem_file(&key).unwrap(),
    )
    .unwrap();
    let config = Arc::new(config);
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for conn in l.incoming().take(2) {
            let Ok(tcp) = conn else { return };
            tcp.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
            let c = rustls::ServerConnection::new(config.clone()).unwrap();
            let mut s = rustls::StreamOwned::new(c, tcp);
            let mut head = Vec::new();
            let mut b = [0u8; 1];
            while !head.ends_with(b"\r\n\r\n") && s.read(&mut b).unwrap_or(0) == 1 {
                head.push(b[0]);
            }
            if head.is_empty() {
                continue;
            }
            let _ = write!(
                s,
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            );
            s.conn.send_close_notify();
            let _ = s.flush();
        }
    });
    (port, cert)
}

/// STS over HTTPS, trusting the test CA through `AWS_CA_BUNDLE`; without it the public
/// roots refuse the certificate and the search ends there, with the reason.
#[test]
fn web_identity_over_https_with_a_test_ca() {
    let dir = tempfile::tempdir().unwrap();
    let (port, ca) = https_fake(
        dir.path(),
        r#"{"AssumeRoleWithWebIdentityResponse":{"AssumeRoleWithWebIdentityResult":{"Credentials":{"AccessKeyId":"ASIATLS","SecretAccessKey":"s","SessionToken":"t","Expiration":1893484800}}}}"#,
    );
    let jwt = dir.path().join("jwt");
    std::fs::write(&jwt, "jwt").unwrap();
    let endpoint = format!("https://127.0.0.1:{port}");
    let base = [
        ("AWS_ROLE_ARN", "arn:aws:iam::1:role/r"),
        ("AWS_WEB_IDENTITY_TOKEN_FILE", jwt.to_str().unwrap()),
        ("AWS_ENDPOINT_URL_STS", endpoint.as_str()),
    ];
    let e = resolve(None, "r", &env_of(&base)).unwrap_err().to_string();
    assert!(
        e.contains("web identity") && e.contains("UnknownIssuer"),
        "{e}"
    );
    let mut with_ca = base.to_vec();
    with_ca.push(("AWS_CA_BUNDLE", ca.to_str().unwrap()));
    let f = resolve(None, "r", &env_of(&with_ca)).unwrap();
    assert_eq!(keys(&f), ("ASIATLS", "s", Some("t")));
}

#[test]
fn ecs_relative_uri_goes_to_the_ecs_agent_before_a_full_uri() {
    let env = env_of(&[
        (
            "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
            "/v2/credentials/abc",
        ),
        ("AWS_CONTAINER_CREDENTIALS_FULL_URI", "http://127.0.0.1:1/x"),
    ]);
    let (url, name) = super::remote::container_endpoint(&env).unwrap();
    assert_eq!(url, "http://169.254.170.2/v2/credentials/abc");
    assert!(name.contains("RELATIVE_URI"), "{name}");
    let env = env_of(&[("AWS_CONTAINER_CREDENTIALS_FULL_URI", "http://127.0.0.1:1/x")]);
    assert_eq!(
        super::remote::container_endpoint(&env).unwrap().0,
        "http://127.0.0.1:1/x"
    );
    assert!(super::remote::container_endpoint(&env_of(&[])).is_none());
}

/// An endpoint's error body reaches the error escaped (no raw ESC for root's
/// terminal) and cut short, from STS, the container endpoint and IMDS alike.
#[test]
fn error_bodies_are_escaped_and_cut_short() {
    let body = format!("\x1b[31mdenied\x1b]0;owned\x07{}", "x".repeat(5000));
    let b = body.clone();
    let fake = Fake::start(move |head| {
        Some(if head.starts_with("PUT ") {
            (200, "T".into())
        } else {
            (403, b.clone())
        })
    });
    let dir = tempfile::tempdir().unwrap();
    let jwt = dir.path().join("jwt");
    std::fs::write(&jwt, "jwt").unwrap();
    let uri = format!("{}/v1/credentials", fake.url());
    let envs = [
        env_of(&[
            ("AWS_ROLE_ARN", "arn:aws:iam::1:role/r"),
            ("AWS_WEB_IDENTITY_TOKEN_FILE", jwt.to_str().unwrap()),
            ("AWS_ENDPOINT_URL_STS", &fake.url()),
        ]),
        env_of(&[("AWS_CONTAINER_CREDENTIALS_FULL_URI", &uri)]),
        env_of(&[("AWS_EC2_METADATA_SERVICE_ENDPOINT", &fake.url())]),
    ];
    for env in envs {
        let e = resolve(None, "r", &env).unwrap_err().to_string();
        assert!(
            e.contains("HTTP 403: \\#033[31mdenied\\#033]0;owned\\#007xx"),
            "{e}"
        );
        assert!(!e.contains('\x1b') && !e.contains('\x07'), "{e:?}");
        assert!(e.len() < 500 && e.ends_with('…'), "{} bytes", e.len());
    }
}

/// An IMDS role name that is not one (here with an escape sequence) is refused,
/// escaped, and never put into a request.
#[test]
fn a_hostile_imds_role_name_is_refused() {
    let fake = Fake::start(|head| {
        Some(if head.starts_with("PUT ") {
            (200, "T".into())
        } else {
            (200, "r\x1b[2J x\n".into())
        })
    });
    let env = env_of(&[("AWS_EC2_METADATA_SERVICE_ENDPOINT", &fake.url())]);
    let e = resolve(None, "r", &env).unwrap_err().to_string();
    assert!(e.contains("role name r\\#033[2J x is not"), "{e}");
    assert_eq!(fake.seen().len(), 2);
}

/// A FIFO as `AWS_WEB_IDENTITY_TOKEN_FILE` (or as the shared credentials file) is
/// refused at once: nobody writing to it cannot hang the run.
#[test]
fn a_fifo_named_by_the_environment_does_not_block() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("token");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let f = fifo.to_str().unwrap().to_string();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let web = env_of(&[
            ("AWS_ROLE_ARN", "arn:aws:iam::1:role/r"),
            ("AWS_WEB_IDENTITY_TOKEN_FILE", &f),
        ]);
        let profile = env_of(&[
            ("AWS_SHARED_CREDENTIALS_FILE", &f),
            ("HOME", "/nonexistent"),
        ]);
        let errors = [&web as Env, &profile as Env]
            .map(|env| resolve(None, "r", env).unwrap_err().to_string());
        let _ = tx.send(errors);
    });
    let errors = rx
        .recv_timeout(Duration::from_secs(10))
        .expect("reading a FIFO blocked");
    for e in errors {
        assert!(
            e.contains(&format!("{} is not a regular file", fifo.display())),
            "{e}"
        );
    }
}

#[test]
fn an_oversize_token_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let big = dir.path().join("token");
    std::fs::write(&big, vec![b'a'; 2 << 20]).unwrap();
    let env = env_of(&[
        ("AWS_CONTAINER_CREDENTIALS_FULL_URI", "http://127.0.0.1:9/"),
        (
            "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE",
            big.to_str().unwrap(),
        ),
    ]);
    let e = resolve(None, "r", &env).unwrap_err().to_string();
    assert!(
        e.contains(&format!(
            "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE {}",
            big.display()
        )) && e.contains("larger than 1048576 bytes"),
        "{e}"
    );
}

/// An `Expiration` no clock can reach, or before 1970, is an error (it used to be
/// cast to an `i64` and overflow the expiry arithmetic), as is one that is no time.
#[test]
fn a_hostile_expiration_is_an_error() {
    for (exp, ok) in [
        ("1e300", false),
        ("-1e300", false),
        ("18446744073709551616", false),
        (r#""99999-01-01T00:00:00Z""#, false),
        (r#""soon""#, false),
        ("[]", false),
        ("null", true),
        ("1893484800", true),
    ] {
        let body = format!(
            r#"{{"AccessKeyId":"A","SecretAccessKey":"s","Token":"t","Expiration":{exp}}}"#
        );
        let fake = Fake::start(move |_| Some((200, body.clone())));
        let uri = format!("{}/creds", fake.url());
        let env = env_of(&[("AWS_CONTAINER_CREDENTIALS_FULL_URI", &uri)]);
        match resolve(None, "r", &env) {
            Ok(f) => assert!(ok, "{exp}: {:?}", f.expires),
            Err(e) => {
                let e = e.to_string();
                assert!(!ok && e.contains("Expiration"), "{exp}: {e}");
            }
        }
    }
}

/// No type holding credentials shows the secret key or the session token in `{:?}`.
#[test]
fn debug_never_shows_a_secret() {
    let credentials = super::super::cert::Credentials {
        access_key_id: "AKIDSHOWN".into(),
        secret_access_key: "SECRETKEY".into(),
        session_token: Some("SESSIONTOKEN".into()),
    };
    let found = Found {
        credentials: credentials.clone(),
        source: "test".into(),
        expires: None,
    };
    let request = super::super::cert::CertRequest {
        common_name: "h",
        serial: 0,
        time: UtcTime::from_unix(0),
        region: "r",
        fs_id: "fs-1",
        access_point: None,
        credentials: Some(&credentials),
        client_info: None,
    };
    let lookup = profile::Lookup::Found(credentials.clone(), "/p".into());
    for shown in [
        format!("{credentials:?}"),
        format!("{found:?}"),
        format!("{request:?}"),
        format!("{lookup:?}"),
    ] {
        assert!(
            shown.contains("AKIDSHOWN") && shown.contains("<redacted>"),
            "{shown}"
        );
        assert!(
            !shown.contains("SECRETKEY") && !shown.contains("SESSIONTOKEN"),
            "{shown}"
        );
    }
}
