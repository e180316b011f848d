//! `--fake-super` on the mount path: entries are created safe and ours (a device,
//! special file or symlink as a regular file, no special permission bits, the owner's
//! access kept), never chowned, and what root would have set is kept in the
//! `user.rsync.%stat` attribute (see `options::fake_super`); entries are read back
//! as that attribute says they are.

use std::ffi::OsStr;
use std::fs::File;
use std::io::{self, Write};
use std::os::fd::AsFd;

use rustix::fs::{AtFlags, Mode, OFlags};

use super::xattr::entry_path;
use super::{LocalDest, LocalDir};
use crate::dest::{self, AttrSet};
use crate::meta::{Kind, Meta};
use crate::options::fake_super::{self, Faked};
use crate::options::xattrs::Target;

impl LocalDest {
    /// `meta` (of `name` in `dir`, `None`: the directory itself) as its stored value
    /// says it is.
    pub(super) fn read_faked(
        &self,
        dir: &LocalDir,
        name: Option<&OsStr>,
        meta: &mut Meta,
    ) -> io::Result<()> {
        // A real symlink holds no user attributes.
        if !self.fake_super || meta.kind == Kind::Symlink {
            return Ok(());
        }
        let path;
        let t = match name {
            Some(n) => {
                path = entry_path(dir, n);
                Target::Path(&path)
            }
            None => Target::Fd(dir.fd()),
        };
        if let Some(f) = fake_super::read(t)? {
            f.apply(meta);
        }
        Ok(())
    }

    /// What the stored value of an entry whose real attributes are `real` is to say
    /// for `meta`: its owner only where owners are kept, else the one it says now.
    fn want_faked(&self, t: Target<'_>, real: &Meta, meta: &Meta) -> io::Result<Faked> {
        let mut want = Faked::of(meta);
        if !(self.owners.owner && self.owners.group) {
            let now = fake_super::read(t)?.unwrap_or(Faked::of(real));
            if !self.owners.owner {
                want.uid = now.uid;
            }
            if !self.owners.group {
                want.gid = now.gid;
            }
        }
        Ok(want)
    }

    /// [`Destination::set_attrs`](crate::dest::Destination::set_attrs) under
    /// `--fake-super` (`name` `None`: the directory itself).
    pub(super) fn set_faked_attrs(
        &self,
        dir: &LocalDir,
        name: Option<&OsStr>,
        meta: &Meta,
        what: AttrSet,
    ) -> dest::Result<()> {
        if what.mode || what.owner {
            let path;
            let (t, st) = match name {
                Some(n) => {
                    path = entry_path(dir, n);
                    let st = rustix::fs::statat(dir.fd(), n, AtFlags::SYMLINK_NOFOLLOW)?;
                    (Target::Path(&path), st)
                }
                None => (Target::Fd(dir.fd()), rustix::fs::fstat(dir.fd())?),
            };
            let mut real = Meta::from_stat(&st);
            // A real symlink (one made without --fake-super) holds neither user
            // attributes nor a mode of its own.
            if real.kind != Kind::Symlink {
                let want = self.want_faked(t, &real, meta)?;
                let mode = fake_super::real_mode(real.kind, meta.mode);
                if real.mode != mode {
                    match name {
                        Some(n) => super::chmod_nofollow(dir.fd(), n, mode)?,
                        None => rustix::fs::fchmod(dir.fd(), Mode::from_raw_mode(mode))?,
                    }
                    real.mode = mode;
                }
                fake_super::store(t, &real, &want)?;
            }
        }
        if what.mtime {
            match name {
                Some(n) => super::set_mtime_at(dir.fd(), n, meta.mtime)?,
                None => rustix::fs::futimens(dir.fd(), &super::mtime_only(meta.mtime))?,
            }
        }
        Ok(())
    }

    /// A new regular file's owner and mode under `--fake-super`, through its descriptor.
    pub(super) fn fill_faked(&self, f: &File, meta: &Meta) -> io::Result<()> {
        let mut real = Meta::from_stat(&rustix::fs::fstat(f)?);
        let want = self.want_faked(Target::Fd(f.as_fd()), &real, meta)?;
        let mode = fake_super::real_mode(Kind::File, meta.mode);
        if real.mode != mode {
            rustix::fs::fchmod(f, Mode::from_raw_mode(mode))?;
            real.mode = mode;
        }
        fake_super::store(Target::Fd(f.as_fd()), &real, &want)
    }

    /// A device, special file or symlink under `--fake-super`: a regular file that
    /// says what it stands for, holding `content` (a symlink's target). Removed again
    /// when it cannot say it.
    pub(super) fn make_faked(
        &self,
        dir: &LocalDir,
        name: &OsStr,
        meta: &Meta,
        content: &[u8],
    ) -> dest::Result<()> {
        let flags =
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let mode = fake_super::real_mode(Kind::File, meta.mode);
        let fd = rustix::fs::openat(dir.fd(), name, flags, Mode::from_raw_mode(mode))?;
        let mut f = File::from(fd);
        let made = f
            .write_all(content)
            .and_then(|()| self.fill_faked(&f, meta))
            .and_then(|()| Ok(rustix::fs::futimens(&f, &super::sys::file_times(meta))?))
            .and_then(|()| super::close_checked(f));
        if let Err(e) = made {
            let _ = rustix::fs::unlinkat(dir.fd(), name, AtFlags::empty());
            return Err(e.into());
        }
        Ok(())
    }

    /// A symlink's target under `--fake-super`: a real symlink's, or what the regular
    /// file standing for one holds.
    pub(super) fn read_faked_link(&self, dir: &LocalDir, name: &OsStr) -> dest::Result<Vec<u8>> {
        match rustix::fs::readlinkat(dir.fd(), name, Vec::new()) {
            Ok(t) => Ok(t.into_bytes()),
            Err(rustix::io::Errno::INVAL) => {
                let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
                let f = File::from(rustix::fs::openat(dir.fd(), name, flags, Mode::empty())?);
                Ok(fake_super::read_target(f)?)
            }
            Err(e) => Err(e.into()),
        }
    }
}
