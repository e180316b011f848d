//! Deciding what one entry needs, given the source and what the destination holds.
//!
//! Pure functions, no I/O: the engine gathers the two sides' attributes (from one
//! listing per directory, plus a `stat` only where the listing did not carry them) and
//! asks here what to do. rsync's rules: a regular file is up to date when size and
//! mtime match (or size alone with `--size-only`, or size and bytes with
//! `--checksum`); attributes that differ on an up-to-date file are fixed in place;
//! anything of another type is removed first.

use crate::config::{Compare, Config};
use crate::dest::AttrSet;
use crate::meta::{Kind, Meta};

/// What an entry needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Nothing: content and attributes match.
    UpToDate,
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
pub fn attr_diff(src: &Meta, dst: &Meta, cfg: &Config, check_mtime: bool) -> AttrSet {
    let owner =
        (cfg.owners.owner && src.uid != dst.uid) || (cfg.owners.group && src.gid != dst.gid);
    AttrSet {
        // Symlink permissions are meaningless on Linux and cannot be set.
        mode: src.kind != Kind::Symlink && src.mode != dst.mode,
        owner,
        mtime: check_mtime && !src.mtime.matches(dst.mtime, cfg.modify_window),
    }
}

/// Decides for a regular file.
pub fn decide_file(src: &Meta, dst: Option<&Meta>, cfg: &Config) -> Decision {
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
pub fn after_content_matches(src: &Meta, dst: &Meta, cfg: &Config) -> Decision {
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
    cfg: &Config,
) -> Decision {
    let Some(dst) = dst else {
        return Decision::Create;
    };
    if dst.kind != Kind::Symlink || same_target != Some(true) {
        return Decision::Replace;
    }
    after_content_matches(src, dst, cfg)
}

/// Decides for fifos, sockets and devices.
pub fn decide_special(src: &Meta, dst: Option<&Meta>, cfg: &Config) -> Decision {
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
    use crate::config::Jobs;
    use crate::dest::OwnerPolicy;
    use crate::meta::Time;
    use std::time::Duration;

    fn cfg(compare: Compare) -> Config {
        Config {
            sources: vec![],
            dest: Default::default(),
            dry_run: false,
            delete: false,
            max_delete: None,
            filter: Default::default(),
            compare,
            modify_window: None,
            jobs: Jobs::Fixed(1),
            hard_links: false,
            owners: OwnerPolicy {
                owner: true,
                group: true,
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
            timeout: Duration::from_secs(1),
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
        c.modify_window = Some(1);
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
