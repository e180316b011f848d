//! Parsing `nfs://server[:port]/export/path[?query]` in the libnfs URL form.
//!
//! We accept libnfs's own query keys (`version`, `nfsport`, `mountport`, `uid`, `gid`)
//! so URLs users already have for nfs-cp/nfs-ls work unchanged, plus nfsync's own
//! (`conns`, `window`, `resvport`/`noresvport`, and for NFSv4.1 `slots`, `tls`,
//! `tls-ca`), and efs-utils' for EFS (`iam`, `accesspoint`, `awsprofile`, with `fsid`
//! and `region` for an address; see [`super::efsauth::target`]). Unknown keys are refused rather than ignored: a typo in `noresvport`
//! would otherwise show up as a baffling MNT3ERR_ACCES.

use std::path::PathBuf;

use super::efsauth::target::{EfsKeys, EfsTarget};

/// Which NFS version a URL asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Version {
    /// NFSv3 with the MOUNT protocol (`?version=3`).
    V3,
    /// NFSv4.1 with sessions (`?version=4.1`, or `4`).
    V41,
}

/// A parsed `nfs://` destination.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NfsUrl {
    /// Host name or IP literal (IPv6 without brackets).
    pub host: String,
    /// NFS port: `server:port` or `?nfsport=`; `None` asks the portmapper.
    pub nfs_port: Option<u16>,
    /// MOUNT port (`?mountport=`); `None` asks the portmapper.
    pub mount_port: Option<u16>,
    /// Absolute path on the server: export followed by a directory inside it.
    pub path: String,
    /// AUTH_SYS uid override.
    pub uid: Option<u32>,
    /// AUTH_SYS gid override.
    pub gid: Option<u32>,
    /// TCP connections to the NFS server.
    pub conns: Option<usize>,
    /// Calls in flight per connection.
    pub window: Option<usize>,
    /// `Some(true)` for `resvport`, `Some(false)` for `noresvport`; `None` = by privilege.
    pub resvport: Option<bool>,
    /// `?version=`; `None` lets nfsync choose (see `crate::nfs::connect`).
    pub version: Option<Version>,
    /// NFSv4.1 session slots to ask for (`?slots=`).
    pub slots: Option<u32>,
    /// Wrap the connection in TLS (`?tls`), as EFS's `tls` mount option does.
    pub tls: bool,
    /// A CA certificate file (PEM) to check the server's certificate with, instead of
    /// the system's roots (`?tls-ca=FILE`; implies `tls`).
    pub tls_ca: Option<PathBuf>,
    /// NFSv4.1: combine small files' compounds when the slots are busy (`?batch=0`
    /// turns it off, to compare).
    pub batch: Option<bool>,
    /// The server is an EFS mount target (`?efs`, for an IP address; `?efs=0` says it
    /// is not); `None` judges by the host name and [`NfsUrl::efs`].
    pub efs_server: Option<bool>,
    /// The EFS file system the URL names (by host name or `?fsid=`), with the
    /// authentication it asks for; `None` for other servers.
    pub efs: Option<EfsTarget>,
    /// `?mounttargetip=`, efs-utils' mount option: the address to connect to, the host
    /// name still naming the file system (its certificate, its bind call), as when
    /// the name does not resolve where the run is.
    pub connect_ip: Option<std::net::IpAddr>,
}

/// Whether DEST names an NFS server rather than a local path.
pub fn is_nfs_url(s: &str) -> bool {
    // URL schemes are case-insensitive (RFC 3986): `NFS://` is a URL, not a local path.
    s.get(..6).is_some_and(|p| p.eq_ignore_ascii_case("nfs://"))
}

fn decode(s: &str) -> Result<String, String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = s
                .get(i + 1..i + 3)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or_else(|| format!("bad %-escape in {s:?}"))?;
            out.push(hex);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| format!("{s:?} is not UTF-8 after %-decoding"))
}

fn num<T: std::str::FromStr>(key: &str, v: &str) -> Result<T, String> {
    v.parse()
        .map_err(|_| format!("?{key}={v}: not a valid number"))
}

/// Parses an `nfs://` URL.
pub fn parse(url: &str) -> Result<NfsUrl, String> {
    let rest = url
        .get(6..)
        .filter(|_| is_nfs_url(url))
        .ok_or_else(|| format!("{url:?} does not start with nfs://"))?;
    // `nfs://h/dir?opts/` (a trailing slash added to a URL that has a query, as
    // scripts do for "into this directory") means the same as `nfs://h/dir/?opts`.
    let (rest, query) = match rest.split_once('?') {
        Some((r, q)) => (r, Some(q.trim_end_matches('/'))),
        None => (rest, None),
    };
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
        let (h, after) = v6
            .split_once(']')
            .ok_or_else(|| format!("{url:?}: unclosed [ in host"))?;
        let port = match after.strip_prefix(':') {
            Some(p) => Some(p),
            None if after.is_empty() => None,
            None => return Err(format!("{url:?}: junk after ]")),
        };
        (h.to_string(), port)
    } else {
        match authority.rsplit_once(':') {
            Some((h, p)) => (h.to_string(), Some(p)),
            None => (authority.to_string(), None),
        }
    };
    if host.is_empty() {
        return Err(format!("{url:?}: no server name"));
    }
    let mut u = NfsUrl {
        host,
        nfs_port: port
            .map(|p| match p.parse::<u16>() {
                Ok(n) if n > 0 => Ok(n),
                _ => Err(format!(
                    "{url:?}: port {p:?} is not a port number (1 to 65535)"
                )),
            })
            .transpose()?,
        mount_port: None,
        path: decode(path)?,
        uid: None,
        gid: None,
        conns: None,
        window: None,
        resvport: None,
        version: None,
        slots: None,
        tls: false,
        tls_ca: None,
        batch: None,
        efs_server: None,
        connect_ip: None,
        efs: None,
    };
    let mut efs = EfsKeys::default();
    for kv in query.unwrap_or("").split('&').filter(|s| !s.is_empty()) {
        let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
        match k {
            "version" => {
                u.version = Some(match v {
                    "3" => Version::V3,
                    "4" | "4.1" => Version::V41,
                    "4.0" => {
                        return Err(
                            "?version=4.0: nfsync speaks NFSv4.1, not 4.0: NFSv4.0 has no \
                             sessions, so a call retried after a lost connection may run \
                             twice; use version=4.1 (EFS and current servers speak it)"
                                .to_string(),
                        );
                    }
                    _ => {
                        return Err(format!(
                            "?version={v}: nfsync speaks NFSv3 (version=3) and NFSv4.1 \
                             (version=4.1)"
                        ));
                    }
                })
            }
            "slots" => {
                let n: u32 = num(k, v)?;
                if !(1..=1024).contains(&n) {
                    return Err(format!("?{k}={v}: must be 1..=1024"));
                }
                u.slots = Some(n);
            }
            "tls" if v.is_empty() || v == "1" => u.tls = true,
            "batch" => u.batch = Some(v != "0"),
            "efs" => u.efs_server = Some(v != "0"),
            "tls-ca" if !v.is_empty() => {
                u.tls = true;
                u.tls_ca = Some(PathBuf::from(decode(v)?));
            }
            "nfsport" => u.nfs_port = Some(num(k, v)?),
            "mountport" => u.mount_port = Some(num(k, v)?),
            "uid" => u.uid = Some(num(k, v)?),
            "gid" => u.gid = Some(num(k, v)?),
            "conns" | "nconnect" => {
                let n: usize = num(k, v)?;
                if !(1..=64).contains(&n) {
                    return Err(format!("?{k}={v}: must be 1..=64"));
                }
                u.conns = Some(n);
            }
            "window" => {
                let n: usize = num(k, v)?;
                if !(1..=1024).contains(&n) {
                    return Err(format!("?{k}={v}: must be 1..=1024"));
                }
                u.window = Some(n);
            }
            "resvport" => u.resvport = Some(v != "0"),
            "noresvport" => u.resvport = Some(v == "0"),
            "mounttargetip" => {
                let ip = v
                    .parse()
                    .map_err(|_| format!("?mounttargetip={v}: not an IP address"))?;
                u.connect_ip = Some(ip);
            }
            _ if efs.take(k, v)? => {}
            _ => {
                return Err(format!(
                    "unknown URL option {k:?} (known: version, nfsport, mountport, uid, gid, \
                     conns, window, resvport, noresvport, slots, tls, tls-ca, batch, efs, iam, \
                     accesspoint, awsprofile, fsid, region, mounttargetip)"
                ));
            }
        }
    }
    u.tls |= efs.implies_tls();
    if u.version == Some(Version::V3) {
        let v4_only = [
            (u.slots.is_some(), "slots"),
            (efs.v4_only().is_some(), efs.v4_only().unwrap_or_default()),
            (u.tls, "tls"),
            (u.connect_ip.is_some(), "mounttargetip"),
        ];
        if let Some((_, k)) = v4_only.iter().find(|(set, _)| *set) {
            return Err(format!(
                "?{k} needs NFSv4.1 (version=4.1): NFSv3 has no sessions and its MOUNT \
                 protocol cannot go through TLS"
            ));
        }
    }
    if u.mount_port.is_some() && u.version == Some(Version::V41) {
        return Err("?mountport: NFSv4.1 has no MOUNT protocol".to_string());
    }
    u.efs = efs.resolve(&u.host, u.tls)?;
    Ok(u)
}

/// The URL with the `.` components of its path left out: NFSv4 has no name `.` to
/// LOOKUP (NFS4ERR_BADNAME), and `SRC/.` reads as `SRC/` (the trailing-slash rule reads
/// the operand as given).
pub fn without_dots(url: &str) -> String {
    let (before, query) = match url.split_once('?') {
        Some((b, q)) => (b, Some(q)),
        None => (url, None),
    };
    let Some((scheme, rest)) = before.split_at_checked(6) else {
        return url.to_owned();
    };
    let Some(at) = rest.find('/') else {
        return url.to_owned();
    };
    let (authority, path) = rest.split_at(at);
    let kept: Vec<&str> = path.split('/').filter(|c| *c != ".").collect();
    let path = match kept.join("/") {
        p if p.is_empty() => "/".to_owned(),
        p => p,
    };
    match query {
        Some(q) => format!("{scheme}{authority}{path}?{q}"),
        None => format!("{scheme}{authority}{path}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_libnfs_form() {
        let u = parse("nfs://srv:2049/exp/sub%20dir?mountport=635&uid=5&gid=6&noresvport&conns=8")
            .unwrap();
        assert_eq!(u.host, "srv");
        assert_eq!(u.nfs_port, Some(2049));
        assert_eq!(u.mount_port, Some(635));
        assert_eq!(u.path, "/exp/sub dir");
        assert_eq!((u.uid, u.gid), (Some(5), Some(6)));
        assert_eq!(u.resvport, Some(false));
        assert_eq!(u.conns, Some(8));
    }

    #[test]
    fn mounttargetip_is_where_to_connect_the_name_still_names_the_file_system() {
        let u = parse("nfs://fs-0123abcd.efs.eu-west-1.amazonaws.com/d?tls&mounttargetip=10.0.1.5")
            .unwrap();
        assert_eq!(u.connect_ip, Some("10.0.1.5".parse().unwrap()));
        assert_eq!(u.host, "fs-0123abcd.efs.eu-west-1.amazonaws.com");
        assert_eq!(u.efs.map(|t| t.fs_id), Some("fs-0123abcd".to_string()));
        assert!(parse("nfs://h/d?mounttargetip=nowhere").is_err());
        assert!(parse("nfs://h/d?mounttargetip=10.0.1.5&version=3").is_err());
    }

    #[test]
    fn version_4_1_and_its_keys() {
        let u =
            parse("nfs://fs-1.efs.eu-west-1.amazonaws.com/dir?version=4.1&slots=16&tls").unwrap();
        assert_eq!(u.version, Some(Version::V41));
        assert_eq!((u.slots, u.tls, u.tls_ca), (Some(16), true, None));
        assert_eq!(u.efs_server, None);
        assert_eq!(
            parse("nfs://10.0.0.5/d?efs").unwrap().efs_server,
            Some(true)
        );
        assert_eq!(parse("nfs://h/d?efs=0").unwrap().efs_server, Some(false));
        let u = parse("nfs://h/d?version=4&tls-ca=/etc/my%20ca.pem").unwrap();
        assert_eq!(u.version, Some(Version::V41));
        assert!(u.tls);
        assert_eq!(u.tls_ca, Some(PathBuf::from("/etc/my ca.pem")));
        assert_eq!(parse("nfs://h/d").unwrap().version, None);
        assert_eq!(
            parse("nfs://h/d?version=3").unwrap().version,
            Some(Version::V3)
        );
    }

    #[test]
    fn ipv6_and_defaults() {
        let u = parse("nfs://[::1]/").unwrap();
        assert_eq!(u.host, "::1");
        assert_eq!(u.nfs_port, None);
        assert_eq!(u.path, "/");
        assert_eq!(parse("nfs://h").unwrap().path, "/");
        assert_eq!(parse("nfs://h/d?nfsport=2/").unwrap().nfs_port, Some(2));
    }

    #[test]
    fn refuses_what_it_cannot_do() {
        assert!(
            parse("nfs://h/x?version=4.0")
                .unwrap_err()
                .contains("sessions")
        );
        assert!(parse("nfs://h/x?version=2").is_err());
        assert!(
            parse("nfs://h/x?version=3&tls")
                .unwrap_err()
                .contains("4.1")
        );
        assert!(parse("nfs://h/x?version=4.1&mountport=5").is_err());
        assert!(parse("nfs://h/x?slots=0").is_err());
        assert!(parse("nfs://h/x?noresvprot").is_err());
        assert!(parse("nfs:///x").is_err());
        assert!(parse("nfs://h:99999/x").is_err());
    }

    #[test]
    fn efs_keys_from_the_host_name_or_fsid_and_region() {
        let u = parse("nfs://fs-deadbeef.efs.us-east-1.amazonaws.com/d?accesspoint=fsap-0123456789abcdef0&iam&awsprofile=ci").unwrap();
        assert!(u.tls, "an access point implies TLS");
        assert_eq!(
            u.efs,
            Some(EfsTarget {
                fs_id: "fs-deadbeef".into(),
                region: Some("us-east-1".into()),
                access_point: Some("fsap-0123456789abcdef0".into()),
                iam: true,
                aws_profile: Some("ci".into()),
            })
        );
        // A plain EFS name with TLS still names the file system: efs-utils sends its
        // certificate on every TLS mount.
        let u = parse("nfs://fs-1.efs.eu-west-1.amazonaws.com/?tls").unwrap();
        let t = u.efs.unwrap();
        assert_eq!((t.fs_id.as_str(), t.iam), ("fs-1", false));
        let u = parse("nfs://10.0.0.9/?tls&iam&fsid=fs-abc&region=eu-west-1").unwrap();
        let t = u.efs.unwrap();
        assert_eq!(
            (t.fs_id.as_str(), t.region.as_deref()),
            ("fs-abc", Some("eu-west-1"))
        );
        assert_eq!(parse("nfs://10.0.0.9/?tls").unwrap().efs, None);
        assert_eq!(parse("nfs://srv/x").unwrap().efs, None);
    }

    #[test]
    fn efs_keys_refused_with_efs_utils_reasons() {
        let err = |url: &str| parse(url).unwrap_err();
        let efs = "nfs://fs-1.efs.eu-west-1.amazonaws.com/";
        assert!(err(&format!("{efs}?iam")).contains("\"tls\" option is required"));
        assert!(err(&format!("{efs}?tls&awsprofile=p")).contains("\"iam\" option is required"));
        assert!(err(&format!("{efs}?accesspoint=fsap-1")).contains("malformed"));
        assert!(
            err(&format!(
                "{efs}?accesspoint=fsap-0123456789abcdef0&version=3"
            ))
            .contains("?accesspoint needs NFSv4.1")
        );
        assert!(err(&format!("{efs}?iam&version=3")).contains("?iam needs NFSv4.1"));
        assert!(err(&format!("{efs}?tls&fsid=fs-2")).contains("contradicts"));
        assert!(err(&format!("{efs}?tls&region=us-east-1")).contains("contradicts"));
        assert!(err("nfs://10.0.0.9/?tls&iam").contains("?fsid="));
        assert!(err("nfs://10.0.0.9/?tls&iam&fsid=fs-1").contains("?region="));
        assert!(err("nfs://10.0.0.9/?tls&fsid=xyz").contains("fs-<hex>"));
        assert!(err("nfs://10.0.0.9/?tls&awsprofile=").contains("needs a profile"));
    }

    #[test]
    fn the_scheme_is_case_insensitive_and_a_bad_port_is_named() {
        for url in ["NFS://h:2049/x", "Nfs://h:2049/x", "nFs://h:2049/x"] {
            assert!(is_nfs_url(url), "{url}");
            assert_eq!(parse(url).unwrap().nfs_port, Some(2049));
        }
        assert!(!is_nfs_url("nfs:/h/x") && !is_nfs_url("nfs") && !is_nfs_url("./nfs://x"));
        for (url, port) in [
            ("nfs://h:99999/x", "99999"),
            ("nfs://h:abc/x", "abc"),
            ("nfs://h:0/x", "0"),
        ] {
            let e = parse(url).unwrap_err();
            assert!(
                e.contains(&format!("port \"{port}\"")) && e.contains("65535"),
                "{e}"
            );
        }
    }

    #[test]
    fn dot_components_are_left_out_of_the_path_alone() {
        for (given, sent) in [
            ("nfs://h/e/src/.?version=4.1", "nfs://h/e/src?version=4.1"),
            ("nfs://h:2049/e/./src/./", "nfs://h:2049/e/src/"),
            ("nfs://h/.", "nfs://h/"),
            ("nfs://h/e/src/?a=./.", "nfs://h/e/src/?a=./."),
            ("nfs://h/e/.hidden/..x", "nfs://h/e/.hidden/..x"),
            ("nfs://h", "nfs://h"),
        ] {
            assert_eq!(without_dots(given), sent, "{given}");
        }
    }
}
