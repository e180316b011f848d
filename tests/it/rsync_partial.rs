//! `--partial` and `--partial-dir` side by side with rsync, on the mount path: both
//! tools copy a large new file slowly (`--bwlimit`), are stopped with SIGTERM while
//! its temporary holds data, and must then have kept the same thing in the same
//! place (a prefix of the source, at its name with mtime 0 or in the partial dir,
//! and no temporary); the same command run again must finish both copies alike and
//! use up (remove) a partial kept in a partial dir.

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::sides::{Side, Sides, Via};
use crate::support::{XorShift, bin, slash};

/// The large file's size: at 400 KiB/s some 30 s, far more than the test waits.
const BIG: usize = 12_000_000;

/// A source `src/sub/big` (random bytes, so a prefix is told from zeros) and an empty
/// start for both sides.
fn sides_with_big() -> Sides {
    let sides = Sides::new(Via::Mount);
    let sub = sides.join("src/sub");
    fs::create_dir_all(&sub).unwrap();
    let mut rng = XorShift::new(7);
    let data: Vec<u8> = (0..BIG).map(|_| rng.next() as u8).collect();
    fs::write(sub.join("big"), data).unwrap();
    // Old, so a directory mtime either tool failed to set again shows in the diff.
    filetime::set_file_mtime(&sub, filetime::FileTime::from_unix_time(1_000_000_000, 0)).unwrap();
    fs::create_dir_all(sides.join("start")).unwrap();
    sides.copy_start("start");
    sides
}

/// Runs `side` with `-a --bwlimit=400 FLAGS src/ DEST/` and sends it SIGTERM once a
/// temporary of `big` (`.big.*`) in `DEST/sub` holds data.
fn interrupt(sides: &Sides, side: Side, flags: &[String]) {
    let program = match side {
        Side::Rsync => PathBuf::from("rsync"),
        Side::Nfsync => bin(),
    };
    let dest = sides.join(side.dir());
    let mut child = Command::new(program)
        .args(["-a", "--bwlimit=400"])
        .args(flags)
        .arg(slash(&sides.join("src")))
        .arg(&dest)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while temps(&dest.join("sub")).iter().all(|&(_, size)| size == 0) {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "{}: no temporary of big with data",
            side.name()
        );
        assert!(child.try_wait().unwrap().is_none(), "{} ended", side.name());
        std::thread::sleep(Duration::from_millis(20));
    }
    let pid = rustix::process::Pid::from_raw(child.id() as i32).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::TERM).unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(20), "{}", side.name());
    // rsync's receiver may finish its cleanup after the sender has exited.
    std::thread::sleep(Duration::from_millis(500));
}

/// The temporaries of `big` in `dir`, with their sizes.
fn temps(dir: &Path) -> Vec<(String, u64)> {
    let Ok(list) = fs::read_dir(dir) else {
        return Vec::new();
    };
    list.flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".big."))
        .map(|n| {
            let size = fs::metadata(dir.join(&n)).map_or(0, |m| m.len());
            (n, size)
        })
        .collect()
}

/// What `side` kept of `big`: for each place (`DEST/sub/big`, `DEST/sub/.part/big`,
/// `abs/big` below the side's own absolute partial dir) whether a proper prefix of
/// the source is there and whether its mtime is 0; and whether a temporary is left.
fn kept(sides: &Sides, side: Side, abs: &Path) -> String {
    let src = fs::read(sides.join("src/sub/big")).unwrap();
    let dest = sides.join(side.dir());
    let mut out = String::new();
    for (label, path) in [
        ("at its name", dest.join("sub/big")),
        ("in .part", dest.join("sub/.part/big")),
        ("in the absolute dir", abs.join("big")),
    ] {
        let Ok(data) = fs::read(&path) else {
            continue;
        };
        let prefix = !data.is_empty() && data.len() < src.len() && src.starts_with(&data);
        let epoch = fs::metadata(&path).unwrap().mtime() == 0;
        out += &format!("{label}: prefix {prefix}, mtime 0 {epoch}\n");
    }
    out += &format!("temporaries left: {}\n", temps(&dest.join("sub")).len());
    out
}

/// Interrupts both sides with `flags` (the absolute partial dir, when one, each
/// side's own: `ABS` in a flag is replaced), compares what they kept, then runs the
/// same command again on both and compares the results; returns what was kept.
fn interrupt_then_resume(flags: &[&str]) -> (Sides, String) {
    let sides = sides_with_big();
    let abs = |side: Side| sides.join(format!("partials_{}", side.name()));
    let flags_of = |side: Side| -> Vec<String> {
        flags
            .iter()
            .map(|f| f.replace("ABS", abs(side).to_str().unwrap()))
            .collect()
    };
    let mut seen = Vec::new();
    for side in [Side::Rsync, Side::Nfsync] {
        fs::create_dir_all(abs(side)).unwrap();
        interrupt(&sides, side, &flags_of(side));
        seen.push(kept(&sides, side, &abs(side)));
    }
    assert_eq!(seen[1], seen[0], "nfsync kept other than rsync (right)");
    assert!(
        seen[0].contains("prefix true"),
        "rsync kept nothing: {}",
        seen[0]
    );
    sides.run_ok("", b"", &|side, cmd| {
        cmd.arg("-a")
            .args(flags_of(side))
            .arg(slash(&sides.join("src")));
    });
    assert_eq!(sides.diff(&["-c"]), "", "the resumed copies differ");
    for side in [Side::Rsync, Side::Nfsync] {
        assert_eq!(
            fs::read(sides.join(side.dir()).join("sub/big")).unwrap(),
            fs::read(sides.join("src/sub/big")).unwrap(),
            "{}: resumed copy",
            side.name()
        );
        assert!(
            !abs(side).join("big").exists(),
            "{}: used partial left in the absolute dir",
            side.name()
        );
    }
    let first = seen.swap_remove(0);
    (sides, first)
}

#[test]
fn partial_keeps_an_interrupted_new_file_at_its_name_with_mtime_0() {
    let (_, kept) = interrupt_then_resume(&["--partial"]);
    assert!(
        kept.contains("at its name: prefix true, mtime 0 true"),
        "{kept}"
    );
}

#[test]
fn relative_partial_dir_keeps_an_interrupted_copy_and_is_removed_once_used() {
    let (sides, kept) = interrupt_then_resume(&["--partial-dir=.part"]);
    assert!(kept.contains("in .part: prefix true"), "{kept}");
    assert!(!kept.contains("at its name"), "{kept}");
    assert!(
        !sides.nfsync("sub/.part").exists(),
        "the emptied .part stayed"
    );
}

#[test]
fn absolute_partial_dir_keeps_an_interrupted_copy_and_it_is_used_up() {
    let (_, kept) = interrupt_then_resume(&["--partial-dir=ABS"]);
    assert!(kept.contains("in the absolute dir: prefix true"), "{kept}");
}

/// Where rsync lets a partial file replace an older complete copy at the final name,
/// nfsync keeps the old copy: the partial is removed instead.
#[test]
fn partial_never_replaces_an_old_copy() {
    let sides = sides_with_big();
    let old = sides.nfsync("sub/big");
    fs::create_dir_all(old.parent().unwrap()).unwrap();
    fs::write(&old, b"an older copy").unwrap();
    interrupt(&sides, Side::Nfsync, &["--partial".into()]);
    assert_eq!(fs::read(&old).unwrap(), b"an older copy");
    assert!(
        temps(&sides.nfsync("sub")).is_empty(),
        "a temporary was left"
    );
}

/// A partial file rsync left in a relative partial dir is removed once the file is
/// copied, and the emptied dir with it, as rsync does.
#[test]
fn a_partial_found_in_the_partial_dir_is_used_up() {
    let sides = Sides::new(Via::Mount);
    fs::create_dir_all(sides.join("src/sub")).unwrap();
    fs::write(sides.join("src/sub/f"), vec![b'x'; 100_000]).unwrap();
    let old = filetime::FileTime::from_unix_time(1_000_000_000, 0);
    filetime::set_file_mtime(sides.join("src/sub"), old).unwrap();
    fs::create_dir_all(sides.join("start/sub/.part")).unwrap();
    fs::write(sides.join("start/sub/.part/f"), vec![b'x'; 40_000]).unwrap();
    sides.copy_start("start");
    sides.run_ok("", b"", &|_, cmd| {
        cmd.args(["-a", "--partial-dir=.part"])
            .arg(slash(&sides.join("src")));
    });
    assert!(!sides.rsync("sub/.part").exists(), "rsync kept .part");
    assert_eq!(sides.diff(&["-c"]), "");
}
