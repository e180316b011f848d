//! Fast protocol-level tests of the NFSv3 path against the in-process `nfs3_server`
//! memfs (which answers out of order, but lacks LINK, symlinks and modes).
//!
//! What nfsync wrote is read back with `nfs3_client` — an independent NFS client —
//! never with nfsync's own code. Error cases (closed port, wrong export, a server that
//! speaks garbage or never answers, connections cut mid-run) use small fake servers.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use nfs3_client::io::{AsyncRead, AsyncWrite};
use nfs3_client::nfs3_types::nfs3::{self as v3, Nfs3Result, filename3, ftype3, nfs_fh3};
use nfs3_client::nfs3_types::xdr_codec::Opaque;
use nfs3_client::{MountClient, Nfs3Client};
use nfs3_server::memfs::MemFs;
use nfs3_server::vfs::{FileHandleU64, NfsFileSystem, NfsReadFileSystem, ReadDirPlusIterator};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::support::inproc::{Server, url_for};
use crate::support::net::Servers;
use crate::support::{
    Scratch, Tree, assert_copied, assert_errors_name, describe, json_stats, run_nfsync, stat,
    sync_ok,
};

/// Reads the whole tree under `path` of `server` back with nfs3_client.
fn snapshot(server: &Server, path: &str) -> BTreeMap<String, Node> {
    server.block_on(independent_snapshot(server.port, path))
}

/// What the independent client sees of one entry.
#[derive(Debug, PartialEq, Eq)]
enum Node {
    Dir,
    File { content: Vec<u8>, mtime: (u32, u32) },
}

/// `nfs3_client`'s I/O traits over a tokio socket.
struct Io(tokio::net::TcpStream);

impl AsyncRead for Io {
    async fn async_read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.0.read(buf).await?;
        if n == 0 && !buf.is_empty() {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        Ok(n)
    }
}

impl AsyncWrite for Io {
    async fn async_write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.write(buf).await
    }
}

async fn independent_snapshot(port: u16, path: &str) -> BTreeMap<String, Node> {
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let mut mc = MountClient::new(Io(tokio::net::TcpStream::connect(addr).await.unwrap()));
    let root = mc
        .mnt(nfs3_client::nfs3_types::mount::dirpath(Opaque::borrowed(
            b"/",
        )))
        .await
        .unwrap();
    let mut nfs = Nfs3Client::new(Io(tokio::net::TcpStream::connect(addr).await.unwrap()));
    let mut fh = nfs_fh3 {
        data: root.fhandle.0,
    };
    for c in path.split('/').filter(|c| !c.is_empty()) {
        let r = nfs
            .lookup(&v3::LOOKUP3args {
                what: v3::diropargs3 {
                    dir: fh.clone(),
                    name: filename3(Opaque::borrowed(c.as_bytes())),
                },
            })
            .await
            .unwrap();
        fh = r.unwrap().object;
    }
    let mut out = BTreeMap::new();
    let mut stack = vec![(String::new(), fh)];
    while let Some((prefix, dir)) = stack.pop() {
        let mut cookie = 0;
        let mut verf = v3::cookieverf3::default();
        loop {
            let page = nfs
                .readdirplus(&v3::READDIRPLUS3args {
                    dir: dir.clone(),
                    cookie,
                    cookieverf: verf,
                    dircount: 8192,
                    maxcount: 65536,
                })
                .await
                .unwrap()
                .unwrap();
            verf = page.cookieverf;
            let entries = page.reply.entries.into_inner();
            for e in &entries {
                cookie = e.cookie;
                let name = String::from_utf8_lossy(e.name.as_ref()).into_owned();
                if name == "." || name == ".." {
                    continue;
                }
                let rel = format!("{prefix}{name}");
                let v3::Nfs3Option::Some(at) = &e.name_attributes else {
                    panic!("no attributes for {rel}")
                };
                let v3::Nfs3Option::Some(h) = &e.name_handle else {
                    panic!("no handle for {rel}")
                };
                if at.type_ == ftype3::NF3DIR {
                    out.insert(rel.clone(), Node::Dir);
                    stack.push((format!("{rel}/"), h.clone()));
                } else {
                    let mut content = Vec::new();
                    while (content.len() as u64) < at.size {
                        let r = nfs
                            .read(&v3::READ3args {
                                file: h.clone(),
                                offset: content.len() as u64,
                                count: 1 << 20,
                            })
                            .await
                            .unwrap();
                        let Nfs3Result::Ok(r) = r else {
                            panic!("read {rel}")
                        };
                        if r.data.is_empty() {
                            break;
                        }
                        content.extend_from_slice(&r.data);
                    }
                    out.insert(
                        rel,
                        Node::File {
                            content,
                            mtime: (at.mtime.seconds, at.mtime.nseconds),
                        },
                    );
                }
            }
            if page.reply.eof {
                break;
            }
        }
    }
    out
}

/// The same view of a local tree.
fn local_snapshot(root: &Path) -> BTreeMap<String, Node> {
    use std::os::unix::fs::MetadataExt;
    let mut out = BTreeMap::new();
    let mut stack = vec![(String::new(), root.to_path_buf())];
    while let Some((prefix, dir)) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let e = e.unwrap();
            let rel = format!("{prefix}{}", e.file_name().to_string_lossy());
            let m = e.metadata().unwrap();
            if m.is_dir() {
                out.insert(rel.clone(), Node::Dir);
                stack.push((format!("{rel}/"), e.path()));
            } else {
                out.insert(
                    rel,
                    Node::File {
                        content: std::fs::read(e.path()).unwrap(),
                        mtime: (m.mtime() as u32, m.mtime_nsec() as u32),
                    },
                );
            }
        }
    }
    out
}

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

/// memfs with injected failures: the first `jukebox` WRITEs answer NFS3ERR_JUKEBOX,
/// CREATE of `full*` answers NOSPC and of `quota*` DQUOT, MKDIR of `ro*` ROFS.
struct FaultyFs {
    inner: MemFs,
    jukebox: AtomicUsize,
    /// How long each COMMIT takes.
    slow_commit: Duration,
    /// WRITEs that reach past this offset answer NOSPC (a file too big for the disk).
    space: Arc<AtomicU64>,
}

impl FaultyFs {
    fn new() -> FaultyFs {
        FaultyFs {
            inner: MemFs::default(),
            jukebox: AtomicUsize::new(0),
            slow_commit: Duration::ZERO,
            space: Arc::new(AtomicU64::new(u64::MAX)),
        }
    }
}

fn name_starts(name: &filename3<'_>, prefix: &str) -> bool {
    name.as_ref().starts_with(prefix.as_bytes())
}

impl NfsReadFileSystem for FaultyFs {
    type Handle = FileHandleU64;

    fn root_dir(&self) -> FileHandleU64 {
        self.inner.root_dir()
    }

    async fn lookup(
        &self,
        dir: &FileHandleU64,
        name: &filename3<'_>,
    ) -> Result<FileHandleU64, v3::nfsstat3> {
        self.inner.lookup(dir, name).await
    }

    async fn getattr(&self, id: &FileHandleU64) -> Result<v3::fattr3, v3::nfsstat3> {
        self.inner.getattr(id).await
    }

    async fn read(
        &self,
        id: &FileHandleU64,
        offset: u64,
        count: u32,
    ) -> Result<(Vec<u8>, bool), v3::nfsstat3> {
        self.inner.read(id, offset, count).await
    }

    async fn readdirplus(
        &self,
        dir: &FileHandleU64,
        cookie: u64,
    ) -> Result<impl ReadDirPlusIterator<FileHandleU64>, v3::nfsstat3> {
        self.inner.readdirplus(dir, cookie).await
    }

    async fn readlink(&self, id: &FileHandleU64) -> Result<v3::nfspath3<'_>, v3::nfsstat3> {
        self.inner.readlink(id).await
    }
}

impl NfsFileSystem for FaultyFs {
    async fn setattr(&self, id: &FileHandleU64, s: v3::sattr3) -> Result<v3::fattr3, v3::nfsstat3> {
        self.inner.setattr(id, s).await
    }

    async fn write(
        &self,
        id: &FileHandleU64,
        offset: u64,
        data: &[u8],
        stable: v3::stable_how,
    ) -> Result<(v3::fattr3, v3::stable_how), v3::nfsstat3> {
        let left = self.jukebox.load(Ordering::SeqCst);
        if left > 0
            && self
                .jukebox
                .compare_exchange(left, left - 1, Ordering::SeqCst, Ordering::SeqCst)
                .is_ok()
        {
            return Err(v3::nfsstat3::NFS3ERR_JUKEBOX);
        }
        if offset + data.len() as u64 > self.space.load(Ordering::SeqCst) {
            return Err(v3::nfsstat3::NFS3ERR_NOSPC);
        }
        self.inner.write(id, offset, data, stable).await
    }

    async fn create(
        &self,
        dir: &FileHandleU64,
        name: &filename3<'_>,
        attr: v3::sattr3,
    ) -> Result<(FileHandleU64, v3::fattr3), v3::nfsstat3> {
        if name_starts(name, "full") {
            return Err(v3::nfsstat3::NFS3ERR_NOSPC);
        }
        if name_starts(name, "quota") {
            return Err(v3::nfsstat3::NFS3ERR_DQUOT);
        }
        self.inner.create(dir, name, attr).await
    }

    async fn create_exclusive(
        &self,
        dir: &FileHandleU64,
        name: &filename3<'_>,
        verf: v3::createverf3,
    ) -> Result<FileHandleU64, v3::nfsstat3> {
        self.inner.create_exclusive(dir, name, verf).await
    }

    async fn mkdir(
        &self,
        dir: &FileHandleU64,
        name: &filename3<'_>,
    ) -> Result<(FileHandleU64, v3::fattr3), v3::nfsstat3> {
        if name_starts(name, "ro") {
            return Err(v3::nfsstat3::NFS3ERR_ROFS);
        }
        self.inner.mkdir(dir, name).await
    }

    async fn remove(&self, dir: &FileHandleU64, name: &filename3<'_>) -> Result<(), v3::nfsstat3> {
        self.inner.remove(dir, name).await
    }

    async fn rename<'a>(
        &self,
        from: &FileHandleU64,
        from_name: &filename3<'a>,
        to: &FileHandleU64,
        to_name: &filename3<'a>,
    ) -> Result<(), v3::nfsstat3> {
        self.inner.rename(from, from_name, to, to_name).await
    }

    async fn symlink<'a>(
        &self,
        dir: &FileHandleU64,
        name: &filename3<'a>,
        target: &v3::nfspath3<'a>,
        attr: &v3::sattr3,
    ) -> Result<(FileHandleU64, v3::fattr3), v3::nfsstat3> {
        self.inner.symlink(dir, name, target, attr).await
    }

    async fn commit(
        &self,
        id: &FileHandleU64,
        offset: u64,
        count: u32,
    ) -> Result<(), v3::nfsstat3> {
        tokio::time::sleep(self.slow_commit).await;
        self.inner.commit(id, offset, count).await
    }
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
