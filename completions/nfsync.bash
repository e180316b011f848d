_nfsync() {
    local i cur prev opts cmd
    COMPREPLY=()
    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
        cur="$2"
    else
        cur="${COMP_WORDS[COMP_CWORD]}"
    fi
    prev="$3"
    cmd=""
    opts=""

    for i in "${COMP_WORDS[@]:0:COMP_CWORD}"
    do
        case "${cmd},${i}" in
            ",$1")
                cmd="nfsync"
                ;;
            *)
                ;;
        esac
    done

    case "${cmd}" in
        nfsync)
            opts="-n -c -j -H -o -g -v -q -i -a -r -l -p -t -D -O -U -J -E -u -I -x -z -h -8 -P -W -y -B -M -f -F -C -L -k -K -X -A -S -T -b -R -0 -d -m -V --help --dry-run --delete --max-delete --exclude --include --exclude-from --checksum --size-only --modify-window --jobs --hard-links --specials --no-specials --devices --no-devices --owner --no-owner --group --no-group --numeric-ids --verbose --quiet --progress --stats-every --no-progress --stats --itemize-changes --json --timeout --archive --recursive --no-recursive --links --no-links --perms --no-perms --times --no-times --no-D --omit-dir-times --atimes --omit-link-times --executability --stop-at --stop-after --update --ignore-existing --existing --max-size --min-size --ignore-times --one-file-system --del --ignore-errors --info --debug --compress --human-readable --8-bit-output --partial --whole-file --no-inc-recursive --max-alloc --fuzzy --block-size --compress-choice --compress-level --skip-compress --no-motd --open-noatime --preallocate --super --fake-super --remote-option --force --mkpath --filter --include-from --cvs-exclude --delete-excluded --out-format --log-file --log-file-format --no-human-readable --copy-links --copy-unsafe-links --safe-links --insecure-links --copy-dirlinks --keep-dirlinks --chmod --chown --usermap --groupmap --xattrs --no-xattrs --acls --no-acls --sparse --no-sparse --inplace --append --append-verify --temp-dir --delay-updates --bwlimit --backup --backup-dir --suffix --link-dest --compare-dest --copy-dest --remove-source-files --partial-dir --relative --no-implied-dirs --no-relative --files-from --from0 --dirs --prune-empty-dirs --list-only --check --check-files --generate --shard --mpi --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 1 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --max-delete)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --exclude)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --include)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --exclude-from)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --modify-window)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --jobs)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -j)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --progress)
                    COMPREPLY=($(compgen -W "text json" -- "${cur}"))
                    return 0
                    ;;
                --stats-every)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --stop-at)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --stop-after)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --max-size)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --min-size)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --info)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --debug)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --max-alloc)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --block-size)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -B)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --compress-choice)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --compress-level)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --skip-compress)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --remote-option)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -M)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --filter)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -f)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --include-from)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --out-format)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --log-file)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --log-file-format)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --chmod)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --chown)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --usermap)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --groupmap)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --temp-dir)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -T)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --bwlimit)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --backup-dir)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --suffix)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --link-dest)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --compare-dest)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --copy-dest)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --partial-dir)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --files-from)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --check-files)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --generate)
                    COMPREPLY=($(compgen -W "bash zsh fish man" -- "${cur}"))
                    return 0
                    ;;
                --shard)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
    esac
}

if [[ "${BASH_VERSINFO[0]}" -eq 4 && "${BASH_VERSINFO[1]}" -ge 4 || "${BASH_VERSINFO[0]}" -gt 4 ]]; then
    complete -F _nfsync -o nosort -o bashdefault -o default nfsync
else
    complete -F _nfsync -o bashdefault -o default nfsync
fi
