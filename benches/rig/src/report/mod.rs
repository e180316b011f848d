//! `rig report KIND`: the one report writer of benches/.
//!
//! Each script hands over its raw TSV (one line per run) and a machine
//! description (`key: value` lines); the report of that kind is written into
//! `--out` as the latest one (the previous is overwritten: git keeps the old
//! ones), printed on stdout, and one line for the run is appended to the
//! history table (`--history`, benches/results/history.md).
//!
//! * `run` (benches/run): every tool on the latency mount: `latest.md`,
//!   `latest.svg` (chart), `latest.tsv` (the raw input).
//! * `nfs` (benches/run-nfs): the same tables and chart, headed by the
//!   NFS-wire summary (nfs:// against the mount path, nfs-cp baselines).
//! * `sweep` (benches/sweep): `--jobs auto` against the best fixed `--jobs`:
//!   `sweep-latest.md`, `sweep-latest.tsv`.
//! * `chart`: `latest.svg` drawn again from a committed `latest.md` (the raw
//!   TSV is not kept), e.g. after editing the report by hand.
//! * `history`: appends a line given on the command line, for the scripts
//!   whose figures are not computed here (validate-latency, ab, ab-nfs).

mod chart;
mod mt;
mod nfs;
mod run;
mod sweep;

use std::fmt::Write as _;
use std::io::{self, Write as _};
use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};

#[derive(Subcommand)]
pub enum Cmd {
    /// benches/run: every tool onto the latency mount (latest.md, latest.svg, latest.tsv).
    Run {
        #[command(flatten)]
        input: Input,
    },
    /// benches/run-nfs: the run tables headed by the NFS-wire summary.
    Nfs {
        #[command(flatten)]
        input: Input,
        /// Presets in column order (default: in the order of RAW).
        #[arg(long, value_delimiter = ',')]
        presets: Vec<String>,
    },
    /// benches/sweep: --jobs auto against the best fixed --jobs (sweep-latest.md, sweep-latest.tsv).
    Sweep {
        #[command(flatten)]
        input: Input,
        /// Markdown to print under "## Notes".
        #[arg(long)]
        notes: Option<PathBuf>,
    },
    /// Draw a run report's chart from its markdown tables (REPORT → OUT.svg).
    Chart {
        /// A report of `rig report run` or `nfs` (latest.md).
        report: PathBuf,
        /// The SVG to write.
        #[arg(long)]
        out: PathBuf,
    },
    /// Append one line to a history table (created with its header if missing).
    History {
        file: PathBuf,
        #[command(flatten)]
        entry: Entry,
    },
}

#[derive(Args)]
pub struct Input {
    /// Raw TSV written by the script (header line, then one line per run).
    raw: PathBuf,
    /// Machine and run description (the script's `key: value` lines).
    #[arg(long)]
    machine: PathBuf,
    /// Directory of the latest report of this kind (overwritten).
    #[arg(long)]
    out: PathBuf,
    /// The script's command line, quoted in the report and the history.
    #[arg(long)]
    cmdline: String,
    /// When the run finished (UTC, `YYYY-MM-DD HH:MM`), for the history line.
    #[arg(long)]
    date: String,
    /// Append a line for this run to this history table.
    #[arg(long)]
    history: Option<PathBuf>,
}

/// One line of the history table.
#[derive(Args)]
pub struct Entry {
    /// UTC, `YYYY-MM-DD HH:MM`.
    #[arg(long)]
    date: String,
    /// The nfsync commit measured.
    #[arg(long)]
    commit: String,
    /// The command line of the run.
    #[arg(long)]
    command: String,
    /// Presets (or delays) of the run.
    #[arg(long)]
    presets: String,
    /// The run's headline figures.
    #[arg(long)]
    figures: String,
}

pub fn run(cmd: Cmd) -> io::Result<()> {
    match cmd {
        Cmd::Run { input } => {
            let (raw, machine) = input.read()?;
            let rows = run::rows(&raw);
            let md = run::markdown(&rows, &machine, &input.cmdline, None);
            let presets = run::presets(&rows);
            input.write_run(&rows, md, &machine, presets, run::figures(&rows))
        }
        Cmd::Nfs { input, presets } => {
            let (raw, machine) = input.read()?;
            let rows = run::rows(&raw);
            let nfs = nfs::Summary::new(&raw, presets);
            let head = format!("{}{}", nfs.v41_markdown(&machine), nfs.markdown());
            let md = run::markdown(&rows, &machine, &input.cmdline, Some(&head));
            input.write_run(&rows, md, &machine, nfs.presets(), nfs.figures())
        }
        Cmd::Sweep { input, notes } => {
            let (raw, machine) = input.read()?;
            let notes = match notes {
                Some(p) => std::fs::read_to_string(p)?,
                None => String::new(),
            };
            let sweep = sweep::Sweep::new(&raw);
            let md = sweep.markdown(&machine, &input.cmdline, &notes);
            input.write_files(&[("sweep-latest.md", &md)], "sweep-latest.tsv")?;
            print!("{md}");
            input.append_history(&machine, sweep.presets(), sweep.figures())
        }
        Cmd::Chart { report, out } => {
            let md = std::fs::read_to_string(&report)?;
            let rows = chart::rows(&md);
            if rows.is_empty() {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("{}: no run table in it", report.display()),
                ));
            }
            std::fs::write(out, chart::svg(&md))
        }
        Cmd::History { file, entry } => append(&file, &entry),
    }
}

impl Input {
    fn read(&self) -> io::Result<(String, String)> {
        let raw = std::fs::read_to_string(&self.raw)?;
        let machine = std::fs::read_to_string(&self.machine).unwrap_or_default();
        Ok((raw, machine))
    }

    /// The run/nfs kinds: markdown with its chart, raw copy, history line.
    fn write_run(
        &self,
        rows: &[run::Row],
        mut md: String,
        machine: &str,
        presets: String,
        figures: String,
    ) -> io::Result<()> {
        let _ = writeln!(md, "![files/s per tool per preset](latest.svg)\n");
        let chart = run::svg(rows, run::CHART_TITLE);
        self.write_files(&[("latest.md", &md), ("latest.svg", &chart)], "latest.tsv")?;
        print!("{md}");
        self.append_history(machine, presets, figures)
    }

    /// Write `files` into --out and copy the raw TSV there as `raw_name`.
    fn write_files(&self, files: &[(&str, &String)], raw_name: &str) -> io::Result<()> {
        std::fs::create_dir_all(&self.out)?;
        for (name, text) in files {
            std::fs::write(self.out.join(name), text)?;
        }
        let raw_copy = self.out.join(raw_name);
        if !same_file(&self.raw, &raw_copy) {
            std::fs::copy(&self.raw, raw_copy)?;
        }
        Ok(())
    }

    fn append_history(&self, machine: &str, presets: String, figures: String) -> io::Result<()> {
        let Some(file) = &self.history else {
            return Ok(());
        };
        append(
            file,
            &Entry {
                date: self.date.clone(),
                commit: commit_of(machine),
                command: self.cmdline.clone(),
                presets,
                figures,
            },
        )
    }
}

fn same_file(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

/// The header of a new history table; the lines follow it.
const HISTORY_HEAD: &str = "# Benchmark history\n\n\
One line per run of a benches/ script, appended by the script when it finishes \
(`rig report … --history`). files/s unless said otherwise.\n\n\
| date (UTC) | commit | command | presets | figures |\n\
|---|---|---|---|---|\n";

/// Append one line to the history table `file` (with its header if new).
pub fn append(file: &Path, e: &Entry) -> io::Result<()> {
    let new = std::fs::metadata(file).map_or(true, |m| m.len() == 0);
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(file)?;
    if new {
        f.write_all(HISTORY_HEAD.as_bytes())?;
    }
    let cell = |s: &str| s.replace('|', "\\|").replace('\n', " ");
    writeln!(
        f,
        "| {} | {} | `{}` | {} | {} |",
        cell(&e.date),
        cell(&e.commit),
        cell(e.command.trim()),
        cell(&e.presets),
        cell(&e.figures)
    )
}

/// The nfsync commit a machine description names (its `nfsync:` line):
/// `abc1234`, `abc1234+dirty` when src had uncommitted changes, or the
/// worktree's HEAD when a binary was given (`--nfsync BIN`).
pub fn commit_of(machine: &str) -> String {
    let Some(line) = machine
        .lines()
        .find_map(|l| l.trim().strip_prefix("nfsync:"))
    else {
        return "?".into();
    };
    let commit = match line.split_once("worktree HEAD ") {
        Some((_, head)) => format!(
            "{} (given binary)",
            head.split_whitespace().next().unwrap_or("?")
        ),
        None => line.split_whitespace().next().unwrap_or("?").to_string(),
    };
    if line.contains("uncommitted") {
        format!("{commit}+dirty")
    } else {
        commit
    }
}

pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    match v.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// `v` rounded to `decimals` with thousands separators (`1,234`).
pub fn grouped(v: f64, decimals: usize) -> String {
    let s = format!("{v:.decimals$}");
    let (sign, s) = s.strip_prefix('-').map_or(("", s.as_str()), |r| ("-", r));
    let (int, frac) = s.split_once('.').map_or((s, ""), |(i, f)| (i, f));
    let mut out = String::from(sign);
    for (i, c) in int.chars().enumerate() {
        if i > 0 && (int.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    if !frac.is_empty() {
        out.push('.');
        out.push_str(frac);
    }
    out
}

/// The distinct values of `items` in order of first appearance.
pub fn distinct<'a>(items: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for s in items {
        if !out.iter().any(|o| o == s) {
            out.push(s.to_string());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thousands() {
        assert_eq!(grouped(1234.4, 0), "1,234");
        assert_eq!(grouped(999.6, 0), "1,000");
        assert_eq!(grouped(1234567.891, 1), "1,234,567.9");
        assert_eq!(grouped(-12.0, 0), "-12");
    }

    #[test]
    fn commits() {
        assert_eq!(commit_of("date: x\nnfsync:  7018677 built\n"), "7018677");
        assert_eq!(
            commit_of("nfsync:  3c5a096 (+ uncommitted src changes)"),
            "3c5a096+dirty"
        );
        assert_eq!(
            commit_of("nfsync:  /tmp/b (nfsync 0.1.0); worktree HEAD 79ed67c"),
            "79ed67c (given binary)"
        );
        assert_eq!(commit_of("cpu: 2"), "?");
    }

    #[test]
    fn history_gets_a_header_once() {
        let dir = std::env::temp_dir().join(format!("rig-history-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("history.md");
        let _ = std::fs::remove_file(&file);
        let e = Entry {
            date: "2026-11-25 10:00".into(),
            commit: "abc1234".into(),
            command: "benches/run --presets efs".into(),
            presets: "efs".into(),
            figures: "a | b".into(),
        };
        append(&file, &e).unwrap();
        append(&file, &e).unwrap();
        let text = std::fs::read_to_string(&file).unwrap();
        assert_eq!(text.matches("# Benchmark history").count(), 1);
        assert!(text.ends_with(
            "| 2026-11-25 10:00 | abc1234 | `benches/run --presets efs` | efs | a \\| b |\n"
        ));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
