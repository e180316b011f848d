//! The memfs server with failures injected (JUKEBOX, NOSPC, DQUOT, ROFS, STALE, slow
//! COMMIT):
//! a whole NFS file system's worth of pass-through, so it lives apart from the tests
//! that use it.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use nfs3_client::nfs3_types::nfs3::{self as v3, filename3};
use nfs3_server::memfs::MemFs;
use nfs3_server::vfs::{FileHandleU64, NfsFileSystem, NfsReadFileSystem, ReadDirPlusIterator};

/// memfs with injected failures: the first `jukebox` WRITEs answer NFS3ERR_JUKEBOX,
/// CREATE of `full*` answers NOSPC and of `quota*` DQUOT, MKDIR of `ro*` ROFS, and the
/// first `stale_setattrs` SETATTRs answer STALE (what a handle looked up a moment
/// before answers once another run has renamed its own copy over the name).
pub(super) struct FaultyFs {
    pub(super) inner: MemFs,
    pub(super) jukebox: AtomicUsize,
    pub(super) stale_setattrs: Arc<AtomicUsize>,
    /// How long each COMMIT takes.
    pub(super) slow_commit: Duration,
    /// WRITEs that reach past this offset answer NOSPC (a file too big for the disk).
    pub(super) space: Arc<AtomicU64>,
}

impl FaultyFs {
    pub(super) fn new() -> FaultyFs {
        FaultyFs {
            inner: MemFs::default(),
            jukebox: AtomicUsize::new(0),
            stale_setattrs: Arc::new(AtomicUsize::new(0)),
            slow_commit: Duration::ZERO,
            space: Arc::new(AtomicU64::new(u64::MAX)),
        }
    }
}

/// Counts one injected failure down; `false` once none are left.
fn take_one(left: &AtomicUsize) -> bool {
    left.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
        .is_ok()
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
        if take_one(&self.stale_setattrs) {
            return Err(v3::nfsstat3::NFS3ERR_STALE);
        }
        self.inner.setattr(id, s).await
    }

    async fn write(
        &self,
        id: &FileHandleU64,
        offset: u64,
        data: &[u8],
        stable: v3::stable_how,
    ) -> Result<(v3::fattr3, v3::stable_how), v3::nfsstat3> {
        if take_one(&self.jukebox) {
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
