//! Several runs of the same command into one DEST at once (a cron job that starts while
//! the last one still runs): each must end with exit 0 and the copy exact.

use std::ffi::OsStr;
use std::fs;
use std::process::{Child, Stdio};
use std::time::Duration;

use crate::support::{Scratch, Target, Tree, XorShift};

/// A tree of many small files in several directories, plus a few larger ones, so
/// that runs started together overlap on the same names for a while.
fn populate(tree: &Tree, round: u64) {
    let mut rng = XorShift::new(round + 1);
    for d in 0..30 {
        for f in 0..25 {
            let size = 200 + rng.next() % 6000;
            tree.random_file(format!("d{d:02}/f{f:03}"), size, rng.next());
        }
    }
    for f in 0..3 {
        tree.random_file(format!("big/b{f}"), 300_000 + f * 1000, rng.next());
    }
    tree.symlink("d00/link", "f000");
    tree.hardlink("d01/hl", "d01/f000");
}

/// Rewrites about a third of the files (new sizes, contents and mtimes) and adds new
/// ones, so the next round's runs update in place (temporary + rename) and create.
fn change(tree: &Tree, round: u64) {
    let mut rng = XorShift::new(1000 + round);
    for d in 0..30 {
        for f in 0..25 {
            if rng.next().is_multiple_of(3) {
                let size = 100 + rng.next() % 7000;
                tree.random_file(format!("d{d:02}/f{f:03}"), size, rng.next());
            }
        }
        tree.random_file(format!("d{d:02}/new{round}"), 500, rng.next());
    }
    tree.random_file("big/b0", 310_000 + round, rng.next());
}

/// One run. `--modify-window=-1`: `change` may rewrite a file with the same size
/// within the second of its last version, which rsync's whole-second quick check (the
/// default) rightly calls up to date; this test is about runs that overlap, so it
/// compares to the nanosecond.
/// `src` is the SRC argument, made once for all the runs started together.
fn spawn(t: &dyn Target, extra: &[&str], src: &OsStr, sub: &str) -> Child {
    t.command()
        .args(["--jobs", "64", "-q", "-H", "--modify-window=-1"])
        .args(extra)
        .arg(src)
        .arg(t.dest_arg(sub))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn nfsync")
}

/// 2, 3 and 4 runs at once, started together and 30 ms apart, into a fresh DEST and
/// over an existing one that needs updates, with and without --delete: every run
/// exits 0 and the result is exact. (Before runs coordinated, nearly every round had
/// a run exit 23 with `File exists`, and some lost files entirely.)
pub fn concurrent_runs(t: &dyn Target) {
    let s = Scratch::new();
    let tree = Tree::new(s.join("src"));
    populate(&tree, 0);
    let mut round = 0;
    for fresh in [true, false] {
        for (runs, stagger_ms) in [(2, 0), (2, 30), (3, 0), (3, 30), (4, 0), (4, 30)] {
            round += 1;
            let dst = t.dest_path("dst");
            if fresh {
                let _ = fs::remove_dir_all(&dst);
            } else {
                change(&tree, round);
            }
            let extra: &[&str] = if round % 2 == 0 { &["--delete"] } else { &[] };
            let src = t.src_arg(tree.root(), true);
            let mut children = Vec::new();
            for _ in 0..runs {
                children.push(spawn(t, extra, &src, "dst"));
                std::thread::sleep(Duration::from_millis(stagger_ms));
            }
            let what = format!(
                "round {round}: {runs} runs {stagger_ms} ms apart, {} DEST {extra:?}",
                if fresh { "fresh" } else { "existing" }
            );
            for c in children {
                let out = c.wait_with_output().unwrap();
                assert!(
                    out.status.success(),
                    "{what}: a run ended with {}:\n{}",
                    out.status,
                    String::from_utf8_lossy(&out.stderr)
                );
            }
            let diff = t.diff(tree.root(), "dst");
            assert!(diff.is_empty(), "{what}: not exact afterwards:\n{diff}");
        }
    }
}

/// A source of many hard-link groups spread over many directories: 40 directories of
/// 30 files, each file given one or two more names in other directories (so every
/// directory holds leaders of some groups and followers of others, and runs that walk
/// in parallel each meet a group by a different name first).
fn populate_linked(tree: &Tree) {
    let mut rng = XorShift::new(26);
    for d in 0..40 {
        for f in 0..30 {
            let size = 100 + rng.next() % 3000;
            tree.random_file(format!("d{d:02}/f{f:02}"), size, rng.next());
        }
    }
    for d in 0..40u64 {
        for f in 0..30 {
            let other = (d + 1 + rng.next() % 39) % 40;
            let existing = format!("d{d:02}/f{f:02}");
            tree.hardlink(format!("d{other:02}/h{d:02}_{f:02}"), &existing);
            if rng.next().is_multiple_of(2) {
                let third = (other + 1 + rng.next() % 38) % 40;
                let third = if third == d { (third + 1) % 40 } else { third };
                tree.hardlink(format!("d{third:02}/g{d:02}_{f:02}"), &existing);
            }
        }
    }
}

/// Three `-H` runs started 30 ms apart into one DEST, ten rounds, into an empty DEST
/// and into one a previous round left partly filled (some names removed, some replaced
/// by separate copies, some groups split): every run exits 0 and DEST is exact,
/// hard links included. (Each run took the first name of a group it met as the one to
/// copy and removed whatever stood at the other names to link them to it, so one run
/// removed the name another had just copied: 11–43 names lost per round.)
pub fn concurrent_hard_link_runs(t: &dyn Target) {
    let s = Scratch::new();
    let tree = Tree::new(s.join("src"));
    populate_linked(&tree);
    let dst = t.dest_path("dst");
    let mut rng = XorShift::new(7);
    for round in 0..10 {
        let fresh = round % 2 == 0;
        if fresh {
            let _ = fs::remove_dir_all(&dst);
        } else {
            break_links(&dst, &mut rng);
        }
        let started = std::time::Instant::now();
        let src = t.src_arg(tree.root(), true);
        let mut children = Vec::new();
        for _ in 0..3 {
            children.push(spawn(t, &["--jobs", "16"], &src, "dst"));
            std::thread::sleep(Duration::from_millis(30));
        }
        let what = format!(
            "round {round} ({} DEST)",
            if fresh { "empty" } else { "partly filled" }
        );
        // The runs really overlap: the first is still going when the last has started.
        if let Some(status) = children[0].try_wait().unwrap() {
            let out = children.remove(0).wait_with_output().unwrap();
            panic!(
                "{what}: the first run ended ({status}) before the third started; nothing \
                 overlapped:\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        for c in children {
            let out = c.wait_with_output().unwrap();
            assert!(
                out.status.success(),
                "{what}: a run ended with {}:\n{}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            );
        }
        eprintln!("{what}: three runs in {:?}", started.elapsed());
        let diff = t.diff(tree.root(), "dst");
        assert!(diff.is_empty(), "{what}: not exact afterwards:\n{diff}");
    }
}

/// Leaves DEST partly filled: about one name in five removed, one in ten replaced by a
/// separate copy of its bytes (a group split in two).
fn break_links(dst: &std::path::Path, rng: &mut XorShift) {
    for d in fs::read_dir(dst).unwrap() {
        let d = d.unwrap().path();
        for f in fs::read_dir(&d).unwrap() {
            let p = f.unwrap().path();
            match rng.next() % 10 {
                0 | 1 => fs::remove_file(&p).unwrap(),
                2 => {
                    let bytes = fs::read(&p).unwrap();
                    let meta = fs::metadata(&p).unwrap();
                    fs::remove_file(&p).unwrap();
                    fs::write(&p, bytes).unwrap();
                    fs::set_permissions(&p, meta.permissions()).unwrap();
                    let mtime = filetime::FileTime::from_last_modification_time(&meta);
                    filetime::set_file_mtime(&p, mtime).unwrap();
                }
                _ => {}
            }
        }
    }
}
