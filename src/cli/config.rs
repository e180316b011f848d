//! From the parsed command line to the engine's [`Config`].

use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};
use std::time::Duration;

use super::Cli;
use super::rsync::RsyncOpts;
use crate::config::{Append, Config, DataConfig, Paths};
use crate::dest::OwnerPolicy;
use crate::options::chmod::Chmod;
use crate::options::filter::{Arg, Filter};
use crate::options::follow::Follow;
use crate::options::keep::{Backup, Basis, BasisUse};
use crate::options::trust::Trust;
use crate::options::xattrs::XattrSet;
use crate::plan::{Compare, Skip};
use crate::report::Escaped;
use crate::report::format::LogFormat;
use crate::report::units::HumanLevel;

impl Cli {
    /// What `-v` says about options that change nothing here.
    pub fn notes(&self) -> Vec<&'static str> {
        let mut notes = Vec::new();
        if self.rsync.compress && self.verbose > 0 {
            notes.push("-z: nothing to compress on a local-to-NFS copy; ignored");
        }
        if self.access_point_drops_owners() {
            notes.push(
                "DEST is an EFS access point, which gives every file its own user and group: \
                 owners are not copied (-o/-g to ask for them anyway)",
            );
        }
        notes
    }

    /// Whether DEST is an EFS access point (`?accesspoint=`) and the owners a run as
    /// root would copy by default (or with `-a`) are to be left out: EFS replaces them
    /// with the access point's POSIX user on every create, so copying them would fail
    /// or be undone, file after file and run after run. `-o`, `-g` and the owner maps
    /// still ask for them.
    fn access_point_drops_owners(&self) -> bool {
        let r = &self.rsync;
        let explicit = self.owner
            || self.group
            || r.chown.is_some()
            || r.usermap.is_some()
            || r.groupmap.is_some();
        let access_point = self
            .paths
            .last()
            .and_then(|d| d.to_str())
            .filter(|d| crate::nfs::is_nfs_url(d))
            .and_then(|d| crate::nfs::rpc::url::parse(d).ok())
            .and_then(|u| u.efs)
            .is_some_and(|t| t.access_point.is_some());
        access_point && !explicit && rustix::process::geteuid().is_root()
    }

    /// Builds the engine's configuration; `matches` gives the options' positions so
    /// filter rules keep their command-line order. Errors are usage errors (exit 1).
    pub fn into_config(self, matches: &clap::ArgMatches) -> anyhow::Result<Config> {
        let trust = Trust::new(self.rsync.insecure_links);
        let drops_owners = self.access_point_drops_owners();
        let filter = self.filter_rules(matches)?;
        let mut paths = self.paths;
        // A lone SRC is listed, as rsync infers --list-only then; a DEST given with
        // --list-only is left alone.
        if self.check && paths.len() != 1 {
            anyhow::bail!("--check takes DEST alone (nothing is copied)");
        }
        let list_only = !self.check && (self.rsync.list_only || paths.len() == 1);
        let dest = match paths.len() {
            1 if !self.check => PathBuf::new(),
            _ => paths.pop().expect("clap requires a path"),
        };
        let files_from = self.rsync.read_files_from()?;
        if files_from.is_some() && paths.len() != 1 {
            anyhow::bail!("--files-from takes one SRC, which the names are relative to");
        }
        // rsync refuses a `..` in the part of a path -R recreates: it would climb out
        // of DEST.
        let relative = !self.rsync.no_relative && (self.rsync.relative || files_from.is_some());
        if relative {
            let named: Vec<&Path> = match &files_from {
                Some(names) => names.iter().map(Path::new).collect(),
                None => paths.iter().map(|p| p.as_path()).collect(),
            };
            for p in named {
                let rel = crate::options::relative::split_anchor(p).1;
                if rel.components().any(|c| c == Component::ParentDir) {
                    anyhow::bail!("found \"..\" dir in relative path: {}", Escaped(rel));
                }
            }
        }
        let euid = rustix::process::geteuid().as_raw();
        if !list_only && !dest.as_os_str().as_encoded_bytes().starts_with(b"nfs://") {
            crate::options::trust::check(trust, &dest, euid)
                .map_err(|e| anyhow::anyhow!("DEST: {e}"))?;
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
        // A server's atime is not read with the data, nor set with the mtime.
        let nfs = |p: &PathBuf| p.to_str().is_some_and(crate::nfs::is_nfs_url);
        if r.atimes && (nfs(&dest) || paths.iter().any(nfs)) {
            anyhow::bail!(
                "-U (--atimes) is kept on the mount path only, not with an nfs:// SRC or DEST"
            );
        }
        // rsync applies -a, -X and --no-X in command-line order, the last one winning
        // (`--no-t -a` keeps times, `-a --no-t` does not); without any rsync selection
        // nfsync works like -a without -D.
        let fake_super = fake_super(r, nfs(&dest) || paths.iter().any(nfs))?;
        // A fake-super receiver keeps owners and devices as root would (rsync's
        // `am_root < 0`), in an extended attribute.
        let really_root = rustix::process::geteuid().is_root();
        let root = really_root || fake_super.dest;
        let last = |given: &[(&str, bool)]| -> Option<bool> {
            given
                .iter()
                // A flag not given has its default at an index past the last one.
                .filter(|&&(id, _)| {
                    matches.value_source(id) == Some(clap::parser::ValueSource::CommandLine)
                })
                .filter_map(|&(id, value)| Some((matches.indices_of(id)?.max()?, value)))
                .max_by_key(|&(at, _)| at)
                .map(|(_, value)| value)
        };
        let default = !r.selects();
        let root_owners = root && !drops_owners;
        let (usermap, groupmap) = super::chown::id_maps(
            r.chown.as_deref(),
            r.usermap.as_deref(),
            r.groupmap.as_deref(),
        )
        .map_err(anyhow::Error::msg)?;
        // A user map implies -o, a group map -g, as in rsync.
        let owners = OwnerPolicy {
            owner: last(&[
                ("archive", root_owners),
                ("owner", true),
                ("no_owner", false),
            ])
            .unwrap_or(root_owners && default)
                || usermap.is_some(),
            group: last(&[
                ("archive", root_owners),
                ("group", true),
                ("no_group", false),
            ])
            .unwrap_or(root_owners && default)
                || groupmap.is_some(),
        };
        let umask = current_umask();
        let mut chmod = Chmod::default();
        for spec in &r.chmod {
            chmod.add(spec, umask).map_err(anyhow::Error::msg)?;
        }
        let acls = last(&[("acls", true), ("no_acls", false)]).unwrap_or(false);
        let xattrs = last(&[("xattrs", true), ("no_xattrs", false)]).unwrap_or(false);
        let d_parts = |on: &'static str, off: &'static str| {
            last(&[
                ("archive", true),
                ("devices_specials", true),
                (on, true),
                (off, false),
                ("no_devices_specials", false),
            ])
            .unwrap_or(false)
        };
        let specials = d_parts("specials", "no_specials");
        // rsync makes devices only as root (its `am_root && preserve_devices`); as
        // another user they are skipped as non-regular files, not failed on.
        let devices = root && d_parts("devices", "no_devices");
        // rsync: with --files-from, -a does not imply -r (an explicit -r does);
        // --list-only alone lists the top level.
        let recursive = last(&[
            ("archive", r.files_from.is_none()),
            ("recursive", true),
            ("no_recursive", false),
        ])
        .unwrap_or(default && !list_only && r.files_from.is_none());
        // --list-only shows link targets only with -l, as rsync (its default
        // selection is rsync's, not nfsync's -a).
        let links = last(&[("archive", true), ("links", true), ("no_links", false)])
            .unwrap_or(default && !list_only);
        let perms =
            last(&[("archive", true), ("perms", true), ("no_perms", false)]).unwrap_or(default);
        let times =
            last(&[("archive", true), ("times", true), ("no_times", false)]).unwrap_or(default);
        let data = data_config(r)?;
        let (mut backup, basis) = safety(r)?;
        if let Some(b) = &mut backup {
            // rsync's -vv turns on BACKUP, as --info=backup does.
            b.announce = r
                .info_level("BACKUP")
                .unwrap_or(u8::from(self.verbose >= 2))
                > 0;
        }
        let progress = match r.info_progress() {
            Some(p) => p,
            None => !self.no_progress,
        };
        Ok(Config {
            sources: paths,
            dest,
            dry_run: self.dry_run,
            delete: self.delete || r.del > 0 || r.delete_excluded,
            force: r.force,
            mkpath: r.mkpath,
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
            recursive,
            links,
            // -A implies -p, as in rsync.
            perms: perms || acls,
            times,
            // rsync: backups beside their files move directories' mtimes, so -b
            // without --backup-dir implies -O.
            omit_dir_times: r.omit_dir_times || backup.as_ref().is_some_and(|b| b.dir.is_none()),
            omit_link_times: r.omit_link_times,
            atimes: r.atimes,
            executability: r.executability,
            // The earlier of the two when both are given.
            stop_at: r.stop_at.into_iter().chain(r.stop_after).min(),
            umask,
            one_file_system: r.one_file_system,
            ignore_errors: r.ignore_errors,
            jobs: self.jobs,
            hard_links: self.hard_links,
            owners,
            trust,
            numeric_ids: self.numeric_ids,
            specials,
            devices,
            verbose: self.verbose,
            quiet: self.quiet,
            progress: progress && !self.quiet,
            progress_asked: self.progress.is_some()
                || r.partial_progress
                || r.info_progress() == Some(true),
            stats_every: self.stats_every,
            progress_json: self.progress == Some(super::ProgressFormat::Json),
            // rsync's per-file lines on stdout, where rsync prints them; not when
            // --json has stdout, nor for --progress=json (a log pipeline's).
            file_progress: (self.progress == Some(super::ProgressFormat::Text)
                || r.partial_progress)
                && !self.json
                && !self.quiet
                && !std::io::IsTerminal::is_terminal(&std::io::stdout()),
            eight_bit: r.eight_bit_output,
            stats: self.stats,
            itemize: self.itemize_changes,
            json: self.json,
            // 0 means no timeout, as in rsync: a wait of 136 years, which every timer
            // and every multiple of it still holds without overflow.
            timeout: Duration::from_secs(match self.timeout {
                0 => u64::from(u32::MAX),
                s => s,
            }),
            out_format: r.out_format.clone(),
            log_file: r.log_file.clone(),
            log_file_format: r.log_file_format.clone().unwrap_or_else(LogFormat::itemize),
            // rsync starts at level 1, each -h adds one, --no-h makes it 0 (here
            // wherever it is on the command line: clap does not keep every -h's position).
            human_readable: HumanLevel::from_count(if r.no_human_readable {
                0
            } else {
                1 + usize::from(r.human_readable)
            }),
            follow: Follow {
                all: r.copy_links,
                unsafe_links: r.copy_unsafe_links,
                skip_unsafe: r.safe_links,
                dirlinks: r.copy_dirlinks,
            },
            keep_dirlinks: r.keep_dirlinks,
            chmod,
            usermap,
            groupmap,
            xattrs: XattrSet {
                xattrs,
                acls,
                root: really_root,
                fake_super: fake_super.source || fake_super.dest,
                fake_acls: false,
            },
            fake_super,
            data,
            backup,
            basis,
            remove_source_files: r.remove_source_files,
            paths: Paths {
                relative,
                no_implied_dirs: r.no_implied_dirs,
                dirs: r.dirs || files_from.is_some() || list_only,
                files_from,
                prune_empty_dirs: r.prune_empty_dirs,
                list_only,
            },
            shard,
            mpi: self.mpi,
            check: self.check,
            check_files: self.check_files,
            claims: None,
        })
    }
}

impl Cli {
    /// The filter rules in rsync's order: --exclude, --include, --exclude-from,
    /// --include-from, --filter and -F as they come on the command line (clap gives
    /// each option's values apart, so they are put back in order by position), then
    /// -C's rules last.
    fn filter_rules<'a>(&'a self, matches: &clap::ArgMatches) -> anyhow::Result<Filter> {
        enum Item<'a> {
            Arg(Arg, &'a [u8]),
            File(&'a std::path::Path, bool),
            FilterFile(u8),
        }
        let positions = |id: &str| -> Vec<usize> {
            matches
                .indices_of(id)
                .map(|i| i.collect())
                .unwrap_or_default()
        };
        let mut items: Vec<(usize, Item<'a>)> = Vec::new();
        let mut put = |id: &str, list: Vec<Item<'a>>| {
            let pos = positions(id);
            for (i, item) in list.into_iter().enumerate() {
                items.push((pos.get(i).copied().unwrap_or(usize::MAX), item));
            }
        };
        let r = &self.rsync;
        put(
            "exclude",
            self.exclude
                .iter()
                .map(|p| Item::Arg(Arg::Exclude, p.as_bytes()))
                .collect(),
        );
        put(
            "include",
            self.include
                .iter()
                .map(|p| Item::Arg(Arg::Include, p.as_bytes()))
                .collect(),
        );
        put(
            "filter",
            r.filter
                .iter()
                .map(|p| Item::Arg(Arg::Filter, p.as_bytes()))
                .collect(),
        );
        put(
            "exclude_from",
            self.exclude_from
                .iter()
                .map(|f| Item::File(f, false))
                .collect(),
        );
        put(
            "include_from",
            r.include_from.iter().map(|f| Item::File(f, true)).collect(),
        );
        put(
            "filter_files",
            (1..=r.filter_files.min(2)).map(Item::FilterFile).collect(),
        );
        items.sort_by_key(|i| i.0);
        let mut filter = Filter::new(r.delete_excluded);
        filter.set_debug(filter_debug(&r.debug, self.verbose));
        let trust = Trust::new(r.insecure_links);
        filter.set_trust(trust);
        for (_, item) in items {
            let res = match item {
                Item::Arg(arg, text) => filter.add_arg(arg, text),
                Item::File(path, include) => {
                    // A symlink owned by another user on the way to FILE is not
                    // followed (see `trust`).
                    if path.as_os_str() != "-" {
                        let euid = rustix::process::geteuid().as_raw();
                        let opt = if include {
                            "--include-from"
                        } else {
                            "--exclude-from"
                        };
                        crate::options::trust::check(trust, path, euid)
                            .map_err(|e| anyhow::anyhow!("{opt}: {e}"))?;
                    }
                    filter.add_file(path, include)
                }
                Item::FilterFile(1) => filter.add_arg(Arg::Filter, b": /.rsync-filter"),
                Item::FilterFile(_) => filter.add_arg(Arg::Filter, b"- .rsync-filter"),
            };
            res.map_err(|e| match e.ends_run() {
                // Kept whole: it is not a usage error (exit 11, as rsync).
                true => anyhow::Error::new(e),
                false => anyhow::anyhow!("{e}"),
            })?;
        }
        if r.cvs_exclude {
            filter
                .add_cvs_exclude()
                .map_err(|e| anyhow::anyhow!("{e}"))?;
        }
        // A relative --partial-dir is neither sent nor deleted: rsync adds this rule
        // after all the others.
        if let Some(p) = partial_dir(r).filter(|p| p.is_relative()) {
            let p = p.as_os_str().as_encoded_bytes();
            let mut rule = b"-p ".to_vec();
            rule.extend_from_slice(p.strip_suffix(b"/").unwrap_or(p));
            rule.push(b'/');
            filter
                .add_arg(Arg::Filter, &rule)
                .map_err(|e| anyhow::anyhow!("--partial-dir: {e}"))?;
        }
        Ok(filter)
    }
}

/// `--backup` and the basis directories, as rsync reads them: `--backup-dir` implies
/// `--backup` and makes the default suffix empty; one kind of basis directory per run.
fn safety(r: &super::rsync::RsyncOpts) -> anyhow::Result<(Option<Backup>, Option<Basis>)> {
    let backup = (r.backup || r.backup_dir.is_some()).then(|| Backup {
        suffix: r.suffix.clone().unwrap_or_else(|| match r.backup_dir {
            Some(_) => OsString::new(),
            None => "~".into(),
        }),
        dir: r.backup_dir.clone(),
        announce: false,
    });
    if let Some(b) = &backup
        && b.dir.is_none()
        && b.suffix.is_empty()
    {
        anyhow::bail!("--suffix cannot be a null string without --backup-dir");
    }
    let kinds = [
        (BasisUse::Link, &r.link_dest),
        (BasisUse::Compare, &r.compare_dest),
        (BasisUse::Copy, &r.copy_dest),
    ];
    let given: Vec<_> = kinds.into_iter().filter(|(_, d)| !d.is_empty()).collect();
    let basis = match given.as_slice() {
        [] => None,
        [(used, dirs)] => Some(Basis {
            used: *used,
            dirs: dirs.to_vec(),
        }),
        _ => anyhow::bail!("You may not mix --compare-dest, --copy-dest, and --link-dest."),
    };
    Ok((backup, basis))
}

/// Where `--fake-super` applies: both sides of the copy, or only DEST with
/// `-M--fake-super`, or only the source with `--fake-super -M--super` (`-M` passes an
/// option to rsync's remote side, which a local copy's receiver is). Refused where an
/// NFS server holds a side: nfsync keeps no extended attributes there.
fn fake_super(
    r: &super::rsync::RsyncOpts,
    nfs: bool,
) -> anyhow::Result<crate::options::fake_super::FakeSuper> {
    let mut dest = r.fake_super;
    for o in &r.remote_option {
        match o.as_str() {
            "--fake-super" => dest = true,
            "--super" => dest = false,
            _ => anyhow::bail!(
                "-M {o}: only --fake-super and --super are taken by -M (nfsync copies to a \
                 local path or an nfs:// URL, not to a remote rsync)"
            ),
        }
    }
    let f = crate::options::fake_super::FakeSuper {
        source: r.fake_super,
        dest,
    };
    if nfs && (f.source || f.dest) {
        anyhow::bail!(
            "--fake-super is kept on the mount path only, not with an nfs:// SRC or DEST \
             (nfsync keeps no extended attributes on an NFS server)"
        );
    }
    Ok(f)
}

/// The process's umask, read without changing it for good (nfsync clears it later).
fn current_umask() -> u32 {
    use rustix::fs::Mode;
    let old = rustix::process::umask(Mode::from_raw_mode(0o022));
    rustix::process::umask(old);
    old.bits()
}

/// rsync's `--debug=FILTER` level: what `-vv` (1) and `-vvv` (2) give, or what
/// `--debug` says (`FILTER`, `FILTER2`, `ALL`, ...; the last naming it wins).
fn filter_debug(debug: &[String], verbose: u8) -> u8 {
    let mut level = match verbose {
        0 | 1 => 0,
        2 => 1,
        _ => 2,
    };
    for flag in debug.iter().flat_map(|d| d.split(',')) {
        let upper = flag.trim().to_ascii_uppercase();
        let name = upper.trim_end_matches(|c: char| c.is_ascii_digit());
        if name == "FILTER" || name == "ALL" {
            level = upper[name.len()..].parse().unwrap_or(1);
        } else if name == "NONE" {
            level = 0;
        }
    }
    level
}

/// `--partial-dir` (`.` or empty: none), or rsync's `.~tmp~` for `--delay-updates`.
fn partial_dir(r: &RsyncOpts) -> Option<PathBuf> {
    let given = r.partial_dir.clone();
    let given = given.filter(|p| !p.as_os_str().is_empty() && p != Path::new("."));
    match given {
        None if r.delay_updates => Some(PathBuf::from(".~tmp~")),
        given => given,
    }
}

/// The data options, refused together where rsync refuses them.
fn data_config(r: &RsyncOpts) -> anyhow::Result<DataConfig> {
    let append = if r.append_verify {
        Append::Verify
    } else if r.append {
        Append::Append
    } else {
        Append::Off
    };
    if r.delay_updates {
        if append != Append::Off {
            anyhow::bail!("--append cannot be used with --delay-updates");
        }
        if r.inplace {
            anyhow::bail!("--inplace cannot be used with --delay-updates");
        }
    }
    Ok(DataConfig {
        sparse: r.sparse && !r.no_sparse,
        inplace: r.inplace || append != Append::Off,
        append,
        temp_dir: r.temp_dir.clone(),
        delay_updates: r.delay_updates,
        partial: r.partial || r.partial_progress || partial_dir(r).is_some(),
        partial_dir: partial_dir(r),
        bwlimit: r.bwlimit.unwrap_or(0),
    })
}
