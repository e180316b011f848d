//! The order of destination calls that crash safety rests on, checked against a
//! recording fake [`Destination`].
//!
//! A run killed at any point must leave nothing that looks complete and is not: the
//! quick check trusts size and mtime. So a file's mtime lands after its content (the
//! backend does both inside `write_file`; the engine never sets an mtime on a name
//! whose content is still to come), an update is written under a temporary name and
//! renamed over the old copy, a directory's mode and mtime are set after everything in
//! it is done, and `--delete` removes names only after the directory's copies.

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::fs;
use std::io;
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::config::Config;
use crate::dest::{
    self, AttrSet, CopyError, DestEntry, Destination, OwnerPolicy, Removal, RootState, SourceFile,
};
use crate::engine::run;
use crate::exit::ExitCode;
use crate::meta::{Kind, Meta};
use crate::plan::Compare;
use crate::report::{Output, Stats};
use crate::tune::Jobs;

/// One call the engine made, naming its target by its path below DEST.
#[derive(Clone, Debug, PartialEq)]
enum Call {
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
    fn writes(&self) -> Option<&Path> {
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
struct Recorder {
    entries: Mutex<BTreeMap<PathBuf, (Meta, Option<OsString>)>>,
    calls: Mutex<Vec<Call>>,
    next_ino: AtomicU64,
}

/// The device number of the fake's objects: a `meta` carrying it is already one of
/// them (a hard link's target).
const FAKE_DEV: u64 = u64::MAX;

fn not_found() -> dest::Error {
    io::Error::from(io::ErrorKind::NotFound).into()
}

impl Recorder {
    fn record(&self, c: Call) {
        self.calls.lock().unwrap().push(c);
    }

    fn take_calls(&self) -> Vec<Call> {
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

    fn same_content(&self, _dir: &PathBuf, _name: &OsStr, _src: &Path) -> dest::Result<bool> {
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
        umask: 0o022,
        one_file_system: 0,
        ignore_errors: false,
        jobs: Jobs::Fixed(8),
        hard_links: true,
        owners: OwnerPolicy {
            owner: false,
            group: false,
        },
        numeric_ids: false,
        specials: false,
        devices: false,
        verbose: 0,
        quiet: true,
        progress: false,
        stats: false,
        itemize: false,
        json: false,
        timeout: Duration::from_secs(5),
        out_format: None,
        log_file: None,
        log_file_format: crate::report::format::LogFormat::itemize(),
        human_readable: 1,
        follow: Default::default(),
        keep_dirlinks: false,
        chmod: Default::default(),
        usermap: None,
        groupmap: None,
        xattrs: Default::default(),
        data: Default::default(),
        backup: None,
        basis: None,
        remove_source_files: false,
        paths: Default::default(),
        shard: None,
        mpi: false,
        claims: None,
    }
}

fn sync(src: &Path, dest: &Recorder, delete: bool) -> Vec<Call> {
    let cfg = config(src, delete);
    let out = Output::new(true, 0, false, false);
    let summary = run(
        &cfg,
        dest,
        &out,
        Arc::new(Stats::default()),
        Arc::new(AtomicBool::new(false)),
    )
    .unwrap();
    assert_eq!(summary.exit_code, ExitCode::Success, "{summary:?}");
    dest.take_calls()
}

/// The rules, checked over one run's calls; returns how many orderings were checked,
/// so a test can tell the rules were exercised.
fn check_order(calls: &[Call], deleted: &[&str]) -> usize {
    let mut checked = 0;
    for (i, c) in calls.iter().enumerate() {
        let before = &calls[..i];
        let after = &calls[i + 1..];
        match c {
            // An mtime set on an entry: its content is complete, nothing writes it later.
            Call::SetAttrs(p, what) if what.mtime => {
                assert!(
                    !after.iter().any(|a| a.writes() == Some(p)),
                    "{p:?}: mtime set at call {i}, content written after it:\n{calls:#?}"
                );
                checked += 1;
            }
            // A directory's attributes: everything inside it is done.
            Call::SetDirAttrs(d, _) => {
                let late = after.iter().find(|a| match a {
                    Call::SetDirAttrs(x, _) | Call::SetAttrs(x, _) => x.starts_with(d) && x != d,
                    a => a.writes().is_some_and(|p| p.starts_with(d) && p != d),
                });
                assert!(
                    late.is_none(),
                    "{d:?}: attributes set at call {i} before {late:?}:\n{calls:#?}"
                );
                checked += 1;
            }
            // An update replaces the old copy in one step, after its content is written.
            Call::Rename(from, _) => {
                assert!(
                    before.contains(&Call::Write(from.clone())),
                    "{from:?} renamed before it was written:\n{calls:#?}"
                );
                checked += 1;
            }
            _ => {}
        }
    }
    // --delete: names the source lacks go after every copy into their directory.
    for d in deleted {
        let d = Path::new(d);
        let at = calls
            .iter()
            .position(|c| matches!(c, Call::Remove(p) | Call::RemoveTree(p) if p == d))
            .unwrap_or_else(|| panic!("{d:?} was not deleted:\n{calls:#?}"));
        let parent = d.parent().unwrap();
        let late = calls[at..].iter().find(|c| {
            !matches!(c, Call::Remove(_) | Call::RemoveTree(_))
                && c.writes().is_some_and(|p| p.parent() == Some(parent))
        });
        assert!(late.is_none(), "{d:?} deleted before {late:?}:\n{calls:#?}");
        checked += 1;
    }
    checked
}

fn write(p: &Path, bytes: &[u8], mode: u32) {
    fs::create_dir_all(p.parent().unwrap()).unwrap();
    fs::write(p, bytes).unwrap();
    fs::set_permissions(p, fs::Permissions::from_mode(mode)).unwrap();
}

/// The source as the fake should now hold it: path → (kind, size, mode, mtime).
fn expected(src: &Path) -> BTreeMap<PathBuf, (Kind, u64, u32, crate::meta::Time)> {
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

fn held(dest: &Recorder) -> BTreeMap<PathBuf, (Kind, u64, u32, crate::meta::Time)> {
    let e = dest.entries.lock().unwrap();
    e.iter()
        .map(|(p, (m, _))| {
            let size = if m.kind == Kind::File { m.size } else { 0 };
            (p.clone(), (m.kind, size, m.mode, m.mtime))
        })
        .collect()
}

#[test]
fn calls_come_in_the_order_crash_safety_needs() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    write(&src.join("top"), b"top", 0o644);
    write(&src.join("d1/a"), b"aaaa", 0o644);
    write(&src.join("d1/b"), b"bb", 0o600);
    write(&src.join("d1/sub/c"), b"c", 0o755);
    write(&src.join("d2/e"), b"eeeee", 0o644);
    write(&src.join("d3/gone/deep"), b"x", 0o644);
    fs::hard_link(src.join("d1/a"), src.join("d2/a-link")).unwrap();
    symlink("a", src.join("d1/to-a")).unwrap();
    fs::set_permissions(src.join("d1/sub"), fs::Permissions::from_mode(0o555)).unwrap();

    // A fresh copy.
    let dest = Recorder::default();
    let first = sync(&src, &dest, false);
    assert_eq!(held(&dest), expected(&src), "first run");
    let n = check_order(&first, &[]);
    assert!(n >= 6, "only {n} orderings checked:\n{first:#?}");

    // An update: new content, a changed mode, an added file, names to delete.
    write(&src.join("d1/a"), b"new content", 0o644);
    fs::set_permissions(src.join("d1/b"), fs::Permissions::from_mode(0o640)).unwrap();
    fs::set_permissions(src.join("d1/sub"), fs::Permissions::from_mode(0o755)).unwrap();
    write(&src.join("d1/sub/added"), b"added", 0o644);
    fs::remove_file(src.join("d2/e")).unwrap();
    fs::remove_dir_all(src.join("d3/gone")).unwrap();
    let second = sync(&src, &dest, true);
    assert_eq!(held(&dest), expected(&src), "second run");
    let n = check_order(&second, &["d2/e", "d3/gone"]);
    assert!(
        second.iter().any(|c| matches!(c, Call::Rename(..))),
        "the update was not written under a temporary name:\n{second:#?}"
    );
    assert!(n >= 6, "only {n} orderings checked:\n{second:#?}");

    // Nothing to do: no call changes anything.
    let third = sync(&src, &dest, true);
    assert!(
        third.iter().all(|c| c.writes().is_none()),
        "an up-to-date tree was written to:\n{third:#?}"
    );
}
