#!/usr/bin/env bash
# Real NFSv3 server harness: one private nfs-ganesha instance per STATE_DIR.
#
#   benches/ganesha.sh start EXPORT_DIR STATE_DIR [--privileged-port=false|true]
#   benches/ganesha.sh stop  STATE_DIR
#
# `start` prints NFS_PORT=, MNT_PORT= and PID= lines once the server answers
# NFSv3 and MOUNTv3 NULL on TCP, and leaves it running; or prints the log
# tail and exits 1. Everything the instance writes (config, pid file, log,
# NFSv4 recovery dir) lives under STATE_DIR, so several instances can run
# side by side. The server binds 127.0.0.1 only. The scripts use the same
# functions from benches/lib.sh (ganesha_start, ganesha_stop).
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"
GANESHA_DETACH=1

case ${1:-} in
    start)
        shift
        ganesha_start "$@" || exit $?
        echo "NFS_PORT=$NFS_PORT"
        echo "MNT_PORT=$MNT_PORT"
        echo "PID=$GANESHA_PID"
        ;;
    stop)
        [ $# = 2 ] || { usage >&2; exit 2; }
        ganesha_stop "$2"
        ;;
    *) usage >&2; exit 2 ;;
esac
