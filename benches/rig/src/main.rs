//! nfsync benchmark rig: corpus generator, latency FUSE mount, delay proxy
//! and the one report writer of benches/ (reports, chart, history table). See benches/README.md.

mod corpus;
mod efs_front;
mod latfs;
mod preset;
mod proxy;
mod report;

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
    /// Generate a deterministic corpus under OUT (OUT/<kind>/...).
    Gen {
        kind: corpus::Kind,
        out: PathBuf,
        /// Multiplies file counts (node_modules, efs-blog) or sizes (large).
        #[arg(long, default_value_t = 1.0)]
        scale: f64,
        #[arg(long, default_value_t = 42)]
        seed: u64,
    },
    /// TCP proxy on 127.0.0.1 adding a one-way delay per direction.
    Proxy {
        /// LOCAL=REMOTE or REMOTE (ports on 127.0.0.1; LOCAL 0 = free port). Repeatable.
        #[arg(long = "forward", required = true, value_parser = proxy::parse_forward)]
        forwards: Vec<(u16, u16)>,
        /// One-way delay: lan|efs|wan|<ms> (RTT is twice this).
        #[arg(long, default_value = "0")]
        delay: String,
        /// Reset each connection (RST) after this many forwarded bytes.
        #[arg(long)]
        reset_after_bytes: Option<u64>,
        /// Pace each direction of each connection to this many MiB/s.
        #[arg(long)]
        cap_mibs: Option<f64>,
    },
    /// An EFS mount target's front for benchmarks: the delay proxy in front of
    /// one NFSv4.1 port that answers EFS's bind call (READY, one partition)
    /// itself, with a per-connection rate cap.
    EfsFront {
        /// LOCAL=REMOTE or REMOTE (the NFS port on 127.0.0.1; LOCAL 0 = free port).
        #[arg(long = "forward", value_parser = proxy::parse_forward)]
        forward: (u16, u16),
        /// One-way delay: lan|efs|wan|<ms> (RTT is twice this).
        #[arg(long, default_value = "0")]
        delay: String,
        /// Pace each direction of each connection to this many MiB/s.
        #[arg(long)]
        cap_mibs: Option<f64>,
        /// `max_multiplexed_connections` in the bind reply.
        #[arg(long, default_value_t = 5)]
        max_conns: i32,
    },
    /// Print a preset's delay in milliseconds (NAME: lan, efs, wan or a
    /// number); without NAME, every preset.
    Preset { name: Option<String> },
    /// Write the latest report of a benches/ script and its history line.
    Report {
        #[command(subcommand)]
        kind: report::Cmd,
    },
    /// Mount BACKING at MOUNTPOINT adding a fixed delay to every FUSE request.
    Mount {
        backing: PathBuf,
        mountpoint: PathBuf,
        /// A preset (lan, efs, wan: `rig preset`) or a number of milliseconds.
        #[arg(long, default_value = "efs")]
        delay: String,
        /// CPU time in microseconds each request costs the daemon, spent
        /// spinning on its worker thread after the delay: a server that shares
        /// the client's cores and works for each request (a busy FUSE daemon,
        /// ganesha on the same box).
        #[arg(long, default_value_t = 0)]
        cpu_us: u64,
        /// Requests served concurrently (like nfsd threads); above what any
        /// tool keeps in flight, so the mount is not the bottleneck.
        #[arg(long, default_value_t = 1024)]
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

fn main() {
    let cli = Cli::parse();
    let res: Result<(), String> = match cli.cmd {
        Cmd::Gen {
            kind,
            out,
            scale,
            seed,
        } => {
            if let Err(e) = std::fs::create_dir_all(&out) {
                eprintln!("rig: {}: {e}", out.display());
                std::process::exit(1);
            }
            let r = kind.generate(&out, scale, seed);
            r.map(|s| {
                println!(
                    "{}: files={} dirs={} symlinks={} bytes={}",
                    kind.name(),
                    s.files,
                    s.dirs,
                    s.symlinks,
                    s.bytes
                )
            })
            .map_err(|e| format!("gen {}: {e}", kind.name()))
        }
        Cmd::Proxy {
            forwards,
            delay,
            reset_after_bytes,
            cap_mibs,
        } => preset::parse_delay(&delay).and_then(|delay| {
            proxy::run(proxy::ProxyOpts {
                forwards,
                delay,
                reset_after_bytes,
                cap: cap_mibs.map(|m| m * 1048576.0),
            })
            .map_err(|e| format!("proxy: {e}"))
        }),
        Cmd::EfsFront {
            forward,
            delay,
            cap_mibs,
            max_conns,
        } => preset::parse_delay(&delay).and_then(|delay| {
            let opts = proxy::ProxyOpts {
                forwards: vec![forward],
                delay,
                reset_after_bytes: None,
                cap: cap_mibs.map(|m| m * 1048576.0),
            };
            efs_front::run(opts, max_conns).map_err(|e| format!("efs-front: {e}"))
        }),
        Cmd::Preset { name: Some(name) } => preset::ms(&name).map(|ms| println!("{ms}")),
        Cmd::Preset { name: None } => {
            for (name, ms) in preset::PRESETS {
                println!("{name} {ms}");
            }
            Ok(())
        }
        Cmd::Report { kind } => report::run(kind).map_err(|e| format!("report: {e}")),
        Cmd::Mount {
            backing,
            mountpoint,
            delay,
            cpu_us,
            threads,
            attr_ttl,
            entry_ttl,
            no_parallel_dirops,
            stats_file,
        } => preset::parse_delay(&delay).and_then(|delay| {
            latfs::run(latfs::MountOpts {
                backing,
                mountpoint,
                delay,
                cpu: Duration::from_micros(cpu_us),
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

#[cfg(test)]
mod tests {
    #[test]
    fn corpus_kinds_are_the_directory_names() {
        use clap::ValueEnum;
        for k in crate::corpus::Kind::value_variants() {
            let v = k.to_possible_value().unwrap();
            assert_eq!(v.get_name(), k.name());
        }
        assert!(crate::corpus::Kind::from_str("node-modules", false).is_err());
    }
}
