//! `?tls`: NFSv4.1 through TLS, as EFS offers it, against nfs-ganesha behind stunnel
//! (a CA and a server certificate for 127.0.0.1 made in the test). The copy must be
//! exact through TLS; a certificate from another CA, and a port that does not speak
//! TLS, must end the run with exit 10 and one line that says what is wrong, quickly.
//!
//! [`transport`] checks the RPC transport alone (no ganesha, no root): byte-exact calls
//! through stunnel, and the errors of a refused certificate and of a port without TLS.

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

// ---------------------------------------------------------------------------------------
// The transport alone: `RpcClient` through stunnel to a small echo RPC server (and to
// the in-process NFSv3 server, which does not speak TLS). Needs stunnel4 and openssl,
// not root, not ganesha, not NFSv4.1.

mod transport {
    use std::io;
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    use nfs3_types::nfs3::READ3resok;
    use nfs3_types::rpc::opaque_auth;
    use nfs3_types::xdr_codec::{Opaque, Void};
    use nfsync::nfs::rpc::tls::Tls;
    use nfsync::nfs::rpc::{Endpoint, RpcClient, RpcError, read_record};
    use tokio::io::AsyncWriteExt;

    use crate::support::Scratch;
    use crate::support::inproc;
    use crate::support::tls::{self, Ca, Stunnel};

    /// Long, so that "well within the timeout" means something.
    const TIMEOUT: Duration = Duration::from_secs(30);

    fn client(port: u16, tls: Option<Tls>, timeout: Duration) -> Arc<RpcClient> {
        let ep = Endpoint {
            addr: ([127, 0, 0, 1], port).into(),
            prog: 400_001,
            vers: 1,
            resvport: false,
            conns: 2,
            window: 16,
            timeout,
            tls,
        };
        Arc::new(RpcClient::new(ep, opaque_auth::default()))
    }

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap()
    }

    /// An RPC server on 127.0.0.1 that answers every call but NULL with its arguments,
    /// wrapped as a READ3 result (no attributes, count, eof, then the call's opaque): a
    /// type nfsync already decodes, so a call of `Opaque` gets its bytes back. It closes a
    /// connection whose first bytes are not a record it accepts (a TLS ClientHello).
    async fn echo_server() -> u16 {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move {
            while let Ok((sock, _)) = listener.accept().await {
                tokio::spawn(echo(sock));
            }
        });
        port
    }

    async fn echo(sock: tokio::net::TcpStream) -> io::Result<()> {
        let (mut rd, mut wr) = sock.into_split();
        loop {
            let call = read_record(&mut rd).await?;
            let word = |at: usize| -> io::Result<usize> {
                let b = call.get(at..at + 4).ok_or(io::ErrorKind::InvalidData)?;
                Ok(u32::from_be_bytes(b.try_into().unwrap()) as usize)
            };
            // xid, CALL, rpcvers, prog, vers, proc; then credential and verifier.
            let cred = 24 + 8 + word(28)?.next_multiple_of(4);
            let args = cred + 8 + word(cred + 4)?.next_multiple_of(4);
            let args = call.get(args..).ok_or(io::ErrorKind::InvalidData)?;
            // xid, REPLY, MSG_ACCEPTED, null verifier, SUCCESS; for NULL nothing more.
            let mut words = vec![word(0)? as u32, 1, 0, 0, 0, 0];
            if word(20)? != 0 {
                words.extend([0, 0, 1]); // no attributes, count (unchecked), eof
            }
            let len = (words.len() * 4 + args.len()) as u32;
            let mut reply = Vec::with_capacity(len as usize + 4);
            reply.extend_from_slice(&(0x8000_0000 | len).to_be_bytes());
            for w in words {
                reply.extend_from_slice(&w.to_be_bytes());
            }
            reply.extend_from_slice(args);
            wr.write_all(&reply).await?;
        }
    }

    /// A server behind stunnel, with the CA that signed stunnel's certificate.
    struct Setup {
        dir: Scratch,
        ca: Ca,
        stunnel: Stunnel,
        plain: u16,
    }

    fn setup(rt: &tokio::runtime::Runtime) -> Option<Setup> {
        if !tls::available() {
            return None;
        }
        let dir = Scratch::new();
        let plain = rt.block_on(echo_server());
        let ca = Ca::new(&dir.join("pki"), "test-ca");
        let (cert, key) = ca.server_cert(&dir.join("pki"));
        let stunnel = Stunnel::start(&dir.join("pki"), &cert, &key, plain);
        Some(Setup {
            dir,
            ca,
            stunnel,
            plain,
        })
    }

    /// Calls of 0 B to 1 MiB at once on 2 connections (several records coalesce in
    /// one flush, big ones span many TLS records); each must get its own bytes back.
    async fn echo_many(c: &Arc<RpcClient>) {
        let sizes = [
            0usize,
            1,
            3,
            100,
            4096,
            16 << 10,
            16 << 10 | 1,
            100_000,
            1 << 20,
        ];
        let tasks: Vec<_> = (0..120usize)
            .map(|i| {
                let c = c.clone();
                let data: Vec<u8> = (0..sizes[i % sizes.len()])
                    .map(|k| (k * 31 + i) as u8)
                    .collect();
                tokio::spawn(async move {
                    let r = c.call::<_, READ3resok>(1, &Opaque::borrowed(&data)).await;
                    assert_eq!(r.unwrap().data.as_ref(), &data[..], "call {i}: other bytes");
                })
            })
            .collect();
        for t in tasks {
            t.await.unwrap();
        }
        c.call::<_, Void>(0, &Void).await.unwrap();
    }

    #[test]
    fn calls_go_through_tls_byte_exact_and_the_plain_path_still_works() {
        let rt = runtime();
        let Some(s) = setup(&rt) else { return };
        let tls = Tls::new("127.0.0.1", Some(&s.ca.cert)).unwrap();
        rt.block_on(async {
            let c = client(s.stunnel.port, Some(tls), TIMEOUT);
            c.connect_all().await.unwrap();
            echo_many(&c).await;
            echo_many(&client(s.plain, None, TIMEOUT)).await;
        });
    }

    /// The handshake error of one call, checked to be a final one that came at once.
    fn refused(port: u16, tls: Tls) -> String {
        let rt = runtime();
        let t = Instant::now();
        let e = rt
            .block_on(client(port, Some(tls), TIMEOUT).call::<_, Void>(0, &Void))
            .unwrap_err();
        assert!(
            t.elapsed() < Duration::from_secs(5),
            "{e}: took {:?}",
            t.elapsed()
        );
        assert!(matches!(e, RpcError::Tls { .. }), "{e:?}");
        assert!(!e.is_transient(), "a refused certificate is retried: {e:?}");
        e.to_string()
    }

    #[test]
    fn a_certificate_that_does_not_check_out_is_refused_at_once_with_the_reason() {
        let rt = runtime();
        let Some(s) = setup(&rt) else { return };
        let addr = format!("127.0.0.1:{}", s.stunnel.port);

        let other = Ca::new(&s.dir.join("other"), "other-ca");
        let e = refused(
            s.stunnel.port,
            Tls::new("127.0.0.1", Some(&other.cert)).unwrap(),
        );
        eprintln!("{e}");
        assert_eq!(
            e,
            format!(
                "TLS handshake with {addr} failed: invalid peer certificate: UnknownIssuer \
                 — is ?tls-ca={} the CA that signed the server's certificate?",
                other.cert.display()
            )
        );

        // The public roots do not know the test CA either.
        let e = refused(s.stunnel.port, Tls::new("127.0.0.1", None).unwrap());
        eprintln!("{e}");
        assert!(
            e.contains("UnknownIssuer") && e.contains("?tls-ca=FILE"),
            "{e}"
        );

        // The right CA, but the certificate is for 127.0.0.1, not localhost.
        let e = refused(
            s.stunnel.port,
            Tls::new("localhost", Some(&s.ca.cert)).unwrap(),
        );
        eprintln!("{e}");
        assert!(
            e.starts_with(&format!("TLS handshake with {addr} failed: invalid peer certificate: certificate not valid for name \"localhost\""))
                && e.contains("the URL's host must be a name the certificate is for"),
            "{e}"
        );
    }

    /// `?tls` to a port that speaks plain RPC: a connection error that says TLS is
    /// what failed, within the handshake's bound. A server that drops the ClientHello
    /// fails at once; one that waits for the rest of what it takes for a huge record
    /// (nfs3_server, ganesha) within the timeout.
    #[test]
    fn tls_to_a_plain_rpc_server_is_a_clear_connection_error() {
        let rt = runtime();
        let Some(s) = setup(&rt) else { return };
        let tls = Tls::new("127.0.0.1", Some(&s.ca.cert)).unwrap();
        let nfs3 = inproc::Server::memfs();
        for (port, timeout, want) in [
            (
                s.plain,
                TIMEOUT,
                "the server closed the connection during the TLS handshake: \
                 does the server speak TLS on this port?",
            ),
            (
                nfs3.port,
                Duration::from_secs(2),
                "no TLS handshake within 2s: does the server speak TLS on this port?",
            ),
        ] {
            let t = Instant::now();
            let e = rt
                .block_on(client(port, Some(tls.clone()), timeout).connect_all())
                .unwrap_err();
            eprintln!("{e}");
            assert!(
                t.elapsed() < timeout + Duration::from_secs(2),
                "{e}: took {:?}",
                t.elapsed()
            );
            assert_eq!(
                e.to_string(),
                format!("cannot connect to 127.0.0.1:{port}: {want}")
            );
            assert!(matches!(e, RpcError::Connect { .. }), "{e:?}");
        }
    }
}
