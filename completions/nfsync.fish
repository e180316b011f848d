complete -c nfsync -l max-delete -d 'Delete at most NUM entries (each one inside a removed directory counts), then skip further deletions and exit 25; 0 deletes nothing and reports what it would' -r
complete -c nfsync -l exclude -d 'Exclude paths matching PATTERN (rsync rules: leading / anchors, trailing / = dirs only)' -r
complete -c nfsync -l include -d 'Don\'t exclude paths matching PATTERN (rules apply in order; the first match wins)' -r
complete -c nfsync -l exclude-from -d 'Read exclude patterns from FILE (\'-\' for stdin; \'+ PAT\' includes, \'- PAT\' excludes)' -r -F
complete -c nfsync -l modify-window -d 'Treat mtimes within SECS seconds as equal (default 0: whole seconds, as rsync; -1: to the nanosecond)' -r
complete -c nfsync -s j -l jobs -d 'Files in flight: a number, or \'auto\' to find the best by measuring' -r
complete -c nfsync -l timeout -d 'NFS: seconds without an answer before giving up on the server (0: wait forever)' -r
complete -c nfsync -l max-size -d 'Skip files larger than SIZE (rsync suffixes: K M G T, KB MB ..., +1/-1)' -r
complete -c nfsync -l min-size -d 'Skip files smaller than SIZE' -r
complete -c nfsync -l info -d 'Show progress: =progress2 (or any progress level) shows the bar, other flags are accepted' -r
complete -c nfsync -l debug -d 'Accepted, no effect (rsync\'s debug output)' -r
complete -c nfsync -l max-alloc -d 'Accepted, no effect: nfsync\'s memory is bounded by its own design' -r
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
complete -c nfsync -l specials -d 'Copy fifos and sockets (skipped with a warning otherwise; part of -D and -a)'
complete -c nfsync -l no-specials -d 'Don\'t copy fifos and sockets'
complete -c nfsync -l devices -d 'Copy device files (root only; skipped with a warning otherwise; part of -D and -a)'
complete -c nfsync -l no-devices -d 'Don\'t copy device files'
complete -c nfsync -s o -l owner -d 'Preserve owners (default when run as root, without an rsync selection of -rlptD)'
complete -c nfsync -l no-owner -d 'Don\'t preserve owners'
complete -c nfsync -s g -l group -d 'Preserve groups (default when run as root, without an rsync selection of -rlptD)'
complete -c nfsync -l no-group -d 'Don\'t preserve groups'
complete -c nfsync -l numeric-ids -d 'Don\'t map uid/gid by name (ids are always numeric on nfsync\'s paths)'
complete -c nfsync -s v -l verbose -d 'Print each changed path and each change --jobs auto makes'
complete -c nfsync -s q -l quiet -d 'Print errors and warnings only'
complete -c nfsync -l progress -d 'Show a progress bar on a terminal (the default)'
complete -c nfsync -l no-progress -d 'Don\'t show a progress bar'
complete -c nfsync -l stats -d 'Print rsync-like totals at the end'
complete -c nfsync -s i -l itemize-changes -d 'Print a change summary per entry, like rsync -i'
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
complete -c nfsync -s u -l update -d 'Skip files that are newer at the destination'
complete -c nfsync -l ignore-existing -d 'Skip entries that already exist at the destination'
complete -c nfsync -l existing -d 'Skip creating entries that do not exist at the destination'
complete -c nfsync -s I -l ignore-times -d 'Don\'t skip files whose size and mtime match'
complete -c nfsync -s x -l one-file-system -d 'Don\'t cross filesystem boundaries (-xx: leave mount points out entirely)'
complete -c nfsync -l del -d 'Same as --delete (for a local-to-NFS copy every rsync delete timing gives the same result)'
complete -c nfsync -l ignore-errors -d 'Delete even when a source directory could not be read completely'
complete -c nfsync -s z -l compress -d 'Accepted, no effect: nothing to compress on a local-to-NFS copy (-v says so)'
complete -c nfsync -s h -l human-readable -d 'Accepted, no effect: --stats prints sizes in bytes'
complete -c nfsync -s P -d '--partial --progress'
complete -c nfsync -l partial -d 'Accepted, no effect: an update is written beside the old copy and renamed over it; an interrupted run is finished by running it again'
complete -c nfsync -s W -l whole-file -d 'Accepted, no effect: nfsync always sends whole files'
complete -c nfsync -l no-inc-recursive -d 'Accepted, no effect: nfsync\'s walk is incremental already'
complete -c nfsync -l preallocate -d 'Accepted, no effect'
complete -c nfsync -l super -d 'Accepted, no effect: as root nfsync keeps owners and devices (see -o, -g, -D)'
complete -c nfsync -l force -d 'Accepted, no effect: directories in the way are always removed whole'
complete -c nfsync -l mkpath -d 'Accepted, no effect: DEST\'s missing parents are always created'
complete -c nfsync -l mpi -d 'Under mpirun: every rank copies a share (rank/size), rank 0 then sets directory attributes and prints the totals of all (needs a build with --features mpi)'
complete -c nfsync -s V -l version -d 'Print version'
