//! nfsync benchmark rig: corpus generator, latency FUSE mount, delay proxy
//! and report/chart writer. See benches/README.md.

mod latfs;

use std::path::PathBuf;
use std::time::Duration;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "rig", about = "nfsync benchmark rig")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Mount BACKING at MOUNTPOINT adding a fixed delay to every FUSE request.
    Mount {
        backing: PathBuf,
        mountpoint: PathBuf,
        /// lan (0.3 ms), efs (1.5 ms), wan (10 ms) or a number of milliseconds.
        #[arg(long, default_value = "efs")]
        delay: String,
        /// Requests served concurrently (like nfsd threads).
        #[arg(long, default_value_t = 256)]
        threads: usize,
        /// Kernel attribute cache TTL in seconds (like NFS actimeo).
        #[arg(long, default_value_t = 1.0)]
        attr_ttl: f64,
        /// Kernel dentry cache TTL in seconds.
        #[arg(long, default_value_t = 1.0)]
        entry_ttl: f64,
        /// Serialize lookups/readdirs per directory (drop FUSE_PARALLEL_DIROPS).
        #[arg(long)]
        no_parallel_dirops: bool,
        /// Also write the unmount statistics to this file.
        #[arg(long)]
        stats_file: Option<PathBuf>,
    },
}

/// Parse a delay preset or a millisecond count.
pub fn parse_delay(s: &str) -> Result<Duration, String> {
    let ms = match s {
        "lan" => 0.3,
        "efs" => 1.5,
        "wan" => 10.0,
        other => other
            .trim_end_matches("ms")
            .parse::<f64>()
            .map_err(|_| format!("bad delay {other:?}: use lan|efs|wan|<ms>"))?,
    };
    if !(0.0..=60_000.0).contains(&ms) {
        return Err(format!("delay {ms} ms out of range"));
    }
    Ok(Duration::from_secs_f64(ms / 1e3))
}

fn main() {
    let cli = Cli::parse();
    let res: Result<(), String> = match cli.cmd {
        Cmd::Mount {
            backing,
            mountpoint,
            delay,
            threads,
            attr_ttl,
            entry_ttl,
            no_parallel_dirops,
            stats_file,
        } => parse_delay(&delay).and_then(|delay| {
            latfs::run(latfs::MountOpts {
                backing,
                mountpoint,
                delay,
                threads,
                attr_ttl: Duration::from_secs_f64(attr_ttl),
                entry_ttl: Duration::from_secs_f64(entry_ttl),
                parallel_dirops: !no_parallel_dirops,
                stats_file,
            })
            .map_err(|e| format!("mount: {e}"))
        }),
    };
    if let Err(e) = res {
        eprintln!("rig: {e}");
        std::process::exit(1);
    }
}
