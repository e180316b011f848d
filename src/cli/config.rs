//! From the parsed command line to the engine's [`Config`].

use std::ffi::OsString;
use std::fs::File;
use std::io::BufReader;
use std::os::unix::ffi::OsStrExt;
use std::time::Duration;

use super::Cli;
use crate::config::Config;
use crate::dest::OwnerPolicy;
use crate::filter::Filter;
use crate::plan::{Compare, Skip};

impl Cli {
    /// What `-v` says about options that change nothing here.
    pub fn notes(&self) -> Vec<&'static str> {
        let mut notes = Vec::new();
        if self.rsync.compress && self.verbose > 0 {
            notes.push("-z: nothing to compress on a local-to-NFS copy; ignored");
        }
        notes
    }

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
        let shard = self
            .shard
            .as_deref()
            .map(|spec| super::shard::resolve(spec, |k| std::env::var(k).ok()))
            .transpose()
            .map_err(|e| anyhow::anyhow!(e))?;
        if self.mpi && !cfg!(feature = "mpi") {
            anyhow::bail!("--mpi: this nfsync was built without MPI (cargo build --features mpi)");
        }
        let r = &self.rsync;
        // Without an rsync selection nfsync works like -a without -D; with one, what
        // it leaves out is left out, as rsync would.
        let all = !r.selects() || r.archive;
        let root = rustix::process::geteuid().is_root();
        let owners = OwnerPolicy {
            owner: !self.no_owner && (self.owner || (root && all)),
            group: !self.no_group && (self.group || (root && all)),
        };
        let rsync_d = r.archive || r.devices_specials;
        let specials = !self.no_specials && !r.no_devices_specials && (self.specials || rsync_d);
        // rsync makes devices only as root (its `am_root && preserve_devices`); as
        // another user they are skipped as non-regular files, not failed on.
        let devices =
            root && !self.no_devices && !r.no_devices_specials && (self.devices || rsync_d);
        let progress = match r.info_progress() {
            Some(p) => p,
            None => !self.no_progress,
        };
        Ok(Config {
            sources: paths,
            dest,
            dry_run: self.dry_run,
            delete: self.delete || r.del > 0,
            max_delete: self.max_delete,
            filter,
            compare: if r.ignore_times {
                Compare::IgnoreTimes
            } else if self.checksum {
                Compare::Checksum
            } else if self.size_only {
                Compare::SizeOnly
            } else {
                Compare::QuickCheck
            },
            modify_window: self.modify_window,
            skip: Skip {
                update: r.update,
                ignore_existing: r.ignore_existing,
                existing_only: r.existing,
                max_size: r.max_size,
                min_size: r.min_size,
            },
            recursive: !r.no_recursive && (all || r.recursive),
            links: !r.no_links && (all || r.links),
            perms: !r.no_perms && (all || r.perms),
            times: !r.no_times && (all || r.times),
            omit_dir_times: r.omit_dir_times,
            umask: current_umask(),
            one_file_system: r.one_file_system,
            ignore_errors: r.ignore_errors,
            jobs: self.jobs,
            hard_links: self.hard_links,
            owners,
            numeric_ids: self.numeric_ids,
            specials,
            devices,
            verbose: self.verbose,
            quiet: self.quiet,
            progress: progress && !self.quiet,
            stats: self.stats,
            itemize: self.itemize_changes,
            json: self.json,
            // 0 means no timeout, as in rsync: a wait of 136 years, which every timer
            // and every multiple of it still holds without overflow.
            timeout: Duration::from_secs(match self.timeout {
                0 => u64::from(u32::MAX),
                s => s,
            }),
            shard,
            mpi: self.mpi,
        })
    }
}

/// The process's umask, read without changing it for good (nfsync clears it later).
fn current_umask() -> u32 {
    use rustix::fs::Mode;
    let old = rustix::process::umask(Mode::from_raw_mode(0o022));
    rustix::process::umask(old);
    old.bits()
}
