//! Keys from the AWS shared files, `~/.aws/credentials` and `~/.aws/config` (or
//! `AWS_SHARED_CREDENTIALS_FILE` / `AWS_CONFIG_FILE`), as the SDKs read them: the
//! credentials file's `[name]`, then the config file's `[profile name]` (`[default]` for
//! the default profile; efs-utils also reads a bare `[name]` there, and so do we).
//!
//! A missing file is passed over; one that is there but cannot be read as
//! [`file::read_small`] allows (too big, not a regular file, behind another user's
//! symlink) ends the search: its keys might have been the ones meant.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::super::cert::Credentials;
use super::super::file;

/// The sections of an INI file: name → key → value (keys lowercase).
pub fn parse_ini(text: &str) -> HashMap<String, HashMap<String, String>> {
    let mut out: HashMap<String, HashMap<String, String>> = HashMap::new();
    let mut current: Option<String> = None;
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            let name = name.trim().to_string();
            out.entry(name.clone()).or_default();
            current = Some(name);
        } else if let (Some(sec), Some((k, v))) = (&current, line.split_once('=')) {
            out.entry(sec.clone())
                .or_default()
                .insert(k.trim().to_ascii_lowercase(), v.trim().to_string());
        }
    }
    out
}

/// The two files to read.
#[derive(Clone, Debug)]
pub struct Files {
    pub credentials: PathBuf,
    pub config: PathBuf,
}

impl Files {
    /// The SDKs' places: the override variables, else under `home`.
    pub fn locate(env: &dyn Fn(&str) -> Option<String>, home: Option<&Path>) -> Option<Files> {
        let at = |var: &str, rel: &str| {
            env(var)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
                .or_else(|| home.map(|h| h.join(rel)))
        };
        Some(Files {
            credentials: at("AWS_SHARED_CREDENTIALS_FILE", ".aws/credentials")?,
            config: at("AWS_CONFIG_FILE", ".aws/config")?,
        })
    }
}

/// What a profile gave.
#[derive(Debug)]
pub enum Lookup {
    Found(Credentials, PathBuf),
    /// `credential_process`: the command line, and the file that says it.
    Process(String, PathBuf),
    /// No such section in either file.
    Missing,
    /// The profile is there but has no keys and no way to get them (why).
    NoKeys(String),
    /// The profile gets its credentials in a way nfsync does not speak (why, and what
    /// to do instead).
    Unsupported(String),
    /// A file is there but was not read (why).
    Unreadable(String),
}

/// What makes the SDKs assume a role or sign in with SSO for a profile, before its
/// keys (botocore's chain: assume-role, then SSO, then the credentials file's keys).
const UNSUPPORTED: [&str; 4] = ["role_arn", "sso_session", "sso_start_url", "sso_account_id"];

/// The credentials of profile `name`, as botocore's chain finds them in the profile
/// both files make together: a role to assume or SSO first (not spoken here: refused,
/// never passed over for the keys beside them, which would sign as someone else), then
/// the credentials file's keys, then `credential_process`, then the config file's keys.
pub fn lookup(files: &Files, name: &str) -> Lookup {
    let sections = [
        (&files.credentials, vec![name.to_string()]),
        (
            &files.config,
            if name == "default" {
                vec!["default".to_string(), "profile default".to_string()]
            } else {
                vec![format!("profile {name}"), name.to_string()]
            },
        ),
    ];
    // The profile's sections, credentials file first, with the file of each.
    let mut found: Vec<(&PathBuf, HashMap<String, String>)> = Vec::new();
    for ((path, names), var) in sections
        .into_iter()
        .zip(["credentials file", "config file"])
    {
        let text = match file::read_small(path, var) {
            Ok(raw) => String::from_utf8_lossy(&raw).into_owned(),
            Err(None) => continue,
            Err(Some(why)) => return Lookup::Unreadable(why),
        };
        let mut ini = parse_ini(&text);
        for n in names {
            if let Some(sec) = ini.remove(&n) {
                found.push((path, sec));
            }
        }
    }
    if found.is_empty() {
        return Lookup::Missing;
    }
    let value = |(path, sec): &(&PathBuf, HashMap<String, String>), k: &str| {
        sec.get(k)
            .filter(|v| !v.is_empty())
            .map(|v| (v.clone(), path.to_path_buf()))
    };
    for k in UNSUPPORTED {
        if let Some((_, path)) = found.iter().find_map(|s| value(s, k)) {
            return Lookup::Unsupported(format!(
                "profile {name} in {} uses {k}, which nfsync does not support yet: export \
                 AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN (`aws \
                 configure export-credentials --profile {name} --format env`), or use \
                 web identity (IRSA), the container or instance credentials",
                path.display()
            ));
        }
    }
    let keys = |s: &(&PathBuf, HashMap<String, String>)| {
        let (access_key_id, path) = value(s, "aws_access_key_id")?;
        let (secret_access_key, _) = value(s, "aws_secret_access_key")?;
        let credentials = Credentials {
            access_key_id,
            secret_access_key,
            session_token: value(s, "aws_session_token").map(|(t, _)| t),
        };
        Some(Lookup::Found(credentials, path))
    };
    let in_credentials = |s: &&(&PathBuf, HashMap<String, String>)| *s.0 == files.credentials;
    if let Some(found) = found.iter().filter(in_credentials).find_map(keys) {
        return found;
    }
    if let Some((command, path)) = found.iter().find_map(|s| value(s, "credential_process")) {
        return Lookup::Process(command, path);
    }
    if let Some(found) = found.iter().find_map(keys) {
        return found;
    }
    Lookup::NoKeys(format!(
        "profile {name} in {} has no aws_access_key_id and aws_secret_access_key",
        found[0].0.display()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ini_sections_keys_and_comments() {
        let ini = parse_ini(
            "# c\n[default]\naws_access_key_id = A\n; c\n[profile x]\nAWS_Secret_Access_Key=B = C\n",
        );
        assert_eq!(ini["default"]["aws_access_key_id"], "A");
        assert_eq!(ini["profile x"]["aws_secret_access_key"], "B = C");
    }
}
