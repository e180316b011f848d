//! What rsync's basis directories reuse, decided without I/O: which of the copies in
//! `--link-dest`, `--compare-dest` and `--copy-dest` an entry matches, and how well
//! (`--backup`'s names are [`crate::options::backup`]'s).
//!
//! rsync consults a basis directory only for an entry the destination lacks: an
//! existing file is updated as usual. A basis copy that passes the quick check and
//! has the attributes the entry would get is reused whole (linked, left out, or
//! copied); one that passes only the quick check is copied locally and its attributes
//! fixed, which leaves the same tree as a copy from the source.

use std::path::PathBuf;

use crate::meta::{Kind, Meta};
pub use crate::options::backup::{Backup, normalize};
use crate::plan::{self, Compare, Rules};

/// What the basis directories are for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BasisUse {
    /// `--compare-dest`: an unchanged entry is not copied at all.
    Compare,
    /// `--copy-dest`: an unchanged entry is copied without asking the source.
    Copy,
    /// `--link-dest`: an unchanged entry is a hard link to the basis copy.
    Link,
}

/// `--link-dest`, `--compare-dest` or `--copy-dest` (rsync takes one kind per run).
#[derive(Clone, Debug)]
pub struct Basis {
    /// What the directories are for.
    pub used: BasisUse,
    /// The directories, in command-line order: relative to DEST, or absolute.
    pub dirs: Vec<PathBuf>,
}

/// How well a basis copy matches an entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Match {
    /// Same content and the attributes the entry would get: reused whole.
    Exact,
    /// Same content by the quick check, other attributes: copied, attributes fixed.
    Content,
}

/// How a basis copy compares with the source entry `src`, by rsync's quick check
/// (`same_content` answers `--checksum`, reading only when sizes match) and the
/// attributes `-p -o -g` keep. `None`: not a match (another kind, another size or
/// time, a symlink to elsewhere), so the entry is copied from the source.
pub fn compare(
    src: &Meta,
    basis: &Meta,
    rules: &Rules<'_>,
    same_content: impl FnOnce() -> bool,
) -> Option<Match> {
    if basis.kind != src.kind {
        return None;
    }
    let same = match src.kind {
        Kind::File => match rules.compare {
            Compare::QuickCheck => {
                src.size == basis.size && src.mtime.matches(basis.mtime, rules.modify_window)
            }
            Compare::SizeOnly => src.size == basis.size,
            Compare::IgnoreTimes => false,
            Compare::Checksum => src.size == basis.size && same_content(),
        },
        // A symlink's "content" is its target, a device's its numbers.
        Kind::Symlink => same_content(),
        k if k.is_device() => src.rdev == basis.rdev,
        Kind::Fifo | Kind::Socket => true,
        _ => false,
    };
    if !same {
        return None;
    }
    let diff = plan::attr_diff(src, basis, rules, src.kind == Kind::File);
    Some(if diff.is_empty() {
        Match::Exact
    } else {
        Match::Content
    })
}

/// The best of the basis copies found (in the directories' order): the first exact
/// one, else the first with the same content (rsync's `try_dests_reg`).
pub fn best(matches: impl IntoIterator<Item = Option<Match>>) -> Option<(usize, Match)> {
    let mut best = None;
    for (i, m) in matches.into_iter().enumerate() {
        match m {
            Some(Match::Exact) => return Some((i, Match::Exact)),
            Some(Match::Content) if best.is_none() => best = Some((i, Match::Content)),
            _ => {}
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_exact_match_wins_else_the_first_content_match() {
        use Match::*;
        assert_eq!(best([None, Some(Content), Some(Exact)]), Some((2, Exact)));
        assert_eq!(
            best([Some(Content), None, Some(Content)]),
            Some((0, Content))
        );
        assert_eq!(best([None, None]), None);
    }
}
