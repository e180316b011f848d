//! The in-process NFSv3 server (`nfs3_server`, which answers calls out of order) on a
//! free port of 127.0.0.1, serving memfs or any other file system.

use std::future::Future;

use nfs3_server::memfs::MemFs;
use nfs3_server::tcp::{NFSTcp, NFSTcpListener};
use nfs3_server::vfs::NfsFileSystem;

/// A running server, stopped when dropped.
pub struct Server {
    /// Its port: NFS and MOUNT both.
    pub port: u16,
    rt: Option<tokio::runtime::Runtime>,
}

impl Server {
    /// An empty memfs.
    pub fn memfs() -> Server {
        Self::start(None, MemFs::default())
    }

    /// Serves `fs` under the export name `export` (default `/`).
    pub fn start<F: NfsFileSystem + 'static>(export: Option<&str>, fs: F) -> Server {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let mut listener = rt
            .block_on(NFSTcpListener::bind("127.0.0.1:0", fs))
            .unwrap();
        if let Some(e) = export {
            listener.with_export_name(e);
        }
        let port = listener.get_listen_port();
        rt.spawn(async move { listener.handle_forever().await });
        Server { port, rt: Some(rt) }
    }

    /// `nfs://` URL for `path` (NFS and MOUNT on the one port).
    pub fn url(&self, path: &str) -> String {
        url_for(self.port, path)
    }

    /// Runs `f` to completion on the server's runtime.
    pub fn block_on<T>(&self, f: impl Future<Output = T>) -> T {
        self.rt.as_ref().expect("server running").block_on(f)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(rt) = self.rt.take() {
            rt.shutdown_background();
        }
    }
}

/// `nfs://127.0.0.1/path` with NFS and MOUNT both on `port`.
pub fn url_for(port: u16, path: &str) -> String {
    format!("nfs://127.0.0.1{path}?nfsport={port}&mountport={port}")
}
