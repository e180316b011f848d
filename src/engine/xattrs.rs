//! `-X` and `-A`: bringing each entry's extended attributes and ACLs in line with
//! the source's, after its content and before the run moves on.
//!
//! A destination that cannot hold them (an NFS path, a filesystem answering
//! `ENOTSUP`) is said once per run, counted as one error (rsync exits 23 there too,
//! after one message per file), and the copy goes on without them.

use std::ffi::OsStr;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use super::Engine;
use crate::dest::Destination;
use crate::options::fake_super;
use crate::options::xattrs::{self, Target, XattrSet, Xattrs};
use crate::report::{Escaped, Stats};
use crate::source;

/// Whether the destination can hold extended attributes and ACLs: once it says it
/// cannot, no more are tried.
#[derive(Default)]
pub(super) struct Support {
    refused: AtomicBool,
}

/// Which of rsync's `-i` columns an attribute change shows in.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct XattrChange {
    /// An ACL changed (`a`).
    pub acl: bool,
    /// Another extended attribute changed (`x`).
    pub xattr: bool,
}

impl XattrChange {
    pub(super) fn any(self) -> bool {
        self.acl || self.xattr
    }
}

fn is_acl(name: &OsStr) -> bool {
    name.as_encoded_bytes().starts_with(b"system.posix_acl_")
}

/// What differs between `have` and `want`, by column.
fn diff(have: &Xattrs, want: &Xattrs) -> XattrChange {
    let mut c = XattrChange::default();
    let mut mark = |name: &OsStr| {
        if is_acl(name) {
            c.acl = true;
        } else {
            c.xattr = true;
        }
    };
    for (n, v) in want {
        if !have.iter().any(|(hn, hv)| hn == n && hv == v) {
            mark(n);
        }
    }
    for (n, _) in have {
        if !want.iter().any(|(wn, _)| wn == n) {
            mark(n);
        }
    }
    c
}

/// Real ACLs read from the source (`got`) as a `--fake-super` DEST keeps them, in
/// `user.rsync.%aacl` and `%dacl`; `mode` is the source entry's.
fn as_fake_acls(got: Xattrs, mode: impl Fn() -> io::Result<u32>) -> io::Result<Xattrs> {
    let [access, default] = xattrs::FAKE_ACL_NAMES;
    let mut out = Vec::with_capacity(got.len());
    for (name, value) in got {
        let (fake, mode) = match name.as_encoded_bytes() {
            b"system.posix_acl_access" => (access, Some(mode()?)),
            b"system.posix_acl_default" => (default, None),
            _ => {
                out.push((name, value));
                continue;
            }
        };
        if let Some(packed) = fake_super::pack_acl(&value, mode) {
            out.push((OsStr::from_bytes(fake).to_owned(), packed));
        }
    }
    out.sort();
    Ok(out)
}

impl<D: Destination> Engine<'_, D> {
    /// Gives `name` in `dir` (the directory itself for `None`) the kept attributes of
    /// the source at `src` (read inside the directory it was listed in when `entry` is
    /// the listed entry); `rel` names it in messages. Returns what differed (and, if
    /// `apply` and this is no dry run, was fixed).
    pub(super) fn sync_xattrs(
        &self,
        dir: &D::Dir,
        name: Option<&OsStr>,
        (src, entry, rel): (&Path, Option<&source::SrcEntry>, &Path),
        apply: bool,
    ) -> XattrChange {
        let set = self.cfg.xattrs;
        if !set.any() || !self.source.reads_xattrs() || self.xattrs.refused.load(Ordering::Relaxed)
        {
            return XattrChange::default();
        }
        // Each side's ACLs where that side keeps them (see --fake-super).
        let fake = self.cfg.fake_super;
        let src_set = XattrSet {
            fake_acls: fake.source,
            ..set
        };
        let dest_set = XattrSet {
            fake_acls: fake.dest,
            ..set
        };
        let read = |p: &Path| {
            let got = xattrs::read(Target::Path(p), src_set)?;
            match set.acls && fake.dest && !fake.source {
                true => as_fake_acls(got, || {
                    use std::os::unix::fs::MetadataExt;
                    Ok(std::fs::symlink_metadata(p)?.mode())
                }),
                false => Ok(got),
            }
        };
        let got = match entry {
            Some(e) => source::in_listed_dir(e, read),
            None => source::short_path(src, read),
        };
        let want = match got {
            Ok(w) => w,
            Err(e) if xattrs::is_unsupported(&e) => Vec::new(),
            Err(e) => {
                self.source_error(src, &e);
                return XattrChange::default();
            }
        };
        let have = match self.dest.xattrs(dir, name, dest_set) {
            Ok(h) => h,
            Err(e) => {
                self.xattr_error(rel, e);
                return XattrChange::default();
            }
        };
        let change = diff(&have, &want);
        if change.any()
            && apply
            && !self.cfg.dry_run
            && let Err(e) = self.dest.set_xattrs(dir, name, &have, &want)
        {
            self.xattr_error(rel, e);
        }
        change
    }

    /// The first "cannot hold them" is said once for the run; other errors are the
    /// entry's own.
    fn xattr_error(&self, rel: &Path, e: crate::dest::Error) {
        if e.kind() != io::ErrorKind::Unsupported {
            return self.dest_error(rel, e);
        }
        if !self.xattrs.refused.swap(true, Ordering::Relaxed) {
            Stats::bump(&self.stats.errors);
            self.out.warn(format_args!(
                "{}: the destination cannot hold extended attributes or ACLs ({}); \
                 copying without them",
                Escaped(&self.dest_display),
                e
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsString;

    #[test]
    fn changes_are_told_apart_by_column() {
        let x = |n: &str, v: &[u8]| (OsString::from(n), v.to_vec());
        let acl = x("system.posix_acl_access", b"1");
        let user = x("user.a", b"1");
        assert_eq!(diff(&vec![], &vec![]), XattrChange::default());
        assert!(diff(&vec![], &vec![acl.clone()]).acl);
        let c = diff(&vec![user.clone()], &vec![acl.clone()]);
        assert!(c.acl && c.xattr);
        let c = diff(&vec![user.clone()], &vec![x("user.a", b"2")]);
        assert!(c.xattr && !c.acl);
        assert!(!diff(&vec![user.clone(), acl.clone()], &vec![user, acl]).any());
    }
}
