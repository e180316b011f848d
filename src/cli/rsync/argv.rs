//! A look at argv before clap parses it.
//!
//! That look exists because clap would answer an rsync option nfsync lacks with
//! "unexpected argument", and scripts probe for support by grepping rsync's own words:
//! an option nobody knows is `--X: unknown option`, and one rsync has but nfsync does
//! not implement is refused by name with the reason (see `unsupported`), never
//! silently ignored.

use std::ffi::OsString;

use clap::CommandFactory;

use crate::cli::Cli;
use crate::cli::unsupported::{self, Unsupported};

/// Why argv was refused before clap saw it.
#[derive(Debug, thiserror::Error)]
pub enum ArgvError {
    /// Neither nfsync nor rsync has this option (rsync's wording, which scripts grep).
    #[error("{0}: unknown option")]
    Unknown(String),
    /// rsync has it; nfsync does not do it.
    #[error("{} is not supported ({})", .0.spelled, .0.why)]
    Unsupported(Refused),
}

/// An rsync option nfsync refuses, as it was spelled.
#[derive(Debug)]
pub struct Refused {
    /// `--rsh`, or `-e (--rsh)` for a short option.
    pub spelled: String,
    /// Why nfsync does not do it.
    pub why: &'static str,
}

/// argv as clap should see it, and how often it asked for the version.
#[derive(Debug)]
pub struct Checked {
    /// The arguments for clap.
    pub args: Vec<OsString>,
    /// How many `-V`/`--version` it holds: one asks rsync's text, two its JSON.
    pub version: u8,
}

/// Checks every option in `args` (argv without the program name): each must be one
/// nfsync knows. Returns argv as clap should see it: rsync's lone `-h` means --help,
/// and `--no-X` of a refused `--X` is dropped (nfsync never does X, as asked).
pub fn check_argv(mut args: Vec<OsString>) -> Result<Checked, ArgvError> {
    if args.len() == 1 && args[0] == "-h" {
        return Ok(Checked {
            args: vec!["--help".into()],
            version: 0,
        });
    }
    let mut version = 0u8;
    let cmd = Cli::command();
    let long = |name: &str| {
        cmd.get_arguments().find(|a| {
            a.get_long() == Some(name) || a.get_all_aliases().is_some_and(|al| al.contains(&name))
        })
    };
    let short = |c: char| cmd.get_arguments().find(|a| a.get_short() == Some(c));
    let takes_value = |a: &clap::Arg| a.get_action().takes_values();
    let mut i = 0;
    while i < args.len() {
        let arg = args[i].to_string_lossy();
        i += 1;
        if arg == "--" {
            break;
        }
        if let Some(opt) = arg.strip_prefix("--") {
            let (name, has_value) = match opt.split_once('=') {
                Some((n, _)) => (n, true),
                None => (opt, false),
            };
            // clap's own --version, and nfsync's hidden --generate.
            if name == "version" {
                version = version.saturating_add(1);
                continue;
            }
            match long(name) {
                // `--progress=json`'s value is only ever joined by `=`.
                Some(a) if takes_value(a) && !has_value && !a.is_require_equals_set() => i += 1,
                Some(_) => {}
                // `--no-X` of a refused `--X`; a refused option that is itself spelled
                // `--no-...` (`--no-implied-dirs`) stays refused.
                None if name.starts_with("no-")
                    && unsupported::long(name).is_some_and(|u| u.long != name) =>
                {
                    i -= 1;
                    args.remove(i);
                }
                None => return Err(refuse(&format!("--{name}"), unsupported::long(name))),
            }
        } else if let Some(bundle) = arg.strip_prefix('-').filter(|b| !b.is_empty()) {
            for (at, c) in bundle.char_indices() {
                if c == 'V' {
                    version = version.saturating_add(1);
                    continue;
                }
                match short(c) {
                    // The rest of the bundle is its value, or the next argument is.
                    Some(a) if takes_value(a) => {
                        if at + c.len_utf8() == bundle.len() {
                            i += 1;
                        }
                        break;
                    }
                    Some(_) => {}
                    None => return Err(refuse(&format!("-{c}"), unsupported::short(c))),
                }
            }
        }
    }
    Ok(Checked { args, version })
}

fn refuse(spelled: &str, known: Option<Unsupported>) -> ArgvError {
    match known {
        None => ArgvError::Unknown(spelled.to_owned()),
        Some(u) => ArgvError::Unsupported(Refused {
            spelled: match u.long {
                long if spelled.len() == 2 && !long.is_empty() => format!("{spelled} (--{long})"),
                _ => spelled.to_owned(),
            },
            why: u.why,
        }),
    }
}
