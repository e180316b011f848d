//! Fast protocol-level tests of the NFSv3 path against the in-process `nfs3_server`
//! memfs (which answers out of order, but lacks LINK, symlinks and modes).
//!
//! What nfsync wrote is read back with `nfs3_client` — an independent NFS client —
//! never with nfsync's own code. Error cases (closed port, wrong export, a server that
//! speaks garbage or never answers, connections cut mid-run) use small fake servers.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use nfs3_server::memfs::MemFs;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::support::inproc::{Server, url_for};
use crate::support::net::Servers;
use crate::support::{
    Scratch, Tree, assert_copied, assert_errors_name, describe, json_stats, run_nfsync, stat,
    sync_ok,
};

mod faulty_fs;
mod read_back;

use faulty_fs::FaultyFs;
use read_back::{local_snapshot, snapshot};

fn sample_tree(root: &Path) {
    let t = Tree::new(root);
    t.dir("empty_dir")
        .file("empty", "")
        .file("small.txt", "hello\n")
        .random_file("exactly_1MiB", 1 << 20, 1)
        .random_file("big/three_and_a_half", 3_500_000, 2)
        .random_file("big/one_more", (1 << 20) + 1, 3)
        .mtime("small.txt", 1_600_000_000, 123_456_789);
    for d in 0..5 {
        for f in 0..40 {
            t.random_file(
                format!("many/d{d}/f{f}"),
                (f * 37 + d) as u64,
                (d * 100 + f) as u64,
            );
        }
    }
}

#[test]
fn copies_a_tree_and_rerun_copies_nothing() {
    let server = Server::memfs();
    let s = Scratch::new();
    let src = s.join("src");
    sample_tree(&src);
    let out = sync_ok(&["--json"], &src, server.url("/dst/inner"));
    let stats = json_stats(&out);
    assert_eq!(stat(&stats, "files_copied"), 205, "{stats}");
    assert_eq!(snapshot(&server, "/dst/inner"), local_snapshot(&src));

    let out = sync_ok(&["--json"], &src, server.url("/dst/inner"));
    let stats = json_stats(&out);
    assert_eq!(stat(&stats, "files_copied"), 0, "{stats}");
}

#[test]
fn delete_removes_files_and_whole_directories() {
    let server = Server::memfs();
    let s = Scratch::new();
    let src = s.join("src");
    sample_tree(&src);
    sync_ok(&[], &src, server.url("/d"));
    std::fs::remove_dir_all(src.join("many")).unwrap();
    std::fs::remove_file(src.join("small.txt")).unwrap();
    let out = sync_ok(&["--json", "--delete"], &src, server.url("/d"));
    assert!(stat(&json_stats(&out), "files_deleted") >= 2);
    assert_eq!(snapshot(&server, "/d"), local_snapshot(&src));
}

#[test]
fn changed_files_are_recopied() {
    let server = Server::memfs();
    let s = Scratch::new();
    let src = s.join("src");
    sample_tree(&src);
    sync_ok(&[], &src, server.url("/d"));
    let t = Tree::new(&src);
    t.random_file("big/three_and_a_half", 2_000_000, 99);
    t.file("small.txt", "changed, longer than before\n");
    let out = sync_ok(&["--json"], &src, server.url("/d"));
    assert_copied(&out, 2);
    assert_eq!(snapshot(&server, "/d"), local_snapshot(&src));
}

#[test]
fn closed_port_fails_fast_with_connect_code() {
    let port = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let s = Scratch::new();
    Tree::new(s.join("src")).file("a", "x");
    // Refused is refused whatever the timeout (0: none at all), and --json still
    // reports how the run ended.
    for timeout in ["5", "1", "0"] {
        let start = Instant::now();
        let out = run_nfsync(
            &["--json", "--timeout", timeout],
            &s.join("src"),
            url_for(port, "/x"),
        );
        assert_eq!(out.status.code(), Some(10), "{}", describe(&out));
        assert!(start.elapsed() < Duration::from_secs(10));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(&port.to_string()), "{err}");
        assert!(err.contains("refused"), "{err}");
        let json = json_stats(&out);
        assert_eq!(json["exit_code"], 10, "{json}");
        assert_eq!(json["files_copied"], 0, "{json}");
        assert!(
            json["fatal"].as_str().unwrap().contains("refused"),
            "{json}"
        );
    }
}

/// MOUNT answers but the NFS port is closed: refused, exit 10, also with a short timeout.
#[test]
fn closed_nfs_port_is_refused_not_timed_out() {
    let server = Server::memfs();
    let closed = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let s = Scratch::new();
    Tree::new(s.join("src")).file("a", "x");
    for timeout in ["1", "3"] {
        let out = run_nfsync(
            &["--timeout", timeout],
            &s.join("src"),
            format!(
                "nfs://127.0.0.1/d?nfsport={closed}&mountport={}",
                server.port
            ),
        );
        assert_eq!(out.status.code(), Some(10), "{}", describe(&out));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("refused") && err.contains(&closed.to_string()),
            "{err}"
        );
    }
}

/// `--timeout 0` means no timeout (as in rsync), and the scheme is case-insensitive.
#[test]
fn timeout_zero_and_an_upper_case_scheme_work() {
    let server = Server::memfs();
    let s = Scratch::new();
    sample_tree(&s.join("src"));
    let url = server.url("/upper").replacen("nfs://", "NFS://", 1);
    sync_ok(&["--timeout", "0"], &s.join("src"), &url);
    assert_eq!(snapshot(&server, "/upper"), local_snapshot(&s.join("src")));
    assert!(!Path::new(&url).exists() && !Path::new("NFS:").exists());
}

#[test]
fn wrong_export_is_refused_clearly() {
    let server = Server::start(Some("exp"), MemFs::default());
    let s = Scratch::new();
    Tree::new(s.join("src")).file("a", "x");
    let out = run_nfsync(&[], &s.join("src"), server.url("/nope/x"));
    assert_eq!(out.status.code(), Some(10), "{}", describe(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("MNT3ERR_NOENT") || err.contains("no export"),
        "{err}"
    );
}

/// A TCP server that answers every connection with `reply` (or nothing) and then holds
/// it open, answering nothing more.
fn fake_server(servers: &mut Servers, reply: Option<Vec<u8>>) -> u16 {
    servers.listen(move |mut c| {
        let mut buf = [0u8; 4096];
        if let Some(r) = &reply {
            let _ = c.read(&mut buf);
            let _ = c.write_all(r);
        }
        while matches!(c.read(&mut buf), Ok(n) if n > 0) {}
    })
}

#[test]
fn garbage_and_silent_servers_end_in_bounded_time() {
    let s = Scratch::new();
    Tree::new(s.join("src")).file("a", "x");
    let mut servers = Servers::default();
    let garbage = fake_server(
        &mut servers,
        Some(b"\x80\x00\x00\x08HTTP/1.1 400\r\n\r\n".to_vec()),
    );
    let huge = fake_server(&mut servers, Some(vec![0x7f, 0xff, 0xff, 0xff, 1, 2, 3, 4]));
    let silent = fake_server(&mut servers, None);
    for port in [garbage, huge, silent] {
        let start = Instant::now();
        let out = run_nfsync(&["--timeout", "3"], &s.join("src"), url_for(port, "/x"));
        let code = out.status.code();
        assert!(code == Some(10) || code == Some(30), "{}", describe(&out));
        assert!(
            start.elapsed() < Duration::from_secs(15),
            "took {:?}",
            start.elapsed()
        );
        assert!(!String::from_utf8_lossy(&out.stderr).contains("panicked"));
    }
}

#[test]
fn connections_cut_mid_run_are_survived() {
    let server = Server::memfs();
    let mut servers = Servers::default();
    let (proxy, cuts) = servers.cutting_proxy(server.port, 20_000);
    let s = Scratch::new();
    let src = s.join("src");
    sample_tree(&src);
    // MOUNT goes straight to the server; NFS through the cutting proxy.
    let url = format!(
        "nfs://127.0.0.1/d?nfsport={proxy}&mountport={}",
        server.port
    );
    sync_ok(&["--json", "--timeout", "20"], &src, &url);
    assert!(
        cuts.load(Ordering::SeqCst) > 0,
        "the proxy never cut a connection"
    );
    assert_eq!(snapshot(&server, "/d"), local_snapshot(&src));
    let out = run_nfsync(&["--json"], &src, server.url("/d"));
    assert_copied(&out, 0);
}

#[test]
fn server_errors_name_the_path_and_the_rest_is_copied() {
    let server = Server::start(
        None,
        FaultyFs {
            jukebox: AtomicUsize::new(5),
            ..FaultyFs::new()
        },
    );
    let s = Scratch::new();
    let src = s.join("src");
    Tree::new(&src)
        .file("ok1", "fine\n")
        .random_file("ok_big", 3_000_000, 5)
        .file("full_disk", "x")
        .file("quota_hit", "y")
        .file("ro_dir/inside", "z")
        .file("sub/ok2", "fine too\n");
    let out = run_nfsync(&["--json"], &src, server.url("/d"));
    assert_eq!(out.status.code(), Some(23), "{}", describe(&out));
    assert_errors_name(
        &out,
        &[
            ("full_disk", "No space left on device"),
            ("quota_hit", "quota exceeded"),
            ("ro_dir", "Read-only file system"),
        ],
    );
    // The JUKEBOX answers were waited out; everything else arrived intact.
    let got = snapshot(&server, "/d");
    let want = local_snapshot(&src);
    for name in ["ok1", "ok_big", "sub/ok2"] {
        assert_eq!(got.get(name), want.get(name), "{name}");
    }
    assert!(!got.contains_key("full_disk") && !got.contains_key("ro_dir"));
}

/// A name changed between the look and the attribute change (another run renamed its
/// copy over it, so the handle just looked up answers STALE): the file is looked at
/// again and its attributes set, not reported as an error. (memfs keeps no modes, so
/// every run sets both files' modes; the first of those SETATTRs answers STALE.)
#[test]
fn a_stale_handle_while_fixing_attributes_is_looked_at_again() {
    let faulty = FaultyFs::new();
    let stale = faulty.stale_setattrs.clone();
    let server = Server::start(None, faulty);
    let s = Scratch::new();
    let src = s.join("src");
    Tree::new(&src).file("f", "f\n").file("g", "g\n");
    sync_ok(&[], &src, server.url("/d"));
    stale.store(1, Ordering::SeqCst);
    let out = sync_ok(&["--json"], &src, server.url("/d"));
    assert_eq!(stale.load(Ordering::SeqCst), 0, "no SETATTR answered STALE");
    let stats = json_stats(&out);
    assert_eq!(stat(&stats, "attrs_updated"), 2, "{}", describe(&out));
    assert_eq!(stat(&stats, "files_copied"), 0, "{}", describe(&out));
}

/// A disk that fills up during an update: the old copy stays whole (the update went to
/// a temporary name that is then removed), a new file that does not fit leaves
/// nothing behind, and the run says which files and why.
#[test]
fn a_full_disk_keeps_old_copies_and_leaves_no_partial_files() {
    let fs = FaultyFs::new();
    let space = fs.space.clone();
    let server = Server::start(None, fs);
    let s = Scratch::new();
    let src = s.join("src");
    Tree::new(&src)
        .random_file("grows", 1_000_000, 1)
        .file("small", "small\n");
    sync_ok(&[], &src, server.url("/d"));
    let before = snapshot(&server, "/d");

    // Now anything written past 2 MB into a file fails.
    space.store(2_000_000, Ordering::SeqCst);
    let t = Tree::new(&src);
    t.random_file("grows", 3_000_000, 2)
        .random_file("new_big", 3_000_000, 3)
        .file("new_small", "fits\n");
    let out = run_nfsync(&[], &src, server.url("/d"));
    assert_eq!(out.status.code(), Some(23), "{}", describe(&out));
    assert_errors_name(
        &out,
        &[
            ("grows", "No space left on device"),
            ("new_big", "No space left on device"),
        ],
    );
    let after = snapshot(&server, "/d");
    assert_eq!(
        after.get("grows"),
        before.get("grows"),
        "the old copy changed"
    );
    assert!(!after.contains_key("new_big"), "a partial new_big was left");
    assert!(
        after.keys().all(|k| !k.contains(".nfsync-")),
        "a temporary was left: {:?}",
        after.keys().collect::<Vec<_>>()
    );
    let want = local_snapshot(&src);
    assert_eq!(after.get("new_small"), want.get("new_small"));
}

/// The transport keeps many calls in flight on one connection and matches replies that
/// come back in reverse order, each split in two fragments, to their callers.
#[test]
fn transport_matches_out_of_order_fragmented_replies() {
    use nfs3_client::nfs3_types::rpc::{
        accept_stat_data, accepted_reply, msg_body, opaque_auth, reply_body, rpc_msg,
    };
    use nfs3_client::nfs3_types::xdr_codec::Pack;
    use nfsync::nfs::rpc::{Endpoint, RpcClient, read_record};

    const CALLS: u32 = 50;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            let (mut sock, _) = listener.accept().await.unwrap();
            // Collect every call before answering any: a transport that waited for
            // each reply before sending the next call would hang here.
            let mut calls = Vec::new();
            for _ in 0..CALLS {
                let rec = read_record(&mut sock).await.unwrap();
                let xid = u32::from_be_bytes(rec[0..4].try_into().unwrap());
                let arg = u32::from_be_bytes(rec[rec.len() - 4..].try_into().unwrap());
                calls.push((xid, arg));
            }
            for (xid, arg) in calls.into_iter().rev() {
                let msg = rpc_msg {
                    xid,
                    body: msg_body::REPLY(reply_body::MSG_ACCEPTED(accepted_reply {
                        verf: opaque_auth::default(),
                        reply_data: accept_stat_data::SUCCESS,
                    })),
                };
                let mut body = Vec::new();
                msg.pack(&mut body).unwrap();
                (arg * 2).pack(&mut body).unwrap();
                let (a, b) = body.split_at(body.len() / 2);
                let mut out = Vec::new();
                out.extend_from_slice(&(a.len() as u32).to_be_bytes());
                out.extend_from_slice(a);
                out.extend_from_slice(&(0x8000_0000u32 | b.len() as u32).to_be_bytes());
                out.extend_from_slice(b);
                sock.write_all(&out).await.unwrap();
            }
            // Keep the socket open until the client is done.
            let mut buf = [0u8; 16];
            let _ = sock.read(&mut buf).await;
        });
        let client = Arc::new(RpcClient::new(
            Endpoint {
                addr,
                prog: 400_000,
                vers: 1,
                resvport: false,
                conns: 1,
                window: 64,
                timeout: Duration::from_secs(10),
                tls: None,
            },
            opaque_auth::default(),
        ));
        let mut tasks = Vec::new();
        for n in 0..CALLS {
            let c = client.clone();
            tasks.push(tokio::spawn(
                async move { (n, c.call::<u32, u32>(1, &n).await) },
            ));
        }
        for t in tasks {
            let (n, r) = t.await.unwrap();
            assert_eq!(r.unwrap(), n * 2, "call {n} got another call's reply");
        }
    });
}

/// A COMMIT that takes longer than --timeout is waited for while the server still
/// answers NULL: slow is not gone.
#[test]
fn slow_commit_is_not_a_timeout() {
    let server = Server::start(
        None,
        FaultyFs {
            slow_commit: Duration::from_secs(5),
            ..FaultyFs::new()
        },
    );
    let s = Scratch::new();
    let src = s.join("src");
    Tree::new(&src).random_file("big", 3_000_000, 9);
    let start = Instant::now();
    sync_ok(&["--json", "--timeout", "2"], &src, server.url("/d"));
    assert!(start.elapsed() >= Duration::from_secs(5));
    assert_eq!(snapshot(&server, "/d"), local_snapshot(&src));
}

/// MOUNT answers but the NFS port never does: a timeout (exit 30) in bounded time.
#[test]
fn silent_nfs_port_times_out() {
    let server = Server::memfs();
    let mut servers = Servers::default();
    let silent = fake_server(&mut servers, None);
    let s = Scratch::new();
    Tree::new(s.join("src")).file("a", "x");
    let start = Instant::now();
    let out = run_nfsync(
        &["--json", "--timeout", "2"],
        &s.join("src"),
        format!(
            "nfs://127.0.0.1/d?nfsport={silent}&mountport={}",
            server.port
        ),
    );
    assert_eq!(out.status.code(), Some(30), "{}", describe(&out));
    assert!(
        start.elapsed() < Duration::from_secs(10),
        "took {:?}",
        start.elapsed()
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&silent.to_string()), "{err}");
    let json = json_stats(&out);
    assert_eq!(json["exit_code"], 30, "{json}");
    assert!(
        json["fatal"]
            .as_str()
            .unwrap()
            .contains(&silent.to_string()),
        "{json}"
    );
}
