//! The source changing under a run, as whoever can write in it would change it: a file
//! replaced by a FIFO, a directory replaced by a symlink to somewhere outside. On the
//! mount path and over `nfs://` (the in-process server): the source side is the same.

use std::fs;
use std::os::unix::fs::symlink;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::support::sides::{Sides, Via};
use crate::support::{Tree, bin, describe, slash};

/// Files per source directory, 10,000 bytes each: at `--bwlimit 1000` (KB/s) one
/// directory takes about two seconds with `--jobs 1`.
const FILES: usize = 200;

/// Runs `nfsync --jobs 1 --bwlimit 1000 EXTRA SRC/ DEST`, calling `meanwhile` while
/// it runs; a run still going after 30 s is killed and the test fails (the hang it
/// checks for).
fn slow_run(sides: &Sides, src: &Path, extra: &[&str], meanwhile: impl FnOnce()) -> Output {
    let child = Command::new(bin())
        .args(["--jobs", "1", "--bwlimit", "1000"])
        .args(extra)
        .arg(slash(src))
        .arg(sides.dest("dst"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    meanwhile();
    let pid = child.id();
    let start = Instant::now();
    let waiter = std::thread::spawn(move || child.wait_with_output().unwrap());
    while !waiter.is_finished() {
        if start.elapsed() > Duration::from_secs(30) {
            let pid = rustix::process::Pid::from_raw(pid as i32).unwrap();
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
            let out = waiter.join().unwrap();
            panic!("the run hung (killed after 30 s)\n{}", describe(&out));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    waiter.join().unwrap()
}

/// Waits until `path` exists (the run is copying there).
fn wait_for(path: &Path) {
    let start = Instant::now();
    while fs::symlink_metadata(path).is_err() {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "{} never appeared",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// [`FILES`] files of `content` repeated in `dir` (`""`: the top) of `tree`.
fn fill(tree: &Tree, dir: &str, content: &str) {
    for f in 0..FILES {
        let name = Path::new(dir).join(format!("f{f:03}"));
        tree.file(name, content.repeat(10_000 / content.len()));
    }
}

/// The last file of a slow run replaced by a FIFO after the listing: opening it must
/// not wait for a writer (it used to, forever, and one SIGTERM waited with it). The
/// file listed is gone: "file has vanished", exit 24, everything else copied.
fn fifo_swapped_in(via: Via<'_>) {
    let sides = Sides::new(via);
    let src = sides.join("src");
    let tree = Tree::new(&src);
    fill(&tree, "", "x");
    let last_name = format!("f{:03}", FILES - 1);
    let last = src.join(&last_name);
    let out = slow_run(&sides, &src, &[], || {
        wait_for(&sides.join("dst/f000"));
        fs::remove_file(&last).unwrap();
        tree.fifo(&last_name);
    });
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(24), "{}", describe(&out));
    assert!(
        stderr.contains(&format!("file has vanished: {}", last.display())),
        "{}",
        describe(&out)
    );
    assert_eq!(fs::read_dir(sides.join("dst")).unwrap().count(), FILES - 1);
}

#[test]
fn a_source_file_replaced_by_a_fifo_does_not_hang_the_run() {
    fifo_swapped_in(Via::Mount);
}

#[test]
fn a_source_file_replaced_by_a_fifo_does_not_hang_the_run_over_nfs() {
    fifo_swapped_in(Via::InProc);
}

/// Two source directories, `a` and `z`, and outside the source a directory holding
/// the same names with a secret, and one name of its own. With `--jobs 1` one of them
/// is copied first while the other waits to be listed. `listed`: swap the directory
/// being copied (listed already: its files must still be read from it, not through
/// the link); else the other one (not listed yet: it must not be listed through the
/// link). Either way nothing of `outside` reaches DEST.
fn directory_swapped_for_a_link(via: Via<'_>, listed: bool) {
    directory_swapped_with(via, listed, &[]);
}

/// [`directory_swapped_for_a_link`] with `extra` options.
fn directory_swapped_with(via: Via<'_>, listed: bool, extra: &[&str]) {
    let sides = Sides::new(via);
    let src = sides.join("src");
    let tree = Tree::new(&src);
    fill(&tree, "a", "a");
    fill(&tree, "z", "z");
    let outside = Tree::new(sides.join("outside"));
    fill(&outside, "", "SECRET");
    outside.file("only-outside", "SECRET");
    for f in 0..FILES {
        let p = outside.root().join(format!("f{f:03}"));
        let flags = rustix::fs::XattrFlags::empty();
        rustix::fs::setxattr(&p, "user.outside", b"SECRET", flags).unwrap();
    }
    let dst = sides.join("dst");
    let out = slow_run(&sides, &src, extra, || {
        let start = Instant::now();
        let first = loop {
            if let Some(d) = ["a", "z"]
                .into_iter()
                .find(|d| dst.join(d).join("f000").exists())
            {
                break d;
            }
            assert!(start.elapsed() < Duration::from_secs(20), "nothing copied");
            std::thread::sleep(Duration::from_millis(2));
        };
        let swap = match (listed, first) {
            (true, d) => d,
            (false, "a") => "z",
            (false, _) => "a",
        };
        fs::rename(src.join(swap), sides.join("moved")).unwrap();
        symlink(outside.root(), src.join(swap)).unwrap();
    });
    let mut leaked = Vec::new();
    for d in ["a", "z"] {
        let Ok(entries) = fs::read_dir(dst.join(d)) else {
            continue;
        };
        for e in entries {
            let p = e.unwrap().path();
            let mut xattr = [0u8; 16];
            if p.ends_with("only-outside")
                || fs::read(&p).unwrap().starts_with(b"SECRET")
                || rustix::fs::lgetxattr(&p, "user.outside", &mut xattr[..]).is_ok()
            {
                leaked.push(p);
            }
        }
    }
    assert!(
        leaked.is_empty(),
        "read outside the source: {} entries, such as {:?}\n{}",
        leaked.len(),
        &leaked[..leaked.len().min(3)],
        describe(&out)
    );
    if listed {
        // Every file of the directory listed is copied from it, as it was listed.
        assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    } else {
        // rsync's answer to a listed directory that is now a symlink: ELOOP, exit 23.
        assert_eq!(out.status.code(), Some(23), "{}", describe(&out));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("Too many levels of symbolic links"),
            "{}",
            describe(&out)
        );
    }
    // Nothing outside is removed either (`--remove-source-files`).
    let left = fs::read_dir(outside.root()).unwrap().count();
    assert_eq!(left, FILES + 1, "files outside removed\n{}", describe(&out));
}

#[test]
fn a_listed_source_directory_swapped_for_a_symlink_is_not_read_through() {
    directory_swapped_for_a_link(Via::Mount, true);
}

#[test]
fn a_source_directory_swapped_for_a_symlink_before_its_listing_is_not_listed() {
    directory_swapped_for_a_link(Via::Mount, false);
}

#[test]
fn a_source_directory_swapped_for_a_symlink_is_not_followed_over_nfs() {
    directory_swapped_for_a_link(Via::InProc, true);
    directory_swapped_for_a_link(Via::InProc, false);
}

/// `--remove-source-files` with a listed directory swapped for a symlink: the files
/// removed are the source's, those of the same names outside are all still there.
#[test]
fn remove_source_files_removes_nothing_through_a_swapped_directory() {
    directory_swapped_with(Via::Mount, true, &["--remove-source-files"]);
}

/// `-X` with a listed directory swapped for a symlink: the extended attributes copied
/// are those of the files listed, not of the files of the same names outside.
#[test]
fn extended_attributes_are_not_read_through_a_swapped_directory() {
    directory_swapped_with(Via::Mount, true, &["-X"]);
}
