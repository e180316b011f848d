//! The order of destination calls that crash safety rests on, checked against the
//! recording fake [`Recorder`].
//!
//! A run killed at any point must leave nothing that looks complete and is not: the
//! quick check trusts size and mtime. So a file's mtime lands after its content (the
//! backend does both inside `write_file`; the engine never sets an mtime on a name
//! whose content is still to come), an update is written under a temporary name and
//! renamed over the old copy, a directory's mode and mtime are set after everything in
//! it is done, and `--delete` removes names only after the directory's copies.

use std::fs;
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::Path;

use super::recorder::{Call, Recorder, config, expected, held, run_into, write};
use crate::exit::ExitCode;

fn sync(src: &Path, dest: &Recorder, delete: bool) -> Vec<Call> {
    let cfg = config(src, delete);
    let summary = run_into(&cfg, dest).unwrap();
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
            // An update replaces the old copy in one step, after its content is written
            // (or, for a hard link, after it is linked to a complete copy).
            Call::Rename(from, _) => {
                assert!(
                    before.contains(&Call::Write(from.clone()))
                        || before.contains(&Call::Link(from.clone())),
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
    // -H: both names of the updated file are replaced in one step each (the copy, and
    // a link renamed over the other name), never removed first: another run may be
    // linking to either of them at that moment.
    for name in ["d1/a", "d2/a-link"] {
        let name = Path::new(name);
        assert!(
            !second.contains(&Call::Remove(name.into())),
            "{name:?} was removed to be replaced:\n{second:#?}"
        );
        assert!(
            second
                .iter()
                .any(|c| matches!(c, Call::Rename(_, to) if to == name)),
            "{name:?} was not renamed over:\n{second:#?}"
        );
    }

    // Nothing to do: no call changes anything.
    let third = sync(&src, &dest, true);
    assert!(
        third.iter().all(|c| c.writes().is_none()),
        "an up-to-date tree was written to:\n{third:#?}"
    );
}
