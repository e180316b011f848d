//! Credentials fetched over HTTP: EC2 instance metadata (IMDSv2), the ECS / EKS Pod
//! Identity container endpoint, and STS AssumeRoleWithWebIdentity (EKS IRSA).
//!
//! What the endpoints say is not trusted: their error text is escaped and cut short
//! ([`text::shown`]) before it reaches an error, and an `Expiration` that is no
//! sensible time is an error. The token files are read by [`file::read_text`].

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::path::Path;
use std::time::Duration;

use serde_json::Value;

use super::super::cert::Credentials;
use super::super::file;
use super::super::server_name::dns_name_suffix;
use super::super::sigv4::quote_plus;
use super::super::text;
use super::super::time::UtcTime;
use super::http::{Client, Url, no_connection};
use super::{Env, Found, Step};

/// The instance metadata service, unless `AWS_EC2_METADATA_SERVICE_ENDPOINT` says where.
const IMDS: &str = "http://169.254.169.254";
/// The ECS agent's credentials endpoint for `AWS_CONTAINER_CREDENTIALS_RELATIVE_URI`.
const ECS: &str = "http://169.254.170.2";
/// IMDS answers in milliseconds on EC2; off EC2 nothing answers.
const IMDS_TIMEOUT: Duration = Duration::from_secs(1);
const REMOTE_TIMEOUT: Duration = Duration::from_secs(5);

fn client(env: Env, timeout: Duration) -> Client {
    Client {
        timeout,
        ca_bundle: env("AWS_CA_BUNDLE")
            .filter(|v| !v.is_empty())
            .map(Into::into),
    }
}

fn field(v: &Value, path: &[&str]) -> Option<String> {
    let mut v = v;
    for p in path {
        v = v.get(p)?;
    }
    match v {
        Value::String(s) if !s.is_empty() => Some(s.clone()),
        _ => None,
    }
}

/// `Expiration` as ISO text (IMDS, ECS) or epoch seconds (STS's JSON); absent or
/// null: none. Anything else is an error, not "never expires".
fn expiration(v: Option<&Value>) -> Result<Option<UtcTime>, String> {
    let t = match v {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::String(s)) => UtcTime::parse_iso(s),
        Some(Value::Number(n)) => n.as_f64().and_then(UtcTime::from_unix_f64),
        Some(_) => None,
    };
    match t {
        Some(t) => Ok(Some(t)),
        None => Err(format!(
            "answer's Expiration {} is not a time between 1970 and 9999",
            text::shown(v.map(Value::to_string).unwrap_or_default().as_bytes())
        )),
    }
}

/// The credentials of an IMDS, container or `credential_process` answer.
pub(super) fn from_json(
    body: &[u8],
    token_key: &str,
    at: &[&str],
) -> Result<(Credentials, Option<UtcTime>), String> {
    let v: Value = serde_json::from_slice(body)
        .map_err(|e| format!("answer is not JSON: {}", text::error(&e)))?;
    let mut c = &v;
    for p in at {
        c = c.get(p).ok_or_else(|| format!("answer has no {p}"))?;
    }
    let need = |k: &str| field(c, &[k]).ok_or_else(|| format!("answer has no {k}"));
    Ok((
        Credentials {
            access_key_id: need("AccessKeyId")?,
            secret_access_key: need("SecretAccessKey")?,
            session_token: field(c, &[token_key]),
        },
        expiration(c.get("Expiration"))?,
    ))
}

/// EC2 instance metadata, IMDSv2: a token, the role's name, then its credentials.
///
/// As botocore (`IMDSFetcher._fetch_metadata_token`, 1 s, 1 attempt): a token call
/// refused (IMDSv1-only instances) or unanswered (a container behind a hop limit of 1,
/// whose answer to the token call is dropped on the way) goes on without a token, as
/// IMDSv1, unless `AWS_EC2_METADATA_V1_DISABLED=true`. Nobody to connect to is the end
/// of the chain: not on EC2.
pub fn imds(env: Env) -> Step {
    if env("AWS_EC2_METADATA_DISABLED").is_some_and(|v| v.eq_ignore_ascii_case("true")) {
        return Step::Skipped("EC2 instance metadata: AWS_EC2_METADATA_DISABLED=true".into());
    }
    let base = env("AWS_EC2_METADATA_SERVICE_ENDPOINT")
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| IMDS.to_string());
    let base = base.trim_end_matches('/');
    let name = format!("EC2 instance metadata ({base})");
    let url = |p: &str| Url::parse(&format!("{base}{p}"));
    let http = client(env, IMDS_TIMEOUT);
    let token_url = match url("/latest/api/token") {
        Ok(u) => u,
        Err(e) => return Step::Refused(name, e),
    };
    // Why there is no token, when the token call was not answered at all.
    let mut unanswered = None;
    let token = match http.request(
        "PUT",
        &token_url,
        &[("X-aws-ec2-metadata-token-ttl-seconds", "21600")],
    ) {
        // Nothing there: not on EC2 (or IMDS is off); the chain ends here.
        Err(e) if no_connection(&e) => {
            return Step::Skipped(format!("{name}: {}", text::error(&e)));
        }
        Err(e) => {
            unanswered = Some(text::error(&e));
            None
        }
        Ok(r) if r.status == 200 => match String::from_utf8(r.body) {
            Ok(t) => Some(t.trim().to_string()),
            Err(_) => return Step::Refused(name, "the IMDS token is not text".into()),
        },
        // IMDSv1-only instances refuse the token call; go on without one.
        Ok(_) => None,
    };
    if token.is_none()
        && env("AWS_EC2_METADATA_V1_DISABLED").is_some_and(|v| v.eq_ignore_ascii_case("true"))
    {
        return Step::Refused(
            name,
            format!(
                "no IMDSv2 token ({}) and AWS_EC2_METADATA_V1_DISABLED=true forbids IMDSv1",
                unanswered
                    .as_deref()
                    .unwrap_or("the token call was refused")
            ),
        );
    }
    let headers: Vec<(&str, &str)> = token
        .as_deref()
        .map(|t| vec![("X-aws-ec2-metadata-token", t)])
        .unwrap_or_default();
    // Err((why, whether the endpoint answered at all)).
    let get = |p: &str| -> Result<Vec<u8>, (String, bool)> {
        let u = url(p).map_err(|e| (e, true))?;
        match http.request("GET", &u, &headers) {
            Ok(r) if r.status == 200 => Ok(r.body),
            Ok(r) if r.status == 404 => Err((
                "the instance has no IAM role (instance profile)".into(),
                true,
            )),
            Ok(r) => Err((
                format!("GET {u}: HTTP {}: {}", r.status, text::shown(&r.body)),
                true,
            )),
            Err(e) => Err((format!("GET {u}: {}", text::error(&e)), false)),
        }
    };
    let role_path = "/latest/meta-data/iam/security-credentials/";
    let role = match get(role_path) {
        Ok(body) => match body
            .split(|&b| b == b'\n')
            .next()
            .map(<[u8]>::trim_ascii)
            .filter(|r| !r.is_empty())
        {
            // A role name is `[\w+=,.@-]+`; anything else would go into a URL path.
            Some(r)
                if r.iter()
                    .all(|&b| b.is_ascii_graphic() && !b"/?#%".contains(&b)) =>
            {
                String::from_utf8_lossy(r).into_owned()
            }
            Some(r) => {
                return Step::Refused(
                    name,
                    format!("the IAM role name {} is not a role name", text::shown(r)),
                );
            }
            None => return Step::Refused(name, "the instance has no IAM role".into()),
        },
        // Neither the token call nor IMDSv1 answered: nothing usable there (botocore
        // finds no credentials too), as when nothing listens.
        Err((e, false)) if unanswered.is_some() => {
            let token = unanswered.unwrap_or_default();
            return Step::Skipped(format!("{name}: PUT token: {token}; IMDSv1 {e}"));
        }
        Err((e, _)) => return Step::Refused(name, e),
    };
    let credentials = get(&format!("{role_path}{role}")).map_err(|(e, _)| e);
    match credentials.and_then(|b| from_json(&b, "Token", &[])) {
        Ok((credentials, expires)) => Step::Found(Found {
            credentials,
            source: format!("EC2 instance metadata, role {role}"),
            expires,
        }),
        Err(e) => Step::Refused(name, e),
    }
}

/// Where the container endpoint is and what it is called: ECS's relative URI (on the
/// ECS agent's fixed address, which the SDKs offer no override for, so tests check the
/// URL built and reach the request through a full URI) before a full one.
pub(super) fn container_endpoint(env: Env) -> Option<(String, &'static str)> {
    if let Some(rel) = env("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI").filter(|v| !v.is_empty()) {
        Some((
            format!("{ECS}{rel}"),
            "ECS container credentials (AWS_CONTAINER_CREDENTIALS_RELATIVE_URI)",
        ))
    } else {
        env("AWS_CONTAINER_CREDENTIALS_FULL_URI")
            .filter(|v| !v.is_empty())
            .map(|full| (full, FULL_URI_NAME))
    }
}

/// What a full container URI is called in errors.
const FULL_URI_NAME: &str =
    "container credentials (AWS_CONTAINER_CREDENTIALS_FULL_URI, EKS Pod Identity)";

/// The hosts besides loopback that `AWS_CONTAINER_CREDENTIALS_FULL_URI` may name over
/// plain HTTP: the ECS agent and EKS Pod Identity's agent (IPv4 and IPv6).
const CONTAINER_HOSTS: [IpAddr; 3] = [
    IpAddr::V4(Ipv4Addr::new(169, 254, 170, 2)),
    IpAddr::V4(Ipv4Addr::new(169, 254, 170, 23)),
    IpAddr::V6(Ipv6Addr::new(0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x23)),
];

/// Whether a full container URI may be fetched, as the AWS SDKs allow it (aws-config's
/// `validate_full_uri`, the Java and Go SDKs): over HTTPS from any host; over plain
/// HTTP only from loopback (127.0.0.0/8, ::1, `localhost`) or the container agents'
/// addresses, so that a variable pointed elsewhere does not send the authorization
/// token in the clear to a host on the network, nor take credentials from it.
/// (botocore allows the same hosts, and no others even over HTTPS.)
pub(super) fn full_uri_allowed(url: &Url) -> bool {
    url.https
        || url.host.eq_ignore_ascii_case("localhost")
        || url
            .host
            .parse::<IpAddr>()
            .is_ok_and(|ip| ip.is_loopback() || CONTAINER_HOSTS.contains(&ip))
}

/// The container endpoint: ECS (relative URI) or EKS Pod Identity / a full URI with an
/// `Authorization` token.
pub fn container(env: Env) -> Step {
    let Some((url, name)) = container_endpoint(env) else {
        return Step::Skipped(
            "container credentials: AWS_CONTAINER_CREDENTIALS_RELATIVE_URI and _FULL_URI unset"
                .into(),
        );
    };
    let name = name.to_string();
    let token = if let Some(file) =
        env("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE").filter(|v| !v.is_empty())
    {
        match file::read_text(Path::new(&file), "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE") {
            Ok(t) => Some(t.trim().to_string()),
            Err(e) => return Step::Refused(name, e),
        }
    } else {
        env("AWS_CONTAINER_AUTHORIZATION_TOKEN").filter(|v| !v.is_empty())
    };
    if token.as_deref().is_some_and(|t| t.contains(['\r', '\n'])) {
        return Step::Refused(
            name,
            "the authorization token has a line break in it".into(),
        );
    }
    let url = match Url::parse(&url) {
        Ok(u) => u,
        Err(e) => return Step::Refused(name, e),
    };
    if name == FULL_URI_NAME && !full_uri_allowed(&url) {
        return Step::Refused(
            name,
            format!(
                "AWS_CONTAINER_CREDENTIALS_FULL_URI {url}: plain http is allowed only to \
                 loopback, 169.254.170.2, 169.254.170.23 and fd00:ec2::23 (as in the AWS \
                 SDKs); use https for another host"
            ),
        );
    }
    let headers: Vec<(&str, &str)> = token
        .as_deref()
        .map(|t| vec![("Authorization", t)])
        .unwrap_or_default();
    let answer = match client(env, REMOTE_TIMEOUT).request("GET", &url, &headers) {
        Ok(r) if r.status == 200 => from_json(&r.body, "Token", &[]),
        Ok(r) => Err(format!(
            "GET {url}: HTTP {}: {}",
            r.status,
            text::shown(&r.body)
        )),
        Err(e) => Err(format!("GET {url}: {}", text::error(&e))),
    };
    match answer {
        Ok((credentials, expires)) => Step::Found(Found {
            credentials,
            source: name,
            expires,
        }),
        Err(e) => Step::Refused(name, e),
    }
}

/// Where STS is for `region`: `AWS_ENDPOINT_URL_STS`, else `AWS_ENDPOINT_URL`, else
/// the regional endpoint in the region's partition, `sts.REGION.SUFFIX` with the
/// partition's DNS suffix (`amazonaws.com.cn` for `cn-*`, the ISO partitions' own), as
/// the SDKs' endpoint rules make it: `amazonaws.com` everywhere would name hosts that
/// do not exist in China and the isolated partitions.
pub(super) fn sts_endpoint(env: Env, region: &str) -> String {
    env("AWS_ENDPOINT_URL_STS")
        .filter(|v| !v.is_empty())
        .or_else(|| env("AWS_ENDPOINT_URL").filter(|v| !v.is_empty()))
        .unwrap_or_else(|| format!("https://sts.{region}.{}", dns_name_suffix(region)))
}

/// STS AssumeRoleWithWebIdentity with `AWS_ROLE_ARN` and `AWS_WEB_IDENTITY_TOKEN_FILE`
/// (EKS IRSA), unsigned, at [`sts_endpoint`].
pub fn web_identity(env: Env, region: &str) -> Step {
    let arn = env("AWS_ROLE_ARN").filter(|v| !v.is_empty());
    let file = env("AWS_WEB_IDENTITY_TOKEN_FILE").filter(|v| !v.is_empty());
    let (arn, file) = match (arn, file) {
        (Some(a), Some(f)) => (a, f),
        (None, None) => {
            return Step::Skipped(
                "web identity: AWS_ROLE_ARN and AWS_WEB_IDENTITY_TOKEN_FILE unset".into(),
            );
        }
        (a, _) => {
            let missing = if a.is_none() {
                "AWS_ROLE_ARN"
            } else {
                "AWS_WEB_IDENTITY_TOKEN_FILE"
            };
            return Step::Skipped(format!("web identity: {missing} unset"));
        }
    };
    let name = format!("web identity (AWS_ROLE_ARN={arn})");
    let token = match file::read_text(Path::new(&file), "AWS_WEB_IDENTITY_TOKEN_FILE") {
        Ok(t) => t,
        Err(e) => return Step::Refused(name, e),
    };
    let endpoint = sts_endpoint(env, region);
    let session = env("AWS_ROLE_SESSION_NAME")
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| "nfsync".to_string());
    let query = format!(
        "/?Version=2011-06-15&Action=AssumeRoleWithWebIdentity&RoleArn={}&RoleSessionName={}&WebIdentityToken={}",
        quote_plus(&arn),
        quote_plus(&session),
        quote_plus(&token)
    );
    let url = match Url::parse(endpoint.trim_end_matches('/')) {
        Ok(u) => u.with_path(&query),
        Err(e) => return Step::Refused(name, e),
    };
    let shown = url.with_path("/");
    let answer =
        match client(env, REMOTE_TIMEOUT).request("GET", &url, &[("Accept", "application/json")]) {
            Ok(r) if r.status == 200 => from_json(
                &r.body,
                "SessionToken",
                &[
                    "AssumeRoleWithWebIdentityResponse",
                    "AssumeRoleWithWebIdentityResult",
                    "Credentials",
                ],
            ),
            Ok(r) => Err(format!(
                "STS {shown}: HTTP {}: {}",
                r.status,
                text::shown(&r.body)
            )),
            Err(e) => Err(format!("STS {shown}: {}", text::error(&e))),
        };
    match answer {
        Ok((credentials, expires)) => Step::Found(Found {
            credentials,
            source: name,
            expires,
        }),
        Err(e) => Step::Refused(name, e),
    }
}
