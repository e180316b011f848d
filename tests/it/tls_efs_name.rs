//! The name an EFS mount target's certificate is checked against: behind stunnel sits
//! nfs-ganesha (NFSv4.1), and stunnel's certificate names only the file system's DNS
//! name `fs-0123456789abcdef0.efs.us-east-1.amazonaws.com`, as EFS's do: neither the
//! address nor an AZ-specific name. A copy through the address with `?fsid=&region=`
//! and one through the AZ-prefixed name must both end exact; the same address with
//! another file system's `?fsid=`, or with none, must end with exit 10 and one line
//! naming the name checked and the address.
//!
//! The AZ-prefixed name resolves to 127.0.0.1 through /etc/hosts in a private mount
//! namespace of that one run (`unshare --mount`, a hosts file bound over /etc/hosts):
//! nfsync reads /etc/hosts as with an entry in the machine's own, while the machine's
//! file, and every other run on it, is left as it was, also when the test fails.

use std::path::Path;
use std::process::Output;

use crate::support::ganesha::{self, Ganesha, Nfs4, Options};
use crate::support::tls::{self, Ca, Stunnel};
use crate::support::{RUN_TIMEOUT, Scratch, Tree, describe, root_or_skip, rsync_diff_with};

const FS: &str = "fs-0123456789abcdef0";
const REGION: &str = "us-east-1";
const FS_NAME: &str = "fs-0123456789abcdef0.efs.us-east-1.amazonaws.com";
const AZ_NAME: &str = "us-east-1a.fs-0123456789abcdef0.efs.us-east-1.amazonaws.com";

/// ganesha (NFSv4.1 only) behind stunnel with a certificate for `FS_NAME` alone, and
/// the CA that signed it; `None` when they cannot run here.
fn server(dir: &Scratch) -> Option<(Ganesha, Ca, Stunnel)> {
    if !root_or_skip("ganesha tests") || !ganesha::available() || !tls::available() {
        return None;
    }
    let opts = Options {
        nfs4: Nfs4::Only,
        ..Options::default()
    };
    let g = Ganesha::start(&dir.join("export"), &dir.join("state"), opts)
        .unwrap_or_else(|e| panic!("{e}"));
    let ca = Ca::new(&dir.join("pki"), "test-ca");
    let (cert, key) = ca.server_cert_for(&dir.join("pki"), &format!("DNS:{FS_NAME}"));
    let st = Stunnel::start(&dir.join("pki"), &cert, &key, g.nfs_port);
    Some((g, ca, st))
}

/// A tree of a few directories, files of several sizes, and a link.
fn tree(dir: &Scratch) -> Tree {
    let tree = Tree::new(dir.join("src"));
    for i in 0..40 {
        tree.random_file(format!("d{}/f{i}", i % 3), 100 + i * 91, i);
    }
    tree.random_file("big", 1_500_000, 7);
    tree.symlink("d0/link", "f0");
    tree
}

/// `nfsync SRC/ URL` with a clean AWS environment (the EFS host key in `dir`), through
/// `wrapper` (a command line that ends by running its arguments) if any.
fn run(dir: &Scratch, wrapper: &[&str], src: &Path, url: &str) -> Output {
    let cmd = match wrapper {
        [] => crate::support::nfsync(),
        [program, args @ ..] => {
            let mut cmd = assert_cmd::Command::new(program);
            cmd.args(args)
                .arg(crate::support::bin())
                .timeout(RUN_TIMEOUT);
            cmd
        }
    };
    tls::efs_env(cmd, dir.path(), &dir.join("state-dir/efs-client-key.pem"))
        .args(["--timeout", "20"])
        .arg(format!("{}/", src.display()))
        .arg(url)
        .output()
        .expect("run nfsync")
}

/// The one line a failed run prints, checked to be the only one.
fn one_line(out: &Output) -> String {
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    let lines: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "one line says why:\n{}", describe(out));
    lines[0].to_string()
}

/// The copy in `export/rel` is exactly `src`'s, by rsync.
fn assert_exact(src: &Path, export: &Path, rel: &str) {
    let diff = rsync_diff_with(src, &export.join(rel), &["--omit-link-times"]);
    assert!(diff.is_empty(), "{rel} differs from the source:\n{diff}");
}

#[test]
fn a_mount_targets_address_with_fsid_and_region_checks_the_file_systems_name() {
    let dir = Scratch::new();
    let Some((g, ca, st)) = server(&dir) else {
        return;
    };
    let tree = tree(&dir);
    let url = |rel: &str, keys: &str| {
        format!(
            "nfs://127.0.0.1:{}{}/{rel}?tls&tls-ca={}{keys}",
            st.port,
            g.export.display(),
            ca.cert.display()
        )
    };

    let keys = format!("&fsid={FS}&region={REGION}");
    let out = run(&dir, &[], tree.root(), &url("by-address", &keys));
    assert!(out.status.success(), "{}", describe(&out));
    assert_exact(tree.root(), &g.export, "by-address");

    // Another file system's id: its name is checked, and the certificate is not for it.
    let other = "fs-0fedcba9876543210";
    let keys = format!("&fsid={other}&region={REGION}");
    let out = run(&dir, &[], tree.root(), &url("other-fs", &keys));
    assert_eq!(out.status.code(), Some(10), "{}", describe(&out));
    let line = one_line(&out);
    for what in [
        &format!("{other}.efs.{REGION}.amazonaws.com") as &str,
        "127.0.0.1",
        "not a mount target of",
    ] {
        assert!(line.contains(what), "{what:?} not in: {line}");
    }
    assert!(
        !g.export.join("other-fs").exists(),
        "nothing may be written"
    );

    // Without the file system's keys the address itself is checked, which EFS
    // certificates (and this one) do not name.
    let out = run(&dir, &[], tree.root(), &url("no-fsid", ""));
    assert_eq!(out.status.code(), Some(10), "{}", describe(&out));
    let line = one_line(&out);
    assert!(
        line.contains("not valid for name") && line.contains("?fsid= and ?region="),
        "{line}"
    );
    assert!(!g.export.join("no-fsid").exists(), "nothing may be written");
}

#[test]
fn an_az_specific_name_checks_the_file_systems_name_without_the_zone() {
    let dir = Scratch::new();
    let Some((g, ca, st)) = server(&dir) else {
        return;
    };
    let tree = tree(&dir);
    let hosts = dir.join("hosts");
    let machine = std::fs::read_to_string("/etc/hosts").unwrap_or_default();
    std::fs::write(&hosts, format!("{machine}\n127.0.0.1 {AZ_NAME}\n")).unwrap();
    let hosts = hosts.to_str().unwrap();
    let private_hosts = [
        "unshare",
        "--mount",
        "--propagation",
        "private",
        "sh",
        "-c",
        r#"mount --bind "$0" /etc/hosts && exec "$@""#,
        hosts,
    ];
    let url = format!(
        "nfs://{AZ_NAME}:{}{}/by-az-name?tls&tls-ca={}",
        st.port,
        g.export.display(),
        ca.cert.display()
    );
    let out = run(&dir, &private_hosts, tree.root(), &url);
    assert!(out.status.success(), "{}", describe(&out));
    assert_exact(tree.root(), &g.export, "by-az-name");
}

/// efs-utils' `mounttargetip=`: the file system's own name in the URL, which does not
/// resolve here (no hosts entry), and the mount target's address to connect to. The
/// certificate is checked against the name, and the copy ends exact.
#[test]
fn mounttargetip_connects_there_and_checks_the_file_systems_name() {
    let dir = Scratch::new();
    let Some((g, ca, st)) = server(&dir) else {
        return;
    };
    let tree = tree(&dir);
    let url = format!(
        "nfs://{FS_NAME}:{}{}/by-mount-target-ip?tls&tls-ca={}&mounttargetip=127.0.0.1",
        st.port,
        g.export.display(),
        ca.cert.display()
    );
    let out = run(&dir, &[], tree.root(), &url);
    assert!(out.status.success(), "{}", describe(&out));
    assert_exact(tree.root(), &g.export, "by-mount-target-ip");
}
