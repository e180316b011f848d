complete -c nfsync -l max-delete -d 'Delete at most NUM entries (each one inside a removed directory counts), then skip further deletions and exit 25; 0 deletes nothing and reports what it would' -r
complete -c nfsync -l exclude -d 'Exclude paths matching PATTERN (rsync rules: leading / anchors, trailing / = dirs only)' -r
complete -c nfsync -l include -d 'Don\'t exclude paths matching PATTERN (rules apply in order; the first match wins)' -r
complete -c nfsync -l exclude-from -d 'Read exclude patterns from FILE (\'-\' for stdin; \'+ PAT\' includes, \'- PAT\' excludes)' -r -F
complete -c nfsync -l modify-window -d 'Treat mtimes within SECS seconds as equal (default 0: whole seconds, as rsync; -1: to the nanosecond)' -r
complete -c nfsync -s j -l jobs -d 'Files in flight: a number, or \'auto\' to find the best by measuring' -r
complete -c nfsync -l progress -d 'Show progress: a bar on a terminal (the default there); elsewhere (a log, a pipe, `kubectl logs`) a line every --stats-every. =json: one JSON object a line, on a terminal too, the last one the run\'s totals (--json\'s)' -r -f -a "text\t'A bar on a terminal, lines elsewhere'
json\t'One JSON object a line'"
complete -c nfsync -l stats-every -d 'Print a progress line every DURATION (200ms, 30s, 5m, 1h; a bare number is seconds) where no bar is shown, even without --progress (default with progress asked for: 30s): files and bytes done of found, rates over the interval and overall, ETA once the walk is done, jobs, errors. SIGUSR1 prints the line at once' -r
complete -c nfsync -l timeout -d 'NFS: seconds without an answer before giving up on the server (0: wait forever)' -r
complete -c nfsync -l stop-at -d 'Stop the run at TIME ([YYYY-]MM-DDThh:mm, or hh:mm; local time): files in flight are finished, no new one is started, exit 30 as rsync' -r
complete -c nfsync -l stop-after -d 'Stop the run after MINS minutes, as --stop-at' -r
complete -c nfsync -l max-size -d 'Skip files larger than SIZE (rsync suffixes: K M G T, KB MB ..., +1/-1)' -r
complete -c nfsync -l min-size -d 'Skip files smaller than SIZE' -r
complete -c nfsync -l info -d 'Show progress: =progress2 (or any progress level) shows the bar, other flags are accepted' -r
complete -c nfsync -l debug -d 'rsync\'s debug output: `FILTER`/`FILTER1`/`FILTER2` (and `ALL`) trace the filter rules; other flags are accepted, no effect' -r
complete -c nfsync -l max-alloc -d 'Accepted, no effect: nfsync\'s memory is bounded by its own design (0 is refused, as rsync)' -r
complete -c nfsync -s B -l block-size -d 'Accepted, no effect: the block size of rsync\'s delta transfer (nfsync sends whole files)' -r
complete -c nfsync -l compress-choice -d 'Accepted, no effect: nothing is compressed on a local copy' -r
complete -c nfsync -l compress-level -d 'Accepted, no effect: nothing is compressed on a local copy' -r
complete -c nfsync -l skip-compress -d 'Accepted, no effect: nothing is compressed on a local copy' -r
complete -c nfsync -s M -l remote-option -d 'Only --fake-super or --super: what rsync would pass to the remote side applies to DEST (-M--fake-super: fake-super on DEST only; with --fake-super, -M--super: on the source only)' -r
complete -c nfsync -s f -l filter -d 'Add a filter RULE in rsync\'s syntax (- + H S P R ! merge dir-merge, with modifiers); rules apply in command-line order with --exclude and --include' -r
complete -c nfsync -l include-from -d 'Read include patterns from FILE (\'-\' for stdin)' -r -F
complete -c nfsync -l out-format -d 'Print each change in FORMAT, as rsync (%i %n %L %l %b %f %M %t %o %p %B %U %G; widths as %-20n; %\'l for commas)' -r
complete -c nfsync -l log-file -d 'Log what is done to FILE, as rsync\'s --log-file' -r -F
complete -c nfsync -l log-file-format -d 'The format of --log-file\'s per-file lines (default "%i %n%L")' -r
complete -c nfsync -l chmod -d 'Change modes as chmod(1) would: D755,F644 / u+w,Dg+s,a-x (D: directories, F: the rest)' -r
complete -c nfsync -l chown -d 'Give every entry this owner and group (names or numbers; U, U:G or :G). Implies -o and/or -g' -r
complete -c nfsync -l usermap -d 'Map owners FROM:TO,... (ids, LOW-HIGH ranges, names with * and ?; the first match wins). Implies -o' -r
complete -c nfsync -l groupmap -d 'Map groups FROM:TO,..., as --usermap. Implies -g' -r
complete -c nfsync -s T -l temp-dir -d 'Write each file\'s temporary in DIR (relative to DEST), then move it in place' -r -F
complete -c nfsync -l bwlimit -d 'Limit the rate data is written at, all files together (KiB/s unless a suffix says otherwise; 0: no limit)' -r
complete -c nfsync -l backup-dir -d 'Keep backups in DIR (relative to DEST; on nfs:// an absolute DIR is a path on the server), each at its path below DEST; implies --backup' -r -F
complete -c nfsync -l suffix -d 'Backup suffix (default "~", or none with --backup-dir)' -r
complete -c nfsync -l link-dest -d 'Hard-link a file DEST lacks to DIR\'s copy when that is unchanged (repeatable; relative DIR: relative to DEST)' -r -F
complete -c nfsync -l compare-dest -d 'Leave out a file DEST lacks when DIR\'s copy is unchanged (repeatable)' -r -F
complete -c nfsync -l copy-dest -d 'Copy a file DEST lacks from DIR\'s copy when that is unchanged, as rsync copies it locally (repeatable; relative DIR: relative to DEST)' -r -F
complete -c nfsync -l partial-dir -d 'Implies --partial: where an interrupted copy is kept and where --delay-updates holds files back (relative: below each file\'s directory, rsync\'s .~tmp~ by default); a file kept there is removed once the file is copied' -r -F
complete -c nfsync -l files-from -d 'Copy the paths listed in FILE (\'-\' for stdin), relative to the one SRC; implies -R and -d, and -a does not imply -r here (a listed directory is created, its contents copied only with an explicit -r), as rsync' -r -F
complete -c nfsync -l check-files -d 'Files the --check estimate is for' -r
complete -c nfsync -l generate -d 'Write a completion script or the man page to stdout' -r -f -a "bash\t'bash completion script'
zsh\t'zsh completion script'
fish\t'fish completion script'
man\t'The man page (roff)'"
complete -c nfsync -l shard -d 'Copy, update and delete only share K of N (K/N, 0 <= K < N; \'slurm\' reads a job array\'s SLURM_ARRAY_TASK_*; \'k8s/N\' an Indexed Job\'s JOB_COMPLETION_INDEX). Run every share at once into one DEST, then the same command without --shard once (the finalize step): it sets directory attributes and copies nothing the shards copied' -r
complete -c nfsync -l help -d 'Print help (-h alone too; with other options -h is rsync\'s --human-readable)'
complete -c nfsync -s n -l dry-run -d 'Show what would change; change nothing'
complete -c nfsync -l delete -d 'Delete destination entries the source lacks (in each directory after its copy)'
complete -c nfsync -s c -l checksum -d 'Compare file contents, not size and mtime, to decide what is up to date'
complete -c nfsync -l size-only -d 'Skip files whose size matches, whatever their mtime'
complete -c nfsync -s H -l hard-links -d 'Preserve hard links'
complete -c nfsync -l specials -d 'Copy fifos and sockets (skipped otherwise, as rsync: "skipping non-regular file"; part of -D and -a)'
complete -c nfsync -l no-specials -d 'Don\'t copy fifos and sockets'
complete -c nfsync -l devices -d 'Copy device files (root only; skipped otherwise, as rsync; part of -D and -a)'
complete -c nfsync -l no-devices -d 'Don\'t copy device files'
complete -c nfsync -s o -l owner -d 'Preserve owners (default when run as root, without an rsync selection of -rlptD)'
complete -c nfsync -l no-owner -d 'Don\'t preserve owners'
complete -c nfsync -s g -l group -d 'Preserve groups (default when run as root, without an rsync selection of -rlptD)'
complete -c nfsync -l no-group -d 'Don\'t preserve groups'
complete -c nfsync -l numeric-ids -d 'Don\'t map uid/gid by name (ids are always numeric on nfsync\'s paths)'
complete -c nfsync -s v -l verbose -d 'Print each changed path and each change --jobs auto makes'
complete -c nfsync -s q -l quiet -d 'Print errors and warnings only'
complete -c nfsync -l no-progress -d 'Don\'t show a progress bar'
complete -c nfsync -l stats -d 'Print rsync\'s --stats block at the end (-h: sizes in units)'
complete -c nfsync -s i -l itemize-changes -d 'Print a change summary per entry, like rsync -i (-ii: also for unchanged ones)'
complete -c nfsync -l json -d 'Print one JSON object with the run\'s totals on stdout at the end'
complete -c nfsync -s a -l archive -d 'Archive mode: -rlptgoD, as rsync (devices and specials included). Without any of -a -r -l -p -t -D nfsync works like -a without -D'
complete -c nfsync -s r -l recursive -d 'Recurse into directories'
complete -c nfsync -l no-recursive -d 'Don\'t recurse: directories are skipped ("skipping directory"), as rsync'
complete -c nfsync -s l -l links -d 'Copy symlinks as symlinks (without it they are skipped)'
complete -c nfsync -l no-links -d 'Skip symlinks'
complete -c nfsync -s p -l perms -d 'Preserve permissions (without it new entries get the source\'s mode less the umask)'
complete -c nfsync -l no-perms -d 'Don\'t preserve permissions'
complete -c nfsync -s t -l times -d 'Preserve modification times (without it they are not set, and the quick check copies again every file whose mtime differs, as rsync does)'
complete -c nfsync -l no-times -d 'Don\'t preserve modification times'
complete -c nfsync -s D -d 'Same as --devices --specials'
complete -c nfsync -l no-D -d 'Same as --no-devices --no-specials'
complete -c nfsync -s O -l omit-dir-times -d 'Don\'t set directories\' modification times'
complete -c nfsync -s U -l atimes -d 'Give copied files the source\'s access time (on the mount path; a file that is up to date keeps its own)'
complete -c nfsync -s J -l omit-link-times -d 'Don\'t set symlinks\' modification times (nor compare them)'
complete -c nfsync -s E -l executability -d 'Without -p: a copied file is made executable where it is readable when the source is executable, and not executable when the source is not'
complete -c nfsync -s u -l update -d 'Skip files that are newer at the destination'
complete -c nfsync -l ignore-existing -d 'Skip entries that already exist at the destination'
complete -c nfsync -l existing -d 'Skip creating entries that do not exist at the destination'
complete -c nfsync -s I -l ignore-times -d 'Don\'t skip files whose size and mtime match'
complete -c nfsync -s x -l one-file-system -d 'Don\'t cross filesystem boundaries (-xx: leave mount points out entirely)'
complete -c nfsync -l del -d 'Same as --delete (for a local-to-NFS copy every rsync delete timing gives the same result)'
complete -c nfsync -l ignore-errors -d 'Delete even when a source directory could not be read completely'
complete -c nfsync -s z -l compress -d 'Accepted, no effect: nothing to compress on a local-to-NFS copy (-v says so)'
complete -c nfsync -s h -l human-readable -d 'Numbers in units: --stats and --list-only sizes (-h: of 1000, -hh: of 1024); with other options (-avh) rsync\'s --human-readable, alone --help'
complete -c nfsync -s 8 -l 8-bit-output -d 'Names in per-file lines keep their bytes that are not UTF-8 as they are (without it they are shown as `\\#ooo`); control characters are still escaped'
complete -c nfsync -s P -d '--partial --progress: progress lines where no bar is shown, and where stdout is no terminal rsync\'s progress line after each file sent'
complete -c nfsync -l partial -d 'A file whose copy an interrupt (SIGINT/SIGTERM) stops keeps what was written, without the source\'s mtime (so it is copied again): at its name when nothing is there (an old copy stays whole), in --partial-dir when given'
complete -c nfsync -s W -l whole-file -d 'Accepted, no effect: nfsync always sends whole files'
complete -c nfsync -l no-inc-recursive -d 'Accepted, no effect: nfsync\'s walk is incremental already'
complete -c nfsync -s y -l fuzzy -d 'Accepted, no effect: -y finds a basis for rsync\'s delta transfer; nfsync sends whole files, so the result is the same without one'
complete -c nfsync -l no-motd -d 'Accepted, no effect: there is no daemon to print a message of the day'
complete -c nfsync -l open-noatime -d 'Accepted, no effect: source files are always opened with O_NOATIME where the kernel allows it (files we own, or as root)'
complete -c nfsync -l preallocate -d 'Accepted, no effect'
complete -c nfsync -l super -d 'Accepted, no effect: as root nfsync keeps owners and devices (see -o, -g, -D)'
complete -c nfsync -l fake-super -d 'Keep what only root may set (owner, devices, special permission bits) in the user.rsync.%stat extended attribute of each entry, on both sides of the copy (mount path only)'
complete -c nfsync -l force -d 'Accepted, no effect: directories in the way are always removed whole'
complete -c nfsync -l mkpath -d 'Accepted, no effect: DEST\'s missing parents are always created'
complete -c nfsync -s F -d 'Same as --filter=\'dir-merge /.rsync-filter\' (a .rsync-filter in each directory); given twice also --filter=\'- .rsync-filter\''
complete -c nfsync -s C -l cvs-exclude -d 'Exclude what CVS ignores (rsync\'s list, ~/.cvsignore, $CVSIGNORE, and each directory\'s .cvsignore), after all other rules'
complete -c nfsync -l delete-excluded -d 'Delete excluded entries from DEST too (implies --delete; protect rules still keep theirs)'
complete -c nfsync -l no-human-readable -d 'Plain numbers in --stats (no thousands separators)'
complete -c nfsync -s L -l copy-links -d 'Copy what symlinks point to instead of the links (a dangling one is an error)'
complete -c nfsync -l copy-unsafe-links -d 'Copy what symlinks pointing outside the transfer point to (absolute ones too)'
complete -c nfsync -l safe-links -d 'Leave out symlinks pointing outside the transfer (absolute ones too)'
complete -c nfsync -l insecure-links -d 'Follow symlinks owned by other users in the paths options name (DEST, --backup-dir, --log-file, merge files, ...); by default only root\'s and ours'
complete -c nfsync -s k -l copy-dirlinks -d 'Copy what symlinks to directories point to, as directories'
complete -c nfsync -s K -l keep-dirlinks -d 'Treat a symlink to a directory at the destination as that directory'
complete -c nfsync -s X -l xattrs -d 'Copy extended attributes (user.*; as root trusted.* and security.* too)'
complete -c nfsync -l no-xattrs -d 'Don\'t copy extended attributes'
complete -c nfsync -s A -l acls -d 'Copy POSIX ACLs (implies -p)'
complete -c nfsync -l no-acls -d 'Don\'t copy ACLs'
complete -c nfsync -s S -l sparse -d 'Keep holes: only the source\'s data extents are written to new files'
complete -c nfsync -l no-sparse -d 'Write every byte of new files (takes back -S)'
complete -c nfsync -l inplace -d 'Update files in place (hard links to them see the change) instead of writing beside them and renaming'
complete -c nfsync -l append -d 'Append to files that are shorter at the destination (implies --inplace); files the same size or longer there are left alone'
complete -c nfsync -l append-verify -d '--append, then compare the whole file and rewrite it if it differs'
complete -c nfsync -l delay-updates -d 'Put all updated files in place at the end of the run'
complete -c nfsync -s b -l backup -d 'Keep what is replaced or deleted, renamed with --suffix (or in --backup-dir)'
complete -c nfsync -l remove-source-files -d 'Remove each source non-directory once DEST holds it complete (copied, or already up to date); directories stay'
complete -c nfsync -s R -l relative -d 'Recreate each source\'s path under DEST (the part after a `/./`, or all of it)'
complete -c nfsync -l no-implied-dirs -d 'With -R, don\'t send the directories above a named path: DEST\'s own are used as they are, missing ones made with default permissions'
complete -c nfsync -l no-relative -d 'Don\'t recreate source paths (takes back the -R that --files-from implies)'
complete -c nfsync -s 0 -l from0 -d '--files-from names are separated by NUL bytes, not newlines'
complete -c nfsync -s d -l dirs -d 'Without -r, create the directories named (and `SRC/`\'s top-level ones), not their contents'
complete -c nfsync -s m -l prune-empty-dirs -d 'Don\'t create directories that would end up holding no file (empty or only excluded entries below them)'
complete -c nfsync -l list-only -d 'List the sources in rsync\'s format instead of copying (DEST may be left out)'
complete -c nfsync -l check -d 'Check DEST before a migration, copying nothing: connect as a run would, write, date, read back and remove a probe file, time a round trip and the small-file rate with the run\'s --jobs, and estimate a run of --check-files files (exit 0: a run can write there; otherwise the code a run would end with)'
complete -c nfsync -l mpi -d 'Under mpirun: the ranks share the tree as they go (each takes the next piece of work no rank has taken, so a slow rank takes less); rank 0 then sets directory attributes and prints the totals of all (needs a build with --features mpi)'
complete -c nfsync -s V -l version -d 'Print version'
