//! completions/ and man/ are generated from the one clap definition; these tests fail
//! when the committed files are stale. Regenerate with:
//! `for k in bash zsh fish; do nfsync --generate $k > completions/nfsync.$k; done;
//!  nfsync --generate man > man/nfsync.1`

use clap::CommandFactory;

use crate::support::nfsync;

fn generated(kind: &str) -> String {
    let out = nfsync().args(["--generate", kind]).output().unwrap();
    assert!(out.status.success(), "nfsync --generate {kind} failed");
    String::from_utf8(out.stdout).unwrap()
}

fn committed(path: &str) -> String {
    std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/").to_string() + path)
        .unwrap_or_else(|e| panic!("{path}: {e}"))
}

#[test]
fn completions_are_up_to_date() {
    for kind in ["bash", "zsh", "fish"] {
        assert_eq!(
            generated(kind),
            committed(&format!("completions/nfsync.{kind}")),
            "completions/nfsync.{kind} is stale: regenerate it (see tests/it/generated.rs)"
        );
    }
}

#[test]
fn man_page_is_up_to_date() {
    assert_eq!(
        generated("man"),
        committed("man/nfsync.1"),
        "man/nfsync.1 is stale"
    );
}

#[test]
fn cli_definition_is_consistent() {
    nfsync::cli::Cli::command().debug_assert();
}

#[test]
fn help_documents_exit_codes() {
    let out = nfsync().arg("--help").output().unwrap();
    let help = String::from_utf8(out.stdout).unwrap();
    for code in ["23", "24", "partial transfer"] {
        assert!(help.contains(code), "--help lacks {code:?}");
    }
}
