//! The name an EFS mount target's TLS certificate is checked against, and sent as SNI.
//!
//! EFS certificates name the file system (`fs-ID.efs.REGION.SUFFIX`), never a mount
//! target's address or its zone, so checking against the URL's host fails for an
//! address and for an AZ-specific name. efs-utils v3.2.0 connects to whatever address it
//! resolved (or `mounttargetip=`) and checks the name it built from the file system id:
//! `write_stunnel_config_file` (`src/efs_utils_common/proxy.py`) sets
//! `checkHost = dns_name[dns_name.index(fs_id):]`, the DNS name with any AZ label in
//! front cut off, and efs-proxy hands that same name to s2n-tls's `connect`
//! (`establish_tls_stream`, `src/proxy/src/tls.rs`), which sends it as SNI. The DNS
//! name is `{fs_id}.efs.{region}.{dns_name_suffix}`
//! (`get_dns_name_and_fallback_mount_target_ip_address`, `src/mount_efs/dns_resolver.py`),
//! the suffix per region from `dist/efs-utils.conf`.

use super::target::{EfsTarget, efs_host_fs_id_at};

/// The name to check the server's certificate against and send as SNI, when the EFS
/// rule gives one: `None` leaves the URL's host (no file system named, or an address
/// with `?fsid=` but no `?region=`, from which no name can be made).
pub fn certificate_name(host: &str, efs: Option<&EfsTarget>) -> Option<String> {
    let efs = efs?;
    if let Some(at) = efs_host_fs_id_at(host) {
        return Some(host[at..].to_ascii_lowercase());
    }
    let region = efs.region.as_deref()?;
    Some(format!(
        "{}.efs.{region}.{}",
        efs.fs_id,
        dns_name_suffix(region)
    ))
}

/// Whose name the certificate is checked against, for the advice when it is not for it.
#[derive(Clone, Debug)]
pub enum Named {
    /// The URL's host, as given.
    Host,
    /// An EFS file system's DNS name, not the URL's host (`host`).
    Efs { host: String, fs_id: String },
    /// The URL's host, though it names an EFS file system by `?fsid=`: without
    /// `?region=` there is no DNS name to check against.
    EfsWithoutRegion { fs_id: String },
}

/// The name to check a certificate against for a URL that names `efs`, and whose.
pub fn for_efs(host: &str, efs: &EfsTarget) -> (String, Named) {
    let fs_id = efs.fs_id.clone();
    match certificate_name(host, Some(efs)) {
        Some(name) => (
            name,
            Named::Efs {
                host: host.to_string(),
                fs_id,
            },
        ),
        None => (host.to_string(), Named::EfsWithoutRegion { fs_id }),
    }
}

impl Named {
    /// Advice for a certificate that is not for `name`, the name checked: why that
    /// name, and what to change.
    pub fn advice(&self, name: &str) -> String {
        match self {
            Named::Host => " — the URL's host must be a name the certificate is for (for \
                 EFS by a mount target's address: add ?fsid= and ?region=, and the file \
                 system's name is checked)"
                .into(),
            Named::Efs { host, fs_id } => format!(
                " — {host} is not a mount target of {fs_id}: its certificate must name \
                 {name}, the file system's DNS name (checked as efs-utils does)"
            ),
            Named::EfsWithoutRegion { fs_id } => format!(
                " — an EFS certificate names the file system, not the address {name}: add \
                 ?region= to check it against {fs_id}.efs.REGION.amazonaws.com"
            ),
        }
    }
}

/// efs-utils.conf's `dns_name_suffix` for `region`: its `[mount.REGION]` sections,
/// `amazonaws.com` for the rest. Matched by the partition's region prefix rather than
/// the listed regions, so that a new region of a known partition needs no release.
/// The partition's other endpoints (STS, for web identity) share the suffix.
pub(crate) fn dns_name_suffix(region: &str) -> &'static str {
    const PARTITIONS: [(&str, &str); 6] = [
        ("cn-", "amazonaws.com.cn"),
        ("us-iso-", "c2s.ic.gov"),
        ("us-isob-", "sc2s.sgov.gov"),
        ("us-isof-", "csp.hci.ic.gov"),
        ("eu-isoe-", "cloud.adc-e.uk"),
        ("eusc-", "amazonaws.eu"),
    ];
    PARTITIONS
        .iter()
        .find(|(prefix, _)| region.starts_with(prefix))
        .map_or("amazonaws.com", |&(_, suffix)| suffix)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nfs::rpc::efsauth::target::EfsKeys;

    /// The name for a URL's host and `?fsid=`/`?region=`, through the URL's own rules.
    fn name(host: &str, fs_id: Option<&str>, region: Option<&str>) -> Option<String> {
        let keys = EfsKeys {
            fs_id: fs_id.map(Into::into),
            region: region.map(Into::into),
            ..EfsKeys::default()
        };
        let target = keys.resolve(host, true).unwrap();
        certificate_name(host, target.as_ref())
    }

    #[test]
    fn the_file_systems_name_as_efs_utils_checks_it() {
        let fs = "fs-0123456789abcdef0";
        let want = |s: &str| Some(s.to_string());
        // A mount target's address: the name of ?fsid= in ?region=.
        assert_eq!(
            name("10.0.1.5", Some(fs), Some("us-east-1")),
            want("fs-0123456789abcdef0.efs.us-east-1.amazonaws.com")
        );
        assert_eq!(
            name("::1", Some("fs-1"), Some("cn-northwest-1")),
            want("fs-1.efs.cn-northwest-1.amazonaws.com.cn")
        );
        // Any other name of the mount target (a CNAME, a test front) likewise.
        assert_eq!(
            name("nfs.corp.example", Some("fs-1"), Some("eu-west-1")),
            want("fs-1.efs.eu-west-1.amazonaws.com")
        );
        // The file system's own names: the AZ label cut off, the suffix kept.
        assert_eq!(
            name(
                &format!("us-east-1a.{fs}.efs.us-east-1.amazonaws.com"),
                None,
                None
            ),
            want("fs-0123456789abcdef0.efs.us-east-1.amazonaws.com")
        );
        assert_eq!(
            name("fs-1.efs.cn-north-1.amazonaws.com.cn", None, None),
            want("fs-1.efs.cn-north-1.amazonaws.com.cn")
        );
        assert_eq!(
            name("EU-WEST-1B.FS-AB.EFS.EU-WEST-1.AMAZONAWS.COM", None, None),
            want("fs-ab.efs.eu-west-1.amazonaws.com")
        );
        // No name to make: the host stays what is checked.
        assert_eq!(name("10.0.1.5", Some(fs), None), None);
        assert_eq!(name("server.example", None, None), None);
        assert_eq!(name("10.0.1.5", None, None), None);
    }

    #[test]
    fn a_certificate_for_another_name_is_explained_by_the_name_and_the_address() {
        let keys = |region: Option<&str>| EfsKeys {
            fs_id: Some("fs-2".into()),
            region: region.map(Into::into),
            ..EfsKeys::default()
        };
        let target = keys(Some("us-east-1")).resolve("10.0.1.5", true).unwrap();
        let (name, named) = for_efs("10.0.1.5", &target.unwrap());
        assert_eq!(name, "fs-2.efs.us-east-1.amazonaws.com");
        let advice = named.advice(&name);
        assert!(
            advice.contains("10.0.1.5 is not a mount target of fs-2")
                && advice.contains("must name fs-2.efs.us-east-1.amazonaws.com"),
            "{advice}"
        );

        let target = keys(None).resolve("10.0.1.5", true).unwrap();
        let (name, named) = for_efs("10.0.1.5", &target.unwrap());
        assert_eq!(name, "10.0.1.5");
        assert!(named.advice(&name).contains("add ?region="), "{name}");
    }

    #[test]
    fn each_partition_has_efs_utils_suffix() {
        for (region, suffix) in [
            ("us-east-1", "amazonaws.com"),
            ("us-gov-west-1", "amazonaws.com"),
            ("cn-north-1", "amazonaws.com.cn"),
            ("cn-northwest-1", "amazonaws.com.cn"),
            ("us-iso-east-1", "c2s.ic.gov"),
            ("us-isob-east-1", "sc2s.sgov.gov"),
            ("us-isof-south-1", "csp.hci.ic.gov"),
            ("eu-isoe-west-1", "cloud.adc-e.uk"),
            ("eusc-de-east-1", "amazonaws.eu"),
        ] {
            assert_eq!(dns_name_suffix(region), suffix, "{region}");
        }
    }
}
