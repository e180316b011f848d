//! AWS credentials for `?iam`, in the order AWS SDK users expect:
//!
//! 0. the URL's `?awsprofile=NAME`: that profile only (as efs-utils does);
//! 1. `AWS_ACCESS_KEY_ID` + `AWS_SECRET_ACCESS_KEY` (+ `AWS_SESSION_TOKEN`);
//! 2. web identity: `AWS_ROLE_ARN` + `AWS_WEB_IDENTITY_TOKEN_FILE` (EKS IRSA), through
//!    STS AssumeRoleWithWebIdentity;
//! 3. the shared files: `AWS_PROFILE`, else `default` if it is there: keys or
//!    `credential_process`; a profile that assumes a role or uses SSO is refused, even
//!    the implicit `default` (the SDKs would use that role, not the next source's);
//! 4. the container endpoint: ECS (`AWS_CONTAINER_CREDENTIALS_RELATIVE_URI`) or EKS Pod
//!    Identity (`AWS_CONTAINER_CREDENTIALS_FULL_URI` + `AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE`);
//! 5. EC2 instance metadata, IMDSv2, else IMDSv1 as botocore falls back
//!    (`AWS_EC2_METADATA_SERVICE_ENDPOINT`, `AWS_EC2_METADATA_DISABLED`,
//!    `AWS_EC2_METADATA_V1_DISABLED`).
//!
//! A source that is configured but fails ends the search with its reason: falling
//! through to another identity would sign as someone the user did not mean. Each
//! request is bounded in time (1 s per metadata call, 5 s elsewhere), so a missing
//! credential is one line, never a hang. `AWS_ENDPOINT_URL_STS` and `AWS_CA_BUNDLE`
//! point STS elsewhere (tests use them for local fakes).

mod http;
mod process;
mod profile;
mod remote;

use std::path::PathBuf;

use super::cert::Credentials;
use super::time::UtcTime;

/// How a source reads the environment (the process's, or a test's).
pub type Env<'a> = &'a dyn Fn(&str) -> Option<String>;

/// Credentials and where they came from.
#[derive(Clone, Debug)]
pub struct Found {
    pub credentials: Credentials,
    /// Said in `--check` and in errors: "environment", "profile ci (~/.aws/credentials)", ….
    pub source: String,
    /// When they stop working (temporary credentials); the certificate is renewed before.
    pub expires: Option<UtcTime>,
}

/// Why there are no credentials.
#[derive(Debug, thiserror::Error)]
pub enum CredError {
    /// No source was configured.
    #[error("no AWS credentials for ?iam; tried {}", .0.join("; "))]
    Missing(Vec<String>),
    /// A configured source failed.
    #[error("AWS credentials from {source_name}: {why}")]
    Refused { source_name: String, why: String },
}

/// What one source did.
pub(crate) enum Step {
    Found(Found),
    /// Not configured here: the next source is tried. The text says what was looked at.
    Skipped(String),
    /// Configured but failed: the search ends. (source, reason)
    Refused(String, String),
}

fn environment(env: Env) -> Step {
    let id = env("AWS_ACCESS_KEY_ID").filter(|v| !v.is_empty());
    let secret = env("AWS_SECRET_ACCESS_KEY").filter(|v| !v.is_empty());
    match (id, secret) {
        (Some(access_key_id), Some(secret_access_key)) => Step::Found(Found {
            credentials: Credentials {
                access_key_id,
                secret_access_key,
                session_token: env("AWS_SESSION_TOKEN").filter(|v| !v.is_empty()),
            },
            source: "environment (AWS_ACCESS_KEY_ID)".into(),
            expires: None,
        }),
        (None, None) => Step::Skipped("environment: AWS_ACCESS_KEY_ID unset".into()),
        (Some(_), None) => Step::Refused(
            "environment".into(),
            "AWS_ACCESS_KEY_ID is set but AWS_SECRET_ACCESS_KEY is not".into(),
        ),
        (None, Some(_)) => Step::Refused(
            "environment".into(),
            "AWS_SECRET_ACCESS_KEY is set but AWS_ACCESS_KEY_ID is not".into(),
        ),
    }
}

/// Profile `name`; `explicit`: named by the user, so a missing one is an error.
fn shared_files(env: Env, name: &str, explicit: bool) -> Step {
    let home = env("HOME").filter(|h| !h.is_empty()).map(PathBuf::from);
    let Some(files) = profile::Files::locate(env, home.as_deref()) else {
        return Step::Skipped("profile files: HOME unset".into());
    };
    let label = format!("profile {name}");
    match profile::lookup(&files, name) {
        profile::Lookup::Found(credentials, path) => Step::Found(Found {
            credentials,
            source: format!("{label} ({})", path.display()),
            expires: None,
        }),
        profile::Lookup::Process(command, path) => {
            let source = format!("{label} credential_process ({})", path.display());
            match process::run(&command, process::TIMEOUT) {
                Ok((credentials, expires)) => Step::Found(Found {
                    credentials,
                    source,
                    expires,
                }),
                Err(why) => Step::Refused(source, why),
            }
        }
        profile::Lookup::Unreadable(why) => Step::Refused(label, why),
        // Even the implicit default: the SDKs would assume that role (or sign in), so
        // going on to the instance's role would sign as someone else.
        profile::Lookup::Unsupported(why) => Step::Refused(label, why),
        profile::Lookup::NoKeys(why) if explicit => Step::Refused(label, why),
        profile::Lookup::NoKeys(why) => Step::Skipped(why),
        profile::Lookup::Missing => {
            let why = format!(
                "no [{name}] in {} or {}",
                files.credentials.display(),
                files.config.display()
            );
            if explicit {
                Step::Refused(label, why)
            } else {
                Step::Skipped(format!("{label}: {why}"))
            }
        }
    }
}

/// The credentials for a run to `region`, `profile` being the URL's `?awsprofile=`.
pub fn resolve(profile: Option<&str>, region: &str, env: Env) -> Result<Found, CredError> {
    let steps: Vec<Box<dyn Fn() -> Step + '_>> = match profile {
        Some(p) => vec![Box::new(move || shared_files(env, p, true))],
        None => vec![
            Box::new(|| environment(env)),
            Box::new(|| remote::web_identity(env, region)),
            Box::new(|| match env("AWS_PROFILE").filter(|p| !p.is_empty()) {
                Some(p) => shared_files(env, &p, true),
                None => shared_files(env, "default", false),
            }),
            Box::new(|| remote::container(env)),
            Box::new(|| remote::imds(env)),
        ],
    };
    let mut tried = Vec::new();
    for step in steps {
        match step() {
            Step::Found(f) => return Ok(f),
            Step::Skipped(what) => tried.push(what),
            Step::Refused(source_name, why) => return Err(CredError::Refused { source_name, why }),
        }
    }
    Err(CredError::Missing(tried))
}

/// [`resolve`] with the process's environment.
pub fn resolve_from_process(profile: Option<&str>, region: &str) -> Result<Found, CredError> {
    resolve(profile, region, &|k| std::env::var(k).ok())
}

#[cfg(test)]
mod source_tests;
#[cfg(test)]
mod tests;
