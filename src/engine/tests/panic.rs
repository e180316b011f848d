//! A job that panics ends the run; it must never hang it.

use std::path::Path;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use super::recorder::{Recorder, config, expected, held, run_into, write};
use crate::exit::ExitCode;

#[test]
fn a_panicking_job_ends_the_run_and_the_other_files_are_copied() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    for i in 0..20 {
        write(&src.join(format!("f{i:02}")), b"data", 0o644);
    }
    // Last in name order, so it is the last job taken: a stop lets the jobs in flight
    // finish but takes no new one, and every other file is in flight or done by then.
    write(&src.join("zz-panics"), b"boom", 0o644);
    let cfg = config(&src, false);

    // In a thread of its own, so a run that hangs fails the test instead of hanging it.
    let (tx, rx) = mpsc::channel();
    let started = Instant::now();
    std::thread::spawn(move || {
        let dest = Recorder::panicking_on("zz-panics");
        let summary = run_into(&cfg, &dest);
        let _ = tx.send((summary, held(&dest)));
    });
    let (summary, held) = rx
        .recv_timeout(Duration::from_secs(10))
        .expect("the run did not end after a job panicked");
    let took = started.elapsed();
    let summary = summary.unwrap();

    assert_eq!(summary.exit_code, ExitCode::Internal, "{summary:?}");
    assert!(took < Duration::from_secs(2), "the run took {took:?}");
    let why = summary.fatal.as_deref().unwrap_or_default();
    assert!(
        why.contains(&*src.join("zz-panics").to_string_lossy())
            && why.contains("write_file was told to panic"),
        "the fatal error lacks the entry's path or the panic's message: {why:?}"
    );
    assert_eq!(summary.files_copied, 20, "{summary:?}");
    // Every other file, as the source has it (DEST's own attributes are never set:
    // the run stopped before its last child was done).
    let files = |m: std::collections::BTreeMap<_, _>| {
        m.into_iter()
            .filter(|(p, _): &(std::path::PathBuf, _)| p != Path::new(""))
            .collect::<Vec<_>>()
    };
    let mut want = expected(&src);
    want.remove(Path::new("zz-panics"));
    assert_eq!(files(held), files(want));
}
