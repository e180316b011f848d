complete -c nfsync -l max-delete -d 'Delete at most NUM entries (each one inside a removed directory counts), then skip further deletions and exit 25; 0 deletes nothing and reports what it would' -r
complete -c nfsync -l exclude -d 'Exclude paths matching PATTERN (rsync rules: leading / anchors, trailing / = dirs only)' -r
complete -c nfsync -l include -d 'Don\'t exclude paths matching PATTERN (rules apply in order; the first match wins)' -r
complete -c nfsync -l exclude-from -d 'Read exclude patterns from FILE (\'-\' for stdin; \'+ PAT\' includes, \'- PAT\' excludes)' -r -F
complete -c nfsync -l modify-window -d 'Treat mtimes within SECS seconds as equal' -r
complete -c nfsync -s j -l jobs -d 'Files in flight: a number, or \'auto\' to find the best by measuring' -r
complete -c nfsync -l timeout -d 'NFS: seconds without an answer before giving up on the server (0: wait forever)' -r
complete -c nfsync -l generate -d 'Write a completion script or the man page to stdout' -r -f -a "bash\t'bash completion script'
zsh\t'zsh completion script'
fish\t'fish completion script'
man\t'The man page (roff)'"
complete -c nfsync -s a -l archive -d 'Accepted for rsync compatibility: nfsync always works like rsync -a'
complete -c nfsync -s r -l recursive -d 'Accepted for rsync compatibility: nfsync always recurses'
complete -c nfsync -s n -l dry-run -d 'Show what would change; change nothing'
complete -c nfsync -l delete -d 'Delete destination entries the source lacks (in each directory after its copy)'
complete -c nfsync -s c -l checksum -d 'Compare file contents, not size and mtime, to decide what is up to date'
complete -c nfsync -l size-only -d 'Skip files whose size matches, whatever their mtime'
complete -c nfsync -s H -l hard-links -d 'Preserve hard links'
complete -c nfsync -l specials -d 'Copy fifos and sockets (skipped with a warning otherwise)'
complete -c nfsync -l devices -d 'Copy device files (root only; skipped with a warning otherwise)'
complete -c nfsync -l owner -d 'Preserve owners (default when run as root)'
complete -c nfsync -l no-owner -d 'Don\'t preserve owners'
complete -c nfsync -l group -d 'Preserve groups (default when run as root)'
complete -c nfsync -l no-group -d 'Don\'t preserve groups'
complete -c nfsync -l numeric-ids -d 'Don\'t map uid/gid by name (ids are always numeric on nfsync\'s paths)'
complete -c nfsync -s v -l verbose -d 'Print each changed path and each change --jobs auto makes'
complete -c nfsync -s q -l quiet -d 'Print errors and warnings only'
complete -c nfsync -l progress -d 'Show a progress bar on a terminal (the default)'
complete -c nfsync -l no-progress -d 'Don\'t show a progress bar'
complete -c nfsync -l stats -d 'Print rsync-like totals at the end'
complete -c nfsync -s i -l itemize-changes -d 'Print a change summary per entry, like rsync -i'
complete -c nfsync -l json -d 'Print one JSON object with the run\'s totals on stdout at the end'
complete -c nfsync -s h -l help -d 'Print help (see more with \'--help\')'
complete -c nfsync -s V -l version -d 'Print version'
