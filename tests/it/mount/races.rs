//! The mount path when the destination changes under a run: directories swapped for
//! symlinks, and trees deeper than `PATH_MAX`.

use std::fs;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::support::{Scratch, Tree, assert_copied, describe, run_nfsync, sync_ok};

/// Every entry below `root` with its content (files) or target (symlinks).
fn listing(root: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            let m = fs::symlink_metadata(&p).unwrap();
            let what = if m.is_dir() {
                stack.push(p.clone());
                Vec::new()
            } else if m.file_type().is_symlink() {
                fs::read_link(&p)
                    .unwrap()
                    .into_os_string()
                    .into_encoded_bytes()
            } else {
                fs::read(&p).unwrap()
            };
            out.push((p.strip_prefix(root).unwrap().to_path_buf(), what));
        }
    }
    out.sort();
    out
}

/// A thread replaces destination directories by symlinks to a directory outside DEST
/// while a run writes into them: nothing outside may change, whatever the run then
/// reports. Path-based writes (`DEST/d3/f` resolved again per call) go through such a
/// symlink; writes relative to an open directory cannot.
#[test]
fn a_destination_directory_swapped_for_a_symlink_is_never_written_through() {
    const DIRS: usize = 8;
    const FILES: usize = 400;
    let s = Scratch::new();
    let tree = Tree::new(s.join("src"));
    for d in 0..DIRS {
        for f in 0..FILES {
            tree.file(format!("d{d}/sub/f{f:03}"), format!("{d}/{f}\n"));
        }
    }
    let outside = s.join("outside");
    fs::create_dir_all(outside.join("sub")).unwrap();
    fs::write(outside.join("keep"), "keep\n").unwrap();
    fs::write(outside.join("sub/f000"), "not yours\n").unwrap();
    let before = listing(&outside);

    let mut swapped_any = 0;
    for round in 0..6 {
        let dst = s.join(format!("dst{round}"));
        let done = Arc::new(AtomicBool::new(false));
        let swapper = {
            let (dst, outside, done) = (dst.clone(), outside.clone(), done.clone());
            std::thread::spawn(move || {
                let mut swapped = 0;
                let deadline = Instant::now() + Duration::from_secs(20);
                let mut next = 0;
                while next < DIRS && !done.load(Ordering::Relaxed) && Instant::now() < deadline {
                    // Swap each directory as soon as the run has started filling it.
                    let d = dst.join(format!("d{next}"));
                    if fs::symlink_metadata(d.join("sub")).is_ok() {
                        fs::rename(&d, dst.join(format!(".moved{next}"))).unwrap();
                        symlink(&outside, &d).unwrap();
                        swapped += 1;
                        next += 1;
                    } else {
                        std::thread::yield_now();
                    }
                }
                swapped
            })
        };
        let out = run_nfsync(&["--jobs", "8"], tree.root(), &dst);
        done.store(true, Ordering::Relaxed);
        swapped_any += swapper.join().unwrap();
        assert!(
            matches!(out.status.code(), Some(0 | 23)),
            "round {round}: {}",
            describe(&out)
        );
        assert_eq!(
            listing(&outside),
            before,
            "round {round}: a write went outside DEST through a swapped-in symlink\n{}",
            describe(&out)
        );
    }
    assert!(swapped_any > 0, "the swaps never happened during a run");
}

/// A tree deeper than `PATH_MAX` (4,096 bytes) in the source and the destination: every
/// call works from an open directory, so depth is no limit.
#[test]
fn trees_deeper_than_path_max_copy() {
    let s = Scratch::new();
    let name = "d".repeat(200);
    let depth = 30; // 30 × 201 bytes ≈ 6 KB below the root
    let rel: PathBuf = (0..depth).map(|_| name.as_str()).collect();
    // Built from inside, a component at a time: the full path is too long for one call.
    let src = s.join("src");
    fs::create_dir(&src).unwrap();
    build_deep(&src, depth, &name);
    let dst = s.join("dst");
    sync_ok(&[], &src, &dst);
    assert_eq!(
        deep_listing(&dst, depth, &name),
        deep_listing(&src, depth, &name),
        "the deep copy differs"
    );
    assert!(rel.as_os_str().len() > 4096);
    // A re-run finds everything up to date.
    let out = sync_ok(&["--json"], &src, &dst);
    assert_copied(&out, 0);
}

/// Creates `depth` nested directories named `name` under `root`, with a file at each
/// level, by descriptor (`openat`), since the whole path is longer than `PATH_MAX`.
fn build_deep(root: &Path, depth: usize, name: &str) {
    use rustix::fs::{Mode, OFlags};
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
    let mut dir = rustix::fs::open(root, flags, Mode::empty()).unwrap();
    for level in 0..depth {
        let f = rustix::fs::openat(
            &dir,
            "file",
            OFlags::WRONLY | OFlags::CREATE | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o644),
        )
        .unwrap();
        rustix::io::write(&f, format!("level {level}\n").as_bytes()).unwrap();
        rustix::fs::mkdirat(&dir, name, Mode::from_raw_mode(0o755)).unwrap();
        dir = rustix::fs::openat(&dir, name, flags, Mode::empty()).unwrap();
    }
}

/// Each level's file content and mode and mtime, read by descriptor.
fn deep_listing(root: &Path, depth: usize, name: &str) -> Vec<(Vec<u8>, u32, i64, i64)> {
    use rustix::fs::{AtFlags, Mode, OFlags};
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
    let mut dir = rustix::fs::open(root, flags, Mode::empty()).unwrap();
    let mut out = Vec::new();
    for _ in 0..depth {
        let f = rustix::fs::openat(
            &dir,
            "file",
            OFlags::RDONLY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .unwrap();
        let mut buf = vec![0u8; 64];
        let n = rustix::io::read(&f, &mut buf).unwrap();
        buf.truncate(n);
        let st = rustix::fs::statat(&dir, "file", AtFlags::SYMLINK_NOFOLLOW).unwrap();
        let d = rustix::fs::statat(&dir, name, AtFlags::SYMLINK_NOFOLLOW).unwrap();
        out.push((buf, st.st_mode, st.st_mtime, d.st_mtime));
        dir = rustix::fs::openat(&dir, name, flags, Mode::empty()).unwrap();
    }
    out
}
