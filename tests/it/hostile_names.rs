//! File names that try to drive the terminal, as a hostile NFS server or a tree someone
//! else fills can hand them over: an escape sequence (colours, a window title, clearing
//! the screen), a newline faking a line, a carriage return overwriting one, a byte that
//! is not UTF-8. Whatever nfsync prints about them (per-file lines, errors, warnings,
//! notes, the log file) must hold no raw control character, only rsync's `\#ooo`; where
//! rsync prints the same line, the same bytes.

use std::ffi::OsStr;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output};

use crate::support::{Scratch, Tree, bytes_path, describe, nfsync, nobody, slash};

/// The names (each a file at the top and in `sub/`), and how rsync prints them.
const NAMES: [(&[u8], &str); 5] = [
    (b"a\x1b[31mred", "a\\#033[31mred"),
    (b"nl\nname", "nl\\#012name"),
    (b"bad\xffname", "bad\\#377name"),
    (b"cr\rx", "cr\\#015x"),
    (b"title\x1b]0;pwned\x07", "title\\#033]0;pwned\\#007"),
];

/// A directory's name too: `d\x1b[2Jdir/f`.
const DIR: &str = "d\x1b[2Jdir";
const DIR_SHOWN: &str = "d\\#033[2Jdir";

fn hostile(root: &Path) -> Tree {
    let t = Tree::new(root);
    for (n, _) in NAMES {
        t.file(bytes_path(n), "x");
        t.file(Path::new("sub").join(bytes_path(n)), "y");
    }
    t.file(Path::new(DIR).join("f"), "z");
    t.age();
    t
}

/// Panics unless `bytes` are UTF-8 without a control character but newline and tab
/// (and without DEL): nothing in them can move the cursor, recolour the terminal or
/// fake a line.
fn assert_inert(what: &str, bytes: &[u8]) {
    let bad = |&b: &u8| (b < b' ' && b != b'\n' && b != b'\t') || b == 0x7f;
    if let Some(i) = bytes.iter().position(bad) {
        panic!(
            "{what}: raw byte {:#04x} at {i}:\n{}",
            bytes[i],
            bytes.escape_ascii()
        );
    }
    assert!(
        std::str::from_utf8(bytes).is_ok(),
        "{what}: not UTF-8:\n{}",
        bytes.escape_ascii()
    );
}

/// Both streams of a run inert.
fn assert_run_inert(what: &str, out: &Output) {
    assert_inert(&format!("{what}: stdout"), &out.stdout);
    assert_inert(&format!("{what}: stderr"), &out.stderr);
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The lines of `bytes` that show an escaped byte, sorted (nfsync's come in the order
/// its jobs finish), without the program's name where a message starts with it.
fn escaped_lines(bytes: &[u8]) -> Vec<String> {
    let mut l: Vec<String> = text(bytes)
        .lines()
        .filter(|l| l.contains("\\#"))
        .map(|l| {
            l.trim_start_matches("rsync: ")
                .trim_start_matches("nfsync: ")
        })
        .map(str::to_string)
        .collect();
    l.sort();
    l
}

/// rsync and nfsync with the same arguments, each from its own working directory in
/// `s` (so that a DEST named `dst` is named alike in their lines).
fn both(s: &Scratch, name: &str, args: &[&OsStr]) -> (Output, Output) {
    let (wa, wb) = (
        s.join(format!("{name}/rsync")),
        s.join(format!("{name}/nfsync")),
    );
    fs::create_dir_all(&wa).unwrap();
    fs::create_dir_all(&wb).unwrap();
    let rsync = Command::new("rsync")
        .current_dir(&wa)
        .env("LANG", "C.UTF-8")
        .args(args)
        .output()
        .expect("run rsync");
    let ours = nfsync().current_dir(&wb).args(args).output().unwrap();
    (rsync, ours)
}

#[test]
fn list_only_itemize_and_out_format_escape_names_as_rsync() {
    let s = Scratch::new();
    let src = hostile(&s.join("src"));
    let from = slash(src.root());
    for (name, flags) in [
        ("list", &["-r", "--list-only"][..]),
        ("itemize", &["-ai"]),
        ("out_format", &["-a", "--out-format=%n%L"]),
        ("verbose", &["-av"]),
    ] {
        let mut args: Vec<&OsStr> = flags.iter().map(OsStr::new).collect();
        args.push(&from);
        if name != "list" {
            args.push(OsStr::new("dst"));
        }
        let (rsync, ours) = both(&s, name, &args);
        assert!(
            rsync.status.success(),
            "{name}: rsync: {}",
            describe(&rsync)
        );
        assert!(ours.status.success(), "{name}: {}", describe(&ours));
        assert_run_inert(name, &ours);
        let got = escaped_lines(&ours.stdout);
        for (_, shown) in NAMES {
            assert!(got.iter().any(|l| l.ends_with(shown)), "{name}: {got:?}");
        }
        assert_eq!(
            got,
            escaped_lines(&rsync.stdout),
            "{name}: differs from rsync"
        );
    }
}

#[test]
fn log_file_progress_and_summaries_escape_names() {
    let s = Scratch::new();
    let src = hostile(&s.join("src"));
    let log = s.join("log");
    let log_arg = format!("--log-file={}", log.display());
    for (i, flags) in [
        &["-av", "--stats", &log_arg][..],
        &["-a", "--progress"],
        &["-a", "--info=progress2"],
        &["-av", "--json"],
        &["-avv"],
        &["-ai", "--log-file-format=%i %n %f %L"],
    ]
    .iter()
    .enumerate()
    {
        let out = nfsync()
            .args(*flags)
            .arg(slash(src.root()))
            .arg(s.join(format!("dst{i}")))
            .output()
            .unwrap();
        assert!(out.status.success(), "{flags:?}: {}", describe(&out));
        assert_run_inert(&format!("{flags:?}"), &out);
    }
    let logged = fs::read(&log).unwrap();
    assert_inert("--log-file", &logged);
    for (_, shown) in NAMES {
        assert!(
            text(&logged).contains(&format!(">f+++++++++ sub/{shown}\n")),
            "{}",
            text(&logged)
        );
    }
    // Run again: -vv names each file already up to date, as rsync does.
    let again = nfsync()
        .args(["-avv"])
        .arg(slash(src.root()))
        .arg(s.join("dst4"))
        .output()
        .unwrap();
    assert_run_inert("-vv again", &again);
    let uptodate = format!("{} is uptodate", NAMES[0].1);
    assert!(
        text(&again.stdout).contains(&uptodate),
        "{}",
        describe(&again)
    );
}

#[test]
fn deletions_escape_names_as_rsync() {
    let s = Scratch::new();
    let src = Tree::new(s.join("src"));
    src.file("keep", "k");
    src.age();
    let old = hostile(&s.join("old"));
    for (name, flags) in [
        ("del_v", &["-av", "--delete"][..]),
        ("del_i", &["-ai", "--delete"]),
    ] {
        let mut args: Vec<&OsStr> = flags.iter().map(OsStr::new).collect();
        let from = slash(src.root());
        args.extend([from.as_os_str(), OsStr::new("dst")]);
        for side in ["rsync", "nfsync"] {
            let wd = s.join(format!("{name}/{side}"));
            fs::create_dir_all(&wd).unwrap();
            crate::support::copy_tree(old.root(), &wd.join("dst"));
        }
        let (rsync, ours) = both(&s, name, &args);
        assert!(
            rsync.status.success(),
            "{name}: rsync: {}",
            describe(&rsync)
        );
        assert!(ours.status.success(), "{name}: {}", describe(&ours));
        assert_run_inert(name, &ours);
        let got = escaped_lines(&ours.stdout);
        assert!(
            got.iter()
                .any(|l| l.contains("deleting") && l.ends_with(NAMES[0].1)),
            "{name}: {got:?}"
        );
        assert_eq!(
            got,
            escaped_lines(&rsync.stdout),
            "{name}: differs from rsync"
        );
    }
}

/// Files and a directory nfsync cannot read, their errors on stderr and in the log.
#[test]
fn per_file_errors_escape_names() {
    let s = nobody::scratch();
    let src = hostile(&s.join("src"));
    nobody::hand_over(s.path());
    let unreadable = [
        src.path(bytes_path(NAMES[0].0)),
        src.path(Path::new("sub").join(bytes_path(NAMES[2].0))),
        src.path(DIR),
    ];
    for p in &unreadable {
        fs::set_permissions(p, fs::Permissions::from_mode(0o000)).unwrap();
    }
    let log = s.join("log");
    let log_arg = format!("--log-file={}", log.display());
    let dst = s.join("dst");
    let from = slash(src.root());
    let out = nobody::run(&[
        OsStr::new("-r"),
        OsStr::new(&log_arg),
        &from,
        dst.as_os_str(),
    ]);
    assert_eq!(out.status.code(), Some(23), "{}", describe(&out));
    assert_run_inert("errors", &out);
    let logged = fs::read(&log).unwrap();
    assert_inert("--log-file", &logged);
    let err = text(&out.stderr);
    for shown in [
        NAMES[0].1.to_string(),
        format!("sub/{}", NAMES[2].1),
        DIR_SHOWN.to_string(),
    ] {
        let line = format!("{shown}: Permission denied");
        assert!(err.contains(&line), "{line}:\n{err}");
        assert!(text(&logged).contains(&line), "{line}:\n{}", text(&logged));
    }
}

/// Messages other than per-file lines and errors: rsync's `skipping directory`, a
/// directory in the way of a file, the filter trace, a missing source (the error that
/// ends the run).
#[test]
fn notes_and_run_ending_errors_escape_names() {
    let s = Scratch::new();
    let src = hostile(&s.join("src"));
    // Without -r a directory operand is skipped, in rsync's words.
    let dir = src.path(DIR);
    let (rsync, ours) = both(
        &s,
        "skip",
        &[
            OsStr::new("-a"),
            OsStr::new("--no-r"),
            dir.as_os_str(),
            OsStr::new("dst"),
        ],
    );
    assert_run_inert("skip", &ours);
    let skipped = vec![format!("skipping directory {DIR_SHOWN}")];
    assert_eq!(escaped_lines(&ours.stdout), skipped, "{}", describe(&ours));
    assert_eq!(escaped_lines(&rsync.stdout), skipped);

    // A non-empty directory where the source has a file: kept, and said so.
    let red = bytes_path(NAMES[0].0);
    let in_way = s.join("in_way");
    Tree::new(&in_way).file(red.join("inner/f"), "f");
    let out = nfsync()
        .arg("-r")
        .arg(slash(src.root()))
        .arg(&in_way)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(23), "{}", describe(&out));
    assert_run_inert("in the way", &out);
    let shown = NAMES[0].1;
    assert!(text(&out.stdout).contains(&format!("cannot delete non-empty directory: {shown}\n")));
    assert!(text(&out.stderr).contains(&format!(
        "could not make way for new regular file: {shown}\n"
    )));

    // -vv traces the filter's decisions by name.
    let out = nfsync()
        .args(["-r", "-vv", "--exclude=*red"])
        .arg(slash(src.root()))
        .arg(s.join("traced"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", describe(&out));
    assert_run_inert("filter trace", &out);
    let hiding = format!("[sender] hiding file {shown} because of pattern *red\n");
    assert!(text(&out.stdout).contains(&hiding), "{}", describe(&out));

    // A source that is not there ends the run, its name in the error escaped.
    let mut missing = src.root().as_os_str().to_owned();
    missing.push(OsStr::from_bytes(b"/missing\x1b]0;pwned\x07\xfe"));
    let out = nfsync()
        .arg("-r")
        .arg(&missing)
        .arg(s.join("none"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", describe(&out));
    assert_run_inert("missing source", &out);
    assert!(
        text(&out.stderr).contains("/missing\\#033]0;pwned\\#007\\#376: No such file"),
        "{}",
        describe(&out)
    );
}
