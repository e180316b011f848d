//! The certificate a run presents to an EFS host, kept fresh for new connections.
//!
//! One per run: made before the first connection (with the credentials fetched then),
//! re-made for a new connection when it is older than [`RENEW_AFTER_SECS`] or its
//! credentials are about to expire, with freshly fetched credentials. Connections
//! already up keep the certificate they were opened with (as efs-proxy does): EFS
//! checks it in the handshake, and tearing them down would only lose work.

use std::sync::{Arc, Mutex};

use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use rustls::sign::CertifiedKey;

use super::cert::{self, CertRequest, ClientInfo};
use super::creds::{self, CredError, Found};
use super::key::ClientKey;
use super::key_store;
use super::target::EfsTarget;
use super::time::UtcTime;

/// efs-utils' watchdog renews at 60 minutes; a little earlier leaves room for a slow
/// handshake and clock skew within the 3-hour validity.
pub const RENEW_AFTER_SECS: i64 = 50 * 60;
/// Credentials closer than this to their expiry are fetched again first.
pub const CREDS_MARGIN_SECS: i64 = 5 * 60;

/// Why there is no certificate.
#[derive(Debug, thiserror::Error)]
pub enum CertError {
    #[error(transparent)]
    Credentials(#[from] CredError),
    #[error("EFS client key: {0}")]
    Key(String),
}

/// Whether a certificate made at `made` must be re-made at `now`.
pub fn stale(made: UtcTime, now: UtcTime, creds_expire: Option<UtcTime>) -> bool {
    now.since(made) >= RENEW_AFTER_SECS
        || now.unix() < made.unix()
        || creds_expire.is_some_and(|e| e.since(now) <= CREDS_MARGIN_SECS)
}

struct Current {
    made: UtcTime,
    serial: u64,
    creds: Option<Found>,
    certified: Arc<CertifiedKey>,
}

/// Where credentials come from (a test gives its own).
pub(crate) type Fetch = Box<dyn Fn() -> Result<Found, CredError> + Send + Sync>;

/// What stays the same across a run's certificates.
struct Maker {
    key: ClientKey,
    signing: Arc<dyn rustls::sign::SigningKey>,
    target: EfsTarget,
    common_name: String,
    info: ClientInfo,
}

/// The run's client certificate (see the module doc).
pub struct ClientCert {
    maker: Maker,
    fetch: Option<Fetch>,
    current: Mutex<Current>,
}

impl std::fmt::Debug for ClientCert {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let m = &self.maker;
        write!(f, "ClientCert({}, {:?})", m.target.fs_id, m.key)
    }
}

/// The host name, as `socket.gethostname()` gives it to efs-utils.
fn host_name() -> String {
    let n = rustix::system::uname()
        .nodename()
        .to_string_lossy()
        .into_owned();
    if n.is_empty() { "localhost".into() } else { n }
}

impl ClientCert {
    /// The certificate for `target`, with the host's key and, for `?iam`, the process's
    /// credentials (see [`creds`]).
    ///
    /// Where the host's key cannot be kept (a pod with a read-only root filesystem, no
    /// HOME, an arbitrary uid), a key made for this run alone is used and `kept` says
    /// why; `NFSYNC_EFS_KEY` names a key file the user chose, which must then work. A
    /// key file that is there but must not be trusted is refused, never replaced.
    pub fn for_target(
        target: &EfsTarget,
        kept: &mut Option<String>,
    ) -> Result<ClientCert, CertError> {
        let fetch: Option<Fetch> = target.iam.then(|| {
            let profile = target.aws_profile.clone();
            let region = target.region.clone().unwrap_or_default();
            Box::new(move || creds::resolve_from_process(profile.as_deref(), &region)) as Fetch
        });
        // Credentials first: without them there is nothing to make a key for.
        let creds = fetch.as_ref().map(|f| f()).transpose()?;
        let chosen = std::env::var_os("NFSYNC_EFS_KEY").is_some_and(|v| !v.is_empty());
        let key = match key_store::default_path() {
            None => {
                *kept = Some("no HOME, XDG_STATE_HOME or NFSYNC_EFS_KEY".into());
                ClientKey::generate().map_err(CertError::Key)?
            }
            Some(path) => match key_store::load_or_create(&path) {
                Ok(key) => key,
                Err(key_store::Failed::Place(why)) if !chosen => {
                    *kept = Some(why);
                    ClientKey::generate().map_err(CertError::Key)?
                }
                Err(e) => return Err(CertError::Key(e.to_string())),
            },
        };
        ClientCert::with_creds(
            key,
            target.clone(),
            host_name(),
            fetch,
            UtcTime::now(),
            creds,
        )
    }

    /// A certificate from given parts: the key, the target, the CN, where credentials
    /// come from, and the instant of the first certificate.
    #[cfg(test)]
    pub(crate) fn new(
        key: ClientKey,
        target: EfsTarget,
        common_name: String,
        fetch: Option<Fetch>,
        now: UtcTime,
    ) -> Result<ClientCert, CertError> {
        let creds = fetch.as_ref().map(|f| f()).transpose()?;
        ClientCert::with_creds(key, target, common_name, fetch, now, creds)
    }

    fn with_creds(
        key: ClientKey,
        target: EfsTarget,
        common_name: String,
        fetch: Option<Fetch>,
        now: UtcTime,
        creds: Option<Found>,
    ) -> Result<ClientCert, CertError> {
        let der = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.pkcs8_der().to_vec()));
        let signing = rustls::crypto::ring::sign::any_supported_type(&der)
            .map_err(|e| CertError::Key(e.to_string()))?;
        let maker = Maker {
            key,
            signing,
            target,
            common_name,
            info: ClientInfo::nfsync(),
        };
        let certified = maker.make(0, now, creds.as_ref());
        Ok(ClientCert {
            maker,
            fetch,
            current: Mutex::new(Current {
                made: now,
                serial: 0,
                creds,
                certified,
            }),
        })
    }
}

impl Maker {
    fn make(&self, serial: u64, now: UtcTime, creds: Option<&Found>) -> Arc<CertifiedKey> {
        let der = cert::build(
            &self.key,
            &CertRequest {
                common_name: &self.common_name,
                serial,
                time: now,
                region: self.target.region.as_deref().unwrap_or(""),
                fs_id: &self.target.fs_id,
                access_point: self.target.access_point.as_deref(),
                credentials: creds.map(|f| &f.credentials),
                client_info: Some(&self.info),
            },
        );
        Arc::new(CertifiedKey::new(
            vec![CertificateDer::from(der)],
            self.signing.clone(),
        ))
    }
}

impl ClientCert {
    /// The certificate for a connection opened now: the current one, or a new one if
    /// it is stale (fetching credentials again, which may block on the network).
    pub fn for_new_connection(&self, now: UtcTime) -> Result<Arc<CertifiedKey>, CertError> {
        let (fresh, creds_stale, serial) = {
            let cur = self.current.lock().expect("not poisoned");
            let expires = cur.creds.as_ref().and_then(|c| c.expires);
            if !stale(cur.made, now, expires) {
                return Ok(cur.certified.clone());
            }
            let creds_stale = expires.is_some_and(|e| e.since(now) <= CREDS_MARGIN_SECS);
            (cur.creds.clone(), creds_stale, cur.serial + 1)
        };
        let creds = match (&self.fetch, fresh) {
            (Some(f), None) => Some(f()?),
            (Some(f), Some(_)) if creds_stale => Some(f()?),
            (_, c) => c,
        };
        let certified = self.maker.make(serial, now, creds.as_ref());
        *self.current.lock().expect("not poisoned") = Current {
            made: now,
            serial,
            creds,
            certified: certified.clone(),
        };
        Ok(certified)
    }

    /// What the certificate says about us, in words for `--check`.
    pub fn describe(&self) -> String {
        let t = &self.maker.target;
        let mut s = format!("efs-utils' client certificate for {}", t.fs_id);
        if let Some(ap) = &t.access_point {
            s.push_str(&format!(", access point {ap}"));
        }
        match self.credentials_source() {
            Some(from) => s.push_str(&format!(", signed for IAM with credentials from {from}")),
            None => s.push_str(", no IAM signature"),
        }
        s
    }

    /// Where the credentials came from (`None` without `?iam`).
    pub fn credentials_source(&self) -> Option<String> {
        let cur = self.current.lock().expect("not poisoned");
        cur.creds.as_ref().map(|c| c.source.clone())
    }

    /// The certificate now presented (DER).
    pub fn current_der(&self) -> CertificateDer<'static> {
        let cur = self.current.lock().expect("not poisoned");
        cur.certified.cert[0].clone()
    }
}

/// rustls asks this for the certificate in each handshake the server requests one in:
/// the current one, which [`ClientCert::for_new_connection`] renewed just before.
#[derive(Debug)]
pub struct Resolver(pub Arc<ClientCert>);

impl rustls::client::ResolvesClientCert for Resolver {
    fn resolve(&self, _: &[&[u8]], _: &[rustls::SignatureScheme]) -> Option<Arc<CertifiedKey>> {
        Some(
            self.0
                .current
                .lock()
                .expect("not poisoned")
                .certified
                .clone(),
        )
    }

    fn has_certs(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn fixture_key() -> ClientKey {
        ClientKey::from_pem(include_bytes!("../../../../tests/fixtures/efs/key.pem")).unwrap()
    }

    fn target(iam: bool) -> EfsTarget {
        EfsTarget {
            fs_id: "fs-deadbeef".into(),
            region: Some("us-east-1".into()),
            access_point: None,
            iam,
            aws_profile: None,
        }
    }

    #[test]
    fn staleness() {
        let t = UtcTime::from_unix(1_000_000);
        assert!(!stale(t, t.plus(RENEW_AFTER_SECS - 1), None));
        assert!(stale(t, t.plus(RENEW_AFTER_SECS), None));
        assert!(stale(t, t.plus(-1), None), "a clock that went back");
        assert!(!stale(t, t, Some(t.plus(CREDS_MARGIN_SECS + 1))));
        assert!(stale(t, t, Some(t.plus(CREDS_MARGIN_SECS))));
        // Extreme instants (which checked parsing no longer lets in) do not overflow.
        let (min, max) = (UtcTime::from_unix(i64::MIN), UtcTime::from_unix(i64::MAX));
        assert!(stale(min, max, Some(min)));
        assert!(stale(max, min, Some(max)));
    }

    /// Renewed after 50 minutes with the next serial; credentials fetched again only
    /// when they are about to expire.
    #[test]
    fn renewed_when_old_and_credentials_refetched_when_expiring() {
        let t0 = UtcTime::from_unix(1_800_000_000);
        let fetched = Arc::new(AtomicUsize::new(0));
        let f = fetched.clone();
        let fetch: Fetch = Box::new(move || {
            let n = f.fetch_add(1, Ordering::SeqCst);
            Ok(Found {
                credentials: cert::Credentials {
                    access_key_id: format!("AKID{n}"),
                    secret_access_key: "s".into(),
                    session_token: Some("t".into()),
                },
                source: "test".into(),
                expires: Some(t0.plus(80 * 60)),
            })
        });
        let c = ClientCert::new(fixture_key(), target(true), "h".into(), Some(fetch), t0).unwrap();
        let first = c.current_der();
        let want = cert::build(
            &fixture_key(),
            &CertRequest {
                common_name: "h",
                serial: 0,
                time: t0,
                region: "us-east-1",
                fs_id: "fs-deadbeef",
                access_point: None,
                credentials: Some(&cert::Credentials {
                    access_key_id: "AKID0".into(),
                    secret_access_key: "s".into(),
                    session_token: Some("t".into()),
                }),
                client_info: Some(&ClientInfo::nfsync()),
            },
        );
        assert_eq!(first.as_ref(), want.as_slice());
        let same = c.for_new_connection(t0.plus(49 * 60)).unwrap();
        assert_eq!(same.cert[0], first);
        assert_eq!(fetched.load(Ordering::SeqCst), 1);
        let renewed = c.for_new_connection(t0.plus(50 * 60)).unwrap();
        assert_ne!(renewed.cert[0], first);
        assert!(
            renewed.cert[0].windows(3).any(|w| w == [2, 1, 1]),
            "serial 1"
        );
        assert_eq!(fetched.load(Ordering::SeqCst), 1, "credentials still good");
        // 76 minutes: the credentials expire at 80, within the margin.
        let _ = c.for_new_connection(t0.plus(76 * 60)).unwrap();
        assert_eq!(fetched.load(Ordering::SeqCst), 2);
        let der = c.current_der();
        assert!(der.windows(5).any(|w| w == b"AKID1"));
    }

    /// Credentials that cannot be fetched again: the new connection gets the error,
    /// and the certificate in use stays as it was.
    #[test]
    fn a_failed_refetch_is_the_new_connections_error() {
        let t0 = UtcTime::from_unix(1_800_000_000);
        let calls = Arc::new(AtomicUsize::new(0));
        let n = calls.clone();
        let fetch: Fetch = Box::new(move || {
            if n.fetch_add(1, Ordering::SeqCst) > 0 {
                return Err(CredError::Refused {
                    source_name: "test".into(),
                    why: "gone".into(),
                });
            }
            Ok(Found {
                credentials: cert::Credentials {
                    access_key_id: "A".into(),
                    secret_access_key: "s".into(),
                    session_token: None,
                },
                source: "test".into(),
                expires: Some(t0.plus(10 * 60)),
            })
        });
        let c = ClientCert::new(fixture_key(), target(true), "h".into(), Some(fetch), t0).unwrap();
        let before = c.current_der();
        let e = c.for_new_connection(t0.plus(6 * 60)).unwrap_err();
        assert!(e.to_string().contains("gone"), "{e}");
        assert_eq!(c.current_der(), before);
    }

    #[test]
    fn no_credentials_without_iam_and_a_fetch_failure_is_the_error() {
        let c = ClientCert::new(
            fixture_key(),
            target(false),
            "h".into(),
            None,
            UtcTime::now(),
        );
        assert_eq!(c.unwrap().credentials_source(), None);
        let fetch: Fetch = Box::new(|| Err(CredError::Missing(vec!["x".into()])));
        let e = ClientCert::new(
            fixture_key(),
            target(true),
            "h".into(),
            Some(fetch),
            UtcTime::now(),
        )
        .unwrap_err();
        assert!(matches!(e, CertError::Credentials(_)), "{e}");
    }
}
