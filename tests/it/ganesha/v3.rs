//! The NFSv3 path against nfs-ganesha: every shared scenario and fault case
//! ([`protocol_tests!`](super::protocol_tests)), and what NFSv3 alone meets: privileged
//! ports, a wrong export or closed port, a root-squashed export, runs as `nobody` and
//! the URL's AUTH_SYS identity, and a throughput figure.

use std::path::Path;
use std::process::Output;
use std::time::{Duration, Instant};

use crate::support::ganesha::{self, Export, Ganesha, Options, Proto};
use crate::support::{
    Scratch, Tree, assert_copied, describe, nobody, rsync_diff, rsync_diff_with, run_nfsync, slash,
    sync_ok,
};

super::protocol_tests!(Proto::V3);

/// A server of one's own, for tests that crash or reconfigure it; `None` when ganesha
/// cannot run here.
fn own_server(privileged: bool) -> Option<(Scratch, Ganesha)> {
    ganesha::own(Options {
        privileged,
        ..Proto::V3.alone()
    })
}

#[test]
fn privileged_export_refuses_noresvport_clearly() {
    let Some((_dir, g)) = own_server(true) else {
        return;
    };
    let s = nobody::scratch();
    let src = s.join("src");
    Tree::new(&src).file("a", "x");
    let start = Instant::now();
    let out = run_nfsync(&["--timeout", "10"], &src, g.url("dst", "noresvport"));
    assert_eq!(out.status.code(), Some(10), "{}", describe(&out));
    assert!(start.elapsed() < Duration::from_secs(20));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("PrivilegedPort") && err.contains("root"),
        "{err}"
    );
    // Not root: an unprivileged port, refused with the same advice.
    let out = as_nobody(&src, &g.url("dst_nobody", ""));
    assert_eq!(out.status.code(), Some(10), "{}", describe(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("PrivilegedPort") && err.contains("root"),
        "{err}"
    );
    // As root, the default binds a privileged port and is let in.
    sync_ok(&[], &src, g.url("dst", ""));
    assert!(rsync_diff(&src, &g.export.join("dst")).is_empty());
}

#[test]
fn wrong_export_and_closed_port_fail_in_bounded_time() {
    let Some(export) = ganesha::shared(Proto::V3) else {
        return;
    };
    let s = Scratch::new();
    Tree::new(s.join("src")).file("a", "x");
    let start = Instant::now();
    let no_such = Export {
        path: "/no/such/export".into(),
        ..export.clone()
    };
    let out = run_nfsync(&["--timeout", "10"], &s.join("src"), no_such.url("", ""));
    assert_eq!(out.status.code(), Some(10), "{}", describe(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("/no/such/export"), "{err}");
    assert!(
        err.contains(&export.path.display().to_string()),
        "lists the exports: {err}"
    );

    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let closed = Export {
        nfs_port: closed,
        ..export
    };
    let out = run_nfsync(&["--timeout", "10"], &s.join("src"), closed.url("x", ""));
    assert_eq!(out.status.code(), Some(10), "{}", describe(&out));
    assert!(start.elapsed() < Duration::from_secs(30));
}

/// Throughput figure for the report: 2,000 small files into a fresh directory.
#[test]
fn two_thousand_files_throughput() {
    let Some(export) = ganesha::shared(Proto::V3) else {
        return;
    };
    let s = Scratch::new();
    let src = s.join("src");
    let t = Tree::new(&src);
    for d in 0..20 {
        for f in 0..100 {
            t.random_file(
                format!("d{d}/f{f}"),
                1000 + (f as u64 * 7),
                (d * 1000 + f) as u64,
            );
        }
    }
    let url = export.url("perf2000", "");
    let start = Instant::now();
    let out = run_nfsync(&["--json"], &src, &url);
    let secs = start.elapsed().as_secs_f64();
    assert!(out.status.success(), "{}", describe(&out));
    assert_copied(&out, 2000);
    eprintln!(
        "nfs:// 2000 files in {secs:.2} s = {:.0} files/s",
        2000.0 / secs
    );
    assert!(rsync_diff(&src, &export.path.join("perf2000")).is_empty());
}

/// Runs `nfsync --timeout 10 SRC/ URL` as `nobody` (ganesha tests run as root), SRC
/// handed to nobody first: SRC must be in a [`nobody::scratch`] directory.
fn as_nobody(src: &Path, url: &str) -> Output {
    nobody::hand_over(src);
    let src = slash(src);
    nobody::run(&["--timeout".as_ref(), "10".as_ref(), &src, url.as_ref()])
}

#[test]
fn unprivileged_user_copies_through_an_insecure_export() {
    let Some(export) = ganesha::shared(Proto::V3) else {
        return;
    };
    let s = nobody::scratch();
    let src = s.join("src");
    Tree::new(&src).file("a", "as nobody\n").file("d/b", "b\n");
    let dst = export.path.join("nobody_dst");
    std::fs::create_dir_all(&dst).unwrap();
    let _ = std::process::Command::new("chmod")
        .arg("777")
        .arg(&dst)
        .status();
    let out = as_nobody(&src, &export.url("nobody_dst/x", ""));
    assert!(out.status.success(), "{}", describe(&out));
    let diff = rsync_diff(&src, &dst.join("x"));
    assert!(diff.is_empty(), "{diff}");
}

/// A root-squashed export cannot take owners: the copy still delivers content, modes
/// and mtimes, warns once, and a re-run copies nothing.
#[test]
fn root_squashed_export_warns_once_and_copies_the_rest() {
    let Some((dir, mut g)) = own_server(false) else {
        return;
    };
    g.reconfigure("Squash = No_Root_Squash;", "Squash = Root_Squash;")
        .unwrap_or_else(|e| panic!("{e}"));
    let _ = std::process::Command::new("chmod")
        .arg("777")
        .arg(&g.export)
        .status();
    let src = dir.join("src");
    let t = Tree::new(&src);
    t.file("a", "a\n")
        .file("d/b", "b\n")
        .chmod("d/b", 0o640)
        .mtime("a", 1_500_000_000, 5);
    let url = g.url("dst", "");
    let out = sync_ok(&[], &src, &url);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.matches("root squashed").count(), 1, "{err}");
    let diff = rsync_diff_with(&src, &g.export.join("dst"), &["--no-owner", "--no-group"]);
    assert!(diff.is_empty(), "{diff}");
    let out = sync_ok(&["--json"], &src, &url);
    assert_copied(&out, 0);
}

/// `?uid=&gid=` in the URL are the AUTH_SYS identity the server creates files as.
#[test]
fn url_uid_and_gid_are_the_identity_used() {
    use std::os::unix::fs::MetadataExt;
    let Some(export) = ganesha::shared(Proto::V3) else {
        return;
    };
    let s = Scratch::new();
    let src = s.join("src");
    Tree::new(&src).file("a", "a\n");
    let dst = export.path.join("as_1234");
    std::fs::create_dir_all(&dst).unwrap();
    let _ = std::process::Command::new("chmod")
        .arg("777")
        .arg(&dst)
        .status();
    let url = export.url("as_1234/x", "uid=1234&gid=5678");
    sync_ok(&["--no-owner", "--no-group"], &src, &url);
    let m = std::fs::metadata(dst.join("x/a")).unwrap();
    assert_eq!((m.uid(), m.gid()), (1234, 5678));
}
