//! `-H` when another run writes the same group at the same time.

use std::fs;

use super::recorder::{Recorder, config, run_into, write};
use crate::exit::ExitCode;

/// A run that only links a missing name to its leader must still check the group at
/// its end: another run may have put a new copy at the leader's name (and finished
/// its own check) after this run's link took the leader's old object. (Only runs that
/// met another writer checked; CI saw a split group with every run ending 0.)
#[test]
fn a_group_whose_leader_was_replaced_while_linking_ends_whole() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    write(&src.join("a/f"), b"shared bytes", 0o644);
    fs::create_dir_all(src.join("b")).unwrap();
    fs::hard_link(src.join("a/f"), src.join("b/g")).unwrap();
    let mut cfg = config(&src, false);
    cfg.hard_links = true;
    let dest = Recorder::replacing_during_link("a/f");
    let summary = run_into(&cfg, &dest).unwrap();
    assert_eq!(summary.exit_code, ExitCode::Success, "{summary:?}");
    let (f, g) = (dest.ino("a/f"), dest.ino("b/g"));
    assert!(f.is_some() && f == g, "a/f holds {f:?}, b/g holds {g:?}");
}
