//! The engine's [`Destination`], once for both NFS versions, from what each provides
//! ([`super::ops`]).
//!
//! The seam speaks `&OsStr` names and directory handles; a version speaks bytes and
//! its own handles. What lies between is the same for both: handles kept from a
//! listing for the `open_dir` that follows, DEST's own directory and its parent,
//! `--checksum`'s comparison read as it arrives, and recursive removal.

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::Path;

use super::ops::{FileOps, NfsOps, ObjectOps, PathOps};
use super::{pipeline, tree};
use crate::dest::name::component;
use crate::dest::{
    self, AttrSet, CopyError, DestEntry, Destination, Removal, RootState, SourceFile, Wire,
};
use crate::meta::{Kind, Meta, Time};
use crate::source::Data;
use crate::tune::Bounds;

impl<T: FileOps + ObjectOps + PathOps> Destination for T {
    type Dir = T::Dir;

    fn auto_bounds(&self) -> Bounds {
        self.bounds()
    }

    fn wire(&self) -> Option<Wire> {
        Some(NfsOps::wire(self))
    }

    fn connection(&self) -> String {
        NfsOps::connection(self)
    }

    fn storable_time(&self, t: Time) -> Time {
        NfsOps::storable_time(self, t)
    }

    fn explain(&self, e: &dest::Error) -> Option<&'static str> {
        NfsOps::explain(self, e)
    }

    fn root_state(&self) -> dest::Result<RootState> {
        NfsOps::root_state(self)
    }

    fn root_dir(&self) -> dest::Result<T::Dir> {
        self.dir_at(self.dest_path().len())
    }

    fn root_parent(&self) -> dest::Result<(T::Dir, OsString)> {
        let path = self.dest_path();
        let Some(last) = path.last() else {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{} is {}, not a file name", self.label(), T::TOP),
            )
            .into());
        };
        let last = OsString::from_vec(last.clone());
        Ok((self.dir_at(path.len() - 1)?, last))
    }

    fn list(&self, dir: &T::Dir) -> dest::Result<Vec<DestEntry>> {
        let listed = self.read_dir(dir)?;
        // A destination that lists a name no directory can hold is not trusted for
        // this directory: nothing in it is deleted, each entry is looked at by name.
        if let Some(first) = listed.refused.first() {
            let more = match listed.refused.len() {
                1 => String::new(),
                n => format!(" (and {} more)", n - 1),
            };
            let e = io::Error::new(io::ErrorKind::InvalidData, format!("{first}{more}"));
            return Err(e.into());
        }
        let mut out = Vec::with_capacity(listed.entries.len());
        let mut dirs = Vec::new();
        for e in listed.entries {
            if let (Some(m), Some(fh)) = (&e.meta, e.fh)
                && m.kind == Kind::Dir
            {
                dirs.push((e.name.clone(), fh, *m));
            }
            out.push(DestEntry {
                name: OsString::from_vec(e.name),
                kind: e.meta.map(|m| m.kind),
                meta: e.meta,
            });
        }
        self.dir_cache().keep(T::handle(dir), dirs);
        Ok(out)
    }

    fn stat(&self, dir: &T::Dir, name: &OsStr) -> dest::Result<Option<Meta>> {
        Ok(self.find(dir, one(name)?)?.map(|(_, m)| m))
    }

    fn mkdir(&self, dir: &T::Dir, name: &OsStr, m: &Meta) -> dest::Result<(T::Dir, AttrSet)> {
        let name = one(name)?;
        let fh = self.make_dir(dir, name, m)?;
        Ok((T::child(dir, fh, name), AttrSet::ALL))
    }

    fn open_dir(&self, dir: &T::Dir, name: &OsStr) -> dest::Result<(T::Dir, Meta)> {
        let name = one(name)?;
        let (fh, m) = match self.dir_cache().take(T::handle(dir), name) {
            Some(hit) => hit,
            None => match self.find(dir, name)? {
                Some((fh, m)) if m.kind == Kind::Dir => (fh, m),
                Some(_) => return Err(io::Error::from_raw_os_error(libc::ENOTDIR).into()),
                None => return Err(io::Error::from_raw_os_error(libc::ENOENT).into()),
            },
        };
        Ok((T::child(dir, fh, name), m))
    }

    fn write_file(
        &self,
        dir: &T::Dir,
        name: &OsStr,
        src: &SourceFile<'_>,
    ) -> Result<u64, CopyError> {
        FileOps::write_file(self, dir, one(name).map_err(CopyError::Dest)?, src)
    }

    fn write_into(
        &self,
        dir: &T::Dir,
        name: &OsStr,
        src: &SourceFile<'_>,
        from: u64,
    ) -> Result<u64, CopyError> {
        FileOps::write_into(self, dir, one(name).map_err(CopyError::Dest)?, src, from)
    }

    fn read_link(&self, dir: &T::Dir, name: &OsStr) -> dest::Result<OsString> {
        NfsOps::read_link(self, dir, one(name)?).map(OsString::from_vec)
    }

    fn symlink(&self, dir: &T::Dir, name: &OsStr, target: &OsStr, m: &Meta) -> dest::Result<()> {
        ObjectOps::symlink(self, dir, one(name)?, target.as_bytes(), m)
    }

    fn hard_link(
        &self,
        dir: &T::Dir,
        name: &OsStr,
        target_dir: &T::Dir,
        target_name: &OsStr,
    ) -> dest::Result<()> {
        ObjectOps::hard_link(self, dir, one(name)?, target_dir, one(target_name)?)
    }

    fn hard_link_current(
        &self,
        dir: &T::Dir,
        name: &OsStr,
        target_dir: &T::Dir,
        target_name: &OsStr,
    ) -> dest::Result<()> {
        ObjectOps::forget_written(self, target_dir, one(target_name)?);
        ObjectOps::hard_link(self, dir, one(name)?, target_dir, one(target_name)?)
    }

    fn mknod(&self, dir: &T::Dir, name: &OsStr, m: &Meta) -> dest::Result<()> {
        ObjectOps::mknod(self, dir, one(name)?, m)
    }

    fn rename(&self, dir: &T::Dir, from: &OsStr, to: &OsStr) -> dest::Result<()> {
        PathOps::rename(self, dir, one(from)?, dir, one(to)?)
    }

    fn remove(&self, dir: &T::Dir, name: &OsStr, kind: Kind) -> dest::Result<()> {
        ObjectOps::remove(self, dir, one(name)?, kind == Kind::Dir)
    }

    fn remove_tree(&self, dir: &T::Dir, name: &OsStr, each: &dyn Removal) -> dest::Result<bool> {
        tree::remove_tree(self, dir, Path::new(component(name)?), each)
    }

    fn set_attrs(&self, dir: &T::Dir, name: &OsStr, m: &Meta, what: AttrSet) -> dest::Result<()> {
        if what.is_empty() {
            return Ok(());
        }
        NfsOps::set_attrs(self, dir, one(name)?, m, what)
    }

    fn set_dir_attrs(&self, dir: &T::Dir, m: &Meta, what: AttrSet) -> dest::Result<()> {
        if what.is_empty() {
            return Ok(());
        }
        NfsOps::set_dir_attrs(self, dir, m, what)
    }

    fn same_content(&self, dir: &T::Dir, name: &OsStr, src: Data) -> dest::Result<bool> {
        same_content(self, dir, one(name)?, src)
    }

    fn open_file(&self, dir: &T::Dir, name: &OsStr) -> dest::Result<Option<Data>> {
        read_back(self, dir, one(name)?)
    }

    fn open_path(&self, path: &Path, create: bool) -> dest::Result<Option<T::Dir>> {
        PathOps::open_path(self, path, create)
    }

    fn rename_into(
        &self,
        from_dir: &T::Dir,
        from: &OsStr,
        to_dir: &T::Dir,
        to: &OsStr,
    ) -> dest::Result<()> {
        PathOps::rename(self, from_dir, one(from)?, to_dir, one(to)?)
    }
}

/// `name` as one path component ([`component`]), as the calls send it: a name that is
/// not one is never sent to the server, whose handling of `/` or `..` in it is its own.
fn one(name: &OsStr) -> dest::Result<&[u8]> {
    Ok(component(name)?.as_bytes())
}

/// A regular file of the server read back for a copy within the destination (a
/// `--copy-dest` basis copy, the old copy `--inplace --backup` keeps): a small one in
/// one call, held in memory with its attributes after the read; a larger one staged
/// by [`read_to_local`].
fn read_back<T: FileOps>(ops: &T, dir: &T::Dir, name: &[u8]) -> dest::Result<Option<Data>> {
    let Some((fh, at)) = ops.find(dir, name)? else {
        return Ok(None);
    };
    if at.kind != Kind::File {
        return Ok(None);
    }
    let refind = || match ops.find(dir, name).map_err(super::ops::to_io)? {
        Some((_, now)) => Ok(now),
        None => Err(io::Error::from(io::ErrorKind::NotFound)),
    };
    match super::stream::small(ops, &fh, &at, refind)? {
        Some(whole) => Ok(Some(whole)),
        None => read_to_local(ops, dir, name, (fh, at)).map(|f| Some(Data::from_file(f))),
    }
}

/// A large regular file of the server read whole into an unnamed local file (in the
/// temporary directory), with the file's mtime: what a destination's own file is read
/// through when it is copied within the destination. (A source's files are never
/// staged: they are read as they are consumed.) A file that changed while it was read
/// is an error (the caller then takes the bytes from the source, or makes no backup).
fn read_to_local<T: FileOps>(
    ops: &T,
    dir: &T::Dir,
    name: &[u8],
    (fh, at): (T::Fh, Meta),
) -> dest::Result<File> {
    let local = unnamed_local_file()?;
    let (rt, budget, chunk) = (ops.runtime(), ops.budget(), ops.read_size().max(1));
    let off = pipeline::read_into(rt, budget, &local, at.size, chunk, |off, len| {
        ops.read(&fh, off, len)
    })?;
    match ops.find(dir, name)? {
        Some((_, now)) if now.size == off && now.size == at.size && now.mtime == at.mtime => {}
        _ => return Err(io::Error::other("changed while it was read").into()),
    }
    let t = rustix::fs::Timespec {
        tv_sec: at.mtime.sec,
        tv_nsec: at.mtime.nsec.into(),
    };
    let times = rustix::fs::Timestamps {
        last_access: t,
        last_modification: t,
    };
    rustix::fs::futimens(&local, &times)?;
    Ok(local)
}

/// A new file in the temporary directory that no name leads to (`O_TMPFILE`, or a
/// name removed at once where the filesystem has no such files).
///
/// Its errors are the temporary directory's, named as such and never of kind
/// `NotFound`: a missing `$TMPDIR` must not make the source file look vanished.
pub(super) fn unnamed_local_file() -> io::Result<File> {
    use rustix::fs::{Mode, OFlags};
    let dir = std::env::temp_dir();
    let mode = Mode::from_raw_mode(0o600);
    let rw = OFlags::RDWR | OFlags::CLOEXEC;
    let made = match rustix::fs::open(&dir, rw | OFlags::TMPFILE, mode) {
        Ok(fd) => Ok(File::from(fd)),
        Err(rustix::io::Errno::OPNOTSUPP | rustix::io::Errno::ISDIR) => {
            let path = dir.join(crate::options::temp::name(OsStr::new("nfsync-read")));
            rustix::fs::open(&path, rw | OFlags::CREATE | OFlags::EXCL, mode)
                .and_then(|fd| rustix::fs::unlink(&path).map(|()| File::from(fd)))
        }
        Err(e) => Err(e),
    };
    made.map_err(|e| staging_error(&dir, e.into()))
}

/// An error of the local temporary directory a file read from a server is staged in.
fn staging_error(dir: &std::path::Path, e: io::Error) -> io::Error {
    io::Error::other(format!(
        "staging a copy in the temporary directory {} (set TMPDIR): {e}",
        dir.display()
    ))
}

/// `--checksum`: whether `name` is a regular file of `src`'s size and bytes, its READs
/// in flight while the ones before are compared.
fn same_content<T: FileOps>(ops: &T, dir: &T::Dir, name: &[u8], file: Data) -> dest::Result<bool> {
    let size = file.now()?.size;
    let Some((fh, at)) = ops.find(dir, name)? else {
        return Ok(false);
    };
    if at.kind != Kind::File || at.size != size {
        return Ok(false);
    }
    let (rt, budget) = (ops.runtime(), ops.budget());
    pipeline::same_bytes(rt, budget, &file, size, ops.read_size(), |off, len| {
        ops.read(&fh, off, len)
    })
}
