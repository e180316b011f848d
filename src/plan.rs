//! Deciding what to do, given the source and what the destination holds.
//!
//! Pure functions, no I/O: the engine gathers the two sides (one listing per directory,
//! plus a `stat` only where the listing did not carry attributes) and asks here what to
//! do; it only carries the answer out. Two levels:
//! * a directory ([`plan_dir`]): which source children go ahead (excludes), what the
//!   listing already says about each, and what gets deleted (`--delete`, and
//!   temporaries a killed run left behind);
//! * an entry ([`decide_file`] and friends): rsync's rules. A regular file is up to date
//!   when size and mtime match (or size alone with `--size-only`, or size and bytes
//!   with `--checksum`); attributes that differ on an up-to-date file are fixed in
//!   place; anything of another type is removed first.

use std::collections::HashMap;
use std::ffi::OsString;
use std::path::Path;

use crate::dest::{AttrSet, DestEntry, OwnerPolicy};
use crate::meta::{Kind, Meta};
use crate::options::backup::Backup;
use crate::options::filter::{Filter, Scope, Side};
use crate::options::temp;
use crate::source::SrcEntry;

/// How to decide that a destination file is already up to date.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compare {
    /// Size and mtime equal (rsync's default quick check).
    QuickCheck,
    /// Never equal: every file is copied (`-I/--ignore-times`).
    IgnoreTimes,
    /// Size equal (`--size-only`).
    SizeOnly,
    /// Size equal and identical bytes (`-c/--checksum`).
    Checksum,
}

/// The part of the command line that decisions depend on.
#[derive(Clone, Copy, Debug)]
pub struct Rules<'a> {
    /// Up-to-date test.
    pub compare: Compare,
    /// `--modify-window SECS`: 0 compares whole seconds (rsync's default), -1
    /// nanoseconds.
    pub modify_window: i64,
    /// Which ownership to keep.
    pub owners: OwnerPolicy,
    /// `-p`: a mode that differs is fixed (without it an existing entry keeps its own).
    pub perms: bool,
    /// `-t`: an mtime that differs is fixed.
    pub times: bool,
    /// Entries left alone whatever they hold.
    pub skip: Skip,
    /// `--delete`.
    pub delete: bool,
    /// Exclude/include rules.
    pub filter: &'a Filter,
    /// `--backup`: its protect rules keep backups from `--delete`.
    pub backup: Option<&'a Backup>,
}

/// Entries to leave alone (rsync's `-u`, `--ignore-existing`, `--existing`,
/// `--max-size`, `--min-size`); none by default.
#[derive(Clone, Copy, Debug, Default)]
pub struct Skip {
    /// `-u`: a regular file newer at the destination stays.
    pub update: bool,
    /// `--ignore-existing`: anything that exists stays as it is (directories are
    /// still entered).
    pub ignore_existing: bool,
    /// `--existing`: nothing new is created (new directories are not entered).
    pub existing_only: bool,
    /// `--max-size`: larger regular files are skipped.
    pub max_size: Option<u64>,
    /// `--min-size`: smaller regular files are skipped.
    pub min_size: Option<u64>,
}

impl Skip {
    /// Whether a non-directory entry is skipped before its type is even looked at:
    /// `dst` is what the destination holds, `src` the source.
    fn skips(&self, src: &Meta, dst: Option<&Meta>, window: i64) -> bool {
        if src.kind == Kind::File
            && (self.max_size.is_some_and(|m| src.size > m)
                || self.min_size.is_some_and(|m| src.size < m))
        {
            return true;
        }
        match dst {
            None => self.existing_only,
            Some(_) if self.ignore_existing => true,
            // rsync's test, whole seconds: skipped when the source is older than the
            // destination by more than the window's worth (-1 makes it stricter).
            Some(d) => {
                self.update
                    && src.kind == Kind::File
                    && d.kind == Kind::File
                    && src.mtime.sec.saturating_sub(d.mtime.sec) < window
            }
        }
    }
}

/// What the destination listing said about an entry before its job ran.
#[derive(Clone, Copy, Debug)]
pub enum DestKnown {
    /// Not there.
    Missing,
    /// There, with these attributes.
    Present(Meta),
    /// There (of this kind, if the listing said), attributes not yet known.
    Unknown(Option<Kind>),
}

/// What is known of a destination directory's contents.
pub enum Listing {
    /// This run just created it (or would, in a dry run): it is empty.
    Fresh,
    /// Its entries.
    Listed(Vec<DestEntry>),
    /// It could not be listed (already reported): nothing is known, nothing deleted.
    Unknown,
}

/// One directory's plan.
pub struct DirPlan {
    /// Source children to bring over, each with what the listing said of its name.
    pub children: Vec<(SrcEntry, DestKnown)>,
    /// Destination entries to remove after the children, sorted by name.
    pub deletions: Vec<(OsString, Option<Kind>)>,
}

/// Matches a source directory's children against the destination's listing.
///
/// `rel` is the directory's path below DEST (filters match on it, with the directory's
/// per-directory rules in `scope`); `source_whole` is
/// false when the source listing failed part-way, and then nothing is deleted: a name
/// missing from a partial listing says nothing. A name the sender's rules exclude is
/// not copied; one the receiver's rules exclude (protect) is not deleted. Another run's temporary is removed only once provably abandoned (see
/// [`temp`]), with or without `--delete`.
pub fn plan_dir(
    rel: &Path,
    entries: Vec<SrcEntry>,
    listing: Listing,
    source_whole: bool,
    rules: &Rules<'_>,
    scope: &Scope,
) -> DirPlan {
    let excluded = |name: &std::ffi::OsStr, is_dir: bool, side: Side| {
        !rules.filter.is_empty() && rules.filter.excluded(scope, &rel.join(name), is_dir, side)
    };
    let fresh = matches!(listing, Listing::Fresh);
    let mut listed: Option<HashMap<OsString, DestEntry>> = match listing {
        Listing::Listed(l) => Some(l.into_iter().map(|e| (e.name.clone(), e)).collect()),
        Listing::Fresh | Listing::Unknown => None,
    };
    let mut children = Vec::with_capacity(entries.len());
    for entry in entries {
        // An excluded source entry's namesake stays in the listing: --delete decides
        // on it by the receiver's rules.
        if excluded(&entry.name, entry.meta.kind == Kind::Dir, Side::Sender) {
            continue;
        }
        let there = listed.as_mut().and_then(|m| m.remove(&entry.name));
        let known = match (&listed, there) {
            _ if fresh => DestKnown::Missing,
            (None, _) => DestKnown::Unknown(None),
            (Some(_), None) => DestKnown::Missing,
            (Some(_), Some(DestEntry { meta: Some(m), .. })) => DestKnown::Present(m),
            (Some(_), Some(DestEntry { kind, .. })) => DestKnown::Unknown(kind),
        };
        children.push((entry, known));
    }
    let mut deletions: Vec<_> = listed
        .into_iter()
        .flat_map(|m| m.into_values())
        .filter_map(|e| {
            let kind = e.kind.or(e.meta.map(|m| m.kind));
            // The backup's own protect rule comes after the user's rules, as rsync
            // appends it: a user's rule that decides the name (`R *~`) wins.
            let decided = if rules.filter.is_empty() {
                None
            } else {
                rules
                    .filter
                    .decided_by(
                        scope,
                        &rel.join(&e.name),
                        kind == Some(Kind::Dir),
                        Side::Receiver,
                    )
                    .map(|(excludes, _)| excludes)
            };
            let kept = decided
                .unwrap_or_else(|| rules.backup.is_some_and(|b| b.protects(&rel.join(&e.name))));
            if kept {
                return None;
            }
            let remove = if kind == Some(Kind::File) && temp::is_temp(&e.name) {
                source_whole && temp::is_abandoned(&e.name)
            } else {
                source_whole && rules.delete
            };
            remove.then_some((e.name, kind))
        })
        .collect();
    deletions.sort();
    DirPlan {
        children,
        deletions,
    }
}

/// What an entry needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Nothing: content and attributes match.
    UpToDate,
    /// Nothing: an option says to leave it (see [`Skip`]).
    Skip,
    /// Content matches; fix these attributes.
    FixAttrs(AttrSet),
    /// Sizes match but `--checksum` must read both sides to know.
    CompareContent,
    /// Create it; nothing is in the way.
    Create,
    /// Remove what is there, then create it.
    Replace,
}

/// Which attributes differ between source and destination entries of the same kind.
pub fn attr_diff(src: &Meta, dst: &Meta, cfg: &Rules<'_>, check_mtime: bool) -> AttrSet {
    let owner =
        (cfg.owners.owner && src.uid != dst.uid) || (cfg.owners.group && src.gid != dst.gid);
    AttrSet {
        // Symlink permissions are meaningless on Linux and cannot be set.
        mode: cfg.perms && src.kind != Kind::Symlink && src.mode != dst.mode,
        owner,
        mtime: cfg.times && check_mtime && !src.mtime.matches(dst.mtime, cfg.modify_window),
    }
}

/// Decides for a regular file.
pub fn decide_file(src: &Meta, dst: Option<&Meta>, cfg: &Rules<'_>) -> Decision {
    if cfg.skip.skips(src, dst, cfg.modify_window) {
        return Decision::Skip;
    }
    let Some(dst) = dst else {
        return Decision::Create;
    };
    if dst.kind != Kind::File {
        return Decision::Replace;
    }
    let same = match cfg.compare {
        Compare::QuickCheck => {
            src.size == dst.size && src.mtime.matches(dst.mtime, cfg.modify_window)
        }
        Compare::SizeOnly => src.size == dst.size,
        Compare::IgnoreTimes => false,
        Compare::Checksum => {
            if src.size != dst.size {
                false
            } else {
                return Decision::CompareContent;
            }
        }
    };
    if !same {
        return Decision::Replace;
    }
    after_content_matches(src, dst, cfg)
}

/// Once contents are known equal: up to date, or attributes to fix.
pub fn after_content_matches(src: &Meta, dst: &Meta, cfg: &Rules<'_>) -> Decision {
    let diff = attr_diff(src, dst, cfg, true);
    if diff.is_empty() {
        Decision::UpToDate
    } else {
        Decision::FixAttrs(diff)
    }
}

/// Decides for a symlink, knowing whether the destination link's target matches
/// (`None` when the destination is not a symlink).
pub fn decide_symlink(
    src: &Meta,
    dst: Option<&Meta>,
    same_target: Option<bool>,
    cfg: &Rules<'_>,
) -> Decision {
    if cfg.skip.skips(src, dst, cfg.modify_window) {
        return Decision::Skip;
    }
    let Some(dst) = dst else {
        return Decision::Create;
    };
    if dst.kind != Kind::Symlink || same_target != Some(true) {
        return Decision::Replace;
    }
    after_content_matches(src, dst, cfg)
}

/// Decides for fifos, sockets and devices.
pub fn decide_special(src: &Meta, dst: Option<&Meta>, cfg: &Rules<'_>) -> Decision {
    if cfg.skip.skips(src, dst, cfg.modify_window) {
        return Decision::Skip;
    }
    let Some(dst) = dst else {
        return Decision::Create;
    };
    if dst.kind != src.kind || (src.kind.is_device() && dst.rdev != src.rdev) {
        return Decision::Replace;
    }
    after_content_matches(src, dst, cfg)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::meta::Time;

    static NO_FILTER: std::sync::LazyLock<Filter> = std::sync::LazyLock::new(Filter::default);

    fn cfg(compare: Compare) -> Rules<'static> {
        Rules {
            compare,
            modify_window: -1,
            owners: OwnerPolicy {
                owner: true,
                group: true,
            },
            perms: true,
            times: true,
            skip: Skip::default(),
            delete: false,
            filter: &NO_FILTER,
            backup: None,
        }
    }

    fn file(size: u64, sec: i64, nsec: u32) -> Meta {
        Meta {
            kind: Kind::File,
            size,
            mode: 0o644,
            uid: 1,
            gid: 1,
            mtime: Time { sec, nsec },
            nlink: 1,
            dev: 0,
            ino: 0,
            rdev: 0,
            change: 0,
            atime: None,
        }
    }

    #[test]
    fn quick_check_compares_size_and_nanosecond_mtime() {
        let c = cfg(Compare::QuickCheck);
        let s = file(10, 100, 5);
        assert_eq!(decide_file(&s, None, &c), Decision::Create);
        assert_eq!(
            decide_file(&s, Some(&file(10, 100, 5)), &c),
            Decision::UpToDate
        );
        assert_eq!(
            decide_file(&s, Some(&file(10, 100, 6)), &c),
            Decision::Replace
        );
        assert_eq!(
            decide_file(&s, Some(&file(11, 100, 5)), &c),
            Decision::Replace
        );
    }

    #[test]
    fn modify_window_tolerates_rounded_times() {
        let mut c = cfg(Compare::QuickCheck);
        c.modify_window = 1;
        assert_eq!(
            decide_file(&file(1, 100, 5), Some(&file(1, 101, 0)), &c),
            Decision::UpToDate
        );
        assert_eq!(
            decide_file(&file(1, 100, 5), Some(&file(1, 102, 0)), &c),
            Decision::Replace
        );
    }

    #[test]
    fn default_window_compares_whole_seconds() {
        let mut c = cfg(Compare::QuickCheck);
        c.modify_window = 0;
        assert_eq!(
            decide_file(&file(1, 100, 5), Some(&file(1, 100, 900)), &c),
            Decision::UpToDate
        );
        assert_eq!(
            decide_file(&file(1, 100, 5), Some(&file(1, 101, 5)), &c),
            Decision::Replace
        );
    }

    #[test]
    fn update_skips_only_files_newer_at_the_destination() {
        let mut c = cfg(Compare::QuickCheck);
        c.modify_window = 0;
        c.skip.update = true;
        assert_eq!(
            decide_file(&file(1, 100, 0), Some(&file(2, 101, 0)), &c),
            Decision::Skip
        );
        assert_eq!(
            decide_file(&file(1, 100, 0), Some(&file(2, 100, 0)), &c),
            Decision::Replace
        );
        let mut d = file(2, 101, 0);
        d.kind = Kind::Dir;
        assert_eq!(
            decide_file(&file(1, 100, 0), Some(&d), &c),
            Decision::Replace
        );
    }

    #[test]
    fn size_only_ignores_mtime_but_fixes_it() {
        let c = cfg(Compare::SizeOnly);
        match decide_file(&file(1, 100, 0), Some(&file(1, 200, 0)), &c) {
            Decision::FixAttrs(a) => assert!(a.mtime && !a.mode && !a.owner),
            d => panic!("{d:?}"),
        }
    }

    #[test]
    fn checksum_reads_only_when_sizes_match() {
        let c = cfg(Compare::Checksum);
        assert_eq!(
            decide_file(&file(1, 1, 0), Some(&file(1, 1, 0)), &c),
            Decision::CompareContent
        );
        assert_eq!(
            decide_file(&file(1, 1, 0), Some(&file(2, 1, 0)), &c),
            Decision::Replace
        );
    }

    #[test]
    fn mode_or_owner_difference_is_fixed_in_place() {
        let c = cfg(Compare::QuickCheck);
        let mut d = file(1, 1, 0);
        d.mode = 0o600;
        d.gid = 2;
        match decide_file(&file(1, 1, 0), Some(&d), &c) {
            Decision::FixAttrs(a) => assert!(a.mode && a.owner && !a.mtime),
            x => panic!("{x:?}"),
        }
    }

    #[test]
    fn other_kind_in_the_way_is_replaced() {
        let c = cfg(Compare::QuickCheck);
        let mut d = file(1, 1, 0);
        d.kind = Kind::Dir;
        assert_eq!(decide_file(&file(1, 1, 0), Some(&d), &c), Decision::Replace);
        let mut l = file(1, 1, 0);
        l.kind = Kind::Symlink;
        assert_eq!(
            decide_symlink(&l, Some(&l), Some(false), &c),
            Decision::Replace
        );
        assert_eq!(
            decide_symlink(&l, Some(&l), Some(true), &c),
            Decision::UpToDate
        );
    }
}
