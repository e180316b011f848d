//! `nfsync --check DEST`: what a run would meet there, without copying anything. Each
//! check must leave DEST as it found it, and each failure must end with the code a run
//! would end with and one line saying why.

use std::fs;
use std::net::TcpListener;
use std::os::unix::fs::MetadataExt;
use std::process::Output;

use crate::support::ganesha::{self, Ganesha, Nfs4, Options, Proto};
use crate::support::tls::{self, Ca, Stunnel};
use crate::support::{Scratch, describe, nfsync, root_or_skip};

/// `nfsync --check ARGS DEST`.
fn check(args: &[&str], dest: &str) -> Output {
    nfsync()
        .arg("--check")
        .args(args)
        .arg(dest)
        .output()
        .expect("run nfsync")
}

/// The `--json` object of a check.
fn findings(out: &Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", describe(out)))
}

/// A check that passed: every probe step done, a rate and an estimate measured.
fn assert_passed(out: &Output) -> serde_json::Value {
    assert!(out.status.success(), "{}", describe(out));
    let f = findings(out);
    assert_eq!(f["failed"], serde_json::Value::Null, "{f}");
    let probe: Vec<&str> = f["probe"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap())
        .collect();
    for step in [
        "created and wrote 65,536 bytes",
        "read back: the same bytes",
        "removed",
    ] {
        assert!(probe.contains(&step), "no {step:?} in {f}");
    }
    assert!(probe.iter().any(|s| s.starts_with("dated: ")), "{f}");
    assert!(f["round_trip_ms"].as_f64().unwrap() > 0.0, "{f}");
    let rate = f["files_per_sec"].as_f64().unwrap();
    let est = f["estimate_secs"].as_f64().unwrap();
    assert!(rate > 0.0, "{f}");
    assert!(
        (est - f["estimate_files"].as_f64().unwrap() / rate).abs() < 1e-6 * est.max(1.0),
        "the estimate is the files at the rate measured: {f}"
    );
    f
}

/// A failed check: `code`, and the reason names `cause`.
fn assert_failed(out: &Output, code: i32, cause: &str) {
    assert_eq!(out.status.code(), Some(code), "{}", describe(out));
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text
        .lines()
        .find(|l| l.starts_with("FAILED"))
        .unwrap_or_else(|| panic!("no FAILED line: {}", describe(out)));
    assert!(line.contains(cause), "{line:?} should say {cause:?}");
}

/// Names in `dir`, sorted.
fn names(dir: &std::path::Path) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn a_directory_passes_and_is_left_as_it_was() {
    let s = Scratch::new();
    let dest = s.join("dest");
    fs::create_dir(&dest).unwrap();
    fs::write(dest.join("kept"), "x").unwrap();
    let before = fs::metadata(&dest).unwrap();
    let out = check(
        &["--json", "--jobs", "4", "--check-files", "5000"],
        dest.to_str().unwrap(),
    );
    let f = assert_passed(&out);
    assert_eq!(f["jobs"], 4, "--jobs N is the concurrency measured: {f}");
    assert_eq!(f["estimate_files"], 5000);
    assert_eq!(names(&dest), ["kept"], "the check left nothing behind");
    assert_eq!(fs::metadata(&dest).unwrap().mode(), before.mode());

    // A DEST a run would make: checked in its parent, and not made.
    let out = check(
        &["--json", "--jobs", "2"],
        dest.join("new").to_str().unwrap(),
    );
    assert_passed(&out);
    assert_eq!(names(&dest), ["kept"]);

    // The lines a person reads.
    let out = check(&["--jobs", "2"], dest.to_str().unwrap());
    assert!(out.status.success(), "{}", describe(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    for want in [
        "round trip",
        "small files",
        "estimate      100,000 small files",
        "ok ",
    ] {
        assert!(text.contains(want), "no {want:?} in:\n{text}");
    }
}

#[test]
fn a_dest_that_cannot_be_written_fails_with_its_reason() {
    let s = Scratch::new();
    let file = s.join("file");
    fs::write(&file, "x").unwrap();
    assert_failed(&check(&[], file.to_str().unwrap()), 3, "not a directory");
    let missing = s.join("no/such/parent");
    assert_failed(
        &check(&[], missing.to_str().unwrap()),
        3,
        "No such file or directory",
    );
    // Nothing to check without DEST, and nothing to copy with --check.
    let out = nfsync()
        .args(["--check", "a", "b"])
        .output()
        .expect("run nfsync");
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
}

#[test]
fn a_closed_port_is_exit_10_with_the_reason() {
    let port = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let url = format!("nfs://127.0.0.1:{port}/export");
    let out = check(&["--json", "--timeout", "5"], &url);
    assert_eq!(out.status.code(), Some(10), "{}", describe(&out));
    let f = findings(&out);
    assert_eq!(f["exit_code"], 10);
    let why = f["failed"].as_str().unwrap();
    assert!(
        why.contains("refused") && why.contains("nothing listens"),
        "{why}"
    );
}

/// NFSv3 and NFSv4.1 against ganesha pass and say what they spoke; the same export
/// made read-only fails with exit 3 naming it.
#[test]
fn ganesha_passes_on_both_versions_and_a_read_only_export_fails() {
    if !root_or_skip("ganesha tests") || !ganesha::available() {
        return;
    }
    let s = Scratch::new();
    let opts = Options {
        nfs4: Nfs4::Also,
        ..Options::default()
    };
    let mut g =
        Ganesha::start(&s.join("export"), &s.join("state"), opts).unwrap_or_else(|e| panic!("{e}"));
    fs::create_dir(g.export.join("dir")).unwrap();
    for (proto, spoken) in [(Proto::V3, "NFSv3, "), (Proto::V41, "NFSv4.1, ")] {
        let url = g.export(proto).url("dir", "");
        let f = assert_passed(&check(&["--json", "--jobs", "8"], &url));
        let conn = f["connection"].as_str().unwrap();
        assert!(conn.starts_with(spoken), "{conn}");
        assert!(conn.contains("127.0.0.1"), "{conn}");
        assert!(names(&g.export.join("dir")).is_empty(), "left behind");
    }
    g.reconfigure("Access_Type = RW;", "Access_Type = RO;")
        .unwrap_or_else(|e| panic!("{e}"));
    for proto in [Proto::V3, Proto::V41] {
        let url = g.export(proto).url("dir", "");
        assert_failed(&check(&[], &url), 3, "read-only");
    }
}

/// Through TLS the connection says so; a certificate from another CA is exit 10.
#[test]
fn tls_is_named_and_a_wrong_ca_is_exit_10() {
    if !root_or_skip("ganesha tests") || !ganesha::available() || !tls::available() {
        return;
    }
    let s = Scratch::new();
    let opts = Options {
        nfs4: Nfs4::Only,
        ..Options::default()
    };
    let g =
        Ganesha::start(&s.join("export"), &s.join("state"), opts).unwrap_or_else(|e| panic!("{e}"));
    let ca = Ca::new(&s.join("pki"), "test-ca");
    let (cert, key) = ca.server_cert(&s.join("pki"));
    let st = Stunnel::start(&s.join("pki"), &cert, &key, g.nfs_port);
    let url = |ca: &std::path::Path| {
        format!(
            "nfs://127.0.0.1:{}{}?tls&tls-ca={}",
            st.port,
            g.export.display(),
            ca.display()
        )
    };
    let f = assert_passed(&check(&["--json", "--jobs", "4"], &url(&ca.cert)));
    assert!(
        f["connection"].as_str().unwrap().contains("over TLS"),
        "{f}"
    );
    let other = Ca::new(&s.join("other"), "other-ca");
    let out = check(&[], &url(&other.cert));
    assert_failed(&out, 10, "certificate");
}
