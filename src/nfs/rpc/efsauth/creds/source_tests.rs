//! The SDKs' rules on where credentials may come from: STS's host per partition, IMDSv1
//! when the IMDSv2 token does not come back, the hosts a full container URI may name,
//! profiles that assume a role or run `credential_process`. Loopback fakes from
//! [`super::tests`]; no test reads or changes the process environment.

use std::time::{Duration, Instant};

use super::http::Url;
use super::remote::{full_uri_allowed, sts_endpoint};
use super::tests::{CREDS_JSON, Fake, env_of, keys};
use super::*;

#[test]
fn sts_is_in_the_regions_partition() {
    for (region, host) in [
        ("us-east-1", "sts.us-east-1.amazonaws.com"),
        ("us-gov-west-1", "sts.us-gov-west-1.amazonaws.com"),
        ("cn-north-1", "sts.cn-north-1.amazonaws.com.cn"),
        ("cn-northwest-1", "sts.cn-northwest-1.amazonaws.com.cn"),
        ("us-iso-east-1", "sts.us-iso-east-1.c2s.ic.gov"),
        ("us-isob-east-1", "sts.us-isob-east-1.sc2s.sgov.gov"),
        ("us-isof-south-1", "sts.us-isof-south-1.csp.hci.ic.gov"),
        ("eu-isoe-west-1", "sts.eu-isoe-west-1.cloud.adc-e.uk"),
        ("eusc-de-east-1", "sts.eusc-de-east-1.amazonaws.eu"),
    ] {
        assert_eq!(
            sts_endpoint(&env_of(&[]), region),
            format!("https://{host}"),
            "{region}"
        );
    }
    // The overrides, the service's first; an empty one is unset.
    let env = env_of(&[
        ("AWS_ENDPOINT_URL_STS", "http://127.0.0.1:1"),
        ("AWS_ENDPOINT_URL", "http://127.0.0.1:2"),
    ]);
    assert_eq!(sts_endpoint(&env, "cn-north-1"), "http://127.0.0.1:1");
    let env = env_of(&[
        ("AWS_ENDPOINT_URL_STS", ""),
        ("AWS_ENDPOINT_URL", "http://127.0.0.1:2"),
    ]);
    assert_eq!(sts_endpoint(&env, "cn-north-1"), "http://127.0.0.1:2");
}

#[test]
fn a_full_container_uri_over_http_only_to_loopback_and_the_agents() {
    let allowed = |u: &str| full_uri_allowed(&Url::parse(u).unwrap());
    for ok in [
        "http://127.0.0.1:8080/creds",
        "http://127.9.8.7/",
        "http://[::1]:80/",
        "http://localhost/",
        "http://LocalHost:1/",
        "http://169.254.170.2/v2/credentials",
        "http://169.254.170.23/v1/credentials",
        "http://[fd00:ec2::23]/v1/credentials",
        "http://[fd00:ec2:0::23]/",
        "https://creds.example.com/x",
        "https://10.0.0.1/",
    ] {
        assert!(allowed(ok), "{ok}");
    }
    for refused in [
        "http://10.0.0.1/creds",
        "http://169.254.169.254/",
        "http://169.254.170.3/",
        "http://creds.example.com/",
        "http://169.254.170.2.example.com/",
        "http://localhost.example.com/",
        "http://[fd00:ec2::24]/",
        "http://[::ffff:10.0.0.1]/",
    ] {
        assert!(!allowed(refused), "{refused}");
    }
}

/// Refused before any request: the authorization token never leaves the host.
#[test]
fn a_full_container_uri_to_another_host_is_refused_in_one_line() {
    let env = env_of(&[
        (
            "AWS_CONTAINER_CREDENTIALS_FULL_URI",
            "http://192.0.2.1/creds",
        ),
        ("AWS_CONTAINER_AUTHORIZATION_TOKEN", "secret-token"),
    ]);
    let t = Instant::now();
    let e = resolve(None, "r", &env).unwrap_err().to_string();
    assert!(
        t.elapsed() < Duration::from_millis(500),
        "{:?}",
        t.elapsed()
    );
    assert!(
        e.contains("AWS_CONTAINER_CREDENTIALS_FULL_URI http://192.0.2.1/creds")
            && e.contains("plain http is allowed only to loopback"),
        "{e}"
    );
    assert!(!e.contains('\n') && !e.contains("secret-token"), "{e}");
}

/// A metadata service that never answers the token call (a container behind a hop
/// limit of 1) is asked again without a token, as botocore does; unless IMDSv1 is off.
#[test]
fn imds_without_an_answer_to_the_token_call_falls_back_to_imdsv1() {
    let fake = Fake::start(|head| {
        if head.starts_with("PUT ") {
            return None;
        }
        Some(if head.contains("metadata-token") {
            (400, String::new())
        } else if head.starts_with("GET /latest/meta-data/iam/security-credentials/ ") {
            (200, "r1".into())
        } else if head.starts_with("GET /latest/meta-data/iam/security-credentials/r1 ") {
            (200, CREDS_JSON.into())
        } else {
            (404, String::new())
        })
    });
    let env = env_of(&[("AWS_EC2_METADATA_SERVICE_ENDPOINT", &fake.url())]);
    let t = Instant::now();
    let f = resolve(None, "r", &env).unwrap();
    assert_eq!(keys(&f), ("ASIAFAKE", "fakesecret", Some("faketoken")));
    assert_eq!(f.source, "EC2 instance metadata, role r1");
    // One timeout (1 s, one attempt), not more.
    assert!(t.elapsed() < Duration::from_secs(3), "{:?}", t.elapsed());
    let seen = fake.seen();
    assert_eq!(seen.len(), 3, "{seen:?}");
    assert!(seen[0].starts_with("PUT /latest/api/token "), "{seen:?}");

    let env = env_of(&[
        ("AWS_EC2_METADATA_SERVICE_ENDPOINT", &fake.url()),
        ("AWS_EC2_METADATA_V1_DISABLED", "true"),
    ]);
    let e = resolve(None, "r", &env).unwrap_err().to_string();
    assert!(
        e.contains("no IMDSv2 token") && e.contains("AWS_EC2_METADATA_V1_DISABLED"),
        "{e}"
    );
    assert_eq!(fake.seen().len(), 4, "no IMDSv1 request");
}

/// A HOME whose `.aws/credentials` and `.aws/config` are `credentials` and `config`.
fn home(credentials: &str, config: &str) -> tempfile::TempDir {
    let home = tempfile::tempdir().unwrap();
    let aws = home.path().join(".aws");
    std::fs::create_dir(&aws).unwrap();
    std::fs::write(aws.join("credentials"), credentials).unwrap();
    std::fs::write(aws.join("config"), config).unwrap();
    home
}

/// The implicit `[default]` that assumes a role or uses SSO ends the search with what
/// to do, rather than the instance's role signing in its place; one with neither keys
/// nor such a way (a region only) is passed over.
#[test]
fn a_default_profile_that_assumes_a_role_is_refused_not_passed_over() {
    let imds = Fake::start(|head| {
        Some(if head.starts_with("PUT ") {
            (200, "T".into())
        } else if head.starts_with("GET /latest/meta-data/iam/security-credentials/ ") {
            (200, "instance-role".into())
        } else {
            (200, CREDS_JSON.into())
        })
    });
    for (credentials, config, uses) in [
        (
            "",
            "[default]\nrole_arn = arn:aws:iam::1:role/r\nsource_profile = base\n",
            "role_arn",
        ),
        (
            "",
            "[profile default]\ncredential_source = Ec2InstanceMetadata\nrole_arn = arn:aws:iam::1:role/r\n",
            "role_arn",
        ),
        (
            "",
            "[default]\nsso_session = corp\nsso_account_id = 1\n",
            "sso_session",
        ),
        (
            "",
            "[default]\nsso_start_url = https://x.awsapps.com/start\n",
            "sso_start_url",
        ),
        // The SDKs assume the role before they look at keys beside it.
        (
            "[default]\naws_access_key_id = AKIDDEF\naws_secret_access_key = s\n",
            "[default]\nrole_arn = arn:aws:iam::1:role/r\n",
            "role_arn",
        ),
    ] {
        let home = home(credentials, config);
        let env = env_of(&[
            ("HOME", home.path().to_str().unwrap()),
            ("AWS_EC2_METADATA_SERVICE_ENDPOINT", &imds.url()),
        ]);
        let e = resolve(None, "r", &env).unwrap_err().to_string();
        assert!(
            e.contains(&format!("profile default in {}", home.path().display()))
                && e.contains(&format!("uses {uses}, which nfsync does not support yet"))
                && e.contains("AWS_ACCESS_KEY_ID"),
            "{e}"
        );
        assert!(!e.contains('\n'), "{e}");
    }
    assert!(imds.seen().is_empty(), "{:?}", imds.seen());
    let home = home("", "[default]\nregion = eu-west-1\n");
    let env = env_of(&[
        ("HOME", home.path().to_str().unwrap()),
        ("AWS_EC2_METADATA_SERVICE_ENDPOINT", &imds.url()),
    ]);
    let f = resolve(None, "r", &env).unwrap();
    assert_eq!(f.source, "EC2 instance metadata, role instance-role");
}

/// `credential_process`: split as botocore splits it, its JSON read, its failures
/// (exit status and stderr, another Version, a hang) one line each.
#[test]
fn credential_process_is_run_and_its_answer_read() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("helper");
    std::fs::write(
        &script,
        "#!/bin/sh\n\
         [ \"$1\" = 'two words' ] || { echo \"bad arg: $1\" >&2; exit 3; }\n\
         case \"$2\" in\n\
         v2) echo '{\"Version\":2,\"AccessKeyId\":\"A\",\"SecretAccessKey\":\"s\"}' ;;\n\
         *) echo '{\"Version\":1,\"AccessKeyId\":\"ASIAPROC\",\"SecretAccessKey\":\"sp\",\
         \"SessionToken\":\"tp\",\"Expiration\":\"2030-01-02T03:04:05Z\"}' ;;\n\
         esac\n",
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let s = script.to_str().unwrap();
    let run = |args: &str| {
        let home = home("", &format!("[default]\ncredential_process = {s} {args}\n"));
        let env = env_of(&[("HOME", home.path().to_str().unwrap())]);
        resolve(None, "r", &env)
    };
    let f = run("'two words'").unwrap();
    assert_eq!(keys(&f), ("ASIAPROC", "sp", Some("tp")));
    assert_eq!(f.expires, UtcTime::parse_iso("2030-01-02T03:04:05Z"));
    assert!(
        f.source.contains("profile default credential_process"),
        "{}",
        f.source
    );
    let e = run("two words").unwrap_err().to_string();
    assert!(
        e.contains("exit status: 3") && e.contains("bad arg: two"),
        "{e}"
    );
    let e = run("'two words' v2").unwrap_err().to_string();
    assert!(e.contains("Version is 2, not 1"), "{e}");
    let t = Instant::now();
    let e = process::run("sleep 10", Duration::from_millis(300)).unwrap_err();
    assert!(e.contains("killed"), "{e}");
    assert!(t.elapsed() < Duration::from_secs(3), "{:?}", t.elapsed());
}
