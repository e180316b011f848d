//! A directory is finalized (its attributes set, last) once every child is done,
//! whichever way each child's job ended.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use super::recorder::{Call, Recorder, config, run_into, write};
use crate::exit::ExitCode;

#[test]
fn a_directory_left_out_early_still_lets_its_parent_finish() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    write(&src.join("new/file"), b"new", 0o644);
    fs::set_permissions(&src, fs::Permissions::from_mode(0o700)).unwrap();
    // --existing: the scan of `new`, which DEST lacks, gives up at once.
    let mut cfg = config(&src, false);
    cfg.skip.existing_only = true;
    let dest = Recorder::default();
    let summary = run_into(&cfg, &dest).unwrap();
    assert_eq!(summary.exit_code, ExitCode::Success, "{summary:?}");
    let calls = dest.take_calls();
    assert!(
        !calls.iter().any(|c| c.writes() == Some(Path::new("new"))),
        "--existing made a directory:\n{calls:#?}"
    );
    assert!(
        calls
            .iter()
            .any(|c| matches!(c, Call::SetDirAttrs(p, what) if p == Path::new("") && what.mode)),
        "DEST was never finalized:\n{calls:#?}"
    );
}
