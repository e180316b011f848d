//! Input chosen by someone else: merge files in a source others can write, file names
//! with control characters, absurd numbers on the command line. Each ends the run
//! with a message and rsync's code (or is printed harmlessly), never with a crash,
//! and never prints a merge file's text back.

use std::fs;
use std::path::Path;
use std::process::Output;

use crate::support::{describe, run_nfsync};

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A source with one file, and an empty DEST.
fn tree(root: &Path) {
    fs::create_dir_all(root.join("src/sub")).unwrap();
    fs::create_dir_all(root.join("dst")).unwrap();
    fs::write(root.join("src/f"), "hi\n").unwrap();
}

#[test]
fn a_merge_file_that_merges_itself_stops_at_rsyncs_depth() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    tree(root);
    // A per-directory file merging itself, at the top and (with -F) below it, and two
    // files merging each other from the command line.
    fs::write(root.join("src/.merge"), ". .merge\n").unwrap();
    fs::write(root.join("src/sub/.rsync-filter"), ". .rsync-filter\n").unwrap();
    fs::write(
        root.join("one"),
        format!(". {}\n", root.join("two").display()),
    )
    .unwrap();
    fs::write(
        root.join("two"),
        format!(". {}\n", root.join("one").display()),
    )
    .unwrap();
    let merge_one = format!(". {}", root.join("one").display());
    for args in [
        &["-a", "--filter=: .merge"][..],
        &["-aF"],
        &["-a", "-f", &merge_one],
    ] {
        let out = run_nfsync(args, &root.join("src"), root.join("dst"));
        assert_eq!(out.status.code(), Some(11), "{args:?}: {}", describe(&out));
        let err = stderr(&out);
        assert!(
            err.contains(
                "merge-file include depth limit (32) exceeded at <rule from a file named at"
            ),
            "{args:?}: {err}"
        );
    }
}

#[test]
fn a_merge_files_text_is_located_not_echoed() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    tree(root);
    let secret = "TOP-SECRET-abc123";
    let at = |name: &str| root.join(name).display().to_string();
    fs::write(root.join("rules"), format!("{secret}\n")).unwrap();
    fs::write(root.join("outer"), format!(". {}\n", at("inner"))).unwrap();
    fs::write(root.join("inner"), format!("-e {secret}\n")).unwrap();
    fs::write(root.join("nested"), format!(". {secret}\n")).unwrap();
    fs::write(root.join("crlf"), "- harmless\r\nZbad\r\n").unwrap();
    let src = root.join("src");
    // (rule, exit code, where the message says the bad rule is)
    for (rule, code, place) in [
        (
            format!(". {}", at("rules")),
            1,
            format!("<rule from {} line 1>", at("rules")),
        ),
        (
            format!(". {}", at("outer")),
            1,
            format!("<rule from a file named at {} line 1>", at("outer")),
        ),
        (
            format!(". {}", at("nested")),
            11,
            format!(
                "failed to open exclude file <rule from {} line 1>\n",
                at("nested")
            ),
        ),
        (
            format!(". {}", at("crlf")),
            1,
            format!("{} line 2>", at("crlf")),
        ),
    ] {
        let out = run_nfsync(&["-r", "-f", &rule], &src, root.join("dst"));
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(code), "{rule}: {}", describe(&out));
        assert!(err.contains(&place), "{rule}: {err}");
        assert!(
            !err.contains(secret) && !err.contains("inner"),
            "{rule}: {err}"
        );
    }
    // A per-directory file's bad line is reported there, named by its path.
    fs::write(src.join("sub/.rsync-filter"), format!("Z{secret}\n")).unwrap();
    let out = run_nfsync(&["-rF"], &src, root.join("dst"));
    let err = stderr(&out);
    assert!(err.contains("sub/.rsync-filter line 1>"), "{err}");
    assert!(!err.contains(secret), "{err}");
    // A rule given as an argument is the user's own: it is shown.
    let out = run_nfsync(&["-r", "-f", "Zbogus-rule"], &src, root.join("dst"));
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("Unknown filter rule: Zbogus-rule"));
}

/// `--log-file` lines without their time, pid and run-specific lines, sorted (nfsync
/// copies in parallel), each made readable (`\x1b` for a raw byte).
fn log_lines(log: &Path) -> Vec<String> {
    let data = fs::read(log).unwrap();
    let mut lines: Vec<String> = data
        .split(|&b| b == b'\n')
        .filter_map(|l| {
            let l = l.splitn(4, |&b| b == b' ').nth(3)?;
            let own = [&b"created directory"[..], b"sent ", b"total size"];
            (!own.iter().any(|p| l.starts_with(p))).then(|| l.escape_ascii().to_string())
        })
        .collect();
    lines.sort();
    lines
}

#[test]
fn log_file_escapes_control_characters_as_rsync_does() {
    use std::os::unix::ffi::OsStrExt;
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let src = root.join("src");
    fs::create_dir(&src).unwrap();
    let names: [&[u8]; 6] = [
        b"c0_\x1b_esc",
        b"c1_\x9b_csi",
        b"nl_\n_x",
        b"tab_\t_x",
        b"del_\x7f_x",
        b"bs_\\#123_x",
    ];
    for n in names {
        fs::write(src.join(std::ffi::OsStr::from_bytes(n)), "x").unwrap();
    }
    let rsync = std::process::Command::new("rsync")
        .args(["-rv", "--log-file"])
        .arg(root.join("rsync.log"))
        .arg(crate::support::slash(&src))
        .arg(root.join("by_rsync"))
        .output()
        .unwrap();
    assert!(rsync.status.success(), "{}", describe(&rsync));
    let log = format!("--log-file={}", root.join("nfsync.log").display());
    let out = run_nfsync(&["-rv", &log], &src, root.join("by_nfsync"));
    assert!(out.status.success(), "{}", describe(&out));
    let ours = log_lines(&root.join("nfsync.log"));
    assert!(
        ours.iter().any(|l| l.ends_with("c0_\\\\#033_esc")),
        "{ours:?}"
    );
    assert_eq!(ours, log_lines(&root.join("rsync.log")));
}

#[test]
fn absurd_numbers_are_refused_as_usage_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    tree(root);
    for (args, reason) in [
        (
            &["-r", "--shard", "4294967295/4294967296"][..],
            "4294967296 shards is more than nfsync deals (65536 at most)",
        ),
        (
            &["-r", "--shard", "18446744073709551614/18446744073709551615"],
            "(65536 at most)",
        ),
        (
            &["-r", "--out-format", "%99999999999l %n"],
            "%99999999999l: a field is at most 4096 wide",
        ),
    ] {
        let out = run_nfsync(args, &root.join("src"), root.join("dst"));
        assert_eq!(out.status.code(), Some(1), "{args:?}: {}", describe(&out));
        let err = stderr(&out);
        assert!(
            err.lines().next().unwrap().contains(reason),
            "{args:?}: {err}"
        );
    }
    // The largest allowed still runs.
    let out = run_nfsync(
        &["-r", "--shard", "65535/65536"],
        &root.join("src"),
        root.join("dst"),
    );
    assert!(out.status.success(), "{}", describe(&out));
}
