//! The mount path: any directory, typically a kernel NFS or EFS mount.
//!
//! Latency is hidden by the engine's many workers, so this backend's job is to spend as
//! few operations per file as the kernel allows: create with the final mode (the
//! process umask is cleared so no `chmod` is needed), one write for small files,
//! `chown`/`chmod` only when they change something, and the mtime set through the open
//! descriptor just before close. On an NFS mount `close` is where write errors
//! (ENOSPC, EDQUOT) surface, so its result is checked rather than dropped.
//!
//! Every directory is held open and every call names its target relative to that
//! descriptor (`openat`, `mkdirat`, `renameat`, ... without following symlinks), never
//! by a path resolved again from DEST: a destination directory that someone replaces
//! with a symlink during a run cannot send a write outside DEST, and trees deeper than
//! `PATH_MAX` are written like any other.

use std::ffi::{OsStr, OsString};
use std::fs::{self, File};
use std::io;
use std::os::unix::ffi::OsStringExt;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

use rustix::fs::{AtFlags, Mode, OFlags};

use super::name::component;
use super::{
    AttrSet, CopyError, DestEntry, Destination, OwnerPolicy, Removal, RootState, SourceFile,
};
use crate::dest;
use crate::meta::{Kind, Meta};
use crate::options::trust::Trust;
use crate::source::Data;

mod data;
mod dir;
mod fake;
mod named_dirs;
mod remove;
mod sys;
mod xattr;

use data::{Ours, remove_if_ours};
pub use dir::LocalDir;
use remove::remove_tree_at;
use sys::{chmod_nofollow, close_checked, mtime_only, set_mtime_at};
pub use sys::{raise_fd_limit, same_bytes};

/// A destination that is a directory on a mounted filesystem.
pub struct LocalDest {
    root: PathBuf,
    owners: OwnerPolicy,
    euid: u32,
    egid: u32,
    /// Which symlinks the paths the user names (DEST, `--backup-dir`, ...) may lead
    /// through.
    trust: Trust,
    /// The caller's umask (the process runs with none): DEST and its missing parents
    /// are made `0777` less it, as rsync makes them.
    umask: u32,
    /// `--fake-super`: what root would set is kept in an extended attribute.
    fake_super: bool,
}

impl LocalDest {
    /// A destination at `root`. Files and directories are created with the source's
    /// permission bits in one call, so the caller clears the process umask first
    /// (`nfsync` does in `main`), or they come out as the umask cuts them.
    pub fn new(root: impl Into<PathBuf>, owners: OwnerPolicy) -> LocalDest {
        LocalDest {
            root: root.into(),
            owners,
            euid: rustix::process::geteuid().as_raw(),
            egid: rustix::process::getegid().as_raw(),
            trust: Trust::OWNED,
            umask: 0o022,
            fake_super: false,
        }
    }

    /// The same destination, making DEST and its missing parents with the caller's
    /// `umask` applied.
    pub fn with_umask(self, umask: u32) -> LocalDest {
        LocalDest { umask, ..self }
    }

    /// The same destination under `--fake-super` (when `on`): entries are made safe and
    /// ours, and owners, special bits and device numbers are kept in an extended
    /// attribute instead.
    pub fn with_fake_super(self, on: bool) -> LocalDest {
        LocalDest {
            fake_super: on,
            ..self
        }
    }

    /// The same destination, following the symlinks `trust` allows in the paths the
    /// user names (`--insecure-links`: all of them); rsync's rule by default.
    pub fn with_trust(self, trust: Trust) -> LocalDest {
        LocalDest { trust, ..self }
    }

    /// The mode DEST's missing directories up to `path` are made with: `0777`, which a
    /// default ACL on the nearest existing one cuts as it lets them have (the kernel
    /// then ignores the umask, as it does for rsync), else `0777` less the umask.
    fn new_dirs_mode(&self, path: &Path) -> u32 {
        let mut at = path.parent();
        loop {
            let p = match at {
                Some(p) if !p.as_os_str().is_empty() => p,
                _ => Path::new("."),
            };
            if fs::symlink_metadata(p).is_ok() {
                return match xattr::default_perms(crate::options::xattrs::Target::Path(p)) {
                    Some(_) => 0o777,
                    None => 0o777 & !self.umask,
                };
            }
            if p == Path::new(".") {
                return 0o777 & !self.umask;
            }
            at = p.parent();
        }
    }

    /// The uid/gid to pass to `chown` for `meta`, or `None` when nothing would change
    /// for a file we just created (owned by our euid/egid).
    fn chown_ids(&self, meta: &Meta) -> Option<(Option<u32>, Option<u32>)> {
        let uid = (self.owners.owner && meta.uid != self.euid).then_some(meta.uid);
        let gid = (self.owners.group && meta.gid != self.egid).then_some(meta.gid);
        (uid.is_some() || gid.is_some()).then_some((uid, gid))
    }

    /// The owners we keep, as `chown` arguments; `None` when we keep none.
    fn owner_ids(&self, meta: &Meta) -> Option<(Option<rustix::fs::Uid>, Option<rustix::fs::Gid>)> {
        let uid = self
            .owners
            .owner
            .then(|| rustix::fs::Uid::from_raw(meta.uid));
        let gid = self
            .owners
            .group
            .then(|| rustix::fs::Gid::from_raw(meta.gid));
        (uid.is_some() || gid.is_some()).then_some((uid, gid))
    }
}

impl Destination for LocalDest {
    type Dir = LocalDir;

    fn ids_are_local(&self) -> bool {
        true
    }

    fn root_state(&self) -> dest::Result<RootState> {
        match fs::metadata(&self.root) {
            Ok(m) => {
                let mut meta = Meta::from_std(&m);
                // A file DEST may stand for a device or fifo its stored value says.
                if self.fake_super && meta.kind != Kind::Dir {
                    let t = crate::options::xattrs::Target::Path(&self.root);
                    if let Some(f) = crate::options::fake_super::read(t)? {
                        f.apply(&mut meta);
                    }
                }
                Ok(RootState::Exists(meta))
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(RootState::Missing),
            Err(e) => Err(e.into()),
        }
    }

    fn root_dir(&self) -> dest::Result<LocalDir> {
        // DEST may be a symlink to a directory: it is followed here, once, so its
        // attributes (set through the descriptor) land on the directory, as with rsync.
        match fs::metadata(&self.root) {
            Ok(m) if m.is_dir() => {}
            Ok(_) => return Err(io::Error::from_raw_os_error(libc::ENOTDIR).into()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => fs::DirBuilder::new()
                .recursive(true)
                .mode(self.new_dirs_mode(&self.root))
                .create(&self.root)?,
            Err(e) => return Err(e.into()),
        }
        Ok(LocalDir::open_path(self.trust, &self.root)?)
    }

    fn missing_parents(&self, with_dest: bool) -> usize {
        let mut at = match with_dest {
            true => Some(self.root.as_path()),
            false => self.root.parent(),
        };
        let mut n = 0;
        while let Some(p) = at.filter(|p| !p.as_os_str().is_empty()) {
            if fs::symlink_metadata(p).is_ok() {
                break;
            }
            n += 1;
            at = p.parent();
        }
        n
    }

    fn make_parents(&self) -> dest::Result<()> {
        match self.root.parent() {
            Some(p) if !p.as_os_str().is_empty() => Ok(fs::DirBuilder::new()
                .recursive(true)
                .mode(self.new_dirs_mode(p))
                .create(p)?),
            _ => Ok(()),
        }
    }

    fn root_parent(&self) -> dest::Result<(LocalDir, OsString)> {
        let name = self
            .root
            .file_name()
            .ok_or_else(|| io::Error::from_raw_os_error(libc::EISDIR))?;
        let parent = match self.root.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        Ok((LocalDir::open_path(self.trust, parent)?, name.to_owned()))
    }

    fn list(&self, dir: &LocalDir) -> dest::Result<Vec<DestEntry>> {
        let mut out = Vec::new();
        for e in rustix::fs::Dir::read_from(dir.fd())? {
            let e = e?;
            let name = e.file_name().to_bytes();
            if name == b"." || name == b".." {
                continue;
            }
            let kind = match e.file_type() {
                rustix::fs::FileType::Unknown => None,
                // It may stand for another kind: stat says.
                rustix::fs::FileType::RegularFile if self.fake_super => None,
                t => Some(Kind::from_raw_type(t)),
            };
            out.push(DestEntry {
                name: OsString::from_vec(name.to_vec()),
                kind,
                meta: None,
            });
        }
        Ok(out)
    }

    fn stat(&self, dir: &LocalDir, name: &OsStr) -> dest::Result<Option<Meta>> {
        component(name)?;
        match rustix::fs::statat(dir.fd(), name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) => {
                let mut meta = Meta::from_stat(&st);
                self.read_faked(dir, Some(name), &mut meta)?;
                Ok(Some(meta))
            }
            Err(rustix::io::Errno::NOENT) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    fn mkdir(
        &self,
        dir: &LocalDir,
        name: &OsStr,
        meta: &Meta,
    ) -> dest::Result<(LocalDir, AttrSet)> {
        component(name)?;
        // With the umask cleared, mkdir gives the final mode when that leaves the
        // directory writable by us and has no special bit; else 0700 until
        // set_dir_attrs. Owner and group are ours (the parent's group under setgid).
        let mode = match self.fake_super {
            true => crate::options::fake_super::real_mode(Kind::Dir, meta.mode),
            false => mkdir_mode(meta),
        };
        rustix::fs::mkdirat(dir.fd(), name, Mode::from_raw_mode(mode))?;
        let made = LocalDir {
            setgid: dir.setgid,
            ..LocalDir::open(dir.fd(), name)?
        };
        let todo = AttrSet {
            mode: mode != meta.mode || self.fake_super,
            owner: self.chown_ids(meta).is_some() || (self.owners.group && dir.setgid),
            mtime: true,
        };
        Ok((made, todo))
    }

    fn open_dir(&self, dir: &LocalDir, name: &OsStr) -> dest::Result<(LocalDir, Meta)> {
        component(name)?;
        let mut d = LocalDir::open(dir.fd(), name)?;
        let mut meta = Meta::from_stat(&rustix::fs::fstat(d.fd())?);
        d.setgid = meta.mode & 0o2000 != 0;
        self.read_faked(&d, None, &mut meta)?;
        // A read-only directory we may have to write into (when not root): make it ours
        // to write; the mode we report is the one it now has, so the engine's final
        // set_dir_attrs restores the source's.
        if self.euid != 0 && meta.mode & 0o300 != 0o300 {
            meta.mode |= 0o700;
            rustix::fs::fchmod(d.fd(), Mode::from_raw_mode(meta.mode))?;
        }
        Ok((d, meta))
    }

    fn write_file(
        &self,
        dir: &LocalDir,
        name: &OsStr,
        src: &SourceFile<'_>,
    ) -> Result<u64, CopyError> {
        component(name).map_err(CopyError::Dest)?;
        let meta = src.meta;
        let flags =
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let fd = rustix::fs::openat(
            dir.fd(),
            name,
            flags,
            Mode::from_raw_mode(match self.fake_super {
                true => crate::options::fake_super::real_mode(Kind::File, meta.mode),
                false => meta.mode & 0o777,
            }),
        )
        .map_err(|e| CopyError::Dest(e.into()))?;
        let mut f = File::from(fd);
        let (r, ours) = match self.fill(&mut f, src) {
            Ok(bytes) => {
                // close() is where an NFS mount reports deferred write errors, and after
                // it the descriptor cannot say which file it was: its identity is taken
                // first (one local call, no round trip).
                let st = rustix::fs::fstat(&f).map_err(|e| CopyError::Dest(e.into()))?;
                match close_checked(f) {
                    Ok(()) => return Ok(bytes),
                    Err(e) => (
                        Err(CopyError::Dest(e.into())),
                        Ours::Was((st.st_dev, st.st_ino)),
                    ),
                }
            }
            Err(e) => (Err(e), Ours::Open(&f)),
        };
        match r {
            Ok(bytes) => Ok(bytes),
            // Left in place without the source's mtime, for the engine to put in place
            // or a re-run to copy again.
            Err(e @ CopyError::SourceChanged) => Err(e),
            // --partial: the bytes written so far are a prefix of the source (written
            // in order, the size set only at the end), kept for the engine.
            Err(e @ CopyError::Interrupted) if src.keep_partial => Err(e),
            Err(e) => {
                remove_if_ours(dir, name, ours);
                Err(e)
            }
        }
    }

    fn write_into(
        &self,
        dir: &LocalDir,
        name: &OsStr,
        src: &SourceFile<'_>,
        from: u64,
    ) -> Result<u64, CopyError> {
        component(name).map_err(CopyError::Dest)?;
        self.write_into_impl(dir, name, src, from)
    }

    fn keeps_partial(&self) -> bool {
        true
    }

    fn rename(&self, dir: &LocalDir, from: &OsStr, to: &OsStr) -> dest::Result<()> {
        component(from)?;
        component(to)?;
        Ok(rustix::fs::renameat(dir.fd(), from, dir.fd(), to)?)
    }

    fn open_path(&self, path: &Path, create: bool) -> dest::Result<Option<LocalDir>> {
        self.open_path_at(path, create)
    }

    fn rename_into(
        &self,
        from_dir: &LocalDir,
        from: &OsStr,
        to_dir: &LocalDir,
        to: &OsStr,
    ) -> dest::Result<()> {
        component(from)?;
        component(to)?;
        Ok(self.rename_between_impl(from_dir, from, to_dir, to)?)
    }

    fn read_link(&self, dir: &LocalDir, name: &OsStr) -> dest::Result<OsString> {
        component(name)?;
        if self.fake_super {
            return Ok(OsString::from_vec(self.read_faked_link(dir, name)?));
        }
        let t = rustix::fs::readlinkat(dir.fd(), name, Vec::new())?;
        Ok(OsString::from_vec(t.into_bytes()))
    }

    fn symlink(
        &self,
        dir: &LocalDir,
        name: &OsStr,
        target: &OsStr,
        meta: &Meta,
    ) -> dest::Result<()> {
        // The target is the link's content, stored as it is and never followed here.
        component(name)?;
        if self.fake_super {
            return self.make_faked(dir, name, meta, target.as_encoded_bytes());
        }
        rustix::fs::symlinkat(target, dir.fd(), name)?;
        if self.chown_ids(meta).is_some()
            && let Some((uid, gid)) = self.owner_ids(meta)
        {
            rustix::fs::chownat(dir.fd(), name, uid, gid, AtFlags::SYMLINK_NOFOLLOW)?;
        }
        Ok(set_mtime_at(dir.fd(), name, meta.mtime)?)
    }

    fn hard_link(
        &self,
        dir: &LocalDir,
        name: &OsStr,
        target_dir: &LocalDir,
        target_name: &OsStr,
    ) -> dest::Result<()> {
        component(name)?;
        component(target_name)?;
        // No AT_SYMLINK_FOLLOW: a symlink swapped in for the target is linked itself,
        // never what it points to.
        Ok(rustix::fs::linkat(
            target_dir.fd(),
            target_name,
            dir.fd(),
            name,
            AtFlags::empty(),
        )?)
    }

    fn mknod(&self, dir: &LocalDir, name: &OsStr, meta: &Meta) -> dest::Result<()> {
        component(name)?;
        if self.fake_super {
            return self.make_faked(dir, name, meta, b"");
        }
        let ft = match meta.kind {
            Kind::Fifo => rustix::fs::FileType::Fifo,
            Kind::Socket => rustix::fs::FileType::Socket,
            Kind::CharDev => rustix::fs::FileType::CharacterDevice,
            Kind::BlockDev => rustix::fs::FileType::BlockDevice,
            _ => return Err(io::Error::from_raw_os_error(libc::EINVAL).into()),
        };
        rustix::fs::mknodat(
            dir.fd(),
            name,
            ft,
            Mode::from_raw_mode(meta.mode & 0o777),
            meta.rdev,
        )?;
        self.set_attrs(dir, name, meta, AttrSet::ALL)
    }

    fn remove(&self, dir: &LocalDir, name: &OsStr, kind: Kind) -> dest::Result<()> {
        component(name)?;
        let flags = if kind == Kind::Dir {
            AtFlags::REMOVEDIR
        } else {
            AtFlags::empty()
        };
        Ok(rustix::fs::unlinkat(dir.fd(), name, flags)?)
    }

    fn remove_tree(&self, dir: &LocalDir, name: &OsStr, each: &dyn Removal) -> dest::Result<bool> {
        component(name)?;
        Ok(remove_tree_at(
            dir.fd(),
            Path::new(name),
            each,
            self.euid == 0,
        )?)
    }

    fn set_attrs(
        &self,
        dir: &LocalDir,
        name: &OsStr,
        meta: &Meta,
        what: AttrSet,
    ) -> dest::Result<()> {
        component(name)?;
        if self.fake_super {
            return self.set_faked_attrs(dir, Some(name), meta, what);
        }
        // Owner first (chown clears setuid/setgid), then mode, then mtime.
        if what.owner
            && let Some((uid, gid)) = self.owner_ids(meta)
        {
            rustix::fs::chownat(dir.fd(), name, uid, gid, AtFlags::SYMLINK_NOFOLLOW)?;
        }
        if (what.mode || what.owner) && meta.kind != Kind::Symlink {
            chmod_nofollow(dir.fd(), name, meta.mode)?;
        }
        if what.mtime {
            set_mtime_at(dir.fd(), name, meta.mtime)?;
        }
        Ok(())
    }

    fn set_dir_attrs(&self, dir: &LocalDir, meta: &Meta, what: AttrSet) -> dest::Result<()> {
        if self.fake_super {
            return self.set_faked_attrs(dir, None, meta, what);
        }
        if what.owner
            && let Some((uid, gid)) = self.owner_ids(meta)
        {
            rustix::fs::fchown(dir.fd(), uid, gid)?;
        }
        if what.mode || what.owner {
            rustix::fs::fchmod(dir.fd(), Mode::from_raw_mode(meta.mode))?;
        }
        if what.mtime {
            rustix::fs::futimens(dir.fd(), &mtime_only(meta.mtime))?;
        }
        Ok(())
    }

    fn open_file(&self, dir: &LocalDir, name: &OsStr) -> dest::Result<Option<Data>> {
        component(name)?;
        let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
        let fd = rustix::fs::openat(dir.fd(), name, flags, Mode::empty())?;
        let st = rustix::fs::fstat(&fd)?;
        if rustix::fs::FileType::from_raw_mode(st.st_mode) != rustix::fs::FileType::RegularFile {
            return Ok(None);
        }
        rustix::fs::fcntl_setfl(&fd, OFlags::RDONLY)?;
        Ok(Some(Data::from_file(File::from(fd))))
    }

    fn same_content(&self, dir: &LocalDir, name: &OsStr, src: Data) -> dest::Result<bool> {
        component(name)?;
        let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let dst = rustix::fs::openat(dir.fd(), name, flags, Mode::empty())?;
        Ok(same_bytes(&mut src.reader(), &mut File::from(dst))?)
    }

    fn xattrs(
        &self,
        dir: &LocalDir,
        name: Option<&OsStr>,
        set: crate::options::xattrs::XattrSet,
    ) -> dest::Result<crate::options::xattrs::Xattrs> {
        name.map(component).transpose()?;
        self.read_xattrs(dir, name, set)
    }

    fn set_xattrs(
        &self,
        dir: &LocalDir,
        name: Option<&OsStr>,
        have: &crate::options::xattrs::Xattrs,
        want: &crate::options::xattrs::Xattrs,
    ) -> dest::Result<()> {
        name.map(component).transpose()?;
        self.write_xattrs(dir, name, have, want)
    }

    fn default_perms(&self, dir: &LocalDir) -> Option<u32> {
        xattr::default_perms(crate::options::xattrs::Target::Fd(dir.fd()))
    }

    fn open_dir_link(
        &self,
        dir: &LocalDir,
        name: &OsStr,
        rel: &Path,
    ) -> dest::Result<Option<(LocalDir, Meta)>> {
        component(name)?;
        super::name::relative(rel)?;
        self.follow_dir_link(dir, name, rel)
    }
}

/// The mode a new directory is created with: its final mode when that leaves it
/// writable by us and needs no special bit (which `mkdir` would not apply), else 0700.
fn mkdir_mode(meta: &Meta) -> u32 {
    if meta.mode & 0o7000 == 0 && meta.mode & 0o700 == 0o700 {
        meta.mode & 0o777
    } else {
        0o700
    }
}

#[cfg(test)]
mod name_tests;
#[cfg(test)]
mod tests;
