//! How file data is written: `-S`, `--inplace`, `--append`,
//! `--append-verify`, `--temp-dir`, `--delay-updates`, `--bwlimit`.
//!
//! Each test runs rsync and nfsync with the same flags from the same source onto
//! copies of the same starting destination ([`sides`]'s, plus files for the
//! option at hand) and compares the results with `rsync -anciH --delete -c` (content
//! too: an append that went wrong keeps size and mtime). Then the side effect itself:
//! blocks allocated, a hard link seeing the new content, elapsed time, what is
//! visible at the destination during the run.
//!
//! [`sides`]: crate::support::sides

use std::fs::{self, File};
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use crate::support::ganesha::{self, Proto};
use crate::support::sides::{Sides, Via};
use crate::support::{Scratch, Tree, bin, describe, slash};

/// The two results and how long nfsync took.
struct Both {
    sides: Sides,
    /// `rsync -anciH --delete -c by_rsync/ by_nfsync/`.
    diff: String,
    nfsync_took: Duration,
}

impl Both {
    fn rsync(&self, rel: &str) -> std::path::PathBuf {
        self.sides.rsync(rel)
    }
    fn nfsync(&self, rel: &str) -> std::path::PathBuf {
        self.sides.nfsync(rel)
    }
    /// [`Both::assert_same`] with more options to the comparison.
    fn assert_same_but(&self, what: &str, extra: &[&str]) {
        let mut with = vec!["-c"];
        with.extend_from_slice(extra);
        let d = self.sides.diff(&with);
        assert!(d.is_empty(), "{what}: nfsync differs from rsync:\n{d}");
    }

    fn assert_same(&self, what: &str) {
        assert!(
            self.diff.is_empty(),
            "{what}: nfsync differs from rsync:\n{}",
            self.diff
        );
    }
}

/// rsync and nfsync with `flags`, `SRC/` onto copies of the starting destination;
/// `extra` adds to the source and to the start before they are copied.
fn both(via: Via, flags: &[&str], extra: impl FnOnce(&Tree, &Tree)) -> Both {
    // The in-process server has no MKNOD: the source's fifo stays out of both.
    let mut flags = flags.to_vec();
    if !matches!(via, Via::Mount) {
        flags.push("--no-D");
    }
    // nfs-ganesha does not keep a symlink's own mtime.
    if matches!(via, Via::Ganesha(_)) {
        flags.push("--no-l");
    }
    let sides = Sides::standard(via, extra);
    let src = slash(&sides.join("src"));
    let ran = sides.run_ok("", b"", &|_, cmd| {
        cmd.args(&flags).arg(&src);
    });
    sides.assert_rsync_changed("start", &[], &format!("{flags:?}"));
    Both {
        diff: sides.diff(&["-c"]),
        sides,
        nfsync_took: ran.nfsync_took,
    }
}

const MB: u64 = 1 << 20;

/// Files with holes: data at 5 MiB and 10 MiB of 20 MiB; data then a 3 MiB trailing
/// hole (older at the destination, so the update path writes it too).
fn holes(src: &Tree, st: &Tree) {
    let f = File::create(src.path("holey")).unwrap();
    f.write_all_at(b"data", 5 * MB).unwrap();
    f.write_all_at(b"end", 10 * MB).unwrap();
    f.set_len(20 * MB).unwrap();
    let f = File::create(src.path("tail_hole")).unwrap();
    f.write_all_at(&[7u8; 100_000], 0).unwrap();
    f.set_len(3 * MB).unwrap();
    src.mtime("holey", 1_600_000_000, 0)
        .mtime("tail_hole", 1_600_000_000, 0);
    st.file("tail_hole", "old\n")
        .mtime("tail_hole", 1_500_000_000, 0);
}

fn allocated(p: &Path) -> u64 {
    fs::metadata(p).unwrap().blocks() * 512
}

/// `-S`: the same bytes, and no more blocks than rsync's copy (`du --block-size=1`).
fn check_sparse(via: Via) {
    let b = both(via, &["-aS"], holes);
    b.assert_same("-S");
    for f in ["holey", "tail_hole"] {
        assert_eq!(
            fs::read(b.nfsync(f)).unwrap(),
            fs::read(b.sides.join("src").join(f)).unwrap(),
            "{f}: bytes"
        );
        let (r, n) = (allocated(&b.rsync(f)), allocated(&b.nfsync(f)));
        assert!(
            r < MB,
            "{f}: rsync -S allocated {r} bytes: no holes on this filesystem?"
        );
        assert!(
            n <= r + 128 * 1024,
            "{f}: nfsync -S allocated {n} bytes, rsync {r}"
        );
    }
}

#[test]
fn sparse_keeps_holes() {
    check_sparse(Via::Mount);
}

#[test]
fn sparse_keeps_holes_over_nfs() {
    check_sparse(Via::InProc);
}

/// `-S`, `--inplace` and `--append[-verify]` over NFSv4.1 (nfs-ganesha; root only).
#[test]
fn sparse_inplace_append_over_nfs4() {
    let Some(export) = ganesha::shared(Proto::V41) else {
        eprintln!("skipping sparse_inplace_append_over_nfs4: no nfs-ganesha here (not root)");
        return;
    };
    let via = Via::Ganesha(&export);
    let b = both(via, &["-aS"], holes);
    b.assert_same("-S over NFSv4.1");
    for f in ["holey", "tail_hole"] {
        let (r, n) = (allocated(&b.rsync(f)), allocated(&b.nfsync(f)));
        assert!(
            n <= r + 128 * 1024,
            "{f}: nfsync -S allocated {n} bytes, rsync {r}"
        );
    }
    check_inplace(via);
    check_append(via);
}

/// `-S --inplace`: the old copy's blocks where the source has holes are punched out,
/// as rsync does (the mount path; NFS before 4.2 cannot).
#[test]
fn sparse_inplace_punches_holes() {
    let b = both(Via::Mount, &["-aS", "--inplace"], |src, st| {
        let f = File::create(src.path("punched")).unwrap();
        f.write_all_at(b"data", MB + 5).unwrap();
        f.set_len(4 * MB).unwrap();
        src.mtime("punched", 1_600_000_000, 0);
        st.random_file("punched", 3 * MB + 17, 9)
            .mtime("punched", 1_500_000_000, 0);
    });
    b.assert_same("-S --inplace");
    let (r, n) = (
        allocated(&b.rsync("punched")),
        allocated(&b.nfsync("punched")),
    );
    assert!(
        r < MB,
        "rsync -S --inplace allocated {r} bytes: no hole punching here?"
    );
    assert!(
        n <= r + 128 * 1024,
        "nfsync -S --inplace allocated {n} bytes, rsync {r}"
    );
}

/// `-S` (with `--preallocate` too, as rsync's suite runs it) turns runs of zeros the
/// source holds as data into holes, new files and `--inplace` updates alike (whose old
/// blocks there are punched out), as rsync does; the mount path.
#[test]
fn sparse_turns_zero_runs_into_holes() {
    let zero_run = |src: &Tree, st: &Tree| {
        let mut bytes = vec![0u8; 2 * MB as usize + 8192];
        bytes[..4096].fill(1);
        bytes[2 * MB as usize + 4096..].fill(2);
        src.file("zeros", &bytes).mtime("zeros", 1_600_000_000, 0);
        src.file("zeros_update", &bytes)
            .mtime("zeros_update", 1_600_000_000, 0);
        st.random_file("zeros_update", 2 * MB + 8192, 3)
            .mtime("zeros_update", 1_500_000_000, 0);
    };
    for flags in [
        &["-aS"][..],
        &["-aS", "--preallocate"],
        &["-aS", "--inplace"],
    ] {
        let b = both(Via::Mount, flags, zero_run);
        b.assert_same(&format!("{flags:?}"));
        for f in ["zeros", "zeros_update"] {
            let (r, n) = (allocated(&b.rsync(f)), allocated(&b.nfsync(f)));
            assert!(r < MB, "{flags:?} {f}: rsync allocated {r}: no holes here?");
            assert!(
                n <= r + 128 * 1024,
                "{flags:?} {f}: nfsync allocated {n} bytes, rsync {r}"
            );
        }
    }
}

/// `--inplace`: the destination file is written into, so a hard link to it (here
/// `older_link`, which the source lacks) sees the new content, as with rsync.
fn check_inplace(via: Via) {
    let b = both(via, &["-a", "--inplace"], |_, st| {
        st.hardlink("older_link", "older");
    });
    b.assert_same("--inplace");
    assert_eq!(fs::read(b.rsync("older_link")).unwrap(), b"new content\n");
    assert_eq!(fs::read(b.nfsync("older_link")).unwrap(), b"new content\n");
    assert_eq!(fs::metadata(b.nfsync("older")).unwrap().nlink(), 2);
}

#[test]
fn inplace_updates_the_file_hard_links_see() {
    check_inplace(Via::Mount);
}

#[test]
fn inplace_over_nfs() {
    check_inplace(Via::InProc);
}

/// Files longer, the same size and shorter at the destination, one whose start
/// differs.
fn appendable(src: &Tree, st: &Tree) {
    src.file("grow", "0123456789abcdef\n")
        .file("same_len", "AAAA\n")
        .file("shrunk", "abc\n")
        .file("wrong_start", "HELLO world\n");
    st.file("grow", "0123456789")
        .file("same_len", "BBBB\n")
        .file("shrunk", "abcdef\n")
        .file("wrong_start", "hello");
    for f in ["grow", "same_len", "shrunk", "wrong_start"] {
        src.mtime(f, 1_600_000_000, 0);
        st.mtime(f, 1_500_000_000, 0);
    }
}

/// `--append`: only files longer at the source grow, from the destination's length
/// (a wrong start stays wrong, as with rsync); the others are left alone, times
/// included. `--append-verify` rewrites the file whose start differed.
fn check_append(via: Via) {
    let b = both(via, &["-a", "--append"], appendable);
    b.assert_same("--append");
    let read = |p: std::path::PathBuf| String::from_utf8(fs::read(p).unwrap()).unwrap();
    assert_eq!(read(b.nfsync("grow")), "0123456789abcdef\n");
    assert_eq!(read(b.nfsync("wrong_start")), "hello world\n");
    assert_eq!(read(b.nfsync("same_len")), "BBBB\n");
    assert_eq!(read(b.nfsync("shrunk")), "abcdef\n");
    let b = both(via, &["-a", "--append-verify"], appendable);
    b.assert_same("--append-verify");
    assert_eq!(read(b.nfsync("wrong_start")), "HELLO world\n");
    assert_eq!(read(b.nfsync("shrunk")), "abcdef\n");
}

#[test]
fn append_and_append_verify() {
    check_append(Via::Mount);
}

#[test]
fn append_over_nfs() {
    check_append(Via::InProc);
}

/// `--temp-dir`: relative to DEST, and on another filesystem (moved by copying);
/// nothing left in it. A temp-dir that does not exist is refused by both (exit 1).
#[test]
fn temp_dir() {
    let b = both(Via::Mount, &["-a", "--temp-dir=tmpd"], |_, st| {
        st.dir("tmpd");
    });
    // tmpd is not in the source: its mtime is when the last temporary left it.
    b.assert_same_but("--temp-dir=tmpd", &["--exclude=/tmpd"]);
    assert_eq!(fs::read_dir(b.nfsync("tmpd")).unwrap().count(), 0);
    let shm = Scratch::new_in(Path::new("/dev/shm"));
    let flag = format!("--temp-dir={}", shm.path().display());
    let b = both(Via::Mount, &["-a", &flag], |_, _| {});
    b.assert_same(&flag);
    assert_eq!(
        fs::read_dir(shm.path()).unwrap().count(),
        0,
        "left in {flag}"
    );
    let s = Scratch::new();
    Tree::new(s.join("src")).file("f", "f\n");
    fs::create_dir(s.join("dst")).unwrap();
    for cmd in [Command::new("rsync"), Command::new(bin())] {
        let mut cmd = cmd;
        let out = cmd
            .args(["-a", "--temp-dir=missing"])
            .arg(slash(&s.join("src")))
            .arg(slash(&s.join("dst")))
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{cmd:?}: {}", describe(&out));
    }
    assert!(!s.join("dst/f").exists());
}

/// `--temp-dir`, watched while it runs (paced by --bwlimit): the update is written
/// there, not beside the file it replaces, and the old copy stays whole meanwhile.
#[test]
fn temp_dir_holds_the_update_while_it_is_written() {
    let s = Scratch::new();
    let src = Tree::new(s.join("src"));
    src.random_file("big", 1_000_000, 2)
        .mtime("big", 1_600_000_000, 0);
    let dst = Tree::new(s.join("dst"));
    dst.file("big", "old\n").dir("tmpd");
    let mut child = Command::new(bin())
        .args(["-a", "--temp-dir=tmpd", "--bwlimit=1000"])
        .arg(slash(src.root()))
        .arg(slash(dst.root()))
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let (mut in_temp_dir, mut beside) = (0, 0);
    while child.try_wait().unwrap().is_none() {
        in_temp_dir += fs::read_dir(dst.path("tmpd")).unwrap().count();
        beside += fs::read_dir(dst.root()).unwrap().count() - 2;
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(in_temp_dir > 0, "no temporary was seen in --temp-dir");
    assert_eq!(beside, 0, "a temporary was written beside the file");
    assert_eq!(fs::read_dir(dst.path("tmpd")).unwrap().count(), 0);
    assert_eq!(
        fs::read(dst.path("big")).unwrap(),
        fs::read(src.path("big")).unwrap()
    );
}

#[test]
fn temp_dir_over_nfs() {
    let b = both(Via::InProc, &["-a", "--temp-dir=tmpd"], |_, st| {
        st.dir("tmpd");
    });
    b.assert_same_but("--temp-dir over nfs://", &["--exclude=/tmpd"]);
    assert_eq!(fs::read_dir(b.nfsync("tmpd")).unwrap().count(), 0);
}

#[test]
fn delay_updates() {
    let b = both(Via::Mount, &["-a", "--delay-updates"], |_, _| {});
    b.assert_same("--delay-updates");
}

/// `--delay-updates` holds files back in the partial dir of their directory (rsync's
/// `.~tmp~`, or `--partial-dir`'s), which is removed once empty; a stale partial file
/// there is replaced and gone afterwards, as with rsync. Over nfs:// too.
#[test]
fn delay_updates_stage_in_the_partial_dir() {
    for (via, flags, dir) in [
        (Via::Mount, &["-a", "--delay-updates"][..], ".~tmp~"),
        (
            Via::Mount,
            &["-a", "--delay-updates", "--partial-dir=.part"],
            ".part",
        ),
        (Via::InProc, &["-a", "--delay-updates"], ".~tmp~"),
    ] {
        let b = both(via, flags, |_, start| {
            start
                .file(format!("{dir}/older"), "stale partial\n")
                .file(format!("sub/{dir}/big2"), "stale partial\n")
                .mtime(format!("{dir}/older"), 1_000_000_000, 0);
        });
        b.assert_same(&format!("{flags:?}"));
        for side in [b.nfsync(""), b.rsync("")] {
            assert!(!side.join(dir).exists(), "{flags:?}: {side:?}");
            assert!(!side.join("sub").join(dir).exists(), "{flags:?}");
        }
        assert_eq!(fs::read(b.nfsync("older")).unwrap(), b"new content\n");
    }
}

/// `--delay-updates`: watched while it runs (paced by --bwlimit), no file is replaced
/// while another is still being transferred — the small file's update, done long
/// before the big one's, appears only once the big one's temporary is whole.
///
/// "Still being transferred" is read off the big file's temporary (`.big.nfsync-…` in
/// rsync's staging directory `.~tmp~`, shorter than the source), not off `big` itself: the renames at the end come one
/// after another, so a look between them sees `small` new and `big` old, rightly.
#[test]
fn delay_updates_replace_nothing_before_the_end() {
    const BIG: u64 = 1_500_000;
    let s = Scratch::new();
    let src = Tree::new(s.join("src"));
    src.random_file("small", 100_000, 1)
        .random_file("big", BIG, 2)
        .mtime("small", 1_600_000_000, 0)
        .mtime("big", 1_600_000_000, 0);
    let dst = Tree::new(s.join("dst"));
    dst.file("small", "old\n").file("big", "old\n");
    let mut child = Command::new(bin())
        .args(["-a", "--delay-updates", "--bwlimit=1000"])
        .arg(slash(src.root()))
        .arg(slash(dst.root()))
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let is_new = |f: &str| fs::metadata(dst.path(f)).unwrap().len() > 4;
    // The big file's temporary, while it is shorter than the source.
    let big_in_transfer = || {
        let Ok(staged) = fs::read_dir(dst.path(".~tmp~")) else {
            return false;
        };
        staged.flatten().any(|e| {
            e.file_name()
                .as_encoded_bytes()
                .starts_with(b".big.nfsync-")
                && e.metadata().is_ok_and(|m| m.len() < BIG)
        })
    };
    let (mut polls, mut seen_in_transfer, mut early) = (0, 0, 0);
    while child.try_wait().unwrap().is_none() {
        // `small` first: new then means its rename came before the look at `big`'s
        // temporary, which must by then be whole.
        let small = is_new("small");
        let transferring = big_in_transfer();
        early += usize::from(small && transferring);
        seen_in_transfer += usize::from(transferring);
        polls += 1;
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(early, 0, "small was replaced while big was in transfer");
    assert!(
        seen_in_transfer >= 5,
        "the big file's transfer was too quick to watch ({seen_in_transfer} of {polls} looks)"
    );
    assert!(is_new("small") && is_new("big"));
    assert_eq!(
        fs::read(dst.path("small")).unwrap(),
        fs::read(src.path("small")).unwrap()
    );
    assert!(
        !dst.path(".~tmp~").exists(),
        "the staging directory was left"
    );
}

/// rsync refuses `--inplace` and `--append` with `--delay-updates`; so does nfsync.
#[test]
fn delay_updates_refuses_inplace_and_append() {
    let s = Scratch::new();
    Tree::new(s.join("src")).file("f", "f\n");
    for flag in ["--inplace", "--append"] {
        for cmd in [Command::new("rsync"), Command::new(bin())] {
            let mut cmd = cmd;
            let out = cmd
                .args(["-a", "--delay-updates", flag])
                .arg(slash(&s.join("src")))
                .arg(slash(&s.join("dst")))
                .output()
                .unwrap();
            assert_eq!(out.status.code(), Some(1), "{cmd:?}: {}", describe(&out));
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(
                err.contains(&format!("{flag} cannot be used with --delay-updates")),
                "{err}"
            );
        }
    }
}

/// `--bwlimit=1000` (KiB/s): 2 MB take at least about 2 s, whatever the job count
/// (a lower bound only: the machine may be slower, never faster).
fn check_bwlimit(via: Via, what: &str) {
    let b = both(via, &["-a", "--bwlimit=1000"], |src, _| {
        src.random_file("two_mb", 2_000_000, 3);
    });
    b.assert_same(what);
    assert!(
        b.nfsync_took >= Duration::from_millis(1500),
        "{what}: 2 MB at 1000 KiB/s took {:?}",
        b.nfsync_took
    );
}

#[test]
fn bwlimit_limits_the_rate() {
    check_bwlimit(Via::Mount, "--bwlimit");
}

#[test]
fn bwlimit_over_nfs() {
    check_bwlimit(Via::InProc, "--bwlimit over nfs://");
}

/// `--inplace` into a read-only file of ours, not as root: made writable for the
/// update and given its mode back, as rsync does (rsync exits 0 with the new content).
#[test]
fn inplace_into_a_read_only_file_not_as_root() {
    use crate::support::nobody;
    use std::os::unix::fs::PermissionsExt;
    let s = nobody::scratch();
    let src = Tree::new(s.join("src"));
    src.file("f", "new content\n")
        .chmod("f", 0o444)
        .mtime("f", 1_600_000_000, 0);
    let dst = Tree::new(s.join("dst"));
    dst.file("f", "old\n").chmod("f", 0o444);
    nobody::hand_over(s.path());
    let out = nobody::run(&[
        "-a".as_ref(),
        "--inplace".as_ref(),
        &slash(src.root()),
        &slash(dst.root()),
    ]);
    assert!(out.status.success(), "{}", describe(&out));
    assert_eq!(fs::read(dst.path("f")).unwrap(), b"new content\n");
    let m = fs::metadata(dst.path("f")).unwrap();
    assert_eq!(m.permissions().mode() & 0o7777, 0o444);
    assert_eq!(m.mtime(), 1_600_000_000);
}

/// `--delay-updates` into a read-only directory, not as root: the directory has its
/// final mode by the end of the run, so it is opened for the renames and closed again
/// (rsync, setting directory modes last, succeeds too).
#[test]
fn delay_updates_into_a_read_only_directory_not_as_root() {
    use crate::support::nobody;
    use std::os::unix::fs::PermissionsExt;
    let s = nobody::scratch();
    let src = Tree::new(s.join("src"));
    src.file("sub/f", "f\n")
        .chmod("sub", 0o555)
        .mtime("sub", 1_600_000_000, 0);
    nobody::hand_over(s.path());
    let out = nobody::run(&[
        "-a".as_ref(),
        "--delay-updates".as_ref(),
        &slash(src.root()),
        &slash(&s.join("dst")),
    ]);
    assert!(out.status.success(), "{}", describe(&out));
    assert_eq!(fs::read(s.join("dst/sub/f")).unwrap(), b"f\n");
    let m = fs::metadata(s.join("dst/sub")).unwrap();
    assert_eq!(m.permissions().mode() & 0o7777, 0o555);
    assert_eq!(m.mtime(), 1_600_000_000);
}
