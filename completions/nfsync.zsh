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
'--timeout=[NFS\: seconds without an answer before giving up on the server (0\: wait forever)]:SECS:_default' \
'--max-size=[Skip files larger than SIZE (rsync suffixes\: K M G T, KB MB ..., +1/-1)]:SIZE:_default' \
'--min-size=[Skip files smaller than SIZE]:SIZE:_default' \
'*--info=[Show progress\: =progress2 (or any progress level) shows the bar, other flags are accepted]:FLAGS:_default' \
'*--debug=[Accepted, no effect (rsync'\''s debug output)]:FLAGS:_default' \
'--max-alloc=[Accepted, no effect\: nfsync'\''s memory is bounded by its own design]:SIZE:_default' \
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
'--specials[Copy fifos and sockets (skipped with a warning otherwise; part of -D and -a)]' \
'--no-specials[Don'\''t copy fifos and sockets]' \
'--devices[Copy device files (root only; skipped with a warning otherwise; part of -D and -a)]' \
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
'--progress[Show a progress bar on a terminal (the default)]' \
'--no-progress[Don'\''t show a progress bar]' \
'--stats[Print rsync-like totals at the end]' \
'-i[Print a change summary per entry, like rsync -i]' \
'--itemize-changes[Print a change summary per entry, like rsync -i]' \
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
'*-h[Accepted, no effect\: --stats prints sizes in bytes]' \
'*--human-readable[Accepted, no effect\: --stats prints sizes in bytes]' \
'-P[--partial --progress]' \
'--partial[Accepted, no effect\: an update is written beside the old copy and renamed over it; an interrupted run is finished by running it again]' \
'*-W[Accepted, no effect\: nfsync always sends whole files]' \
'*--whole-file[Accepted, no effect\: nfsync always sends whole files]' \
'--no-inc-recursive[Accepted, no effect\: nfsync'\''s walk is incremental already]' \
'--preallocate[Accepted, no effect]' \
'*--super[Accepted, no effect\: as root nfsync keeps owners and devices (see -o, -g, -D)]' \
'--force[Accepted, no effect\: directories in the way are always removed whole]' \
'--mkpath[Accepted, no effect\: DEST'\''s missing parents are always created]' \
'(--shard)--mpi[Under mpirun\: every rank copies a share (rank/size), rank 0 then sets directory attributes and prints the totals of all (needs a build with --features mpi)]' \
'-V[Print version]' \
'--version[Print version]' \
'*::paths -- Source files and directories, then DEST:_files' \
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
