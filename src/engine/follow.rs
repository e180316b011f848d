//! What the command line makes of source entries before they are planned: symlinks
//! followed or left out (`-L`, `--copy-unsafe-links`, `--safe-links`, `-k`), and the
//! mode and owners `--chmod` and `--chown` give. Done where rsync's sender builds its
//! file list, so everything after (the quick check, `-i`, what is set) sees the
//! entry as rsync's receiver would.

use std::ffi::OsString;
use std::io;
use std::path::Path;

use super::{DirNode, Engine};
use crate::dest::Destination;
use crate::meta::{Kind, Meta};
use crate::options::follow::Verdict;
use crate::report::{Escaped, Stats};
use crate::source::SrcEntry;

impl<D: Destination> Engine<'_, D> {
    /// Shapes one directory's source entries; `rel` is the directory's path below
    /// DEST, `node` the directory itself (`None` for the operands). Returns false when
    /// a followed link pointed nowhere or back into its own ancestry: as with rsync,
    /// the listing then counts as incomplete and nothing is deleted in the directory.
    /// Also returns the names of links left out as unsafe (`--safe-links`): rsync keeps
    /// them in its file list, so `--delete` spares DEST's entries of those names.
    pub(super) fn shape_entries(
        &self,
        node: Option<&DirNode<D>>,
        rel: &Path,
        entries: &mut Vec<SrcEntry>,
    ) -> (bool, Vec<OsString>) {
        let follow = self.cfg.follow;
        let mut whole = true;
        let mut spared = Vec::new();
        if follow.is_active() {
            entries.retain_mut(|e| {
                if e.meta.kind != Kind::Symlink {
                    return true;
                }
                match follow.decide(e, &rel.join(&e.name)) {
                    Verdict::Keep => true,
                    Verdict::Followed(f, _)
                        if f.meta.kind == Kind::Dir && is_ancestor(node, &f.meta) =>
                    {
                        // rsync enters the loop until the kernel's path walk gives up
                        // (ELOOP, forty levels down); nfsync opens the referent by its
                        // own path, which never grows, so it stops at the first turn.
                        self.source_error(&e.path, &io::Error::from_raw_os_error(libc::ELOOP));
                        whole = false;
                        false
                    }
                    Verdict::Followed(f, unsafe_target) => {
                        if let Some(t) = unsafe_target
                            && self.cfg.verbose > 0
                        {
                            self.out.info(format_args!(
                                "copying unsafe symlink \"{}\" -> \"{}\"",
                                Escaped(rel.join(&e.name)),
                                Escaped(t)
                            ));
                        }
                        *e = f;
                        true
                    }
                    Verdict::Unsafe(t) => {
                        if self.cfg.verbose > 0 {
                            self.out.info(format_args!(
                                "ignoring unsafe symlink \"{}\" -> \"{}\"",
                                Escaped(rel.join(&e.name)),
                                Escaped(t)
                            ));
                        }
                        spared.push(e.name.clone());
                        false
                    }
                    Verdict::NoReferent => {
                        Stats::bump(&self.stats.errors);
                        self.out.note(format_args!(
                            "symlink has no referent: \"{}\"",
                            Escaped(&e.path)
                        ));
                        whole = false;
                        false
                    }
                    Verdict::Failed(err) => {
                        self.source_error(&e.path, &err);
                        whole = false;
                        false
                    }
                }
            });
        }
        for e in entries.iter_mut() {
            e.meta = self.shape_meta(e.meta);
        }
        (whole, spared)
    }

    /// Whether a source named on the command line is a symlink that `-L` or `-k`
    /// turns into a directory (then it is copied as one, never onto DEST's name).
    pub(super) fn follows_to_dir(&self, path: &Path, meta: &Meta) -> bool {
        if meta.kind != Kind::Symlink || !self.cfg.follow.is_active() {
            return false;
        }
        let name = path.file_name().unwrap_or_default();
        let entry = SrcEntry {
            name: name.to_owned(),
            path: path.to_path_buf(),
            meta: *meta,
            parent: None,
        };
        matches!(
            self.cfg.follow.decide(&entry, Path::new(name)),
            Verdict::Followed(f, _) if f.meta.kind == Kind::Dir
        )
    }

    /// The mode `--chmod` and the owners `--chown`/`--usermap`/`--groupmap` give an
    /// entry (symlinks keep their mode, as in rsync).
    pub(super) fn shape_meta(&self, mut m: Meta) -> Meta {
        if !self.cfg.chmod.is_empty() && m.kind != Kind::Symlink {
            m.mode = self.cfg.chmod.apply(m.mode, m.kind == Kind::Dir);
        }
        let numeric = self.cfg.numeric_ids;
        if let Some(map) = &self.cfg.usermap {
            m.uid = map.map(m.uid, numeric);
        }
        if let Some(map) = &self.cfg.groupmap {
            m.gid = map.map(m.gid, numeric);
        }
        m
    }
}

/// Whether the directory `meta` describes is `node` or one of its parents, by source
/// (dev, ino): a followed link that leads there would copy the tree into itself
/// without end.
fn is_ancestor<D: Destination>(mut node: Option<&DirNode<D>>, meta: &Meta) -> bool {
    while let Some(n) = node {
        if n.meta
            .is_some_and(|m| (m.dev, m.ino) == (meta.dev, meta.ino))
        {
            return true;
        }
        node = n.parent.as_deref();
    }
    false
}
