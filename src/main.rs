//! The `nfsync` command: parse, build a destination, run the engine, report.

use std::io::{IsTerminal, Write};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use clap::{CommandFactory, FromArgMatches};

use nfsync::cli::{self, Cli};
use nfsync::config::Config;
use nfsync::dest::{Destination, local};
use nfsync::exit::{Error, ExitCode, Why};
use nfsync::report::logfile::LogFile;
use nfsync::report::progress::{self, Progress};
use nfsync::report::stats::RsyncStats;
use nfsync::report::{Escaped, Output, Stats, Summary, escape_text};
use nfsync::source::{LocalPaths, Source};
use nfsync::{engine, nfs};

fn main() -> std::process::ExitCode {
    let code = match real_main() {
        Ok(code) => code,
        Err(e) => {
            say(format_args!("nfsync: {e:#}"));
            e.exit_code()
        }
    };
    code.into()
}

fn real_main() -> Result<ExitCode, Error> {
    // rsync's words for an option nfsync lacks, before clap's.
    let checked = cli::check_argv(std::env::args_os().skip(1).collect())
        .map_err(|e| Error::Usage(Why::of(e)))?;
    // As rsync: -V answers whatever else argv holds; -VV in JSON.
    if checked.version > 0 {
        let v = match checked.version {
            1 => cli::version::text(),
            _ => cli::version::json(),
        };
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(v.as_bytes());
        let _ = out.flush();
        return Ok(ExitCode::Success);
    }
    let argv = std::iter::once("nfsync".into()).chain(checked.args);
    let matches = match Cli::command().try_get_matches_from(argv) {
        Ok(m) => m,
        Err(e) => {
            let _ = e.print();
            return Ok(if e.use_stderr() {
                ExitCode::Usage
            } else {
                ExitCode::Success
            });
        }
    };
    let cli = Cli::from_arg_matches(&matches).map_err(|e| Error::Usage(Why::of(e)))?;
    if let Some(kind) = cli.generate {
        let mut out = std::io::stdout().lock();
        cli::generate(kind, &mut out).map_err(|source| Error::Local {
            what: "writing to stdout".into(),
            source,
        })?;
        let _ = out.flush();
        return Ok(ExitCode::Success);
    }
    for note in cli.notes() {
        say(format_args!("nfsync: {note}"));
    }
    let mut cfg = cli.into_config(&matches).map_err(|e| {
        match e.downcast::<nfsync::options::filter::Error>() {
            Ok(e) => Error::Local {
                what: "filter rules".into(),
                source: std::io::Error::other(e),
            },
            Err(e) => Error::Usage(Why::of(e)),
        }
    })?;
    for note in cfg.filter.take_notes() {
        match note {
            nfsync::options::filter::Note::Warn(w) => say(format_args!("nfsync: {w}")),
            nfsync::options::filter::Note::Debug(d) => println!("{}", escape_text(&d)),
        }
    }
    let log = cfg.log_file.as_ref().and_then(|p| {
        LogFile::open(p, cfg.log_file_format.clone(), cfg.trust)
            .map_err(|e| {
                // rsync goes on without its log, and says so.
                say(format_args!(
                    "nfsync: failed to open log-file {}: {e}",
                    Escaped(p)
                ));
                eprintln!("nfsync: ignoring --log-file");
            })
            .ok()
    });
    let out = Output::new(cfg.quiet, cfg.verbose, cfg.itemize, cfg.json)
        .with_formats(
            cfg.out_format.clone(),
            log,
            (cfg.owners.owner, cfg.owners.group),
            cfg.dry_run,
        )
        .with_eight_bit(cfg.eight_bit)
        .with_all_checksums(cfg.compare == nfsync::plan::Compare::Checksum)
        .with_file_progress(cfg.file_progress.then_some(cfg.human_readable));
    let out = Arc::new(out);
    if cfg.paths.list_only {
        let source = source(&cfg, &out)?;
        return Ok(nfsync::report::list_only::run(
            &cfg,
            &*source,
            &out,
            &mut std::io::stdout().lock(),
        ));
    }
    prepare_process();
    if cfg.check {
        return Ok(check(&cfg, &out));
    }
    sync(&cfg, &out)
}

/// `--check`: connects as a run would and prints what it found.
fn check(cfg: &Config, out: &Arc<Output>) -> ExitCode {
    let start = std::time::Instant::now();
    let findings = if let Some(url) = cfg.dest.to_str().filter(|d| nfs::is_nfs_url(d)) {
        match nfs::connect(url, cfg, out.clone()) {
            Ok(nfs::Dest::V3(d)) => nfsync::check::run(cfg, &d, describe(&d), start.elapsed()),
            Ok(nfs::Dest::V41(d)) => nfsync::check::run(cfg, &d, describe(&d), start.elapsed()),
            Err(e) => nfsync::check::not_connected(cfg, &e),
        }
    } else {
        let d = local::LocalDest::new(&cfg.dest, cfg.owners)
            .with_trust(cfg.trust)
            .with_umask(cfg.umask)
            .with_fake_super(cfg.fake_super.dest);
        nfsync::check::run(cfg, &d, describe(&d), start.elapsed())
    };
    if cfg.json {
        let mut o = std::io::stdout().lock();
        let _ = serde_json::to_writer(&mut o, &findings);
        let _ = writeln!(o);
    } else {
        let mut o = std::io::stdout().lock();
        for line in findings.lines() {
            let _ = writeln!(o, "{}", escape_text(&line));
        }
    }
    findings.exit_code()
}

/// How an NFS destination was reached, for `--check`.
fn describe<D: Destination>(d: &D) -> String {
    d.connection()
}

/// Process-wide settings the copy relies on, made once here rather than by whichever
/// part happens to need them first.
fn prepare_process() {
    // Modes are nfsync's to give (rsync -p): files and directories are created with
    // their final permission bits in one call, which a umask would cut.
    rustix::process::umask(rustix::fs::Mode::empty());
    // Every directory in flight holds a descriptor on the mount path.
    local::raise_fd_limit();
    // SIGUSR1 asks a run for its progress line (dd's habit); one sent before the run
    // starts, or after it, must not end the process as it would by default.
    let _ = signal_hook::flag::register(
        signal_hook::consts::SIGUSR1,
        Arc::new(AtomicBool::new(false)),
    );
}

/// Runs the sync and reports it; a fatal error before the first copy still gives
/// `--json` its object.
fn sync(cfg: &Config, out: &Arc<Output>) -> Result<ExitCode, Error> {
    #[cfg(feature = "mpi")]
    if cfg.mpi {
        return mpi_sync(cfg, out);
    }
    let r = execute(cfg, out);
    match &r {
        Err(e) => {
            let mut summary = Summary::failed(e, cfg.dry_run);
            summary.shard = cfg.shard.map(|s| s.to_string());
            if cfg.json {
                print_json(&summary);
            }
            if progress::Mode::here(cfg).json_lines() {
                // After the error main prints: a log pipeline's last line is the totals.
                say(format_args!("nfsync: {e:#}"));
                say(progress::lines::totals_json(&summary));
                return Ok(e.exit_code());
            }
        }
        Ok(summary) => report(cfg, out, summary),
    }
    r.map(|s| s.exit_code)
}

/// `--mpi`: every rank copies its share, rank 0 finalizes and reports the totals of all.
#[cfg(feature = "mpi")]
fn mpi_sync(cfg: &Config, out: &Arc<Output>) -> Result<ExitCode, Error> {
    let (summary, root) = nfsync::mpi::run(cfg, |c| execute(c, out))?;
    if root {
        report(cfg, out, &summary);
    }
    Ok(summary.exit_code)
}

/// Picks the source and the destination and runs the engine on them.
fn execute(cfg: &Config, out: &Arc<Output>) -> Result<Summary, Error> {
    let source = source(cfg, out)?;
    let source = &*source;
    if let Some(url) = cfg.dest.to_str().filter(|d| nfs::is_nfs_url(d)) {
        nfs::connect(url, cfg, out.clone()).and_then(|dest| match dest {
            nfs::Dest::V3(d) => run(cfg, source, &d, out),
            nfs::Dest::V41(d) => run(cfg, source, &d, out),
        })
    } else {
        run(
            cfg,
            source,
            &local::LocalDest::new(&cfg.dest, cfg.owners)
                .with_trust(cfg.trust)
                .with_umask(cfg.umask)
                .with_fake_super(cfg.fake_super.dest),
            out,
        )
    }
}

/// Where the sources are read: local paths, or `nfs://` servers connected now.
fn source(cfg: &Config, out: &Arc<Output>) -> Result<Box<dyn Source>, Error> {
    Ok(match nfs::any_source(cfg) {
        true => Box::new(nfs::connect_sources(cfg, out.clone())?),
        false => Box::new(LocalPaths),
    })
}

fn print_json(summary: &Summary) {
    let mut o = std::io::stdout().lock();
    let _ = serde_json::to_writer(&mut o, summary);
    let _ = writeln!(o);
}

fn run<D: Destination>(
    cfg: &Config,
    source: &dyn Source,
    dest: &D,
    out: &Output,
) -> Result<Summary, Error> {
    let interrupted = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        // A second signal while stopping exits at once.
        let _ = signal_hook::flag::register_conditional_shutdown(
            sig,
            ExitCode::Interrupted.code(),
            interrupted.clone(),
        );
        let _ = signal_hook::flag::register(sig, interrupted.clone());
    }
    bound_the_stop();
    let limit = cfg
        .stop_at
        .map(|at| nfsync::options::stop::arm(at, interrupted.clone()));
    let stats = Arc::new(Stats::default());
    let progress = Progress::start(progress::Mode::here(cfg), stats.clone());
    out.set_bar(progress.bar());
    let mut result = engine::run(cfg, source, dest, out, stats.clone(), interrupted);
    out.set_bar(None);
    drop(progress);
    if let (Some(reached), Ok(summary)) = (limit, &mut result)
        && reached.load(std::sync::atomic::Ordering::SeqCst)
        && summary.interrupted
    {
        // rsync's words and code for a run its --stop-at ended.
        out.note("stopping at requested limit");
        summary.exit_code = ExitCode::Timeout;
    }
    result
}

/// How long the first SIGINT/SIGTERM waits for the work in flight to end (copies
/// stop between pieces, so only a worker stuck in a system call takes this long).
const STOP_GRACE: std::time::Duration = std::time::Duration::from_secs(5);

/// A worker stuck in a system call (a server that stopped answering, a file that
/// never ends) must not hold a stopped run: [`STOP_GRACE`] after the first signal the
/// process exits 20 whatever is still in flight, as a second signal would. What it
/// leaves is partial in the way the resume guarantee allows for (a temporary, or a
/// file without the source's mtime), and the next run finishes it.
fn bound_the_stop() {
    use signal_hook::consts::{SIGINT, SIGTERM};
    let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGINT, SIGTERM]) else {
        return;
    };
    let _ = std::thread::Builder::new()
        .name("nfsync-stop".into())
        .spawn(move || {
            if signals.forever().next().is_some() {
                std::thread::sleep(STOP_GRACE);
                eprintln!(
                    "nfsync: interrupted; work still in flight {} s later left partial; \
                     run the same command again to finish",
                    STOP_GRACE.as_secs()
                );
                std::process::exit(ExitCode::Interrupted.code());
            }
        });
}

/// The end of a run: notes, then `--json`, `--stats` and the one-line summary.
fn report(cfg: &Config, out: &Output, summary: &Summary) {
    out.flush();
    if let Some(why) = &summary.fatal {
        out.note(why);
    }
    if summary.interrupted {
        out.note("interrupted; run the same command again to finish");
    }
    if cfg.json {
        print_json(summary);
    }
    let rsync = RsyncStats::new(
        summary,
        summary.found_by_kind,
        summary.link_bytes,
        &out.tally,
        cfg.human_readable,
    );
    out.rsync_summary(&rsync, cfg.stats);
    // Quiet where rsync is: a cron job's mail or a script's log gets the summary only
    // when it asked (-v, --stats, progress) or something went wrong (then the summary
    // says how it ended, after the errors); a terminal always gets it.
    let asked = cfg.verbose > 0
        || cfg.stats
        || cfg.progress_asked
        || cfg.stats_every.is_some()
        || summary.exit_code != ExitCode::Success;
    if progress::Mode::here(cfg).json_lines() {
        // The last of the JSON lines: the totals, as --json's.
        out.note_raw(progress::lines::totals_json(summary));
    } else if !cfg.quiet && !cfg.json && (asked || std::io::stderr().is_terminal()) {
        out.note(summary.one_line());
    }
}

/// A line on stderr outside the run's [`Output`] (before it is made, or after the run
/// ended), escaped as its lines are: an error's words can hold a server's text or a
/// file's name.
fn say(line: impl std::fmt::Display) {
    eprintln!("{}", escape_text(&line.to_string()));
}
