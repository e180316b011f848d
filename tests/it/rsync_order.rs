//! The order of the per-file lines and the name a file copied onto another shows:
//! nfsync's `-i` output is rsync's line for line, unsorted, though its copies run in
//! parallel, on the mount path and over NFS.

use std::process::Output;

use crate::support::Tree;
use crate::support::sides::{Side, Sides, Via};
use crate::support::slash;

/// The lines printed, without `created directory DEST` (whose DEST differs).
fn lines(o: &Output) -> Vec<String> {
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter(|l| !l.starts_with("created directory "))
        .map(str::to_owned)
        .collect()
}

fn assert_same_lines(what: &str, rsync: &Output, nfsync: &Output, at_least: usize) {
    let (want, got) = (lines(rsync), lines(nfsync));
    assert!(want.len() >= at_least, "{what}: rsync printed {want:?}");
    assert!(
        want == got,
        "{what}: lines differ\n--- rsync\n{}\n--- nfsync\n{}",
        want.join("\n"),
        got.join("\n")
    );
}

/// A few directories deep, each with files of sizes that finish in another order
/// than their names'.
fn tree(src: &Tree) {
    for dir in ["", "a", "b", "b/y", "b/y/z", "c", "c/empty"] {
        src.dir(dir);
        if dir == "c/empty" {
            continue;
        }
        for (i, name) in ["k", "b", "x", "a1", "m", "A", "z9"].iter().enumerate() {
            let size = ((7 - i as u64) * 37_000) % 200_000;
            src.random_file(format!("{dir}/{name}"), size, i as u64);
        }
    }
}

fn assert_order_is_rsyncs(via: Via) {
    let sides = Sides::new(via);
    let src = Tree::new(sides.join("src"));
    tree(&src);
    std::fs::create_dir(sides.join("start")).unwrap();
    sides.copy_start("start");
    let run = |flags: &[&str]| {
        sides.run_ok("", b"", &|_, cmd| {
            cmd.args(flags).arg(slash(src.root()));
        })
    };
    let ran = run(&["-ai"]);
    assert_same_lines("-ai into an empty DEST", &ran.rsync, &ran.nfsync, 40);
    // Changes deep down: a directory's time line, then its entries.
    src.file("b/y/new", "new");
    src.random_file("a/m", 50_000, 99);
    src.file("c/empty/one", "1");
    for dir in ["b/y", "c/empty"] {
        let old = filetime::FileTime::from_unix_time(1_000_000_000, 0);
        filetime::set_file_mtime(src.path(dir), old).unwrap();
    }
    let ran = run(&["-ai"]);
    assert_same_lines("-ai again", &ran.rsync, &ran.nfsync, 5);
    assert!(sides.diff(&[]).is_empty(), "{}", sides.diff(&[]));
}

#[test]
fn lines_come_in_rsyncs_order() {
    assert_order_is_rsyncs(Via::Mount);
}

#[test]
fn lines_come_in_rsyncs_order_over_nfs() {
    assert_order_is_rsyncs(Via::InProc);
}

/// `nfsync -ai SRC/file DEST/other`: the line names the source's file, as rsync's.
fn assert_file_to_file_name(via: Via) {
    let sides = Sides::new(via);
    let src = Tree::new(sides.join("src"));
    src.file("file", "data\n");
    std::fs::create_dir(sides.join("start")).unwrap();
    sides.copy_start("start");
    let log = |side: Side| sides.join(format!("{}.log", side.name()));
    let ran = sides.run_ok("other", b"", &|side, cmd| {
        cmd.args(["-ai", "--log-file-format=%i %n"])
            .arg(format!("--log-file={}", log(side).display()))
            .arg(src.path("file"));
    });
    assert_eq!(lines(&ran.rsync), [">f+++++++++ file"]);
    assert_eq!(lines(&ran.nfsync), lines(&ran.rsync));
    let logged = |side: Side| {
        let text = std::fs::read_to_string(log(side)).unwrap();
        text.lines()
            .filter_map(|l| l.split_once("] ").map(|(_, rest)| rest.to_owned()))
            .filter(|l| l.starts_with(">f"))
            .collect::<Vec<_>>()
    };
    assert_eq!(logged(Side::Rsync), [">f+++++++++ file"]);
    assert_eq!(logged(Side::Nfsync), logged(Side::Rsync));
    assert!(sides.nfsync("other").is_file());
}

#[test]
fn a_file_copied_onto_another_name_shows_the_sources() {
    assert_file_to_file_name(Via::Mount);
}

#[test]
fn a_file_copied_onto_another_name_shows_the_sources_over_nfs() {
    assert_file_to_file_name(Via::InProc);
}
