//! The command line (clap), turned into a plain [`Config`] for the library.
//!
//! Options use rsync's spelling wherever rsync has the same idea, so existing
//! scripts port by changing the command name. Modules: [`rsync`] holds rsync's
//! selection and compatibility options and checks argv before clap sees it (so an
//! rsync option nfsync lacks is named as such, never silently ignored); `unsupported`
//! is the list of those, each with its reason; `config` builds the [`Config`].
//!
//! [`Config`]: crate::config::Config

use std::ffi::OsString;
use std::path::PathBuf;

use clap::{ArgAction, Parser, ValueEnum};

use crate::exit;
use crate::tune::Jobs;

mod chown;
mod config;
pub mod rsync;
pub mod shard;
mod unsupported;
pub mod version;

pub use rsync::check_argv;

/// How `--progress` shows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ProgressFormat {
    /// A bar on a terminal, lines elsewhere.
    Text,
    /// One JSON object a line.
    Json,
}

/// What `--generate` writes.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum Generate {
    /// bash completion script.
    Bash,
    /// zsh completion script.
    Zsh,
    /// fish completion script.
    Fish,
    /// The man page (roff).
    Man,
}

fn parse_jobs(s: &str) -> Result<Jobs, String> {
    if s == "auto" {
        return Ok(Jobs::Auto);
    }
    match s.parse::<usize>() {
        Ok(n) if (1..=crate::tune::MAX_JOBS).contains(&n) => Ok(Jobs::Fixed(n)),
        _ => Err(format!(
            "expected 'auto' or a number from 1 to {}",
            crate::tune::MAX_JOBS
        )),
    }
}

/// Sync directory trees onto NFS and EFS, many times faster than cp or rsync.
///
/// nfsync copies SRC... into DEST with rsync -a semantics (files, directories, symlinks,
/// permissions, nanosecond mtimes, owners when root), keeping many operations in flight to
/// hide network latency. `SRC/` copies the contents of SRC; `SRC` copies the directory
/// itself into DEST. DEST is a directory (e.g. an NFS or EFS mount) or nfs://server/path
/// (NFSv4.1, or NFSv3 with ?version=3; EFS: nfs://fs-ID.efs.REGION.amazonaws.com/dir?tls).
/// Re-running the same command after an interruption finishes the copy exactly.
#[derive(Debug, Parser)]
#[command(name = "nfsync", version, after_help = exit::table(), after_long_help = exit::table(),
          disable_help_flag = true, args_override_self = true)]
pub struct Cli {
    /// Print help (-h alone too; with other options -h is rsync's --human-readable).
    #[arg(long, action = ArgAction::HelpLong)]
    pub help: Option<bool>,

    /// Source files and directories, then DEST (a lone SRC is listed, as --list-only).
    #[arg(value_name = "SRC... DEST", required_unless_present = "generate", num_args = 1.., value_parser = clap::value_parser!(PathBuf))]
    pub paths: Vec<PathBuf>,

    /// Show what would change; change nothing.
    #[arg(short = 'n', long)]
    pub dry_run: bool,

    /// Delete destination entries the source lacks (in each directory after its copy).
    #[arg(long)]
    pub delete: bool,

    /// Delete at most NUM entries (each one inside a removed directory counts), then skip
    /// further deletions and exit 25; 0 deletes nothing and reports what it would.
    #[arg(long, value_name = "NUM")]
    pub max_delete: Option<u64>,

    /// Exclude paths matching PATTERN (rsync rules: leading / anchors, trailing / = dirs only).
    #[arg(long, value_name = "PATTERN", value_parser = clap::value_parser!(OsString))]
    pub exclude: Vec<OsString>,

    /// Don't exclude paths matching PATTERN (rules apply in order; the first match wins).
    #[arg(long, value_name = "PATTERN", value_parser = clap::value_parser!(OsString))]
    pub include: Vec<OsString>,

    /// Read exclude patterns from FILE ('-' for stdin; '+ PAT' includes, '- PAT' excludes).
    #[arg(long, value_name = "FILE")]
    pub exclude_from: Vec<PathBuf>,

    /// Compare file contents, not size and mtime, to decide what is up to date.
    #[arg(short = 'c', long)]
    pub checksum: bool,

    /// Skip files whose size matches, whatever their mtime.
    #[arg(long, conflicts_with = "checksum")]
    pub size_only: bool,

    /// Treat mtimes within SECS seconds as equal (default 0: whole seconds, as rsync;
    /// -1: to the nanosecond).
    #[arg(long, value_name = "SECS", default_value_t = 0, allow_negative_numbers = true,
          value_parser = clap::value_parser!(i64).range(-1..))]
    pub modify_window: i64,

    /// Files in flight: a number, or 'auto' to find the best by measuring.
    #[arg(short = 'j', long, value_name = "N|auto", default_value = "auto", value_parser = parse_jobs)]
    pub jobs: Jobs,

    /// Preserve hard links.
    #[arg(short = 'H', long)]
    pub hard_links: bool,

    /// Copy fifos and sockets (skipped otherwise, as rsync: "skipping non-regular file";
    /// part of -D and -a).
    #[arg(long, overrides_with = "no_specials")]
    pub specials: bool,

    /// Don't copy fifos and sockets.
    #[arg(long, hide = true)]
    pub no_specials: bool,

    /// Copy device files (root only; skipped otherwise, as rsync; part of -D and -a).
    #[arg(long, overrides_with = "no_devices")]
    pub devices: bool,

    /// Don't copy device files.
    #[arg(long, hide = true)]
    pub no_devices: bool,

    /// Preserve owners (default when run as root, without an rsync selection of -rlptD).
    #[arg(short = 'o', long, overrides_with = "no_owner")]
    pub owner: bool,

    /// Don't preserve owners.
    #[arg(long, alias = "no-o")]
    pub no_owner: bool,

    /// Preserve groups (default when run as root, without an rsync selection of -rlptD).
    #[arg(short = 'g', long, overrides_with = "no_group")]
    pub group: bool,

    /// Don't preserve groups.
    #[arg(long, alias = "no-g")]
    pub no_group: bool,

    /// Don't map uid/gid by name (ids are always numeric on nfsync's paths).
    #[arg(long)]
    pub numeric_ids: bool,

    /// Print each changed path and each change --jobs auto makes.
    #[arg(short, long, action = ArgAction::Count)]
    pub verbose: u8,

    /// Print errors and warnings only.
    #[arg(short, long)]
    pub quiet: bool,

    /// Show progress: a bar on a terminal (the default there); elsewhere (a log, a
    /// pipe, `kubectl logs`) a line every --stats-every. =json: one JSON object a line,
    /// on a terminal too, the last one the run's totals (--json's).
    #[arg(long, value_name = "FORMAT", num_args = 0..=1, require_equals = true,
          default_missing_value = "text", overrides_with = "no_progress", help_heading = "Output")]
    pub progress: Option<ProgressFormat>,

    /// Print a progress line every DURATION (200ms, 30s, 5m, 1h; a bare number is
    /// seconds) where no bar is shown, even without --progress (default with progress
    /// asked for: 30s): files and bytes done of found, rates over the interval and
    /// overall, ETA once the walk is done, jobs, errors. SIGUSR1 prints the line at once.
    #[arg(long, value_name = "DURATION", value_parser = parse_interval, help_heading = "Output")]
    pub stats_every: Option<std::time::Duration>,

    /// Don't show a progress bar.
    #[arg(long)]
    pub no_progress: bool,

    /// Print rsync's --stats block at the end (-h: sizes in units).
    #[arg(long)]
    pub stats: bool,

    /// Print a change summary per entry, like rsync -i (-ii: also for unchanged ones).
    #[arg(short, long, action = ArgAction::Count)]
    pub itemize_changes: u8,

    /// Print one JSON object with the run's totals on stdout at the end.
    #[arg(long)]
    pub json: bool,

    /// NFS: seconds without an answer before giving up on the server (0: wait forever).
    #[arg(long, value_name = "SECS", default_value_t = 30)]
    pub timeout: u64,

    /// rsync's selection (-a, -rlptgoD and their --no- forms) and its other options.
    #[command(flatten)]
    pub rsync: rsync::RsyncOpts,

    /// Check DEST before a migration, copying nothing: connect as a run would, write,
    /// date, read back and remove a probe file, time a round trip and the small-file
    /// rate with the run's --jobs, and estimate a run of --check-files files (exit 0:
    /// a run can write there; otherwise the code a run would end with).
    #[arg(long, help_heading = "Before a migration")]
    pub check: bool,

    /// Files the --check estimate is for.
    #[arg(long, value_name = "N", default_value_t = 100_000, requires = "check",
          value_parser = clap::value_parser!(u64).range(1..), help_heading = "Before a migration")]
    pub check_files: u64,

    /// Write a completion script or the man page to stdout.
    #[arg(long, value_name = "KIND", hide = true, exclusive = true)]
    pub generate: Option<Generate>,

    // Many machines.
    /// Copy, update and delete only share K of N (K/N, 0 <= K < N; 'slurm' reads a job
    /// array's SLURM_ARRAY_TASK_*; 'k8s/N' an Indexed Job's JOB_COMPLETION_INDEX). Run
    /// every share at once into one DEST, then the same command without --shard once
    /// (the finalize step): it sets directory attributes and copies nothing the shards
    /// copied.
    #[arg(long, value_name = "K/N|slurm|k8s/N", help_heading = "Many machines")]
    pub shard: Option<String>,

    /// Under mpirun: the ranks share the tree as they go (each takes the next piece of
    /// work no rank has taken, so a slow rank takes less); rank 0 then sets directory
    /// attributes and prints the totals of all (needs a build with --features mpi).
    #[arg(long, conflicts_with = "shard", help_heading = "Many machines")]
    pub mpi: bool,
}

/// `--stats-every`'s DURATION: a number with `ms`, `s`, `m` or `h` (seconds without).
fn parse_interval(s: &str) -> Result<std::time::Duration, String> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let scale = match unit {
        "ms" => 0.001,
        "" | "s" => 1.0,
        "m" => 60.0,
        "h" => 3600.0,
        _ => return Err(format!("unknown unit {unit:?} (use ms, s, m or h)")),
    };
    let n: f64 = num
        .parse()
        .map_err(|_| format!("{s:?} is not a duration (200ms, 30s, 5m, 1h)"))?;
    let secs = n * scale;
    if !(0.01..=1e7).contains(&secs) {
        return Err("a duration from 10ms to 115 days".into());
    }
    Ok(std::time::Duration::from_secs_f64(secs))
}

/// Writes a completion script or the man page for the CLI to `out`.
pub fn generate(kind: Generate, out: &mut dyn std::io::Write) -> std::io::Result<()> {
    use clap::CommandFactory;
    let mut cmd = Cli::command();
    match kind {
        Generate::Bash => {
            clap_complete::generate(clap_complete::Shell::Bash, &mut cmd, "nfsync", out)
        }
        Generate::Zsh => {
            clap_complete::generate(clap_complete::Shell::Zsh, &mut cmd, "nfsync", out)
        }
        Generate::Fish => {
            clap_complete::generate(clap_complete::Shell::Fish, &mut cmd, "nfsync", out)
        }
        Generate::Man => return clap_mangen::Man::new(cmd).render(out),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use clap::{CommandFactory, FromArgMatches};

    use super::Cli;
    use crate::report::progress::Mode;

    /// The progress a command line gets where stderr is, and is not, a terminal.
    fn modes(args: &[&str]) -> (Mode, Mode) {
        let argv = ["nfsync"].iter().chain(args).chain(&["a/", "b"]);
        let m = Cli::command().try_get_matches_from(argv).unwrap();
        let cfg = Cli::from_arg_matches(&m).unwrap().into_config(&m).unwrap();
        (Mode::of(&cfg, true), Mode::of(&cfg, false))
    }

    #[test]
    fn progress_is_a_bar_on_a_terminal_and_lines_in_a_log_when_asked_for() {
        let lines = |s, json| Mode::Lines {
            every: Duration::from_secs(s),
            json,
        };
        let silent = Mode::Silent { json: false };
        assert_eq!(modes(&["-a"]), (Mode::Bar, silent));
        for asked in [&["--progress"][..], &["-P"], &["--info=progress2"]] {
            assert_eq!(modes(asked), (Mode::Bar, lines(30, false)), "{asked:?}");
        }
        assert_eq!(modes(&["--stats-every=5m"]), (Mode::Bar, lines(300, false)));
        assert_eq!(
            modes(&["--no-progress", "--stats-every=5"]),
            (lines(5, false), lines(5, false))
        );
        assert_eq!(
            modes(&["--progress=json"]),
            (lines(30, true), lines(30, true))
        );
        // -q silences what progress asks for, not what --stats-every asks for.
        assert_eq!(modes(&["-q", "--progress"]), (silent, silent));
        assert_eq!(
            modes(&["-q", "--stats-every=1m"]),
            (lines(60, false), lines(60, false))
        );
    }

    #[test]
    fn intervals_read_as_people_write_them() {
        let p = super::parse_interval;
        assert_eq!(p("200ms"), Ok(Duration::from_millis(200)));
        assert_eq!(p("30"), Ok(Duration::from_secs(30)));
        assert_eq!(p("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(p("5m"), Ok(Duration::from_secs(300)));
        assert_eq!(p("1h"), Ok(Duration::from_secs(3600)));
        assert!(p("0").is_err());
        assert!(p("5d").is_err());
        assert!(p("m").is_err());
    }
}
