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
'--modify-window=[Treat mtimes within SECS seconds as equal]:SECS:_default' \
'-j+[Files in flight\: a number, or '\''auto'\'' to find the best by measuring]:N|auto:_default' \
'--jobs=[Files in flight\: a number, or '\''auto'\'' to find the best by measuring]:N|auto:_default' \
'--timeout=[NFS\: seconds without an answer before giving up on the server (0\: wait forever)]:SECS:_default' \
'--generate=[Write a completion script or the man page to stdout]:KIND:((bash\:"bash completion script"
zsh\:"zsh completion script"
fish\:"fish completion script"
man\:"The man page (roff)"))' \
'-a[Accepted for rsync compatibility\: nfsync always works like rsync -a]' \
'--archive[Accepted for rsync compatibility\: nfsync always works like rsync -a]' \
'-r[Accepted for rsync compatibility\: nfsync always recurses]' \
'--recursive[Accepted for rsync compatibility\: nfsync always recurses]' \
'-n[Show what would change; change nothing]' \
'--dry-run[Show what would change; change nothing]' \
'--delete[Delete destination entries the source lacks (in each directory after its copy)]' \
'-c[Compare file contents, not size and mtime, to decide what is up to date]' \
'--checksum[Compare file contents, not size and mtime, to decide what is up to date]' \
'(-c --checksum)--size-only[Skip files whose size matches, whatever their mtime]' \
'-H[Preserve hard links]' \
'--hard-links[Preserve hard links]' \
'--specials[Copy fifos and sockets (skipped with a warning otherwise)]' \
'--devices[Copy device files (root only; skipped with a warning otherwise)]' \
'--owner[Preserve owners (default when run as root)]' \
'--no-owner[Don'\''t preserve owners]' \
'--group[Preserve groups (default when run as root)]' \
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
'-h[Print help (see more with '\''--help'\'')]' \
'--help[Print help (see more with '\''--help'\'')]' \
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
