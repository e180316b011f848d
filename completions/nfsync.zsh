#compdef nfsync

autoload -U is-at-least

_nfsync() {
    typeset -A opt_args
    typeset -a _arguments_options
    local ret=1

    if is-at-least 5.2; then
        _arguments_options=(-s -S -C)
    else
        _arguments_options=(-s -C)
    fi

    local context curcontext="$curcontext" state line
    _arguments "${_arguments_options[@]}" : \
'--max-delete=[Delete at most NUM entries (each one inside a removed directory counts), then skip further deletions and exit 25; 0 deletes nothing and reports what it would]:NUM:_default' \
'*--exclude=[Exclude paths matching PATTERN (rsync rules\: leading / anchors, trailing / = dirs only)]:PATTERN:_default' \
'*--include=[Don'\''t exclude paths matching PATTERN (rules apply in order; the first match wins)]:PATTERN:_default' \
'*--exclude-from=[Read exclude patterns from FILE ('\''-'\'' for stdin; '\''+ PAT'\'' includes, '\''- PAT'\'' excludes)]:FILE:_files' \
'--modify-window=[Treat mtimes within SECS seconds as equal (default 0\: whole seconds, as rsync; -1\: to the nanosecond)]:SECS:_default' \
'-j+[Files in flight\: a number, or '\''auto'\'' to find the best by measuring]:N|auto:_default' \
'--jobs=[Files in flight\: a number, or '\''auto'\'' to find the best by measuring]:N|auto:_default' \
'--progress=[Show progress\: a bar on a terminal (the default there); elsewhere (a log, a pipe, \`kubectl logs\`) a line every --stats-every. =json\: one JSON object a line, on a terminal too, the last one the run'\''s totals (--json'\''s)]::FORMAT:((text\:"A bar on a terminal, lines elsewhere"
json\:"One JSON object a line"))' \
'--stats-every=[Print a progress line every DURATION (200ms, 30s, 5m, 1h; a bare number is seconds) where no bar is shown, even without --progress (default with progress asked for\: 30s)\: files and bytes done of found, rates over the interval and overall, ETA once the walk is done, jobs, errors. SIGUSR1 prints the line at once]:DURATION:_default' \
'--timeout=[NFS\: seconds without an answer before giving up on the server (0\: wait forever)]:SECS:_default' \
'--stop-at=[Stop the run at TIME (\[YYYY-\]MM-DDThh\:mm, or hh\:mm; local time)\: files in flight are finished, no new one is started, exit 30 as rsync]:TIME:_default' \
'--stop-after=[Stop the run after MINS minutes, as --stop-at]:MINS:_default' \
'--max-size=[Skip files larger than SIZE (rsync suffixes\: K M G T, KB MB ..., +1/-1)]:SIZE:_default' \
'--min-size=[Skip files smaller than SIZE]:SIZE:_default' \
'*--info=[Show progress\: =progress2 (or any progress level) shows the bar, other flags are accepted]:FLAGS:_default' \
'*--debug=[rsync'\''s debug output\: \`FILTER\`/\`FILTER1\`/\`FILTER2\` (and \`ALL\`) trace the filter rules; other flags are accepted, no effect]:FLAGS:_default' \
'--max-alloc=[Accepted, no effect\: nfsync'\''s memory is bounded by its own design (0 is refused, as rsync)]:SIZE:_default' \
'-B+[Accepted, no effect\: the block size of rsync'\''s delta transfer (nfsync sends whole files)]:SIZE:_default' \
'--block-size=[Accepted, no effect\: the block size of rsync'\''s delta transfer (nfsync sends whole files)]:SIZE:_default' \
'--compress-choice=[Accepted, no effect\: nothing is compressed on a local copy]:STR:_default' \
'--compress-level=[Accepted, no effect\: nothing is compressed on a local copy]:NUM:_default' \
'--skip-compress=[Accepted, no effect\: nothing is compressed on a local copy]:LIST:_default' \
'*-M+[Only --fake-super or --super\: what rsync would pass to the remote side applies to DEST (-M--fake-super\: fake-super on DEST only; with --fake-super, -M--super\: on the source only)]:OPTION:_default' \
'*--remote-option=[Only --fake-super or --super\: what rsync would pass to the remote side applies to DEST (-M--fake-super\: fake-super on DEST only; with --fake-super, -M--super\: on the source only)]:OPTION:_default' \
'*-f+[Add a filter RULE in rsync'\''s syntax (- + H S P R ! merge dir-merge, with modifiers); rules apply in command-line order with --exclude and --include]:RULE:_default' \
'*--filter=[Add a filter RULE in rsync'\''s syntax (- + H S P R ! merge dir-merge, with modifiers); rules apply in command-line order with --exclude and --include]:RULE:_default' \
'*--include-from=[Read include patterns from FILE ('\''-'\'' for stdin)]:FILE:_files' \
'--out-format=[Print each change in FORMAT, as rsync (%i %n %L %l %b %f %M %t %o %p %B %U %G; widths as %-20n; %'\''l for commas)]:FORMAT:_default' \
'--log-file=[Log what is done to FILE, as rsync'\''s --log-file]:FILE:_files' \
'--log-file-format=[The format of --log-file'\''s per-file lines (default "%i %n%L")]:FORMAT:_default' \
'*--chmod=[Change modes as chmod(1) would\: D755,F644 / u+w,Dg+s,a-x (D\: directories, F\: the rest)]:CHMOD:_default' \
'--chown=[Give every entry this owner and group (names or numbers; U, U\:G or \:G). Implies -o and/or -g]:USER:GROUP:_default' \
'--usermap=[Map owners FROM\:TO,... (ids, LOW-HIGH ranges, names with * and ?; the first match wins). Implies -o]:STRING:_default' \
'--groupmap=[Map groups FROM\:TO,..., as --usermap. Implies -g]:STRING:_default' \
'-T+[Write each file'\''s temporary in DIR (relative to DEST), then move it in place]:DIR:_files' \
'--temp-dir=[Write each file'\''s temporary in DIR (relative to DEST), then move it in place]:DIR:_files' \
'--bwlimit=[Limit the rate data is written at, all files together (KiB/s unless a suffix says otherwise; 0\: no limit)]:RATE:_default' \
'--backup-dir=[Keep backups in DIR (relative to DEST; on nfs\:// an absolute DIR is a path on the server), each at its path below DEST; implies --backup]:DIR:_files' \
'--suffix=[Backup suffix (default "~", or none with --backup-dir)]:SUFFIX:_default' \
'*--link-dest=[Hard-link a file DEST lacks to DIR'\''s copy when that is unchanged (repeatable; relative DIR\: relative to DEST)]:DIR:_files' \
'*--compare-dest=[Leave out a file DEST lacks when DIR'\''s copy is unchanged (repeatable)]:DIR:_files' \
'*--copy-dest=[Copy a file DEST lacks from DIR'\''s copy when that is unchanged, as rsync copies it locally (repeatable; relative DIR\: relative to DEST)]:DIR:_files' \
'--partial-dir=[Implies --partial\: where an interrupted copy is kept and where --delay-updates holds files back (relative\: below each file'\''s directory, rsync'\''s .~tmp~ by default); a file kept there is removed once the file is copied]:DIR:_files' \
'--files-from=[Copy the paths listed in FILE ('\''-'\'' for stdin), relative to the one SRC; implies -R and -d, and -a does not imply -r here (a listed directory is created, its contents copied only with an explicit -r), as rsync]:FILE:_files' \
'--check-files=[Files the --check estimate is for]:N:_default' \
'--generate=[Write a completion script or the man page to stdout]:KIND:((bash\:"bash completion script"
zsh\:"zsh completion script"
fish\:"fish completion script"
man\:"The man page (roff)"))' \
'--shard=[Copy, update and delete only share K of N (K/N, 0 <= K < N; '\''slurm'\'' reads a job array'\''s SLURM_ARRAY_TASK_*; '\''k8s/N'\'' an Indexed Job'\''s JOB_COMPLETION_INDEX). Run every share at once into one DEST, then the same command without --shard once (the finalize step)\: it sets directory attributes and copies nothing the shards copied]:K/N|slurm|k8s/N:_default' \
'--help[Print help (-h alone too; with other options -h is rsync'\''s --human-readable)]' \
'-n[Show what would change; change nothing]' \
'--dry-run[Show what would change; change nothing]' \
'--delete[Delete destination entries the source lacks (in each directory after its copy)]' \
'-c[Compare file contents, not size and mtime, to decide what is up to date]' \
'--checksum[Compare file contents, not size and mtime, to decide what is up to date]' \
'(-c --checksum)--size-only[Skip files whose size matches, whatever their mtime]' \
'-H[Preserve hard links]' \
'--hard-links[Preserve hard links]' \
'--specials[Copy fifos and sockets (skipped otherwise, as rsync\: "skipping non-regular file"; part of -D and -a)]' \
'--no-specials[Don'\''t copy fifos and sockets]' \
'--devices[Copy device files (root only; skipped otherwise, as rsync; part of -D and -a)]' \
'--no-devices[Don'\''t copy device files]' \
'-o[Preserve owners (default when run as root, without an rsync selection of -rlptD)]' \
'--owner[Preserve owners (default when run as root, without an rsync selection of -rlptD)]' \
'--no-owner[Don'\''t preserve owners]' \
'-g[Preserve groups (default when run as root, without an rsync selection of -rlptD)]' \
'--group[Preserve groups (default when run as root, without an rsync selection of -rlptD)]' \
'--no-group[Don'\''t preserve groups]' \
'--numeric-ids[Don'\''t map uid/gid by name (ids are always numeric on nfsync'\''s paths)]' \
'*-v[Print each changed path and each change --jobs auto makes]' \
'*--verbose[Print each changed path and each change --jobs auto makes]' \
'-q[Print errors and warnings only]' \
'--quiet[Print errors and warnings only]' \
'--no-progress[Don'\''t show a progress bar]' \
'--stats[Print rsync'\''s --stats block at the end (-h\: sizes in units)]' \
'*-i[Print a change summary per entry, like rsync -i (-ii\: also for unchanged ones)]' \
'*--itemize-changes[Print a change summary per entry, like rsync -i (-ii\: also for unchanged ones)]' \
'--json[Print one JSON object with the run'\''s totals on stdout at the end]' \
'-a[Archive mode\: -rlptgoD, as rsync (devices and specials included). Without any of -a -r -l -p -t -D nfsync works like -a without -D]' \
'--archive[Archive mode\: -rlptgoD, as rsync (devices and specials included). Without any of -a -r -l -p -t -D nfsync works like -a without -D]' \
'-r[Recurse into directories]' \
'--recursive[Recurse into directories]' \
'--no-recursive[Don'\''t recurse\: directories are skipped ("skipping directory"), as rsync]' \
'-l[Copy symlinks as symlinks (without it they are skipped)]' \
'--links[Copy symlinks as symlinks (without it they are skipped)]' \
'--no-links[Skip symlinks]' \
'-p[Preserve permissions (without it new entries get the source'\''s mode less the umask)]' \
'--perms[Preserve permissions (without it new entries get the source'\''s mode less the umask)]' \
'--no-perms[Don'\''t preserve permissions]' \
'-t[Preserve modification times (without it they are not set, and the quick check copies again every file whose mtime differs, as rsync does)]' \
'--times[Preserve modification times (without it they are not set, and the quick check copies again every file whose mtime differs, as rsync does)]' \
'--no-times[Don'\''t preserve modification times]' \
'-D[Same as --devices --specials]' \
'--no-D[Same as --no-devices --no-specials]' \
'-O[Don'\''t set directories'\'' modification times]' \
'--omit-dir-times[Don'\''t set directories'\'' modification times]' \
'-U[Give copied files the source'\''s access time (on the mount path; a file that is up to date keeps its own)]' \
'--atimes[Give copied files the source'\''s access time (on the mount path; a file that is up to date keeps its own)]' \
'-J[Don'\''t set symlinks'\'' modification times (nor compare them)]' \
'--omit-link-times[Don'\''t set symlinks'\'' modification times (nor compare them)]' \
'-E[Without -p\: a copied file is made executable where it is readable when the source is executable, and not executable when the source is not]' \
'--executability[Without -p\: a copied file is made executable where it is readable when the source is executable, and not executable when the source is not]' \
'-u[Skip files that are newer at the destination]' \
'--update[Skip files that are newer at the destination]' \
'--ignore-existing[Skip entries that already exist at the destination]' \
'--existing[Skip creating entries that do not exist at the destination]' \
'-I[Don'\''t skip files whose size and mtime match]' \
'--ignore-times[Don'\''t skip files whose size and mtime match]' \
'*-x[Don'\''t cross filesystem boundaries (-xx\: leave mount points out entirely)]' \
'*--one-file-system[Don'\''t cross filesystem boundaries (-xx\: leave mount points out entirely)]' \
'*--del[Same as --delete (for a local-to-NFS copy every rsync delete timing gives the same result)]' \
'--ignore-errors[Delete even when a source directory could not be read completely]' \
'-z[Accepted, no effect\: nothing to compress on a local-to-NFS copy (-v says so)]' \
'--compress[Accepted, no effect\: nothing to compress on a local-to-NFS copy (-v says so)]' \
'*-h[Numbers in units\: --stats and --list-only sizes (-h\: of 1000, -hh\: of 1024); with other options (-avh) rsync'\''s --human-readable, alone --help]' \
'*--human-readable[Numbers in units\: --stats and --list-only sizes (-h\: of 1000, -hh\: of 1024); with other options (-avh) rsync'\''s --human-readable, alone --help]' \
'-8[Names in per-file lines keep their bytes that are not UTF-8 as they are (without it they are shown as \`\\#ooo\`); control characters are still escaped]' \
'--8-bit-output[Names in per-file lines keep their bytes that are not UTF-8 as they are (without it they are shown as \`\\#ooo\`); control characters are still escaped]' \
'-P[--partial --progress\: progress lines where no bar is shown, and where stdout is no terminal rsync'\''s progress line after each file sent]' \
'--partial[A file whose copy an interrupt (SIGINT/SIGTERM) stops keeps what was written, without the source'\''s mtime (so it is copied again)\: at its name when nothing is there (an old copy stays whole), in --partial-dir when given]' \
'*-W[Accepted, no effect\: nfsync always sends whole files]' \
'*--whole-file[Accepted, no effect\: nfsync always sends whole files]' \
'--no-inc-recursive[Accepted, no effect\: nfsync'\''s walk is incremental already]' \
'*-y[Accepted, no effect\: -y finds a basis for rsync'\''s delta transfer; nfsync sends whole files, so the result is the same without one]' \
'*--fuzzy[Accepted, no effect\: -y finds a basis for rsync'\''s delta transfer; nfsync sends whole files, so the result is the same without one]' \
'--no-motd[Accepted, no effect\: there is no daemon to print a message of the day]' \
'--open-noatime[Accepted, no effect\: source files are always opened with O_NOATIME where the kernel allows it (files we own, or as root)]' \
'--preallocate[Accepted, no effect]' \
'*--super[Accepted, no effect\: as root nfsync keeps owners and devices (see -o, -g, -D)]' \
'--fake-super[Keep what only root may set (owner, devices, special permission bits) in the user.rsync.%stat extended attribute of each entry, on both sides of the copy (mount path only)]' \
'--force[Accepted, no effect\: directories in the way are always removed whole]' \
'--mkpath[Accepted, no effect\: DEST'\''s missing parents are always created]' \
'*-F[Same as --filter='\''dir-merge /.rsync-filter'\'' (a .rsync-filter in each directory); given twice also --filter='\''- .rsync-filter'\'']' \
'-C[Exclude what CVS ignores (rsync'\''s list, ~/.cvsignore, \$CVSIGNORE, and each directory'\''s .cvsignore), after all other rules]' \
'--cvs-exclude[Exclude what CVS ignores (rsync'\''s list, ~/.cvsignore, \$CVSIGNORE, and each directory'\''s .cvsignore), after all other rules]' \
'--delete-excluded[Delete excluded entries from DEST too (implies --delete; protect rules still keep theirs)]' \
'--no-human-readable[Plain numbers in --stats (no thousands separators)]' \
'-L[Copy what symlinks point to instead of the links (a dangling one is an error)]' \
'--copy-links[Copy what symlinks point to instead of the links (a dangling one is an error)]' \
'--copy-unsafe-links[Copy what symlinks pointing outside the transfer point to (absolute ones too)]' \
'--safe-links[Leave out symlinks pointing outside the transfer (absolute ones too)]' \
'--insecure-links[Follow symlinks owned by other users in the paths options name (DEST, --backup-dir, --log-file, merge files, ...); by default only root'\''s and ours]' \
'-k[Copy what symlinks to directories point to, as directories]' \
'--copy-dirlinks[Copy what symlinks to directories point to, as directories]' \
'-K[Treat a symlink to a directory at the destination as that directory]' \
'--keep-dirlinks[Treat a symlink to a directory at the destination as that directory]' \
'*-X[Copy extended attributes (user.*; as root trusted.* and security.* too)]' \
'*--xattrs[Copy extended attributes (user.*; as root trusted.* and security.* too)]' \
'--no-xattrs[Don'\''t copy extended attributes]' \
'-A[Copy POSIX ACLs (implies -p)]' \
'--acls[Copy POSIX ACLs (implies -p)]' \
'--no-acls[Don'\''t copy ACLs]' \
'-S[Keep holes\: only the source'\''s data extents are written to new files]' \
'--sparse[Keep holes\: only the source'\''s data extents are written to new files]' \
'--no-sparse[Write every byte of new files (takes back -S)]' \
'--inplace[Update files in place (hard links to them see the change) instead of writing beside them and renaming]' \
'--append[Append to files that are shorter at the destination (implies --inplace); files the same size or longer there are left alone]' \
'--append-verify[--append, then compare the whole file and rewrite it if it differs]' \
'--delay-updates[Put all updated files in place at the end of the run]' \
'-b[Keep what is replaced or deleted, renamed with --suffix (or in --backup-dir)]' \
'--backup[Keep what is replaced or deleted, renamed with --suffix (or in --backup-dir)]' \
'--remove-source-files[Remove each source non-directory once DEST holds it complete (copied, or already up to date); directories stay]' \
'-R[Recreate each source'\''s path under DEST (the part after a \`/./\`, or all of it)]' \
'--relative[Recreate each source'\''s path under DEST (the part after a \`/./\`, or all of it)]' \
'--no-implied-dirs[With -R, don'\''t send the directories above a named path\: DEST'\''s own are used as they are, missing ones made with default permissions]' \
'--no-relative[Don'\''t recreate source paths (takes back the -R that --files-from implies)]' \
'-0[--files-from names are separated by NUL bytes, not newlines]' \
'--from0[--files-from names are separated by NUL bytes, not newlines]' \
'-d[Without -r, create the directories named (and \`SRC/\`'\''s top-level ones), not their contents]' \
'--dirs[Without -r, create the directories named (and \`SRC/\`'\''s top-level ones), not their contents]' \
'-m[Don'\''t create directories that would end up holding no file (empty or only excluded entries below them)]' \
'--prune-empty-dirs[Don'\''t create directories that would end up holding no file (empty or only excluded entries below them)]' \
'--list-only[List the sources in rsync'\''s format instead of copying (DEST may be left out)]' \
'--check[Check DEST before a migration, copying nothing\: connect as a run would, write, date, read back and remove a probe file, time a round trip and the small-file rate with the run'\''s --jobs, and estimate a run of --check-files files (exit 0\: a run can write there; otherwise the code a run would end with)]' \
'(--shard)--mpi[Under mpirun\: the ranks share the tree as they go (each takes the next piece of work no rank has taken, so a slow rank takes less); rank 0 then sets directory attributes and prints the totals of all (needs a build with --features mpi)]' \
'-V[Print version]' \
'--version[Print version]' \
'*::paths -- Source files and directories, then DEST (a lone SRC is listed, as --list-only):_files' \
&& ret=0
}

(( $+functions[_nfsync_commands] )) ||
_nfsync_commands() {
    local commands; commands=()
    _describe -t commands 'nfsync commands' commands "$@"
}

if [ "$funcstack[1]" = "_nfsync" ]; then
    _nfsync "$@"
else
    compdef _nfsync nfsync
fi
