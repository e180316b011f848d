//! A recording fake [`Destination`]: entries kept in memory by path, and every call
//! that changes one recorded in order, for tests that judge what the engine did.

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::fs;
use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::config::Config;
use crate::dest::{
    self, AttrSet, CopyError, DestEntry, Destination, OwnerPolicy, Removal, RootState, SourceFile,
};
use crate::meta::{Kind, Meta};
use crate::plan::Compare;
use crate::report::{Output, Stats, Summary};
use crate::tune::Jobs;

/// One call the engine made, naming its target by its path below DEST.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Call {
    Mkdir(PathBuf),
    Write(PathBuf),
    Symlink(PathBuf),
    Link(PathBuf),
    Rename(PathBuf, PathBuf),
    Remove(PathBuf),
    RemoveTree(PathBuf),
    SetAttrs(PathBuf, AttrSet),
    SetDirAttrs(PathBuf, AttrSet),
}

impl Call {
    /// The entry whose content (or, for a directory, whose set of names) this call
    /// changes; `None` for attribute calls.
    pub(super) fn writes(&self) -> Option<&Path> {
        match self {
            Call::Mkdir(p) | Call::Write(p) | Call::Symlink(p) | Call::Link(p) => Some(p),
            Call::Rename(_, to) => Some(to),
            Call::Remove(p) | Call::RemoveTree(p) => Some(p),
            Call::SetAttrs(..) | Call::SetDirAttrs(..) => None,
        }
    }
}

/// A destination kept in memory: entries by path, and every call in order.
#[derive(Default)]
pub(super) struct Recorder {
    entries: Mutex<BTreeMap<PathBuf, (Meta, Option<OsString>)>>,
    calls: Mutex<Vec<Call>>,
    next_ino: AtomicU64,
    /// A name whose `write_file` panics, standing for a bug in a job.
    panics_on: Option<OsString>,
    /// A path another run replaces with its own complete copy while the first
    /// `hard_link` is made, after the link took its target's object (a backend
    /// linking to the object it remembers for a name).
    replaced_during_link: Mutex<Option<PathBuf>>,
}

/// The device number of the fake's objects: a `meta` carrying it is already one of
/// them (a hard link's target).
const FAKE_DEV: u64 = u64::MAX;

fn not_found() -> dest::Error {
    io::Error::from(io::ErrorKind::NotFound).into()
}

impl Recorder {
    /// An empty fake whose `write_file` panics on `name`.
    pub(super) fn panicking_on(name: &str) -> Recorder {
        Recorder {
            panics_on: Some(name.into()),
            ..Recorder::default()
        }
    }

    /// An empty fake where another run replaces `path` with a copy of its own while
    /// the first hard link is made.
    pub(super) fn replacing_during_link(path: &str) -> Recorder {
        Recorder {
            replaced_during_link: Mutex::new(Some(path.into())),
            ..Recorder::default()
        }
    }

    /// The inode number `path` holds.
    pub(super) fn ino(&self, path: &str) -> Option<u64> {
        self.meta(Path::new(path)).map(|m| m.ino)
    }

    fn record(&self, c: Call) {
        self.calls.lock().unwrap().push(c);
    }

    pub(super) fn take_calls(&self) -> Vec<Call> {
        std::mem::take(&mut *self.calls.lock().unwrap())
    }

    /// Adds an entry that is not there yet, as a new object (its own inode number)
    /// unless it is a hard link to `meta`'s object.
    fn create(&self, p: PathBuf, meta: Meta, target: Option<OsString>) -> dest::Result<()> {
        let mut e = self.entries.lock().unwrap();
        if e.contains_key(&p) {
            return Err(io::Error::from(io::ErrorKind::AlreadyExists).into());
        }
        let ino = match meta.dev {
            FAKE_DEV => meta.ino,
            _ => self.next_ino.fetch_add(1, Ordering::Relaxed),
        };
        e.insert(
            p,
            (
                Meta {
                    dev: FAKE_DEV,
                    ino,
                    ..meta
                },
                target,
            ),
        );
        Ok(())
    }

    fn meta(&self, p: &Path) -> Option<Meta> {
        self.entries.lock().unwrap().get(p).map(|(m, _)| *m)
    }
}

impl Destination for Recorder {
    type Dir = PathBuf;

    fn root_state(&self) -> dest::Result<RootState> {
        Ok(match self.meta(Path::new("")) {
            Some(m) => RootState::Exists(m),
            None => RootState::Missing,
        })
    }

    fn root_dir(&self) -> dest::Result<PathBuf> {
        let root = Meta {
            kind: Kind::Dir,
            size: 0,
            mode: 0o755,
            uid: 0,
            gid: 0,
            mtime: crate::meta::Time::default(),
            nlink: 1,
            dev: 0,
            ino: 0,
            rdev: 0,
            change: 0,
            atime: None,
        };
        let _ = self.create(PathBuf::new(), root, None);
        Ok(PathBuf::new())
    }

    fn root_parent(&self) -> dest::Result<(PathBuf, OsString)> {
        Err(io::Error::from(io::ErrorKind::Unsupported).into())
    }

    fn list(&self, dir: &PathBuf) -> dest::Result<Vec<DestEntry>> {
        let e = self.entries.lock().unwrap();
        Ok(e.iter()
            .filter(|(p, _)| p.parent() == Some(dir.as_path()) && !p.as_os_str().is_empty())
            .map(|(p, (m, _))| DestEntry {
                name: p.file_name().unwrap().to_owned(),
                kind: Some(m.kind),
                meta: Some(*m),
            })
            .collect())
    }

    fn stat(&self, dir: &PathBuf, name: &OsStr) -> dest::Result<Option<Meta>> {
        Ok(self.meta(&dir.join(name)))
    }

    fn mkdir(&self, dir: &PathBuf, name: &OsStr, meta: &Meta) -> dest::Result<(PathBuf, AttrSet)> {
        let p = dir.join(name);
        self.create(
            p.clone(),
            Meta {
                mode: 0o700,
                ..*meta
            },
            None,
        )?;
        self.record(Call::Mkdir(p.clone()));
        Ok((p, AttrSet::ALL))
    }

    fn open_dir(&self, dir: &PathBuf, name: &OsStr) -> dest::Result<(PathBuf, Meta)> {
        let p = dir.join(name);
        let m = self.meta(&p).ok_or_else(not_found)?;
        Ok((p, m))
    }

    fn write_file(
        &self,
        dir: &PathBuf,
        name: &OsStr,
        src: &SourceFile<'_>,
    ) -> Result<u64, CopyError> {
        if self.panics_on.as_deref() == Some(name) {
            panic!("write_file was told to panic on {name:?}");
        }
        // Content first, then the check that the source did not change, then (as the
        // real backends do last) the mtime: all inside this one call.
        let p = dir.join(name);
        self.create(p.clone(), *src.meta, None)
            .map_err(CopyError::Dest)?;
        self.record(Call::Write(p));
        src.verify_unchanged()?;
        Ok(src.meta.size)
    }

    fn read_link(&self, dir: &PathBuf, name: &OsStr) -> dest::Result<OsString> {
        let e = self.entries.lock().unwrap();
        let (_, t) = e.get(&dir.join(name)).ok_or_else(not_found)?;
        t.clone()
            .ok_or_else(|| io::Error::from_raw_os_error(libc::EINVAL).into())
    }

    fn symlink(
        &self,
        dir: &PathBuf,
        name: &OsStr,
        target: &OsStr,
        meta: &Meta,
    ) -> dest::Result<()> {
        let p = dir.join(name);
        self.create(p.clone(), *meta, Some(target.to_owned()))?;
        self.record(Call::Symlink(p));
        Ok(())
    }

    fn hard_link(
        &self,
        dir: &PathBuf,
        name: &OsStr,
        target_dir: &PathBuf,
        target_name: &OsStr,
    ) -> dest::Result<()> {
        let m = self
            .meta(&target_dir.join(target_name))
            .ok_or_else(not_found)?;
        if let Some(other) = self.replaced_during_link.lock().unwrap().take() {
            let mut e = self.entries.lock().unwrap();
            if let Some((held, _)) = e.get_mut(&other) {
                held.ino = self.next_ino.fetch_add(1, Ordering::Relaxed);
            }
        }
        let p = dir.join(name);
        self.create(p.clone(), m, None)?;
        self.record(Call::Link(p));
        Ok(())
    }

    fn mknod(&self, dir: &PathBuf, name: &OsStr, meta: &Meta) -> dest::Result<()> {
        self.create(dir.join(name), *meta, None)
    }

    fn rename(&self, dir: &PathBuf, from: &OsStr, to: &OsStr) -> dest::Result<()> {
        let (f, t) = (dir.join(from), dir.join(to));
        let mut e = self.entries.lock().unwrap();
        let v = e.remove(&f).ok_or_else(not_found)?;
        e.insert(t.clone(), v);
        drop(e);
        self.record(Call::Rename(f, t));
        Ok(())
    }

    fn remove(&self, dir: &PathBuf, name: &OsStr, _kind: Kind) -> dest::Result<()> {
        let p = dir.join(name);
        self.entries
            .lock()
            .unwrap()
            .remove(&p)
            .ok_or_else(not_found)?;
        self.record(Call::Remove(p));
        Ok(())
    }

    fn remove_tree(&self, dir: &PathBuf, name: &OsStr, each: &dyn Removal) -> dest::Result<bool> {
        let p = dir.join(name);
        let mut e = self.entries.lock().unwrap();
        let below: Vec<_> = e.keys().filter(|k| k.starts_with(&p)).cloned().collect();
        // Deepest first, as a real removal must go.
        for k in below.iter().rev() {
            let kind = e[k].0.kind;
            let rel = match k.strip_prefix(&p).unwrap() {
                r if r.as_os_str().is_empty() => PathBuf::from(name),
                r => Path::new(name).join(r),
            };
            if !each.may_remove(&rel, kind) {
                return Ok(false);
            }
            e.remove(k);
            each.removed(&rel, kind);
        }
        drop(e);
        self.record(Call::RemoveTree(p));
        Ok(true)
    }

    fn set_attrs(
        &self,
        dir: &PathBuf,
        name: &OsStr,
        meta: &Meta,
        what: AttrSet,
    ) -> dest::Result<()> {
        let p = dir.join(name);
        self.apply(&p, meta, what)?;
        self.record(Call::SetAttrs(p, what));
        Ok(())
    }

    fn set_dir_attrs(&self, dir: &PathBuf, meta: &Meta, what: AttrSet) -> dest::Result<()> {
        self.apply(dir, meta, what)?;
        self.record(Call::SetDirAttrs(dir.clone(), what));
        Ok(())
    }

    fn same_content(
        &self,
        _dir: &PathBuf,
        _name: &OsStr,
        _src: crate::source::Data,
    ) -> dest::Result<bool> {
        Ok(true)
    }

    fn open_path(&self, _path: &Path, _create: bool) -> dest::Result<Option<PathBuf>> {
        Err(std::io::Error::from(std::io::ErrorKind::Unsupported).into())
    }

    fn rename_into(
        &self,
        _from_dir: &PathBuf,
        _from: &OsStr,
        _to_dir: &PathBuf,
        _to: &OsStr,
    ) -> dest::Result<()> {
        Err(std::io::Error::from(std::io::ErrorKind::Unsupported).into())
    }
}

impl Recorder {
    fn apply(&self, p: &Path, meta: &Meta, what: AttrSet) -> dest::Result<()> {
        let mut e = self.entries.lock().unwrap();
        let (m, _) = e.get_mut(p).ok_or_else(not_found)?;
        if what.mode {
            m.mode = meta.mode;
        }
        if what.owner {
            (m.uid, m.gid) = (meta.uid, meta.gid);
        }
        if what.mtime {
            m.mtime = meta.mtime;
        }
        Ok(())
    }
}

pub(in crate::engine) fn config(src: &Path, delete: bool) -> Config {
    let mut s = src.as_os_str().to_owned();
    s.push("/");
    Config {
        sources: vec![PathBuf::from(s)],
        dest: PathBuf::from("fake"),
        dry_run: false,
        delete,
        force: false,
        mkpath: false,
        progress_asked: false,
        stats_every: None,
        progress_json: false,
        file_progress: false,
        eight_bit: false,
        max_delete: None,
        filter: Default::default(),
        compare: Compare::QuickCheck,
        modify_window: -1,
        skip: Default::default(),
        recursive: true,
        links: true,
        perms: true,
        times: true,
        omit_dir_times: false,
        omit_link_times: false,
        atimes: false,
        executability: false,
        stop_at: None,
        umask: 0o022,
        one_file_system: 0,
        ignore_errors: false,
        jobs: Jobs::Fixed(8),
        hard_links: true,
        owners: OwnerPolicy {
            owner: false,
            group: false,
        },
        trust: Default::default(),
        numeric_ids: false,
        specials: false,
        devices: false,
        verbose: 0,
        quiet: true,
        progress: false,
        stats: false,
        itemize: 0,
        json: false,
        timeout: Duration::from_secs(5),
        out_format: None,
        log_file: None,
        log_file_format: crate::report::format::LogFormat::itemize(),
        human_readable: crate::report::units::HumanLevel::Separated,
        follow: Default::default(),
        keep_dirlinks: false,
        chmod: Default::default(),
        usermap: None,
        groupmap: None,
        xattrs: Default::default(),
        fake_super: Default::default(),
        data: Default::default(),
        backup: None,
        basis: None,
        remove_source_files: false,
        paths: Default::default(),
        shard: None,
        mpi: false,
        check: false,
        check_files: 0,
        claims: None,
    }
}

pub(super) fn write(p: &Path, bytes: &[u8], mode: u32) {
    fs::create_dir_all(p.parent().unwrap()).unwrap();
    fs::write(p, bytes).unwrap();
    fs::set_permissions(p, fs::Permissions::from_mode(mode)).unwrap();
}

/// The source as the fake should now hold it: path → (kind, size, mode, mtime).
pub(super) fn expected(src: &Path) -> BTreeMap<PathBuf, (Kind, u64, u32, crate::meta::Time)> {
    let mut out = BTreeMap::new();
    let mut stack = vec![PathBuf::new()];
    while let Some(rel) = stack.pop() {
        let m = Meta::from_std(&fs::symlink_metadata(src.join(&rel)).unwrap());
        let size = if m.kind == Kind::File { m.size } else { 0 };
        out.insert(rel.clone(), (m.kind, size, m.mode, m.mtime));
        if m.kind == Kind::Dir {
            for e in fs::read_dir(src.join(&rel)).unwrap() {
                stack.push(rel.join(e.unwrap().file_name()));
            }
        }
    }
    out
}

pub(super) fn held(dest: &Recorder) -> BTreeMap<PathBuf, (Kind, u64, u32, crate::meta::Time)> {
    let e = dest.entries.lock().unwrap();
    e.iter()
        .map(|(p, (m, _))| {
            let size = if m.kind == Kind::File { m.size } else { 0 };
            (p.clone(), (m.kind, size, m.mode, m.mtime))
        })
        .collect()
}

/// One quiet run of `cfg` from the local source into `dest`.
pub(super) fn run_into(cfg: &Config, dest: &Recorder) -> Result<Summary, crate::exit::Error> {
    crate::engine::run(
        cfg,
        &crate::source::LocalPaths,
        dest,
        &Output::new(true, 0, 0, false),
        Arc::new(Stats::default()),
        Arc::new(AtomicBool::new(false)),
    )
}
