//! The `nfsync` command: parse, build a destination, run the engine, report.

use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use clap::{CommandFactory, FromArgMatches};

use nfsync::cli::{self, Cli};
use nfsync::config::Config;
use nfsync::dest::{Destination, local::LocalDest};
use nfsync::exit::{self, Fatal};
use nfsync::progress::Progress;
use nfsync::report::{Output, Stats, Summary};
use nfsync::{engine, nfs};

fn main() -> ExitCode {
    let code = match real_main() {
        Ok(code) => code,
        Err(f) => {
            eprintln!("nfsync: {f}");
            f.code
        }
    };
    ExitCode::from(code as u8)
}

/// Runs the sync; a fatal error before the first copy still gives `--json` its object.
fn sync(cfg: &Config) -> Result<i32, Fatal> {
    let r = if let Some(url) = cfg.dest.to_str().filter(|d| nfs::is_nfs_url(d)) {
        nfs::connect(url, cfg).and_then(|dest| run(cfg, &dest))
    } else {
        run(cfg, &LocalDest::new(&cfg.dest, cfg.owners))
    };
    if let Err(f) = &r
        && cfg.json
    {
        print_json(&Summary::failed(f, cfg.dry_run));
    }
    r
}

fn print_json(summary: &Summary) {
    let mut o = std::io::stdout().lock();
    let _ = serde_json::to_writer(&mut o, summary);
    let _ = writeln!(o);
}

fn real_main() -> Result<i32, Fatal> {
    let matches = match Cli::command().try_get_matches() {
        Ok(m) => m,
        Err(e) => {
            let _ = e.print();
            return Ok(if e.use_stderr() {
                exit::USAGE
            } else {
                exit::OK
            });
        }
    };
    let cli =
        Cli::from_arg_matches(&matches).map_err(|e| Fatal::new(exit::USAGE, e.to_string()))?;
    if let Some(kind) = cli.generate {
        let mut out = std::io::stdout().lock();
        cli::generate(kind, &mut out).map_err(|e| Fatal::new(exit::FILE_IO, e.to_string()))?;
        let _ = out.flush();
        return Ok(exit::OK);
    }
    let cfg = cli
        .into_config(&matches)
        .map_err(|e| Fatal::new(exit::USAGE, format!("{e:#}")))?;

    sync(&cfg)
}

fn run<D: Destination>(cfg: &Config, dest: &D) -> Result<i32, Fatal> {
    let interrupted = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        // A second signal while stopping exits at once.
        let _ = signal_hook::flag::register_conditional_shutdown(
            sig,
            exit::INTERRUPTED,
            interrupted.clone(),
        );
        let _ = signal_hook::flag::register(sig, interrupted.clone());
    }
    let stats = Arc::new(Stats::default());
    let out = Output::new(cfg.quiet, cfg.verbose, cfg.itemize, cfg.json);
    let progress = Progress::start(cfg.progress, stats.clone());
    out.set_bar(progress.as_ref().map(|p| p.bar()));
    let result = engine::run(cfg, dest, &out, stats, interrupted);
    out.set_bar(None);
    drop(progress);
    let summary = result?;
    if let Some(why) = &summary.fatal {
        eprintln!("nfsync: {why}");
    }
    if summary.interrupted {
        eprintln!("nfsync: interrupted; run the same command again to finish");
    }
    if cfg.json {
        print_json(&summary);
    }
    if cfg.stats && !cfg.quiet {
        let block = summary.stats_block();
        if cfg.json {
            eprintln!("{block}")
        } else {
            println!("{block}")
        }
    }
    if !cfg.quiet && !cfg.json {
        eprintln!("nfsync: {}", summary.one_line());
    }
    Ok(summary.exit_code)
}
