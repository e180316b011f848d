//! Judging a result independently of nfsync: `rsync -anciH --delete` between two
//! trees, rsync's own itemized lines and reference copies, and snapshots of a tree to
//! prove a run left it alone.
//!
//! Its own module because a test's verdict must not depend on the code under test:
//! everything here is rsync, `cp` or a plain walk of the file system.

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::process::{Command, Output};

use super::{Target, describe, slash};

/// Runs `rsync -anciH --delete SRC/ DST/` and returns its stdout: one line per
/// difference, empty when the trees are identical (contents by checksum, types, modes,
/// mtimes to the second, symlink targets, hard links, and owners/groups when root).
/// Panics if rsync fails.
pub fn rsync_diff(src: &Path, dst: &Path) -> String {
    rsync_diff_with(src, dst, &[])
}

/// [`rsync_diff`] with extra rsync options (e.g. `--exclude` to leave a known
/// difference out).
pub fn rsync_diff_with(src: &Path, dst: &Path, extra: &[&str]) -> String {
    let mut s = src.as_os_str().to_owned();
    s.push("/");
    let mut d = dst.as_os_str().to_owned();
    d.push("/");
    let out = Command::new("rsync")
        .arg("-anciH")
        .arg("--delete")
        .args(extra)
        .arg(&s)
        .arg(&d)
        .output()
        .expect("run rsync (is it installed?)");
    assert!(
        out.status.success(),
        "rsync -anciH --delete {} {} failed: {}\nstdout:\n{}\nstderr:\n{}",
        s.to_string_lossy(),
        d.to_string_lossy(),
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `cp -a FROM TO`: an identical copy of a tree (times of symlinks too, owners when
/// root), or nothing when FROM does not exist.
pub fn copy_tree(from: &Path, to: &Path) {
    if fs::symlink_metadata(from).is_err() {
        return;
    }
    let status = Command::new("cp")
        .arg("-a")
        .arg(from)
        .arg(to)
        .status()
        .expect("run cp");
    assert!(
        status.success(),
        "cp -a {} {}",
        from.display(),
        to.display()
    );
}

/// The changes `rsync -ai EXTRA SRC/ DST/` itemizes (EXTRA may hold `-n`), sorted: what
/// nfsync's `-i` must print for the same change, run on an identical copy of the
/// starting state, line for line (sorted: nfsync's lines come in the order its parallel
/// jobs finish).
pub fn rsync_itemize(src: &Path, dst: &Path, extra: &[&str]) -> Vec<String> {
    let out = Command::new("rsync")
        .arg("-ai")
        .args(extra)
        .arg(slash(src))
        .arg(slash(dst))
        .output()
        .expect("run rsync (is it installed?)");
    assert!(out.status.success(), "rsync -ai: {}", describe(&out));
    let mut lines: Vec<String> = itemized_lines(&String::from_utf8_lossy(&out.stdout))
        .map(str::to_owned)
        .collect();
    lines.sort();
    lines
}

/// nfsync's itemized changes (`-i`), sorted: from stdout, or from stderr with `--json`.
pub fn itemized(out: &Output) -> Vec<String> {
    let mut lines: Vec<String> = itemized_lines(&String::from_utf8_lossy(&out.stdout))
        .chain(itemized_lines(&String::from_utf8_lossy(&out.stderr)))
        .map(str::to_owned)
        .collect();
    lines.sort();
    lines
}

/// The lines of `text` that are itemized changes: an 11-character code
/// (`>f.st......`) and a name, or `*deleting   NAME`.
fn itemized_lines(text: &str) -> impl Iterator<Item = &str> {
    text.lines().filter(|l| {
        let b = l.as_bytes();
        l.starts_with("*deleting   ")
            || (b.len() > 12
                && b[11] == b' '
                && b"<>ch.".contains(&b[0])
                && b"fdLDS".contains(&b[1]))
    })
}

/// Asserts that two local trees are identical by [`rsync_diff`].
pub fn assert_same(src: &Path, dst: &Path) {
    let diff = rsync_diff(src, dst);
    assert!(
        diff.is_empty(),
        "trees differ ({} vs {}):\n{diff}",
        src.display(),
        dst.display()
    );
}

/// Asserts that `t` holds an exact copy of `src` under `sub`.
pub fn assert_target_same(t: &dyn Target, src: &Path, sub: &str) {
    let diff = t.diff(src, sub);
    assert!(
        diff.is_empty(),
        "destination {} differs from source {}:\n{diff}",
        t.dest_path(sub).display(),
        src.display()
    );
}

/// Copies `src/` to `dst` with the real rsync and the given extra options (e.g. filter
/// rules): the reference result that nfsync's output is compared with.
pub fn rsync_reference(src: &Path, dst: &Path, extra: &[&str]) {
    let mut s = src.as_os_str().to_owned();
    s.push("/");
    let out = Command::new("rsync")
        .arg("-aH")
        .args(extra)
        .arg(&s)
        .arg(dst)
        .output()
        .expect("run rsync");
    assert!(
        out.status.success(),
        "reference rsync failed: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A listing of everything under `root` with type, mode, size, mtime (ns), link target
/// and content hash: equal listings mean nothing was changed. Used to prove that a run
/// (e.g. `--dry-run`) touched nothing.
pub fn snapshot(root: &Path) -> Vec<String> {
    let mut out = Vec::new();
    snapshot_into(root, root, &mut out);
    out.sort();
    out
}

fn snapshot_into(root: &Path, p: &Path, out: &mut Vec<String>) {
    let Ok(m) = fs::symlink_metadata(p) else {
        return;
    };
    let rel = p.strip_prefix(root).expect("under root");
    let mut line = format!(
        "{:?} mode={:o} uid={} gid={} mtime={}.{:09} nlink={}",
        rel,
        m.mode(),
        m.uid(),
        m.gid(),
        m.mtime(),
        m.mtime_nsec(),
        if m.is_dir() { 0 } else { m.nlink() }
    );
    if m.file_type().is_symlink() {
        line += &format!(" -> {:?}", fs::read_link(p).expect("readlink"));
    } else if m.is_file() {
        let data = fs::read(p).unwrap_or_default();
        line += &format!(" size={} hash={:016x}", data.len(), fnv1a(&data));
    }
    out.push(line);
    if m.is_dir() {
        for e in fs::read_dir(p).expect("read_dir").flatten() {
            snapshot_into(root, &e.path(), out);
        }
    }
}

/// Asserts two [`snapshot`]s are equal, printing only the lines that differ.
pub fn assert_snapshots_eq(before: &[String], after: &[String], what: &str) {
    if before == after {
        return;
    }
    let gone: Vec<_> = before.iter().filter(|l| !after.contains(l)).collect();
    let new: Vec<_> = after.iter().filter(|l| !before.contains(l)).collect();
    panic!("{what}\nbefore:\n{gone:#?}\nafter:\n{new:#?}");
}

/// FNV-1a 64, enough to tell contents apart in a snapshot.
pub fn fnv1a(data: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in data {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// Number of regular files (and symlinks) under `root`, recursively; 0 if missing.
pub fn count_files(root: &Path) -> usize {
    let Ok(entries) = fs::read_dir(root) else {
        return 0;
    };
    let mut n = 0;
    for e in entries.flatten() {
        match e.file_type() {
            Ok(ft) if ft.is_dir() => n += count_files(&e.path()),
            Ok(_) => n += 1,
            Err(_) => {}
        }
    }
    n
}
