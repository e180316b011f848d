//! rsync's side of the command line: its selection options (`-a` = `-rlptgoD` and
//! their `--no-` forms), the options that change what is copied (`-u`, `--existing`,
//! `--max-size`, ...), the ones accepted with no effect (`-z`, ...), and a
//! look at argv before clap parses it ([`check_argv`]).

use std::ffi::OsString;

use crate::report::Escaped;
use clap::{ArgAction, Args};

mod argv;

pub use argv::{ArgvError, Checked, Refused, check_argv};

/// rsync's options, beside nfsync's own (flattened into [`Cli`](super::Cli)).
#[derive(Debug, Default, Args)]
#[command(next_help_heading = "rsync options")]
pub struct RsyncOpts {
    /// Archive mode: -rlptgoD, as rsync (devices and specials included). Without any of
    /// -a -r -l -p -t -D nfsync works like -a without -D.
    #[arg(short = 'a', long)]
    pub archive: bool,

    /// Recurse into directories.
    #[arg(short = 'r', long)]
    pub recursive: bool,

    /// Don't recurse: directories are skipped ("skipping directory"), as rsync.
    #[arg(long, alias = "no-r", hide = true)]
    pub no_recursive: bool,

    /// Copy symlinks as symlinks (without it they are skipped).
    #[arg(short = 'l', long)]
    pub links: bool,

    /// Skip symlinks.
    #[arg(long, alias = "no-l", hide = true)]
    pub no_links: bool,

    /// Preserve permissions (without it new entries get the source's mode less the umask).
    #[arg(short = 'p', long)]
    pub perms: bool,

    /// Don't preserve permissions.
    #[arg(long, alias = "no-p", hide = true)]
    pub no_perms: bool,

    /// Preserve modification times (without it they are not set, and the quick check
    /// copies again every file whose mtime differs, as rsync does).
    #[arg(short = 't', long)]
    pub times: bool,

    /// Don't preserve modification times.
    #[arg(long, alias = "no-t", hide = true)]
    pub no_times: bool,

    /// Same as --devices --specials.
    #[arg(short = 'D')]
    pub devices_specials: bool,

    /// Same as --no-devices --no-specials.
    #[arg(long = "no-D", hide = true)]
    pub no_devices_specials: bool,

    /// Don't set directories' modification times.
    #[arg(short = 'O', long)]
    pub omit_dir_times: bool,

    /// Give copied files the source's access time (on the mount path; a file that is
    /// up to date keeps its own).
    #[arg(short = 'U', long)]
    pub atimes: bool,

    /// Don't set symlinks' modification times (nor compare them).
    #[arg(short = 'J', long)]
    pub omit_link_times: bool,

    /// Without -p: a copied file is made executable where it is readable when the
    /// source is executable, and not executable when the source is not.
    #[arg(short = 'E', long)]
    pub executability: bool,

    /// Stop the run at TIME ([YYYY-]MM-DDThh:mm, or hh:mm; local time): files in
    /// flight are finished, no new one is started, exit 30 as rsync.
    #[arg(long, value_name = "TIME", value_parser = crate::options::stop::parse_at)]
    pub stop_at: Option<std::time::SystemTime>,

    /// Stop the run after MINS minutes, as --stop-at.
    #[arg(long, alias = "time-limit", value_name = "MINS", value_parser = crate::options::stop::parse_after)]
    pub stop_after: Option<std::time::SystemTime>,

    /// Skip files that are newer at the destination.
    #[arg(short = 'u', long)]
    pub update: bool,

    /// Skip entries that already exist at the destination.
    #[arg(long)]
    pub ignore_existing: bool,

    /// Skip creating entries that do not exist at the destination.
    #[arg(long, alias = "ignore-non-existing")]
    pub existing: bool,

    /// Skip files larger than SIZE (rsync suffixes: K M G T, KB MB ..., +1/-1).
    #[arg(long, value_name = "SIZE", value_parser = crate::report::units::parse_size)]
    pub max_size: Option<u64>,

    /// Skip files smaller than SIZE.
    #[arg(long, value_name = "SIZE", value_parser = crate::report::units::parse_size)]
    pub min_size: Option<u64>,

    /// Don't skip files whose size and mtime match.
    #[arg(short = 'I', long)]
    pub ignore_times: bool,

    /// Don't cross filesystem boundaries (-xx: leave mount points out entirely).
    #[arg(short = 'x', long, action = ArgAction::Count)]
    pub one_file_system: u8,

    /// Same as --delete (for a local-to-NFS copy every rsync delete timing gives the
    /// same result).
    #[arg(
        long,
        alias = "delete-before",
        alias = "delete-during",
        alias = "delete-after",
        alias = "delete-delay",
        action = ArgAction::Count
    )]
    pub del: u8,

    /// Delete even when a source directory could not be read completely.
    #[arg(long)]
    pub ignore_errors: bool,

    /// Show progress: =progress2 (or any progress level) shows the bar, other flags
    /// are accepted.
    #[arg(long, value_name = "FLAGS")]
    pub info: Vec<String>,

    /// rsync's debug output: `FILTER`/`FILTER1`/`FILTER2` (and `ALL`) trace the filter rules; other flags are accepted, no effect.
    #[arg(long, value_name = "FLAGS", hide = true)]
    pub debug: Vec<String>,

    /// Accepted, no effect: nothing to compress on a local-to-NFS copy (-v says so).
    #[arg(short = 'z', long, help_heading = "Accepted for rsync, no effect")]
    pub compress: bool,

    /// Numbers in units: --stats and --list-only sizes (-h: of 1000, -hh: of 1024);
    /// with other options (-avh) rsync's --human-readable, alone --help.
    #[arg(short = 'h', long, action = ArgAction::Count)]
    pub human_readable: u8,

    /// Names in per-file lines keep their bytes that are not UTF-8 as they are (without
    /// it they are shown as `\#ooo`); control characters are still escaped.
    #[arg(short = '8', long = "8-bit-output")]
    pub eight_bit_output: bool,

    /// --partial --progress: progress lines where no bar is shown, and where stdout is
    /// no terminal rsync's progress line after each file sent.
    #[arg(short = 'P')]
    pub partial_progress: bool,

    /// A file whose copy an interrupt (SIGINT/SIGTERM) stops keeps what was written,
    /// without the source's mtime (so it is copied again): at its name when nothing is
    /// there (an old copy stays whole), in --partial-dir when given.
    #[arg(long)]
    pub partial: bool,

    /// Accepted, no effect: nfsync always sends whole files.
    #[arg(
        short = 'W',
        long,
        alias = "no-whole-file",
        alias = "no-W",
        action = ArgAction::Count,
        help_heading = "Accepted for rsync, no effect"
    )]
    pub whole_file: u8,

    /// Accepted, no effect: nfsync's walk is incremental already.
    #[arg(long, alias = "no-i-r", help_heading = "Accepted for rsync, no effect")]
    pub no_inc_recursive: bool,

    /// Accepted, no effect: nfsync's memory is bounded by its own design (0 is
    /// refused, as rsync).
    #[arg(
        long,
        value_name = "SIZE",
        value_parser = parse_max_alloc,
        help_heading = "Accepted for rsync, no effect"
    )]
    pub max_alloc: Option<u64>,

    /// Accepted, no effect: -y finds a basis for rsync's delta transfer; nfsync sends
    /// whole files, so the result is the same without one.
    #[arg(short = 'y', long, action = ArgAction::Count, help_heading = "Accepted for rsync, no effect")]
    pub fuzzy: u8,

    /// Accepted, no effect: the block size of rsync's delta transfer (nfsync sends
    /// whole files).
    #[arg(short = 'B', long, value_name = "SIZE", value_parser = crate::report::units::parse_size,
          help_heading = "Accepted for rsync, no effect")]
    pub block_size: Option<u64>,

    /// Accepted, no effect: nothing is compressed on a local copy.
    #[arg(
        long,
        alias = "zc",
        value_name = "STR",
        help_heading = "Accepted for rsync, no effect"
    )]
    pub compress_choice: Option<String>,

    /// Accepted, no effect: nothing is compressed on a local copy.
    #[arg(
        long,
        alias = "zl",
        value_name = "NUM",
        help_heading = "Accepted for rsync, no effect"
    )]
    pub compress_level: Option<String>,

    /// Accepted, no effect: nothing is compressed on a local copy.
    #[arg(
        long,
        value_name = "LIST",
        help_heading = "Accepted for rsync, no effect"
    )]
    pub skip_compress: Option<String>,

    /// Accepted, no effect: there is no daemon to print a message of the day.
    #[arg(long, help_heading = "Accepted for rsync, no effect")]
    pub no_motd: bool,

    /// Accepted, no effect: source files are always opened with O_NOATIME where the
    /// kernel allows it (files we own, or as root).
    #[arg(long, help_heading = "Accepted for rsync, no effect")]
    pub open_noatime: bool,

    /// Accepted, no effect.
    #[arg(long, help_heading = "Accepted for rsync, no effect")]
    pub preallocate: bool,

    /// Accepted, no effect: as root nfsync keeps owners and devices (see -o, -g, -D).
    #[arg(
        long = "super",
        alias = "no-super",
        action = ArgAction::Count,
        help_heading = "Accepted for rsync, no effect"
    )]
    pub super_user: u8,

    /// Keep what only root may set (owner, devices, special permission bits) in the
    /// user.rsync.%stat extended attribute of each entry, on both sides of the copy
    /// (mount path only).
    #[arg(long)]
    pub fake_super: bool,

    /// Only --fake-super or --super: what rsync would pass to the remote side applies
    /// to DEST (-M--fake-super: fake-super on DEST only; with --fake-super,
    /// -M--super: on the source only).
    #[arg(short = 'M', long, value_name = "OPTION", allow_hyphen_values = true)]
    pub remote_option: Vec<String>,

    /// Accepted, no effect: directories in the way are always removed whole.
    #[arg(long, help_heading = "Accepted for rsync, no effect")]
    pub force: bool,

    /// Accepted, no effect: DEST's missing parents are always created.
    #[arg(long, help_heading = "Accepted for rsync, no effect")]
    pub mkpath: bool,

    // Filter rules.
    /// Add a filter RULE in rsync's syntax (- + H S P R ! merge dir-merge, with
    /// modifiers); rules apply in command-line order with --exclude and --include.
    #[arg(short = 'f', long, value_name = "RULE", allow_hyphen_values = true,
          value_parser = clap::value_parser!(OsString))]
    pub filter: Vec<OsString>,

    /// Same as --filter='dir-merge /.rsync-filter' (a .rsync-filter in each directory);
    /// given twice also --filter='- .rsync-filter'.
    #[arg(short = 'F', action = ArgAction::Count)]
    pub filter_files: u8,

    /// Read include patterns from FILE ('-' for stdin).
    #[arg(long, value_name = "FILE", value_parser = clap::value_parser!(std::path::PathBuf))]
    pub include_from: Vec<std::path::PathBuf>,

    /// Exclude what CVS ignores (rsync's list, ~/.cvsignore, $CVSIGNORE, and each
    /// directory's .cvsignore), after all other rules.
    #[arg(short = 'C', long)]
    pub cvs_exclude: bool,

    /// Delete excluded entries from DEST too (implies --delete; protect rules still keep
    /// theirs).
    #[arg(long)]
    pub delete_excluded: bool,
    // Output: rsync's per-file line formats, its log file, its number style.
    /// Print each change in FORMAT, as rsync (%i %n %L %l %b %f %M %t %o %p %B %U %G;
    /// widths as %-20n; %'l for commas).
    #[arg(long, value_name = "FORMAT", alias = "log-format", value_parser = parse_format)]
    pub out_format: Option<crate::report::format::LogFormat>,

    /// Log what is done to FILE, as rsync's --log-file.
    #[arg(long, value_name = "FILE")]
    pub log_file: Option<std::path::PathBuf>,

    /// The format of --log-file's per-file lines (default "%i %n%L").
    #[arg(long, value_name = "FORMAT", value_parser = parse_format)]
    pub log_file_format: Option<crate::report::format::LogFormat>,

    /// Plain numbers in --stats (no thousands separators).
    #[arg(long, alias = "no-h", hide = true)]
    pub no_human_readable: bool,
    // Links and attributes.
    /// Copy what symlinks point to instead of the links (a dangling one is an error).
    #[arg(short = 'L', long)]
    pub copy_links: bool,

    /// Copy what symlinks pointing outside the transfer point to (absolute ones too).
    #[arg(long)]
    pub copy_unsafe_links: bool,

    /// Leave out symlinks pointing outside the transfer (absolute ones too).
    #[arg(long)]
    pub safe_links: bool,

    /// Follow symlinks owned by other users in the paths options name (DEST,
    /// --backup-dir, --log-file, merge files, ...); by default only root's and ours.
    #[arg(long)]
    pub insecure_links: bool,

    /// Copy what symlinks to directories point to, as directories.
    #[arg(short = 'k', long)]
    pub copy_dirlinks: bool,

    /// Treat a symlink to a directory at the destination as that directory.
    #[arg(short = 'K', long)]
    pub keep_dirlinks: bool,

    /// Change modes as chmod(1) would: D755,F644 / u+w,Dg+s,a-x (D: directories, F:
    /// the rest).
    #[arg(long, value_name = "CHMOD")]
    pub chmod: Vec<String>,

    /// Give every entry this owner and group (names or numbers; U, U:G or :G). Implies
    /// -o and/or -g.
    #[arg(long, value_name = "USER:GROUP")]
    pub chown: Option<String>,

    /// Map owners FROM:TO,... (ids, LOW-HIGH ranges, names with * and ?; the first
    /// match wins). Implies -o.
    #[arg(long, value_name = "STRING")]
    pub usermap: Option<String>,

    /// Map groups FROM:TO,..., as --usermap. Implies -g.
    #[arg(long, value_name = "STRING")]
    pub groupmap: Option<String>,

    /// Copy extended attributes (user.*; as root trusted.* and security.* too).
    #[arg(short = 'X', long, action = ArgAction::Count)]
    pub xattrs: u8,

    /// Don't copy extended attributes.
    #[arg(long, alias = "no-X", hide = true)]
    pub no_xattrs: bool,

    /// Copy POSIX ACLs (implies -p).
    #[arg(short = 'A', long)]
    pub acls: bool,

    /// Don't copy ACLs.
    #[arg(long, alias = "no-A", hide = true)]
    pub no_acls: bool,
    // Data: how file data is written.
    /// Keep holes: only the source's data extents are written to new files.
    #[arg(short = 'S', long, overrides_with = "no_sparse")]
    pub sparse: bool,

    /// Write every byte of new files (takes back -S).
    #[arg(long, alias = "no-S", hide = true)]
    pub no_sparse: bool,

    /// Update files in place (hard links to them see the change) instead of writing
    /// beside them and renaming.
    #[arg(long)]
    pub inplace: bool,

    /// Append to files that are shorter at the destination (implies --inplace); files
    /// the same size or longer there are left alone.
    #[arg(long)]
    pub append: bool,

    /// --append, then compare the whole file and rewrite it if it differs.
    #[arg(long)]
    pub append_verify: bool,

    /// Write each file's temporary in DIR (relative to DEST), then move it in place.
    #[arg(short = 'T', long, value_name = "DIR")]
    pub temp_dir: Option<std::path::PathBuf>,

    /// Put all updated files in place at the end of the run.
    #[arg(long)]
    pub delay_updates: bool,

    /// Limit the rate data is written at, all files together (KiB/s unless a suffix
    /// says otherwise; 0: no limit).
    #[arg(long, value_name = "RATE", value_parser = crate::options::bwlimit::parse_rate)]
    pub bwlimit: Option<u64>,
    // Safety: what is kept and reused.
    /// Keep what is replaced or deleted, renamed with --suffix (or in --backup-dir).
    #[arg(short = 'b', long)]
    pub backup: bool,

    /// Keep backups in DIR (relative to DEST; on nfs:// an absolute DIR is a path on
    /// the server), each at its path below DEST; implies --backup.
    #[arg(long, value_name = "DIR")]
    pub backup_dir: Option<std::path::PathBuf>,

    /// Backup suffix (default "~", or none with --backup-dir).
    #[arg(long, value_name = "SUFFIX")]
    pub suffix: Option<std::ffi::OsString>,

    /// Hard-link a file DEST lacks to DIR's copy when that is unchanged (repeatable;
    /// relative DIR: relative to DEST).
    #[arg(long, value_name = "DIR")]
    pub link_dest: Vec<std::path::PathBuf>,

    /// Leave out a file DEST lacks when DIR's copy is unchanged (repeatable).
    #[arg(long, value_name = "DIR")]
    pub compare_dest: Vec<std::path::PathBuf>,

    /// Copy a file DEST lacks from DIR's copy when that is unchanged, as rsync copies it
    /// locally (repeatable; relative DIR: relative to DEST).
    #[arg(long, value_name = "DIR")]
    pub copy_dest: Vec<std::path::PathBuf>,

    /// Remove each source non-directory once DEST holds it complete (copied, or
    /// already up to date); directories stay.
    #[arg(long, alias = "remove-sent-files")]
    pub remove_source_files: bool,

    /// Implies --partial: where an interrupted copy is kept and where --delay-updates
    /// holds files back (relative: below each file's directory, rsync's .~tmp~ by
    /// default); a file kept there is removed once the file is copied.
    #[arg(long, value_name = "DIR")]
    pub partial_dir: Option<std::path::PathBuf>,
    // Which paths are sent (-R, --files-from, -d, -m, --list-only).
    /// Recreate each source's path under DEST (the part after a `/./`, or all of it).
    #[arg(short = 'R', long)]
    pub relative: bool,

    /// With -R, don't send the directories above a named path: DEST's own are used as
    /// they are, missing ones made with default permissions.
    #[arg(long)]
    pub no_implied_dirs: bool,

    /// Don't recreate source paths (takes back the -R that --files-from implies).
    #[arg(long, alias = "no-R", hide = true)]
    pub no_relative: bool,

    /// Copy the paths listed in FILE ('-' for stdin), relative to the one SRC; implies
    /// -R and -d, and -a does not imply -r here (a listed directory is created, its
    /// contents copied only with an explicit -r), as rsync.
    #[arg(long, value_name = "FILE")]
    pub files_from: Option<std::path::PathBuf>,

    /// --files-from names are separated by NUL bytes, not newlines.
    #[arg(short = '0', long)]
    pub from0: bool,

    /// Without -r, create the directories named (and `SRC/`'s top-level ones), not
    /// their contents.
    #[arg(short = 'd', long)]
    pub dirs: bool,

    /// Don't create directories that would end up holding no file (empty or only
    /// excluded entries below them).
    #[arg(short = 'm', long)]
    pub prune_empty_dirs: bool,

    /// List the sources in rsync's format instead of copying (DEST may be left out).
    #[arg(long)]
    pub list_only: bool,
}

impl RsyncOpts {
    /// Whether the command line chose what to preserve the way rsync does (any of
    /// -a -r -d -l -p -t -D): then what it leaves out is left out, as rsync would.
    pub fn selects(&self) -> bool {
        self.archive
            || self.recursive
            || self.dirs
            || self.links
            || self.perms
            || self.times
            || self.devices_specials
    }

    /// The names `--files-from` lists (`-` reads them from stdin).
    pub fn read_files_from(&self) -> anyhow::Result<Option<Vec<OsString>>> {
        use std::io::Read;
        let Some(f) = &self.files_from else {
            return Ok(None);
        };
        let data = if f.as_os_str() == "-" {
            let mut data = Vec::new();
            std::io::stdin().lock().read_to_end(&mut data).map(|_| data)
        } else {
            // A symlink another user owns is not followed (see `trust`).
            crate::options::trust::read(crate::options::trust::Trust::new(self.insecure_links), f)
        };
        let data = data.map_err(|e| anyhow::anyhow!("--files-from {}: {e}", Escaped(f)))?;
        Ok(Some(crate::options::relative::parse_list(
            &data, self.from0,
        )))
    }

    /// The level `--info` gives the flag `word` (upper case, as `BACKUP`), the last
    /// naming it winning (`BACKUP2`, `ALL`, `NONE`, `BACKUP0`); `None` when no `--info`
    /// names it, so `-v` decides.
    pub fn info_level(&self, word: &str) -> Option<u8> {
        let mut level = None;
        for flag in self.info.iter().flat_map(|i| i.split(',')) {
            let upper = flag.trim().to_ascii_uppercase();
            let name = upper.trim_end_matches(|c: char| c.is_ascii_digit());
            if name == word || name == "ALL" {
                level = Some(upper[name.len()..].parse().unwrap_or(1));
            } else if name == "NONE" {
                level = Some(0);
            }
        }
        level
    }

    /// What `--info` asks of the progress bar: `Some(true)` for a progress level above
    /// 0, `Some(false)` for `progress0` or `none`.
    pub fn info_progress(&self) -> Option<bool> {
        let mut r = None;
        for flag in self.info.iter().flat_map(|i| i.split(',')) {
            match flag.to_ascii_lowercase().as_str() {
                "none" | "progress0" => r = Some(false),
                "progress" | "progress1" | "progress2" | "all" => r = Some(true),
                _ => {}
            }
        }
        r
    }
}

/// `--max-alloc`'s SIZE: as rsync, 0 is refused.
fn parse_max_alloc(s: &str) -> Result<u64, String> {
    match crate::report::units::parse_size(s)? {
        0 => Err("max-alloc must be greater than zero".into()),
        n => Ok(n),
    }
}

/// An `--out-format` or `--log-file-format` value: rsync's escapes, the ones nfsync
/// cannot give refused here with the reason.
fn parse_format(s: &str) -> Result<crate::report::format::LogFormat, String> {
    crate::report::format::LogFormat::parse(s).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::Cli;

    fn check(args: &[&str]) -> Result<(), String> {
        check_argv(args.iter().map(OsString::from).collect())
            .map(|c| drop(c.args))
            .map_err(|e| e.to_string())
    }

    #[test]
    fn repeated_options_count_append_and_the_last_wins() {
        use clap::Parser;
        let cli = Cli::try_parse_from([
            "nfsync",
            "-vv",
            "-rl",
            "-l",
            "--exclude",
            "a",
            "--exclude",
            "b",
            "x",
            "y",
        ])
        .unwrap();
        assert_eq!(cli.verbose, 2);
        assert_eq!(cli.exclude.len(), 2);
        assert!(cli.rsync.links);
    }

    #[test]
    fn argv_is_checked_like_rsync() {
        assert_eq!(check(&["-avzP", "--exclude", "-x", "a", "b"]), Ok(()));
        assert_eq!(check(&["-rlptgoD", "-j4", "a", "b"]), Ok(()));
        assert_eq!(check(&["--", "--foo", "a"]), Ok(()));
        assert_eq!(check(&["--foo"]), Err("--foo: unknown option".into()));
        assert_eq!(check(&["-aQ"]), Err("-Q: unknown option".into()));
        let e = check(&["-ave", "ssh"]).unwrap_err();
        assert!(e.starts_with("-e (--rsh) is not supported ("), "{e}");
        assert_eq!(check(&["-a", "--no-xattrs", "--no-A", "a", "b"]), Ok(()));
        let e = check(&["--iconv"]).unwrap_err();
        assert!(e.starts_with("--iconv is not supported ("), "{e}");
        assert_eq!(
            check(&["-yE", "-J", "--no-motd", "-B", "8k", "a", "b"]),
            Ok(())
        );
        assert_eq!(check(&["-ab", "--link-dest=../x", "a", "b"]), Ok(()));
        // --progress takes its format only after `=`: the next argument is checked.
        assert_eq!(
            check(&["--progress", "--iconv=x", "a", "b"]).map_err(|e| e.starts_with("--iconv")),
            Err(true)
        );
        assert_eq!(check(&["--progress=json", "a", "b"]), Ok(()));
    }
}
