//! Which EFS file system a URL names, and how it asks to be authenticated.
//!
//! The file system id and region come from the host name when it is EFS's
//! (`[az.]fs-ID.efs.REGION.SUFFIX`, efs-utils' own pattern), or from `?fsid=` and
//! `?region=` when the host is an IP address or another name (a mount target's address,
//! a test front). The rules on `iam`, `accesspoint` and `awsprofile` are efs-utils'
//! (`check_options_validity`), with its reasons.

use std::sync::LazyLock;

use regex::Regex;

/// The EFS keys of an `nfs://` URL, as given.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EfsKeys {
    pub iam: bool,
    pub access_point: Option<String>,
    pub aws_profile: Option<String>,
    pub fs_id: Option<String>,
    pub region: Option<String>,
}

/// An EFS file system a URL names, with its authentication.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EfsTarget {
    pub fs_id: String,
    /// Known from the host name or `?region=`; required with `iam`.
    pub region: Option<String>,
    pub access_point: Option<String>,
    /// Sign the certificate with AWS credentials.
    pub iam: bool,
    /// `?awsprofile=`: the profile to read credentials from.
    pub aws_profile: Option<String>,
}

/// efs-utils' `FQDN_REGEX_PATTERN` (`mount_efs`).
static EFS_HOST: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"^(?:(?P<az>[a-z0-9-]+)\.)?(?P<fs_id>fs-[0-9a-f]+)\.(?:[a-z-]+\.)+(?P<region>[a-z0-9-]+)\.(?P<suffix>[a-z0-9.-]+)$",
    )
    .expect("valid pattern")
});
static FS_ID: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^fs-[0-9a-f]+$").expect("valid pattern"));
static AP_ID: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^fsap-[0-9a-f]{17}$").expect("valid pattern"));
static REGION: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^[a-z0-9-]+$").expect("valid pattern"));

/// The file system id and region of an EFS DNS name.
pub fn parse_efs_host(host: &str) -> Option<(String, String)> {
    let host = host.to_ascii_lowercase();
    let c = EFS_HOST.captures(&host)?;
    Some((c["fs_id"].to_string(), c["region"].to_string()))
}

/// Where the file system id starts in an EFS DNS name: what is before it is the AZ
/// label, which the certificate does not carry ([`super::server_name`]).
pub fn efs_host_fs_id_at(host: &str) -> Option<usize> {
    let host = host.to_ascii_lowercase();
    Some(EFS_HOST.captures(&host)?.name("fs_id")?.start())
}

impl EfsKeys {
    /// Takes `key=value` if it is an EFS key; `Ok(false)` if it is not one.
    pub fn take(&mut self, key: &str, value: &str) -> Result<bool, String> {
        let need = |what: &str| {
            if value.is_empty() {
                Err(format!("?{key}= needs {what}"))
            } else {
                Ok(value.to_string())
            }
        };
        match key {
            "iam" if value.is_empty() || value == "1" => self.iam = true,
            "accesspoint" => {
                let v = need("an access point id (fsap-…)")?;
                if !AP_ID.is_match(&v) {
                    return Err(format!(
                        "?accesspoint={v}: access point id is malformed (fsap- and 17 \
                         lowercase hex digits)"
                    ));
                }
                self.access_point = Some(v);
            }
            "awsprofile" => self.aws_profile = Some(need("a profile name")?),
            "fsid" => {
                let v = need("a file system id (fs-…)")?;
                if !FS_ID.is_match(&v) {
                    return Err(format!("?fsid={v}: not an EFS file system id (fs-<hex>)"));
                }
                self.fs_id = Some(v);
            }
            "region" => {
                let v = need("an AWS region")?;
                if !REGION.is_match(&v) {
                    return Err(format!("?region={v}: not an AWS region name"));
                }
                self.region = Some(v);
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// Whether the access point turns TLS on (it cannot work without).
    pub fn implies_tls(&self) -> bool {
        self.access_point.is_some()
    }

    /// The keys a URL with NFSv3 cannot have (named in the refusal).
    pub fn v4_only(&self) -> Option<&'static str> {
        if self.access_point.is_some() {
            Some("accesspoint")
        } else if self.iam {
            Some("iam")
        } else {
            None
        }
    }

    /// The EFS file system the URL names, if any; refuses what efs-utils refuses.
    pub fn resolve(&self, host: &str, tls: bool) -> Result<Option<EfsTarget>, String> {
        if self.iam && !tls {
            return Err(
                "?iam needs ?tls: the signature travels in the TLS client certificate \
                        (efs-utils: \"The \"tls\" option is required when mounting via \"iam\"\")"
                    .to_string(),
            );
        }
        if self.access_point.is_some() && !tls {
            return Err(
                "?accesspoint needs TLS: the access point travels in the TLS client \
                        certificate"
                    .to_string(),
            );
        }
        if self.aws_profile.is_some() && !self.iam {
            return Err(
                "?awsprofile needs ?iam: a profile only gives the credentials that \
                        ?iam signs with (efs-utils: \"The \"iam\" option is required when \
                        mounting with named profile option, \"awsprofile\"\")"
                    .to_string(),
            );
        }
        let from_host = parse_efs_host(host);
        let fs_id = match (&from_host, &self.fs_id) {
            (Some((h, _)), Some(k)) if h != k => {
                return Err(format!(
                    "?fsid={k} contradicts the host name {host}, which names {h}"
                ));
            }
            (Some((h, _)), _) => h.clone(),
            (None, Some(k)) => k.clone(),
            (None, None) => {
                if self.iam || self.access_point.is_some() || self.region.is_some() {
                    return Err(format!(
                        "{host} is not an EFS name (fs-ID.efs.REGION.amazonaws.com): give \
                         the file system id with ?fsid=fs-…{}",
                        if self.iam { " and its ?region=" } else { "" }
                    ));
                }
                return Ok(None);
            }
        };
        let region = match (&from_host, &self.region) {
            (Some((_, h)), Some(k)) if h != k => {
                return Err(format!(
                    "?region={k} contradicts the host name {host}, which is in {h}"
                ));
            }
            (Some((_, h)), _) => Some(h.clone()),
            (None, k) => k.clone(),
        };
        if self.iam && region.is_none() {
            return Err(format!(
                "?iam with the address {host} needs ?region=: the signature names the region"
            ));
        }
        Ok(Some(EfsTarget {
            fs_id,
            region,
            access_point: self.access_point.clone(),
            iam: self.iam,
            aws_profile: self.aws_profile.clone(),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_names_as_efs_utils_reads_them() {
        let p = |h| parse_efs_host(h);
        let want = |f: &str, r: &str| Some((f.to_string(), r.to_string()));
        assert_eq!(
            p("fs-deadbeef.efs.us-east-1.amazonaws.com"),
            want("fs-deadbeef", "us-east-1")
        );
        assert_eq!(
            p("us-east-1a.fs-0123.efs.us-east-1.amazonaws.com"),
            want("fs-0123", "us-east-1")
        );
        assert_eq!(
            p("fs-1.efs.cn-north-1.amazonaws.com.cn"),
            want("fs-1", "cn-north-1")
        );
        assert_eq!(
            p("FS-ABC.EFS.EU-WEST-1.AMAZONAWS.COM"),
            want("fs-abc", "eu-west-1")
        );
        for h in [
            "10.0.0.1",
            "localhost",
            "fs-xyz.efs.us-east-1.amazonaws.com",
            "fs-1.efs",
        ] {
            assert_eq!(p(h), None, "{h}");
        }
    }
}
