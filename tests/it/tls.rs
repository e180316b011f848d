//! `?tls`: NFSv4.1 through TLS, as EFS offers it, against nfs-ganesha behind stunnel
//! (a CA and a server certificate for 127.0.0.1 made in the test). The copy must be
//! exact through TLS; a certificate from another CA, and a port that does not speak
//! TLS, must end the run with exit 10 and one line that says what is wrong, quickly.

use std::time::{Duration, Instant};

use crate::support::ganesha::{self, Ganesha, Nfs4, Options};
use crate::support::tls::{self, Ca, Stunnel};
use crate::support::{Scratch, Tree, describe, json_stats, rsync_diff_with, run_nfsync};

/// A v4-only ganesha and stunnel in front of it; `None` when they cannot run here.
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
    let (cert, key) = ca.server_cert(&dir.join("pki"));
    let st = Stunnel::start(&dir.join("pki"), &cert, &key, g.nfs_port);
    Some((g, ca, st))
}

fn url(port: u16, g: &Ganesha, rel: &str, query: &str) -> String {
    format!("nfs://127.0.0.1:{port}{}/{rel}?{query}", g.export.display())
}

/// The one line a failed run prints, checked to be the only one.
fn one_line(out: &std::process::Output) -> String {
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    let lines: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "one line says why:\n{}", describe(out));
    lines[0].to_string()
}

#[test]
fn tls_through_stunnel_copies_exactly_and_a_wrong_ca_is_refused() {
    let dir = Scratch::new();
    let Some((g, ca, st)) = server(&dir) else {
        return;
    };
    let tree = Tree::new(dir.join("src"));
    for i in 0..200 {
        tree.random_file(format!("d{}/f{i}", i % 7), 100 + i * 37, i);
    }
    tree.random_file("big", 3_000_000, 9);
    tree.symlink("d0/link", "f0");
    let ca_q = format!("tls-ca={}", ca.cert.display());

    let out = run_nfsync(&["--json"], tree.root(), url(st.port, &g, "dst", &ca_q));
    assert!(out.status.success(), "{}", describe(&out));
    let stats = json_stats(&out);
    assert_eq!(stats["nfs_version"], "4.1", "{stats}");
    assert_eq!(stats["files_copied"], 201, "{stats}");
    assert_eq!(stats["links_created"], 1, "{stats}");
    let diff = rsync_diff_with(tree.root(), &g.export.join("dst"), &["--omit-link-times"]);
    assert!(diff.is_empty(), "differs after a copy through TLS:\n{diff}");

    // A certificate this CA did not sign: refused at once, with the reason.
    let other = Ca::new(&dir.join("other"), "other-ca");
    let q = format!("tls-ca={}", other.cert.display());
    let t = Instant::now();
    let out = run_nfsync(
        &["--timeout", "20"],
        tree.root(),
        url(st.port, &g, "dst2", &q),
    );
    assert_eq!(out.status.code(), Some(10), "{}", describe(&out));
    assert!(
        t.elapsed() < Duration::from_secs(10),
        "took {:?}",
        t.elapsed()
    );
    let line = one_line(&out);
    assert!(
        line.contains("certificate") && line.contains("tls-ca") && line.contains("127.0.0.1"),
        "{line}"
    );
    assert!(!g.export.join("dst2").exists(), "nothing may be written");

    // The public roots do not know the test CA either.
    let out = run_nfsync(&[], tree.root(), url(st.port, &g, "dst3", "tls"));
    assert_eq!(out.status.code(), Some(10), "{}", describe(&out));
    assert!(
        one_line(&out).contains("UnknownIssuer"),
        "{}",
        describe(&out)
    );
}

/// `?tls` to a port that speaks plain RPC: exit 10 within the handshake's bound (not a
/// hang until --timeout), saying TLS is what failed.
#[test]
fn tls_to_a_port_without_tls_fails_clearly_in_bounded_time() {
    let dir = Scratch::new();
    let Some((g, ca, _st)) = server(&dir) else {
        return;
    };
    let tree = Tree::new(dir.join("src"));
    tree.random_file("f", 10, 1);
    let q = format!("tls-ca={}", ca.cert.display());
    let t = Instant::now();
    let out = run_nfsync(
        &["--timeout", "60"],
        tree.root(),
        url(g.nfs_port, &g, "dst", &q),
    );
    assert_eq!(out.status.code(), Some(10), "{}", describe(&out));
    assert!(
        t.elapsed() < Duration::from_secs(20),
        "took {:?}",
        t.elapsed()
    );
    assert!(one_line(&out).contains("TLS"), "{}", describe(&out));
}
