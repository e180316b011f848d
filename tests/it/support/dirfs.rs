//! A file system for the in-process NFSv3 server that keeps everything in a local
//! directory, as nfs-ganesha's VFS backend does: scenarios set up a destination and read
//! it back with plain file operations, while nfsync reaches it over NFSv3.
//!
//! A handle is the inode number; the file system remembers for each one the directory
//! it was last seen in and its name there, and checks the inode again on every use
//! (NFS3ERR_STALE when the name now holds another). Every call works as the test
//! process, which is root in CI; the server itself answers LINK and MKNOD with
//! PROC_UNAVAIL, so neither hard links nor special files can be made through it.

use std::collections::HashMap;
use std::ffi::{CString, OsStr, OsString};
use std::fs::{self, Metadata, OpenOptions};
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileExt, FileTypeExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use nfs3_server::nfs3_types::nfs3::{
    createverf3, fattr3, filename3, ftype3, nfspath3, nfsstat3, nfstime3, sattr3, set_atime,
    set_mtime, specdata3, stable_how,
};
use nfs3_server::vfs::{
    DirEntryPlus, FileHandleU64, NextResult, NfsFileSystem, NfsReadFileSystem, ReadDirPlusIterator,
};

use super::fnv1a;

/// A local directory served over NFSv3.
pub struct DirFs {
    root: PathBuf,
    root_id: u64,
    /// Handle → (parent's handle, name in it), for every handle given out.
    names: Mutex<HashMap<u64, (u64, OsString)>>,
}

impl DirFs {
    /// Serves the directory `root` (created if missing).
    pub fn new(root: &Path) -> DirFs {
        fs::create_dir_all(root).unwrap();
        let root = root.canonicalize().unwrap();
        let root_id = fs::symlink_metadata(&root).unwrap().ino();
        DirFs {
            root,
            root_id,
            names: Mutex::new(HashMap::new()),
        }
    }

    /// The path of a handle, checked to still be the same inode, with its metadata.
    fn resolve(&self, id: u64) -> Result<(PathBuf, Metadata), nfsstat3> {
        let mut parts = Vec::new();
        {
            let names = self.names.lock().unwrap();
            let mut at = id;
            while at != self.root_id {
                let (parent, name) = names.get(&at).ok_or(nfsstat3::NFS3ERR_STALE)?;
                parts.push(name.clone());
                at = *parent;
                if parts.len() > 4096 {
                    return Err(nfsstat3::NFS3ERR_STALE);
                }
            }
        }
        let mut path = self.root.clone();
        path.extend(parts.iter().rev());
        let meta = fs::symlink_metadata(&path).map_err(|_| nfsstat3::NFS3ERR_STALE)?;
        if meta.ino() != id {
            return Err(nfsstat3::NFS3ERR_STALE);
        }
        Ok((path, meta))
    }

    fn path(&self, id: &FileHandleU64) -> Result<PathBuf, nfsstat3> {
        self.resolve(id.as_u64()).map(|(p, _)| p)
    }

    /// `dir/name` for a directory handle.
    fn child(&self, dir: &FileHandleU64, name: &[u8]) -> Result<PathBuf, nfsstat3> {
        if name.is_empty() || name.contains(&b'/') {
            return Err(nfsstat3::NFS3ERR_INVAL);
        }
        let (path, meta) = self.resolve(dir.as_u64())?;
        if !meta.is_dir() {
            return Err(nfsstat3::NFS3ERR_NOTDIR);
        }
        Ok(path.join(OsStr::from_bytes(name)))
    }

    /// Notes that `dir/name` is the inode `meta` describes, and returns its handle.
    fn remember(&self, dir: &FileHandleU64, name: &[u8], meta: &Metadata) -> FileHandleU64 {
        let id = meta.ino();
        if id != self.root_id {
            self.names
                .lock()
                .unwrap()
                .insert(id, (dir.as_u64(), OsStr::from_bytes(name).to_os_string()));
        }
        FileHandleU64::new(id)
    }

    fn attr_of(path: &Path) -> Result<fattr3, nfsstat3> {
        fs::symlink_metadata(path).map(|m| attr(&m)).map_err(status)
    }

    /// Applies `s` to `path`: owners first (chown clears setuid and setgid), then the
    /// mode, the size, the times.
    fn set(path: &Path, s: &sattr3, meta: &Metadata) -> Result<(), nfsstat3> {
        use nfs3_server::nfs3_types::nfs3::Nfs3Option;
        let uid = match s.uid {
            Nfs3Option::Some(u) => Some(u),
            Nfs3Option::None => None,
        };
        let gid = match s.gid {
            Nfs3Option::Some(g) => Some(g),
            Nfs3Option::None => None,
        };
        if uid.is_some() || gid.is_some() {
            std::os::unix::fs::lchown(path, uid, gid).map_err(status)?;
        }
        // A symlink has no mode of its own (chmod would follow it).
        if let Nfs3Option::Some(mode) = s.mode
            && !meta.file_type().is_symlink()
        {
            fs::set_permissions(path, fs::Permissions::from_mode(mode & 0o7777)).map_err(status)?;
        }
        if let Nfs3Option::Some(size) = s.size {
            let f = OpenOptions::new().write(true).open(path).map_err(status)?;
            f.set_len(size).map_err(status)?;
        }
        let time = |client: Option<nfstime3>, server: bool| -> libc::timespec {
            match (client, server) {
                (Some(t), _) => libc::timespec {
                    tv_sec: t.seconds.into(),
                    tv_nsec: t.nseconds.into(),
                },
                (None, true) => libc::timespec {
                    tv_sec: 0,
                    tv_nsec: libc::UTIME_NOW,
                },
                (None, false) => libc::timespec {
                    tv_sec: 0,
                    tv_nsec: libc::UTIME_OMIT,
                },
            }
        };
        let atime = match s.atime {
            set_atime::DONT_CHANGE => time(None, false),
            set_atime::SET_TO_SERVER_TIME => time(None, true),
            set_atime::SET_TO_CLIENT_TIME(t) => time(Some(t), false),
        };
        let mtime = match s.mtime {
            set_mtime::DONT_CHANGE => time(None, false),
            set_mtime::SET_TO_SERVER_TIME => time(None, true),
            set_mtime::SET_TO_CLIENT_TIME(t) => time(Some(t), false),
        };
        if atime.tv_nsec != libc::UTIME_OMIT || mtime.tv_nsec != libc::UTIME_OMIT {
            let c =
                CString::new(path.as_os_str().as_bytes()).map_err(|_| nfsstat3::NFS3ERR_INVAL)?;
            let times = [atime, mtime];
            // SAFETY: a valid NUL-terminated path and two timespecs.
            let rc = unsafe {
                libc::utimensat(
                    libc::AT_FDCWD,
                    c.as_ptr(),
                    times.as_ptr(),
                    libc::AT_SYMLINK_NOFOLLOW,
                )
            };
            if rc != 0 {
                return Err(status(io::Error::last_os_error()));
            }
        }
        Ok(())
    }
}

/// The NFS attributes of a local inode.
fn attr(m: &Metadata) -> fattr3 {
    let ft = m.file_type();
    let type_ = if ft.is_dir() {
        ftype3::NF3DIR
    } else if ft.is_symlink() {
        ftype3::NF3LNK
    } else if ft.is_fifo() {
        ftype3::NF3FIFO
    } else if ft.is_socket() {
        ftype3::NF3SOCK
    } else if ft.is_char_device() {
        ftype3::NF3CHR
    } else if ft.is_block_device() {
        ftype3::NF3BLK
    } else {
        ftype3::NF3REG
    };
    // NFSv3 times are unsigned 32-bit seconds: the nearest storable one.
    let time = |secs: i64, nsecs: i64| match u32::try_from(secs) {
        Ok(seconds) => nfstime3 {
            seconds,
            nseconds: nsecs as u32,
        },
        Err(_) if secs < 0 => nfstime3::default(),
        Err(_) => nfstime3 {
            seconds: u32::MAX,
            nseconds: 999_999_999,
        },
    };
    fattr3 {
        type_,
        mode: m.mode() & 0o7777,
        nlink: m.nlink() as u32,
        uid: m.uid(),
        gid: m.gid(),
        size: m.size(),
        used: m.blocks() * 512,
        rdev: specdata3 {
            specdata1: libc::major(m.rdev()),
            specdata2: libc::minor(m.rdev()),
        },
        fsid: m.dev(),
        fileid: m.ino(),
        atime: time(m.atime(), m.atime_nsec()),
        mtime: time(m.mtime(), m.mtime_nsec()),
        ctime: time(m.ctime(), m.ctime_nsec()),
    }
}

/// The NFS status for a local error.
fn status(e: io::Error) -> nfsstat3 {
    use nfsstat3::*;
    match e.raw_os_error().unwrap_or(0) {
        libc::EPERM => NFS3ERR_PERM,
        libc::ENOENT => NFS3ERR_NOENT,
        libc::EACCES => NFS3ERR_ACCES,
        libc::EEXIST => NFS3ERR_EXIST,
        libc::EXDEV => NFS3ERR_XDEV,
        libc::ENOTDIR => NFS3ERR_NOTDIR,
        libc::EISDIR => NFS3ERR_ISDIR,
        libc::EINVAL => NFS3ERR_INVAL,
        libc::EFBIG => NFS3ERR_FBIG,
        libc::ENOSPC => NFS3ERR_NOSPC,
        libc::EROFS => NFS3ERR_ROFS,
        libc::EMLINK => NFS3ERR_MLINK,
        libc::ENAMETOOLONG => NFS3ERR_NAMETOOLONG,
        libc::ENOTEMPTY => NFS3ERR_NOTEMPTY,
        libc::EDQUOT => NFS3ERR_DQUOT,
        libc::EOPNOTSUPP => NFS3ERR_NOTSUPP,
        _ => NFS3ERR_IO,
    }
}

/// A directory entry's cookie: a hash of its name, so that a listing resumed after
/// entries came or went neither repeats nor misses the ones that stayed (as ext4 does).
fn cookie(name: &OsStr) -> u64 {
    fnv1a(name.as_bytes()).max(1)
}

impl NfsReadFileSystem for DirFs {
    type Handle = FileHandleU64;

    fn root_dir(&self) -> FileHandleU64 {
        FileHandleU64::new(self.root_id)
    }

    async fn lookup(
        &self,
        dir: &FileHandleU64,
        name: &filename3<'_>,
    ) -> Result<FileHandleU64, nfsstat3> {
        match name.as_ref() {
            b"." => return self.resolve(dir.as_u64()).map(|_| *dir),
            b".." => {
                let (path, _) = self.resolve(dir.as_u64())?;
                if dir.as_u64() == self.root_id {
                    return Ok(*dir);
                }
                let parent = path.parent().ok_or(nfsstat3::NFS3ERR_NOENT)?;
                let m = fs::symlink_metadata(parent).map_err(status)?;
                return Ok(FileHandleU64::new(m.ino()));
            }
            _ => {}
        }
        let path = self.child(dir, name.as_ref())?;
        let m = fs::symlink_metadata(&path).map_err(status)?;
        Ok(self.remember(dir, name.as_ref(), &m))
    }

    async fn getattr(&self, id: &FileHandleU64) -> Result<fattr3, nfsstat3> {
        self.resolve(id.as_u64()).map(|(_, m)| attr(&m))
    }

    async fn read(
        &self,
        id: &FileHandleU64,
        offset: u64,
        count: u32,
    ) -> Result<(Vec<u8>, bool), nfsstat3> {
        let f = fs::File::open(self.path(id)?).map_err(status)?;
        let size = f.metadata().map_err(status)?.len();
        let mut buf = vec![0; count.min(size.saturating_sub(offset) as u32) as usize];
        let mut got = 0;
        while got < buf.len() {
            match f.read_at(&mut buf[got..], offset + got as u64) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(e) => return Err(status(e)),
            }
        }
        buf.truncate(got);
        Ok((buf, offset + got as u64 >= size))
    }

    async fn readdirplus(
        &self,
        dir: &FileHandleU64,
        after: u64,
    ) -> Result<impl ReadDirPlusIterator<FileHandleU64>, nfsstat3> {
        let (path, meta) = self.resolve(dir.as_u64())?;
        if !meta.is_dir() {
            return Err(nfsstat3::NFS3ERR_NOTDIR);
        }
        let mut entries = Vec::new();
        for e in fs::read_dir(&path).map_err(status)? {
            let name = e.map_err(status)?.file_name();
            let c = cookie(&name);
            if c > after {
                entries.push((c, name));
            }
        }
        entries.sort();
        entries.reverse();
        Ok(Listing {
            fs: self,
            dir: *dir,
            path,
            entries,
        })
    }

    async fn readlink(&self, id: &FileHandleU64) -> Result<nfspath3<'_>, nfsstat3> {
        let target = fs::read_link(self.path(id)?).map_err(status)?;
        Ok(target.into_os_string().into_encoded_bytes().into())
    }
}

/// What is left of one directory listing, in cookie order (last first).
struct Listing<'a> {
    fs: &'a DirFs,
    dir: FileHandleU64,
    path: PathBuf,
    entries: Vec<(u64, OsString)>,
}

impl ReadDirPlusIterator<FileHandleU64> for Listing<'_> {
    async fn next(&mut self) -> NextResult<DirEntryPlus<FileHandleU64>> {
        // Entries removed since the directory was read are left out.
        while let Some((cookie, name)) = self.entries.pop() {
            let Ok(m) = fs::symlink_metadata(self.path.join(&name)) else {
                continue;
            };
            let handle = self.fs.remember(&self.dir, name.as_bytes(), &m);
            return NextResult::Ok(DirEntryPlus {
                fileid: m.ino(),
                name: name.into_encoded_bytes().into(),
                cookie,
                name_attributes: Some(attr(&m)),
                name_handle: Some(handle),
            });
        }
        NextResult::Eof
    }
}

impl NfsFileSystem for DirFs {
    async fn setattr(&self, id: &FileHandleU64, s: sattr3) -> Result<fattr3, nfsstat3> {
        let (path, meta) = self.resolve(id.as_u64())?;
        Self::set(&path, &s, &meta)?;
        Self::attr_of(&path)
    }

    async fn write(
        &self,
        id: &FileHandleU64,
        offset: u64,
        data: &[u8],
        stable: stable_how,
    ) -> Result<(fattr3, stable_how), nfsstat3> {
        let f = OpenOptions::new()
            .write(true)
            .open(self.path(id)?)
            .map_err(status)?;
        f.write_all_at(data, offset).map_err(status)?;
        let m = f.metadata().map_err(status)?;
        Ok((attr(&m), stable))
    }

    async fn create(
        &self,
        dir: &FileHandleU64,
        name: &filename3<'_>,
        s: sattr3,
    ) -> Result<(FileHandleU64, fattr3), nfsstat3> {
        let path = self.child(dir, name.as_ref())?;
        // UNCHECKED keeps an existing file (its size comes in `s`); GUARDED was
        // refused by the server already if the name exists.
        OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(status)?;
        let meta = fs::symlink_metadata(&path).map_err(status)?;
        Self::set(&path, &s, &meta)?;
        let handle = self.remember(dir, name.as_ref(), &meta);
        Ok((handle, Self::attr_of(&path)?))
    }

    async fn create_exclusive(
        &self,
        dir: &FileHandleU64,
        name: &filename3<'_>,
        _verf: createverf3,
    ) -> Result<FileHandleU64, nfsstat3> {
        let path = self.child(dir, name.as_ref())?;
        OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
            .map_err(status)?;
        let meta = fs::symlink_metadata(&path).map_err(status)?;
        Ok(self.remember(dir, name.as_ref(), &meta))
    }

    async fn mkdir(
        &self,
        dir: &FileHandleU64,
        name: &filename3<'_>,
    ) -> Result<(FileHandleU64, fattr3), nfsstat3> {
        let path = self.child(dir, name.as_ref())?;
        fs::create_dir(&path).map_err(status)?;
        let meta = fs::symlink_metadata(&path).map_err(status)?;
        Ok((self.remember(dir, name.as_ref(), &meta), attr(&meta)))
    }

    async fn remove(&self, dir: &FileHandleU64, name: &filename3<'_>) -> Result<(), nfsstat3> {
        let path = self.child(dir, name.as_ref())?;
        let meta = fs::symlink_metadata(&path).map_err(status)?;
        if meta.is_dir() {
            fs::remove_dir(&path).map_err(status)
        } else {
            fs::remove_file(&path).map_err(status)
        }
    }

    async fn rename<'a>(
        &self,
        from_dir: &FileHandleU64,
        from_name: &filename3<'a>,
        to_dir: &FileHandleU64,
        to_name: &filename3<'a>,
    ) -> Result<(), nfsstat3> {
        let from = self.child(from_dir, from_name.as_ref())?;
        let to = self.child(to_dir, to_name.as_ref())?;
        let meta = fs::symlink_metadata(&from).map_err(status)?;
        fs::rename(&from, &to).map_err(status)?;
        self.remember(to_dir, to_name.as_ref(), &meta);
        Ok(())
    }

    async fn symlink<'a>(
        &self,
        dir: &FileHandleU64,
        name: &filename3<'a>,
        target: &nfspath3<'a>,
        s: &sattr3,
    ) -> Result<(FileHandleU64, fattr3), nfsstat3> {
        let path = self.child(dir, name.as_ref())?;
        std::os::unix::fs::symlink(OsStr::from_bytes(target.as_ref()), &path).map_err(status)?;
        let meta = fs::symlink_metadata(&path).map_err(status)?;
        Self::set(&path, s, &meta)?;
        let handle = self.remember(dir, name.as_ref(), &meta);
        Ok((handle, Self::attr_of(&path)?))
    }

    async fn commit(&self, _id: &FileHandleU64, _offset: u64, _count: u32) -> Result<(), nfsstat3> {
        Ok(())
    }
}
