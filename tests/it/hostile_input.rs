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
