//! nfsync through a fake EFS front (`support::efs_front`): TLS with a required client
//! certificate whose signature, key, file system, access point and dates the front
//! checks itself, in front of nfs-ganesha (NFSv4.1) behind the partition shim.
//!
//! The URL names the front by address with `?fsid=&region=` (and `tls-ca=` for the test
//! CA, whose server certificate names only the file system's DNS name, as EFS's do:
//! nfsync checks it against that name, as efs-utils does) rather than by an
//! `fs-….efs.REGION.amazonaws.com` name in /etc/hosts: the certificate and signature are
//! made from the same fs id and region either way, the EFS keys make nfsync bind every
//! connection as for an EFS name, and no test changes the machine's name resolution
//! under the others that run at the same time.
//!
//! Each refusal is pinned to its own check by the verdict the front records, so a run
//! refused for another reason fails the test.

use std::path::Path;
use std::process::Output;

use crate::support::efs_front::{EfsFront, Known, Policy};
use crate::support::efs_shim::{Answer, PartitionShim};
use crate::support::ganesha::{self, Ganesha, Nfs4, Options};
use crate::support::tls::{self, Ca};
use crate::support::{Scratch, Tree, describe, root_or_skip, rsync_diff_with};

const FS: &str = "fs-0123abcd";
const REGION: &str = "eu-west-1";
const AP: &str = "fsap-0123456789abcdef0";
const AKID: &str = "ASIAFAKETEMPORARY";
const SECRET: &str = "fake/secret+key=";
const TOKEN: &str = "FAKE/session+token==";
const LONG_AKID: &str = "AKIAFAKELONGTERM";
const LONG_SECRET: &str = "fake-long-term-secret";

/// The environment of a run with temporary credentials.
fn creds(secret: &str, token: Option<&str>) -> Vec<(&'static str, String)> {
    let mut v = vec![
        ("AWS_ACCESS_KEY_ID", AKID.to_string()),
        ("AWS_SECRET_ACCESS_KEY", secret.to_string()),
    ];
    if let Some(t) = token {
        v.push(("AWS_SESSION_TOKEN", t.to_string()));
    }
    v
}

/// ganesha (NFSv4.1 only) and the test CA; `None` when they cannot run here.
fn backend(dir: &Scratch) -> Option<(Ganesha, Ca)> {
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
    Some((g, ca))
}

/// A front for `FS` that knows the temporary and the long-term key above, before a partition shim of its
/// own (the shim holds one run to one bind identifier) before `g`; `tweak` changes the
/// front's policy.
fn front(
    dir: &Scratch,
    name: &str,
    ca: &Ca,
    g: &Ganesha,
    tweak: impl FnOnce(&mut Policy),
) -> (EfsFront, PartitionShim) {
    let shim = PartitionShim::start(g.nfs_port, &[], Answer::Ready(1), 4);
    let long_term = Known {
        access_key_id: LONG_AKID.into(),
        secret: LONG_SECRET.into(),
        token: None,
    };
    let mut policy = Policy {
        fs_id: FS.into(),
        region: REGION.into(),
        access_point: None,
        require_iam: true,
        known: vec![
            Known {
                access_key_id: AKID.into(),
                secret: SECRET.into(),
                token: Some(TOKEN.into()),
            },
            long_term,
        ],
        clock_ahead: 0,
    };
    tweak(&mut policy);
    let pki = dir.join(name);
    std::fs::create_dir_all(&pki).unwrap();
    // The server's certificate is the URL's file system's, whatever the policy judges
    // the client's by: each refusal is then the front's, not nfsync's.
    let server = format!("{FS}.efs.{REGION}.amazonaws.com");
    (EfsFront::start(ca, &pki, &server, policy, shim.port), shim)
}

/// `nfsync ARGS` with a clean AWS environment (the host key under the scratch
/// directory, `HOME` there, instance metadata at a closed loopback port) plus `env`.
fn run(dir: &Scratch, env: &[(&str, String)], args: &[&str]) -> Output {
    let mut cmd = crate::support::tls::efs_nfsync(dir.path(), &dir.join("efs-key/client-key.pem"));
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.arg("--timeout")
        .arg("20")
        .args(args)
        .output()
        .expect("run nfsync")
}

/// `nfsync SRC/ URL`.
fn copy(dir: &Scratch, env: &[(&str, String)], src: &Path, url: &str) -> Output {
    run(dir, env, &[&format!("{}/", src.display()), url])
}

/// The URL of `sub` in the export through `front`, with `keys`.
fn url(front: &EfsFront, g: &Ganesha, ca: &Ca, sub: &str, keys: &str) -> String {
    format!(
        "nfs://127.0.0.1:{}{}/{sub}?tls-ca={}&fsid={FS}&region={REGION}{keys}",
        front.port,
        g.export.display(),
        ca.cert.display()
    )
}

/// Exit 10 with one line on stderr, every certificate the front judged refused for
/// `why`, and nothing through to the server.
fn assert_refused(
    out: &Output,
    (front, shim): (&EfsFront, &PartitionShim),
    why: &str,
    dest: &Path,
) {
    assert_eq!(out.status.code(), Some(10), "{}", describe(out));
    let err = String::from_utf8_lossy(&out.stderr);
    // Besides the access point's notice on owners, one line.
    let lines = err
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.contains("is an EFS access point"))
        .count();
    assert_eq!(lines, 1, "one line: {}", describe(out));
    assert!(
        err.contains("refused the client certificate"),
        "says what was refused: {}",
        describe(out)
    );
    let verdicts = front.verdicts();
    assert!(
        verdicts
            .iter()
            .all(|v| v.as_ref().is_err_and(|e| e.contains(why))),
        "refused for {why:?} each time: {verdicts:?}"
    );
    assert!(!verdicts.is_empty(), "no certificate was judged");
    assert!(!dest.exists(), "nothing may be written");
    assert!(shim.conns().is_empty(), "nothing reached the server");
}

fn source(dir: &Scratch) -> Tree {
    let tree = Tree::new(dir.join("src"));
    for i in 0..40 {
        tree.random_file(format!("d{}/f{i}", i % 3), 100 + i * 977, i);
    }
    tree.symlink("link", "d0/f1");
    tree
}

#[test]
fn the_front_accepts_nfsync_with_iam_and_an_access_point_and_the_copy_is_exact() {
    let dir = Scratch::new();
    let Some((g, ca)) = backend(&dir) else {
        return;
    };
    let tree = source(&dir);

    // A file system policy that requires IAM: env credentials with a session token.
    let (iam, iam_shim) = front(&dir, "iam", &ca, &g, |_| {});
    let out = copy(
        &dir,
        &creds(SECRET, Some(TOKEN)),
        tree.root(),
        &url(&iam, &g, &ca, "iam", "&iam"),
    );
    assert!(out.status.success(), "{}", describe(&out));
    let diff = rsync_diff_with(tree.root(), &g.export.join("iam"), &["--omit-link-times"]);
    assert!(
        diff.is_empty(),
        "differs after a copy through the front:\n{diff}"
    );
    let v = iam.verdicts();
    assert!(!v.is_empty() && v.iter().all(Result::is_ok), "{v:?}");
    assert_eq!(
        iam.handshakes_without_certificate(),
        0,
        "every connection shows its certificate"
    );

    // A long-term key: no session token in the certificate or the signed request.
    let (long, long_shim) = front(&dir, "long", &ca, &g, |_| {});
    let env = [
        ("AWS_ACCESS_KEY_ID", LONG_AKID.to_string()),
        ("AWS_SECRET_ACCESS_KEY", LONG_SECRET.to_string()),
    ];
    let out = copy(
        &dir,
        &env,
        tree.root(),
        &url(&long, &g, &ca, "long", "&iam"),
    );
    assert!(out.status.success(), "{}", describe(&out));
    let diff = rsync_diff_with(tree.root(), &g.export.join("long"), &["--omit-link-times"]);
    assert!(
        diff.is_empty(),
        "differs after a copy with a long-term key:\n{diff}"
    );
    let v = long.verdicts();
    assert!(!v.is_empty() && v.iter().all(Result::is_ok), "{v:?}");

    // An access point (with IAM): a certificate naming it is let in, one naming none
    // is not.
    let (ap, ap_shim) = front(&dir, "ap", &ca, &g, |p| p.access_point = Some(AP.into()));
    let keys = format!("&iam&accesspoint={AP}");
    let out = copy(
        &dir,
        &creds(SECRET, Some(TOKEN)),
        tree.root(),
        &url(&ap, &g, &ca, "ap", &keys),
    );
    assert!(out.status.success(), "{}", describe(&out));
    // With an access point nfsync leaves owners to EFS, which gives every file the
    // access point's.
    let diff = rsync_diff_with(
        tree.root(),
        &g.export.join("ap"),
        &["--omit-link-times", "--no-owner", "--no-group"],
    );
    assert!(
        diff.is_empty(),
        "differs after a copy through an access point:\n{diff}"
    );
    assert!(
        ap.verdicts().iter().all(Result::is_ok),
        "{:?}",
        ap.verdicts()
    );
    assert_eq!(ap.handshakes_without_certificate(), 0);
    let before = ap.verdicts().len();
    let out = copy(
        &dir,
        &creds(SECRET, Some(TOKEN)),
        tree.root(),
        &url(&ap, &g, &ca, "no-ap", "&iam"),
    );
    assert_eq!(out.status.code(), Some(10), "{}", describe(&out));
    let v = ap.verdicts();
    assert!(
        v.len() > before
            && v[before..]
                .iter()
                .all(|v| v.as_ref().is_err_and(|e| e.contains("access point"))),
        "{v:?}"
    );
    assert!(!g.export.join("no-ap").exists());
    for shim in [iam_shim, long_shim, ap_shim] {
        assert!(
            !shim.conns().is_empty() && shim.conns().iter().all(|c| c.bind.is_some()),
            "every connection bound"
        );
        shim.assert_rules_kept();
    }
}

#[test]
fn the_front_refuses_a_wrong_secret_a_missing_token_another_fs_and_an_expired_certificate() {
    let dir = Scratch::new();
    let Some((g, ca)) = backend(&dir) else {
        return;
    };
    let tree = source(&dir);

    let (f, shim) = front(&dir, "secret", &ca, &g, |_| {});
    let out = copy(
        &dir,
        &creds("not-the-secret", Some(TOKEN)),
        tree.root(),
        &url(&f, &g, &ca, "a", "&iam"),
    );
    assert_refused(
        &out,
        (&f, &shim),
        "signature does not match",
        &g.export.join("a"),
    );

    let (f, shim) = front(&dir, "token", &ca, &g, |_| {});
    let out = copy(
        &dir,
        &creds(SECRET, None),
        tree.root(),
        &url(&f, &g, &ca, "b", "&iam"),
    );
    assert_refused(&out, (&f, &shim), "session token", &g.export.join("b"));

    // A file system policy that requires IAM, and no ?iam: no signature.
    let (f, shim) = front(&dir, "no-iam", &ca, &g, |_| {});
    let out = copy(
        &dir,
        &creds(SECRET, Some(TOKEN)),
        tree.root(),
        &url(&f, &g, &ca, "d", ""),
    );
    assert_refused(&out, (&f, &shim), "no IAM signature", &g.export.join("d"));

    // A certificate for another file system.
    let (f, shim) = front(&dir, "other-fs", &ca, &g, |p| {
        p.fs_id = "fs-0000beef".into()
    });
    let out = copy(
        &dir,
        &creds(SECRET, Some(TOKEN)),
        tree.root(),
        &url(&f, &g, &ca, "e", "&iam"),
    );
    assert_refused(&out, (&f, &shim), "wrong file system", &g.export.join("e"));

    // nfsync's certificate is valid for 3 hours from now; the front's clock is 4 hours
    // ahead. No IAM here, so the dates are the only thing refused.
    let (f, shim) = front(&dir, "expired", &ca, &g, |p| {
        p.require_iam = false;
        p.access_point = Some(AP.into());
        p.clock_ahead = 4 * 3600;
    });
    let keys = format!("&accesspoint={AP}");
    let out = copy(&dir, &[], tree.root(), &url(&f, &g, &ca, "c", &keys));
    assert_refused(&out, (&f, &shim), "not valid now", &g.export.join("c"));
}

#[test]
fn check_through_the_front_passes_and_fails_with_a_wrong_secret() {
    let dir = Scratch::new();
    let Some((g, ca)) = backend(&dir) else {
        return;
    };
    std::fs::create_dir_all(g.export.join("dest")).unwrap();
    let (f, shim) = front(&dir, "front", &ca, &g, |_| {});
    let u = url(&f, &g, &ca, "dest", "&iam");

    let out = run(&dir, &creds(SECRET, Some(TOKEN)), &["--check", &u]);
    assert!(out.status.success(), "{}", describe(&out));
    let v = f.verdicts();
    assert!(!v.is_empty() && v.iter().all(Result::is_ok), "{v:?}");
    let left: Vec<_> = std::fs::read_dir(g.export.join("dest")).unwrap().collect();
    assert!(
        left.is_empty(),
        "the check leaves DEST as it found it: {left:?}"
    );

    let before = v.len();
    let out = run(
        &dir,
        &creds("not-the-secret", Some(TOKEN)),
        &["--check", &u],
    );
    assert_eq!(out.status.code(), Some(10), "{}", describe(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.lines()
            .any(|l| l.starts_with("FAILED") && l.contains("refused the client certificate")),
        "{}",
        describe(&out)
    );
    let v = f.verdicts();
    assert!(
        v.len() > before
            && v[before..]
                .iter()
                .all(|v| v.as_ref().is_err_and(|e| e.contains("signature"))),
        "{v:?}"
    );
    shim.assert_rules_kept();
}

/// Where the host's EFS client key cannot be kept (here root's place,
/// `/var/lib/nfsync`, read-only in the run's own mount namespace, as in a pod with a
/// read-only root filesystem), the run makes a key for itself alone, says so in one
/// line naming the place and what to set, and the copy is exact; nothing is written
/// there. With `NFSYNC_EFS_KEY` naming an unwritable place the user chose, the run
/// fails naming it instead.
#[test]
fn a_key_that_cannot_be_kept_is_made_for_the_run_and_said() {
    let dir = Scratch::new();
    let Some((g, ca)) = backend(&dir) else {
        return;
    };
    let tree = source(&dir);
    let (f, _shim) = front(&dir, "front", &ca, &g, |p| p.require_iam = false);
    std::fs::create_dir_all("/var/lib/nfsync").unwrap();
    let in_read_only_place = |key: Option<&str>, sub: &str| {
        let mut cmd = tls::efs_env(
            assert_cmd::Command::new("unshare"),
            dir.path(),
            Path::new("/x"),
        );
        cmd.env_remove("NFSYNC_EFS_KEY");
        if let Some(k) = key {
            cmd.env("NFSYNC_EFS_KEY", k);
        }
        cmd.args([
            "--mount",
            "sh",
            "-c",
            "mount -t tmpfs -o ro,size=64k tmpfs /var/lib/nfsync && exec \"$0\" \"$@\"",
        ])
        .arg(crate::support::bin())
        .args(["--timeout", "20"])
        .arg(format!("{}/", tree.root().display()))
        .arg(url(&f, &g, &ca, sub, ""))
        .output()
        .expect("run nfsync in its own mount namespace")
    };
    let out = in_read_only_place(None, "kept-nowhere");
    assert!(out.status.success(), "{}", describe(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        err.lines()
            .filter(|l| l.contains("EFS client key cannot be kept")
                && l.contains("/var/lib/nfsync")
                && l.contains("NFSYNC_EFS_KEY"))
            .count(),
        1,
        "{}",
        describe(&out)
    );
    let diff = rsync_diff_with(
        tree.root(),
        &g.export.join("kept-nowhere"),
        &["--omit-link-times"],
    );
    assert!(diff.is_empty(), "{diff}");
    let v = f.verdicts();
    assert!(!v.is_empty() && v.iter().all(Result::is_ok), "{v:?}");

    let out = in_read_only_place(Some("/var/lib/nfsync/mine.pem"), "chosen");
    assert_eq!(out.status.code(), Some(11), "{}", describe(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("/var/lib/nfsync/mine.pem"),
        "{}",
        describe(&out)
    );
}
