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
    /// No such section with keys in either file.
    Missing,
    /// The profile exists but gets its credentials in a way nfsync does not speak.
    Unsupported(String),
    /// A file is there but was not read (why).
    Unreadable(String),
}

/// The keys of profile `name`.
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
    let mut other = None;
    for ((path, names), var) in sections
        .into_iter()
        .zip(["credentials file", "config file"])
    {
        let text = match file::read_small(path, var) {
            Ok(raw) => String::from_utf8_lossy(&raw).into_owned(),
            Err(None) => continue,
            Err(Some(why)) => return Lookup::Unreadable(why),
        };
        let ini = parse_ini(&text);
        for n in names {
            let Some(sec) = ini.get(&n) else { continue };
            match (
                sec.get("aws_access_key_id"),
                sec.get("aws_secret_access_key"),
            ) {
                (Some(id), Some(secret)) if !id.is_empty() && !secret.is_empty() => {
                    return Lookup::Found(
                        Credentials {
                            access_key_id: id.clone(),
                            secret_access_key: secret.clone(),
                            session_token: sec
                                .get("aws_session_token")
                                .filter(|t| !t.is_empty())
                                .cloned(),
                        },
                        path.clone(),
                    );
                }
                _ => {
                    let how = [
                        "role_arn",
                        "credential_process",
                        "sso_session",
                        "sso_start_url",
                    ]
                    .into_iter()
                    .find(|k| sec.contains_key(*k));
                    other = Some(match how {
                        Some(k) => format!(
                            "profile {name} in {} uses {k}, which nfsync does not follow: give \
                             it aws_access_key_id and aws_secret_access_key, or use web \
                             identity, the container or instance credentials",
                            path.display()
                        ),
                        None => format!(
                            "profile {name} in {} has no aws_access_key_id and \
                             aws_secret_access_key",
                            path.display()
                        ),
                    });
                }
            }
        }
    }
    match other {
        Some(why) => Lookup::Unsupported(why),
        None => Lookup::Missing,
    }
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
