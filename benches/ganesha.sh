#!/usr/bin/env bash
# Real NFS server harness: one private nfs-ganesha instance per STATE_DIR.
#
#   benches/ganesha.sh start EXPORT_DIR STATE_DIR [--privileged-port=false|true]
#                            [--nfs4 | --nfs4-only] [--slots=N]
#   benches/ganesha.sh stop  STATE_DIR
#
# By default the server speaks NFSv3 (and MOUNTv3 on a port of its own).
# --nfs4 adds NFSv4.1/4.2 on the NFS port, where EXPORT_DIR is also the path
# from the pseudo root (the same path as for MOUNT); --nfs4-only serves
# NFSv4.1/4.2 alone (no MOUNT port); --slots=N sets the session slots it
# grants (Slot_Table_Size).
#
# `start` prints NFS_PORT=, MNT_PORT= (not with --nfs4-only) and PID= lines
# once the server answers NULL on TCP for each protocol it serves, and leaves
# it running; or prints the log tail and exits 1. Everything the instance
# writes (config, pid file, log, NFSv4 recovery dir) lives under STATE_DIR, so
# several instances can run side by side. The server binds 127.0.0.1 only.
# The scripts use the same functions from benches/lib.sh (ganesha_start,
# ganesha_stop).
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"
GANESHA_DETACH=1

case ${1:-} in
    start)
        shift
        ganesha_start "$@" || exit $?
        echo "NFS_PORT=$NFS_PORT"
        if [ -n "$MNT_PORT" ]; then echo "MNT_PORT=$MNT_PORT"; fi
        echo "PID=$GANESHA_PID"
        ;;
    stop)
        [ $# = 2 ] || { usage >&2; exit 2; }
        ganesha_stop "$2"
        ;;
    *) usage >&2; exit 2 ;;
esac
