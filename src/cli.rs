//! The command line (clap), turned into a plain [`Config`] for the library.
//!
//! Options use rsync's spelling wherever rsync has the same idea, so existing
//! scripts port by changing the command name.

use std::ffi::OsString;
use std::fs::File;
use std::io::BufReader;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;
use std::time::Duration;

use clap::{ArgAction, Parser, ValueEnum};

use crate::config::Config;
use crate::dest::OwnerPolicy;
use crate::exit;
use crate::filter::Filter;
use crate::plan::Compare;
use crate::tune::Jobs;

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
#[command(name = "nfsync", version, after_help = exit::TABLE, after_long_help = exit::TABLE)]
pub struct Cli {
    /// Source files and directories, then DEST.
    #[arg(value_name = "SRC... DEST", required_unless_present = "generate", num_args = 2.., value_parser = clap::value_parser!(PathBuf))]
    pub paths: Vec<PathBuf>,

    /// Accepted for rsync compatibility: nfsync always works like rsync -a.
    #[arg(short = 'a', long)]
    pub archive: bool,

    /// Accepted for rsync compatibility: nfsync always recurses.
    #[arg(short = 'r', long)]
    pub recursive: bool,

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

    /// Treat mtimes within SECS seconds as equal.
    #[arg(long, value_name = "SECS")]
    pub modify_window: Option<u64>,

    /// Files in flight: a number, or 'auto' to find the best by measuring.
    #[arg(short = 'j', long, value_name = "N|auto", default_value = "auto", value_parser = parse_jobs)]
    pub jobs: Jobs,

    /// Preserve hard links.
    #[arg(short = 'H', long)]
    pub hard_links: bool,

    /// Copy fifos and sockets (skipped with a warning otherwise).
    #[arg(long)]
    pub specials: bool,

    /// Copy device files (root only; skipped with a warning otherwise).
    #[arg(long)]
    pub devices: bool,

    /// Preserve owners (default when run as root).
    #[arg(long, overrides_with = "no_owner")]
    pub owner: bool,

    /// Don't preserve owners.
    #[arg(long)]
    pub no_owner: bool,

    /// Preserve groups (default when run as root).
    #[arg(long, overrides_with = "no_group")]
    pub group: bool,

    /// Don't preserve groups.
    #[arg(long)]
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

    /// Show a progress bar on a terminal (the default).
    #[arg(long, overrides_with = "no_progress")]
    pub progress: bool,

    /// Don't show a progress bar.
    #[arg(long)]
    pub no_progress: bool,

    /// Print rsync-like totals at the end.
    #[arg(long)]
    pub stats: bool,

    /// Print a change summary per entry, like rsync -i.
    #[arg(short, long)]
    pub itemize_changes: bool,

    /// Print one JSON object with the run's totals on stdout at the end.
    #[arg(long)]
    pub json: bool,

    /// NFS: seconds without an answer before giving up on the server (0: wait forever).
    #[arg(long, value_name = "SECS", default_value_t = 30)]
    pub timeout: u64,

    /// Write a completion script or the man page to stdout.
    #[arg(long, value_name = "KIND", hide = true, exclusive = true)]
    pub generate: Option<Generate>,
}

impl Cli {
    /// Builds the engine's configuration; `matches` gives the options' positions so
    /// filter rules keep their command-line order. Errors are usage errors (exit 1).
    pub fn into_config(self, matches: &clap::ArgMatches) -> anyhow::Result<Config> {
        let mut paths = self.paths;
        let dest = paths.pop().expect("clap requires two paths");
        let mut filter = Filter::default();
        // rsync applies rules in command-line order; clap gives each option's values
        // separately, so interleave them by their original positions.
        let positions = |id: &str| -> Vec<usize> {
            matches
                .indices_of(id)
                .map(|i| i.collect())
                .unwrap_or_default()
        };
        let (ex_pos, in_pos) = (positions("exclude"), positions("include"));
        let mut rules: Vec<(usize, bool, OsString)> = Vec::new();
        for (i, p) in self.exclude.into_iter().enumerate() {
            rules.push((ex_pos.get(i).copied().unwrap_or(usize::MAX), false, p));
        }
        for (i, p) in self.include.into_iter().enumerate() {
            rules.push((in_pos.get(i).copied().unwrap_or(0), true, p));
        }
        rules.sort_by_key(|r| r.0);
        for (_, include, p) in rules {
            filter
                .add(p.as_bytes(), include)
                .map_err(|e| anyhow::anyhow!("bad pattern {p:?}: {e}"))?;
        }
        for f in self.exclude_from {
            let res = if f.as_os_str() == "-" {
                filter.add_from_reader(std::io::stdin().lock())
            } else {
                File::open(&f).and_then(|r| filter.add_from_reader(BufReader::new(r)))
            };
            res.map_err(|e| anyhow::anyhow!("{}: {e}", f.display()))?;
        }
        let root = rustix::process::geteuid().is_root();
        let owners = OwnerPolicy {
            owner: !self.no_owner && (self.owner || root),
            group: !self.no_group && (self.group || root),
        };
        Ok(Config {
            sources: paths,
            dest,
            dry_run: self.dry_run,
            delete: self.delete,
            max_delete: self.max_delete,
            filter,
            compare: if self.checksum {
                Compare::Checksum
            } else if self.size_only {
                Compare::SizeOnly
            } else {
                Compare::QuickCheck
            },
            modify_window: self.modify_window,
            jobs: self.jobs,
            hard_links: self.hard_links,
            owners,
            numeric_ids: self.numeric_ids,
            specials: self.specials,
            devices: self.devices,
            verbose: self.verbose,
            quiet: self.quiet,
            progress: !self.no_progress && !self.quiet,
            stats: self.stats,
            itemize: self.itemize_changes,
            json: self.json,
            // 0 means no timeout, as in rsync: a wait of 136 years, which every timer
            // and every multiple of it still holds without overflow.
            timeout: Duration::from_secs(match self.timeout {
                0 => u64::from(u32::MAX),
                s => s,
            }),
        })
    }
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
