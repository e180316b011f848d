//! The EFS client certificate end to end: nfsync through stunnel that requires a client
//! certificate (as EFS asks for one) in front of nfs-ganesha. The certificate's contents
//! are checked byte for byte against efs-utils' in the unit tests; here: it is made
//! (the host key with mode 0600), shown, and a copy through it is exact; without an EFS
//! file system in the URL no certificate goes and the server refuses; `?iam` without
//! credentials ends with exit 10 and one line naming what was tried, quickly.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::time::{Duration, Instant};

use crate::support::ganesha::{self, Ganesha, Nfs4, Options};
use crate::support::tls::{self, Ca, Stunnel};
use crate::support::{Scratch, Tree, describe, rsync_diff_with};

/// ganesha (NFSv4.1 only) behind stunnel demanding a client certificate; `None` when
/// they cannot run here.
fn server(dir: &Scratch) -> Option<(Ganesha, Ca, Stunnel)> {
    if !ganesha::available() || !tls::available() {
        return None;
    }
    let opts = Options {
        nfs4: Nfs4::Only,
        ..Options::default()
    };
    let g = Ganesha::start(&dir.join("export"), &dir.join("state"), opts)
        .unwrap_or_else(|e| panic!("{e}"));
    let ca = Ca::new(&dir.join("pki"), "test-ca");
    // The address for URLs with ?fsid= alone, the file system's name for those that
    // add ?region= (checked against it, as efs-utils does).
    let san = "IP:127.0.0.1,DNS:fs-deadbeef.efs.us-east-1.amazonaws.com";
    let (cert, key) = ca.server_cert_for(&dir.join("pki"), san);
    let st = Stunnel::start_with(
        &dir.join("pki"),
        &cert,
        &key,
        g.nfs_port,
        "requireCert = yes\n",
    );
    Some((g, ca, st))
}

/// nfsync SRC/ URL with a clean AWS environment: the host key at `key`, `HOME` in the
/// scratch directory, instance metadata at a closed loopback port, plus `env`.
fn run(
    dir: &Scratch,
    src: &std::path::Path,
    url: &str,
    env: &[(&str, &str)],
) -> std::process::Output {
    run_with(dir, src, url, env, &[])
}

/// [`run`] with more options.
fn run_with(
    dir: &Scratch,
    src: &std::path::Path,
    url: &str,
    env: &[(&str, &str)],
    args: &[&str],
) -> std::process::Output {
    command(dir, env)
        .args(args)
        .arg("--timeout")
        .arg("20")
        .arg(format!("{}/", src.display()))
        .arg(url)
        .output()
        .expect("run nfsync")
}

/// nfsync with `env` and nothing else of AWS's, its EFS key and HOME in `dir`, and
/// instance metadata on a closed port.
fn command(dir: &Scratch, env: &[(&str, &str)]) -> assert_cmd::Command {
    let mut cmd = tls::efs_nfsync(dir.path(), &dir.join("state-dir/efs-client-key.pem"));
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd
}

#[test]
fn the_efs_certificate_is_shown_and_a_copy_through_it_is_exact() {
    let dir = Scratch::new();
    let Some((g, ca, st)) = server(&dir) else {
        return;
    };
    let tree = Tree::new(dir.join("src"));
    for i in 0..50 {
        tree.random_file(format!("d{}/f{i}", i % 3), 100 + i * 53, i);
    }
    let base = format!("nfs://127.0.0.1:{}{}", st.port, g.export.display());
    let ca_q = format!("tls-ca={}", ca.cert.display());

    // An access point turns TLS on; fsid names the file system behind an address.
    let url = format!("{base}/ap?{ca_q}&fsid=fs-deadbeef&accesspoint=fsap-0123456789abcdef0");
    let out = run(&dir, tree.root(), &url, &[]);
    assert!(out.status.success(), "{}", describe(&out));
    let diff = rsync_diff_with(tree.root(), &g.export.join("ap"), &["--omit-link-times"]);
    assert!(
        diff.is_empty(),
        "differs after a copy with the certificate:\n{diff}"
    );
    let key = dir.join("state-dir/efs-client-key.pem");
    let mode = std::fs::metadata(&key).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600, "the host key is private");
    let before = std::fs::read(&key).unwrap();

    // IAM with keys from the environment (stunnel does not check the signature; the
    // unit tests check it is efs-utils' own).
    let url = format!("{base}/iam?{ca_q}&fsid=fs-deadbeef&region=us-east-1&iam");
    let env = [
        ("AWS_ACCESS_KEY_ID", "FAKE_AWS_ACCESS_KEY_ID"),
        ("AWS_SECRET_ACCESS_KEY", "FAKE_AWS_SECRET_ACCESS_KEY"),
        ("AWS_SESSION_TOKEN", "FAKE_SESSION_TOKEN"),
    ];
    let out = run(&dir, tree.root(), &url, &env);
    assert!(out.status.success(), "{}", describe(&out));
    assert_eq!(
        std::fs::read(&key).unwrap(),
        before,
        "one key per host, reused"
    );

    // Plain TLS to an address that names no EFS file system: no certificate, refused.
    let url = format!("{base}/plain?{ca_q}");
    let out = run(&dir, tree.root(), &url, &[]);
    assert_eq!(out.status.code(), Some(10), "{}", describe(&out));
    assert!(!g.export.join("plain").exists(), "nothing may be written");
}

#[test]
fn iam_without_credentials_is_one_line_and_exit_10_quickly() {
    let dir = Scratch::new();
    let tree = Tree::new(dir.join("src"));
    tree.random_file("f", 10, 1);
    // Nothing listens here: the credentials must fail before any connection.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("nfs://127.0.0.1:{port}/x?tls&fsid=fs-deadbeef&region=us-east-1&iam");
    let t = Instant::now();
    let out = run(&dir, tree.root(), &url, &[]);
    assert_eq!(out.status.code(), Some(10), "{}", describe(&out));
    assert!(
        t.elapsed() < Duration::from_secs(10),
        "took {:?}",
        t.elapsed()
    );
    let err = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "{}", describe(&out));
    for what in [
        "no AWS credentials",
        "AWS_ACCESS_KEY_ID",
        "AWS_ROLE_ARN",
        "profile default",
        "EC2 instance metadata",
    ] {
        assert!(lines[0].contains(what), "{what} not in {}", lines[0]);
    }
    // An explicit profile that is not there is named as such.
    let url = format!("{url}&awsprofile=ci");
    let out = run(&dir, tree.root(), &url, &[]);
    assert_eq!(out.status.code(), Some(10), "{}", describe(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("profile ci"),
        "{}",
        describe(&out)
    );
}

/// An access point gives every file its own user and group, so a run as root copies
/// no owners through one unless asked (`-o`/`-g`), and says so once; a re-run then
/// finds nothing to fix.
#[test]
fn an_access_point_leaves_owners_to_efs_unless_asked() {
    if !crate::support::is_root() {
        return;
    }
    let dir = Scratch::new();
    let Some((g, ca, st)) = server(&dir) else {
        return;
    };
    let tree = Tree::new(dir.join("src"));
    tree.file("theirs", "x\n");
    let theirs = tree.root().join("theirs");
    rustix::fs::chown(
        &theirs,
        Some(rustix::fs::Uid::from_raw(1234)),
        Some(rustix::fs::Gid::from_raw(1234)),
    )
    .unwrap();
    let base = format!("nfs://127.0.0.1:{}{}", st.port, g.export.display());
    let ca_q = format!("tls-ca={}", ca.cert.display());
    let url =
        |d: &str| format!("{base}/{d}?{ca_q}&fsid=fs-deadbeef&accesspoint=fsap-0123456789abcdef0");
    let owner = |d: &str| {
        let m = std::fs::metadata(g.export.join(d).join("theirs")).unwrap();
        (m.uid(), m.gid())
    };
    for _ in 0..2 {
        let out = run_with(&dir, tree.root(), &url("ap"), &[], &["-a", "--json"]);
        assert!(out.status.success(), "{}", describe(&out));
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            err.matches("EFS access point").count(),
            1,
            "said once: {err}"
        );
        assert_eq!(owner("ap"), (0, 0), "owners left to the access point");
        let stats = crate::support::json_stats(&out);
        assert_eq!(crate::support::stat(&stats, "attrs_updated"), 0, "{stats}");
    }
    let out = run_with(&dir, tree.root(), &url("asked"), &[], &["-a", "-o", "-g"]);
    assert!(out.status.success(), "{}", describe(&out));
    assert!(!String::from_utf8_lossy(&out.stderr).contains("EFS access point"));
    assert_eq!(owner("asked"), (1234, 1234), "-o -g ask for them");
}

/// `--check` says which certificate it showed: the file system, the access point and
/// where the IAM credentials came from.
#[test]
fn check_names_the_certificate_and_the_credentials_source() {
    let dir = Scratch::new();
    let Some((g, ca, st)) = server(&dir) else {
        return;
    };
    std::fs::create_dir(g.export.join("chk")).unwrap();
    let url = format!(
        "nfs://127.0.0.1:{}{}/chk?tls-ca={}&fsid=fs-deadbeef&region=us-east-1&iam&accesspoint=fsap-0123456789abcdef0",
        st.port,
        g.export.display(),
        ca.cert.display()
    );
    let env = [
        ("AWS_ACCESS_KEY_ID", "FAKE_AWS_ACCESS_KEY_ID"),
        ("AWS_SECRET_ACCESS_KEY", "FAKE_AWS_SECRET_ACCESS_KEY"),
    ];
    let out = command(&dir, &env)
        .args(["--check", "--json", "--jobs", "4", &url])
        .output()
        .expect("run nfsync");
    assert!(out.status.success(), "{}", describe(&out));
    let f: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let conn = f["connection"].as_str().unwrap();
    for want in [
        "over TLS with efs-utils' client certificate for fs-deadbeef",
        "access point fsap-0123456789abcdef0",
        "signed for IAM with credentials from",
    ] {
        assert!(conn.contains(want), "no {want:?} in {conn}");
    }
}
