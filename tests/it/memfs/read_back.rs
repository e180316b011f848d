//! Reading back what nfsync wrote, with `nfs3_client`: an NFS client nfsync shares no
//! code with, so a bug in nfsync's own reading cannot hide one in its writing.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::Path;

use nfs3_client::io::{AsyncRead, AsyncWrite};
use nfs3_client::nfs3_types::nfs3::{self as v3, Nfs3Result, filename3, ftype3, nfs_fh3};
use nfs3_client::nfs3_types::xdr_codec::Opaque;
use nfs3_client::{MountClient, Nfs3Client};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::support::inproc::Server;

/// Reads the whole tree under `path` of `server` back with nfs3_client.
pub(super) fn snapshot(server: &Server, path: &str) -> BTreeMap<String, Node> {
    server.block_on(independent_snapshot(server.port, path))
}

/// What the independent client sees of one entry.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Node {
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
pub(super) fn local_snapshot(root: &Path) -> BTreeMap<String, Node> {
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
