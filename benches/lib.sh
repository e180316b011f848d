# shellcheck shell=bash
# The shell library of benches/: every script sources it first,
#
#   . "$(dirname "$0")/lib.sh"
#
# and gets: paths (ROOT, RIG, NFSYNC, RESULTS, HISTORY), logging, building,
# the presets (from the rig: `rig preset`), corpora, the latency FUSE mount,
# nfs-ganesha, the delay proxy, timed runs and their checks, the machine
# description, the history line, and one EXIT trap that unmounts the mount
# and stops the proxy and every ganesha started here, also when a script
# fails or is interrupted. Scripts add their own clean-up with `at_exit`.
# Everything listens on 127.0.0.1 only.

set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# CARGO_TARGET_DIR, if set, holds both builds (different binary names).
RIG=${CARGO_TARGET_DIR:-$ROOT/benches/rig/target}/release/rig
# shellcheck disable=SC2034 # for the scripts
NFSYNC=${CARGO_TARGET_DIR:-$ROOT/target}/release/nfsync
RESULTS=$ROOT/benches/results
HISTORY=$RESULTS/history.md
SEED=42
SCRIPT=benches/$(basename "$0")

log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { echo "$SCRIPT: $*" >&2; exit 1; }

# The comment block at the top of the script, without the `# `.
usage() { awk 'NR > 1 && /^# shellcheck/ { exit } NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; }

in_list() { [[ ",$2," == *",$1,"* ]]; }
utc_now() { date -u '+%Y-%m-%d %H:%M'; }
median() { printf '%s\n' "$@" | sort -g | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
drop_caches() { sync; echo 3 >/proc/sys/vm/drop_caches 2>/dev/null || true; }

# ---------------------------------------------------------------- clean-up
_AT_EXIT=()
at_exit() { _AT_EXIT+=("$1"); }
_cleanup() {
    set +e
    if [ -n "$TIMED_PID" ]; then
        kill "$TIMED_PID" 2>/dev/null
        wait "$TIMED_PID" 2>/dev/null
    fi
    latfs_stop_now
    for s in "${_BACK_DIRS[@]}"; do back_done "$s"; done
    proxy_stop
    local s c
    for s in "${_GANESHA_STATES[@]}"; do ganesha_stop "$s" >/dev/null 2>&1; done
    for c in "${_AT_EXIT[@]}"; do eval "$c"; done
}
trap _cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ------------------------------------------------------------------ build
build_rig() {
    cargo build --release --quiet --manifest-path "$ROOT/benches/rig/Cargo.toml" ||
        die "the rig does not build"
}
# Builds nfsync; false (with the log in $1) if it does not build.
build_nfsync() { (cd "$ROOT" && cargo build --release --quiet) >"$1" 2>&1; }
need_rig() { [ -x "$RIG" ] || die "rig not built ($RIG)"; }

# ---------------------------------------------------------------- presets
# Milliseconds of a preset (lan, efs, wan), or of a number; the table is
# the rig's (benches/rig/src/preset.rs).
preset_ms() { "$RIG" preset "$1"; }

# ---------------------------------------------------------------- machine
# The nfsync commit of this checkout, `+dirty` if src differs from it.
git_commit() {
    local c
    c=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null) || { echo "?"; return 0; }
    git -C "$ROOT" diff --quiet HEAD -- src Cargo.toml Cargo.lock 2>/dev/null || c+="+dirty"
    echo "$c"
}
# The common lines of a machine description (`key: value`); the rig's report
# takes the history's commit from the `nfsync:` line. NOTE follows the commit.
# shellcheck disable=SC2120 # NOTE is optional
machine_info() { # [NOTE]
    local c
    c=$(git_commit)
    echo "date:    $(date -u '+%Y-%m-%d %H:%M UTC')"
    echo "cpu:     $(nproc) x $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
    echo "memory:  $(awk '/MemTotal/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo)"
    echo "kernel:  $(uname -sr)"
    if [[ $c == *+dirty ]]; then c="${c%+dirty} (+ uncommitted src changes)"; fi
    echo "nfsync:  $c${1:+ $1}"
}
load_avg() { cut -d' ' -f1-3 /proc/loadavg; }

# Append one line to the history table (scripts whose report the rig does
# not write): PRESETS FIGURES. CMDLINE is the script's command line.
history_add() {
    "$RIG" report history "$HISTORY" --date "$(utc_now)" --commit "$(git_commit)" \
        --command "$CMDLINE" --presets "$1" --figures "$2"
}

# ----------------------------------------------------------------- corpus
# shellcheck disable=SC2034 # SRC, NFILES, NBYTES: for the caller
# use_corpus KIND SCALE WORK: generates WORK/corpus/KIND-SCALE-SEED once
# (deterministic) and sets SRC, NFILES, NBYTES.
use_corpus() {
    local dir=$3/corpus/$1-$2-$SEED
    if [ ! -f "$dir/.done" ]; then
        rm -rf "$dir"
        log "generating $1 at scale $2"
        "$RIG" gen "$1" "$dir" --scale "$2" --seed "$SEED" >&2
        touch "$dir/.done"
    fi
    [ -f "$dir/.files" ] || find "$dir/$1" -type f | wc -l >"$dir/.files"
    [ -f "$dir/.bytes" ] || du -sb --apparent-size "$dir/$1" | cut -f1 >"$dir/.bytes"
    SRC=$dir/$1
    NFILES=$(cat "$dir/.files")
    NBYTES=$(cat "$dir/.bytes")
}

# ------------------------------------------------------ timed runs, checks
# timed CAP CMD...: CMD under `timeout CAP` (the caller redirects); sets RC
# and WALL (seconds). Waited for in the background, so that a signal to the
# script stops it at once (the EXIT trap stops CMD too).
TIMED_PID=
# shellcheck disable=SC2034 # WALL: for the caller
timed() {
    local t0
    t0=$(date +%s.%N)
    RC=0
    timeout -k 5 "$1" "${@:2}" &
    TIMED_PID=$!
    wait "$TIMED_PID" || RC=$?
    TIMED_PID=
    WALL=$(echo "$(date +%s.%N) - $t0" | bc -l)
}
was_capped() { [ "$RC" = 124 ] || [ "$RC" = 137 ]; }

# count_diffs LOG SRC DEST [rsync flags]: lines `rsync -anciH --delete`
# prints for DEST against SRC (0 = exact copy); they go to LOG too.
count_diffs() {
    local log=$1 src=$2 dst=$3
    rsync -anciH --delete "${@:4}" "$src/" "$dst/" 2>&1 | tee -a "$log" | wc -l
}

# verdict DIFFS: ok, rcN (exact copy, non-zero exit) or fail, from RC.
verdict() {
    if [ "$1" = 0 ] && [ "$RC" = 0 ]; then echo ok
    elif [ "$1" = 0 ]; then echo "rc$RC"
    else echo fail; fi
}

# ------------------------------------------------------------ latency mount
# The mount's backing dir is a fresh tmpfs per run (when we may mount one),
# so every run starts from the same state. On /work's ext4, which has no
# journal, a run on a fresh backing dir right after the previous run's copy
# was deleted is slower each time: without a journal ext4 does not reuse an
# inode deleted less than 60 s ago (360 s while its inode-table block is
# dirty) and checks every such free inode in the group, each a buffer-cache
# lookup, before every create (recently_deleted() in fs/ext4/ialloc.c); the
# FUSE daemon does the creates, so its CPU per run grew 1.0 -> 3.7 s over
# eight runs (benches/README.md, "Consecutive runs on the latency mount").
_BACK_DIRS=()
_BACK_WARNED=0
# back_new BACK: BACK empty, on a fresh tmpfs (after `sync`, so the previous
# run's dirty pages are written first). Without one (no mount privilege):
# an empty plain directory after a cache drop, which also forgets the deleted
# inodes (a warning, once). BACKING=dir in the environment: an empty plain
# directory and nothing else, as before (to see the slowdown: benches/drift).
back_new() {
    local back=$1
    back_done "$back"
    mkdir -p "$back"
    [ "${BACKING:-tmpfs}" = dir ] && return 0
    sync
    if mount -t tmpfs -o mode=0755 nfsync-back "$back" 2>/dev/null; then
        _BACK_DIRS+=("$back")
        return 0
    fi
    if [ "$_BACK_WARNED" = 0 ]; then
        log "warning: no tmpfs for the backing dir (not root?): $back stays on $(findmnt -n -o FSTYPE -T "$back"), runs may slow one after another (benches/README.md)"
        _BACK_WARNED=1
    fi
    drop_caches
}
# back_done BACK: unmount BACK's tmpfs (lazily if busy) and remove BACK.
back_done() {
    local back=$1 s kept=()
    if mountpoint -q "$back" 2>/dev/null; then
        umount "$back" 2>/dev/null || umount -l "$back"
    fi
    rm -rf "$back"
    for s in "${_BACK_DIRS[@]}"; do [ "$s" = "$back" ] || kept+=("$s"); done
    _BACK_DIRS=("${kept[@]}")
}

LATFS_PID=
LATFS_MNT=
LATFS_LOG=/dev/null
# CPU time (µs) every FUSE request costs the daemon (`rig mount --cpu-us`): a
# server sharing the client's cores. 0: none.
LATFS_CPU_US=${LATFS_CPU_US:-0}
# latfs_start BACK MNT DELAY [STATS_FILE]: `rig mount` over BACK at MNT,
# every FUSE request delayed by DELAY (preset or ms); waits until mounted.
# BACK should come from back_new (a timed run's backing dir).
latfs_start() {
    local back=$1 mnt=$2 delay=$3 stats=${4:-}
    mkdir -p "$back" "$mnt"
    local args=("$back" "$mnt" --delay "$delay" --cpu-us "$LATFS_CPU_US")
    if [ -n "$stats" ]; then
        rm -f "$stats"
        args+=(--stats-file "$stats")
    fi
    "$RIG" mount "${args[@]}" 2>>"$LATFS_LOG" &
    LATFS_PID=$!
    LATFS_MNT=$mnt
    for _ in $(seq 1 200); do
        mountpoint -q "$mnt" && return 0
        kill -0 "$LATFS_PID" 2>/dev/null || break
        sleep 0.05
    done
    die "latency mount on $mnt did not come up (log: $LATFS_LOG)"
}
# Unmount, waiting up to 10 s for the copy's last users to let go.
latfs_stop() {
    [ -n "$LATFS_MNT" ] || return 0
    for _ in $(seq 1 100); do
        fusermount3 -u "$LATFS_MNT" 2>/dev/null && break
        mountpoint -q "$LATFS_MNT" || break
        sleep 0.1
    done
    if mountpoint -q "$LATFS_MNT"; then fusermount3 -uz "$LATFS_MNT"; fi
    wait "$LATFS_PID" 2>/dev/null || true
    LATFS_PID='' LATFS_MNT=''
}
# On exit: unmount now (lazily if busy) and stop the daemon.
latfs_stop_now() {
    if [ -n "$LATFS_MNT" ] && mountpoint -q "$LATFS_MNT" 2>/dev/null; then
        fusermount3 -u "$LATFS_MNT" 2>/dev/null || fusermount3 -uz "$LATFS_MNT" 2>/dev/null
    fi
    if [ -n "$LATFS_PID" ]; then
        kill "$LATFS_PID" 2>/dev/null
        wait "$LATFS_PID" 2>/dev/null
    fi
    LATFS_PID='' LATFS_MNT=''
    return 0
}

# -------------------------------------------------------------- nfs-ganesha
# A private nfs-ganesha (VFS backend) per state dir, exporting one directory
# over NFSv3/TCP on 127.0.0.1 (see benches/README.md). Started ones are
# stopped on exit unless GANESHA_DETACH=1 (benches/ganesha.sh).
_GANESHA_STATES=()
GANESHA_DETACH=0

# A free TCP port on 127.0.0.1, chosen by the kernel (bind to port 0).
free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])' \
        2>/dev/null && return 0
    # Without python: probe random high ports with /dev/tcp.
    local p
    for _ in $(seq 1 200); do
        p=$((20000 + RANDOM % 40000))
        if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
            echo "$p"
            return 0
        fi
    done
    return 1
}

# rpc_answers PORT nfs|mountd [VERSION]: an RPC NULL call (version 3 unless
# given) to 127.0.0.1:PORT over TCP is accepted. Made by hand: `rpcinfo -n
# PORT` asks the portmapper anyway (rpcbind 1.2.6), where every ganesha that
# starts or stops replaces or drops the others' registrations, so it would
# check whichever instance registered last rather than this one.
rpc_answers() {
    local prog reply
    case $2 in nfs) prog=100003 ;; mountd) prog=100005 ;; *) prog=$2 ;; esac
    reply=$(
        exec 2>/dev/null 3<>"/dev/tcp/127.0.0.1/$1" || exit 1
        # Record mark (last fragment, 40 bytes), xid 1, CALL, RPC version 2,
        # program, version, procedure 0 (NULL), AUTH_NONE credential and
        # verifier.
        printf '%b' "$(_xdr_words $((0x80000028)) 1 0 2 "$prog" "${3:-3}" 0 0 0 0 0)" >&3
        timeout 2 head -c 28 <&3 | od -An -tx1 | tr -d ' \n'
    )
    # Record mark (24 bytes), xid 1, REPLY, MSG_ACCEPTED, AUTH_NONE verifier,
    # SUCCESS.
    [ "$reply" = 80000018000000010000000100000000000000000000000000000000 ]
}
# XDR words (unsigned 32-bit, big-endian) as printf %b escapes.
_xdr_words() {
    local n
    for n in "$@"; do
        printf '\\x%02x' $((n >> 24 & 255)) $((n >> 16 & 255)) $((n >> 8 & 255)) $((n & 255))
    done
}

# ganesha_start EXPORT_DIR STATE_DIR [OPTION]...: starts it and waits
# (≤ 20 s) until its protocols answer a NULL call; sets NFS_PORT, MNT_PORT
# (empty with --nfs4-only), GANESHA_PID. Returns 1 with the log tail on
# stderr on failure. Options:
#   --privileged-port=false|true  refuse clients on ports ≥ 1024 (default false)
#   --nfs4        NFSv4.1/4.2 too, on the same port (and the same path: the
#                 export's pseudo path is its real path)
#   --nfs4-only   NFSv4.1/4.2 only: no MOUNT, no NFSv3
#   --slots=N     NFSv4.1 session slots granted per session (Slot_Table_Size)
# shellcheck disable=SC2034 # NFS_PORT, MNT_PORT, GANESHA_PID: for the caller
ganesha_start() {
    local export_dir state_dir privileged=false nfs4=no slots='' arg
    local synopsis="ganesha_start EXPORT_DIR STATE_DIR [--privileged-port=false|true] [--nfs4|--nfs4-only] [--slots=N]"
    [ $# -ge 2 ] || { echo "$synopsis" >&2; return 2; }
    export_dir=$(realpath "$1") || return 1
    state_dir=$2
    shift 2
    for arg in "$@"; do
        case $arg in
            --privileged-port=true) privileged=true ;;
            --privileged-port=false) privileged=false ;;
            --nfs4 | --nfs4-only)
                [ "$nfs4" = no ] || { echo "ganesha: give one of --nfs4, --nfs4-only" >&2; return 2; }
                if [ "$arg" = --nfs4 ]; then nfs4=also; else nfs4=only; fi
                ;;
            --slots=*)
                slots=${arg#--slots=}
                if ! [[ $slots =~ ^[0-9]+$ ]] || [ "$slots" -lt 1 ] || [ "$slots" -gt 1024 ]; then
                    echo "ganesha: --slots=N takes 1..1024, not $slots" >&2
                    return 2
                fi
                ;;
            *) echo "ganesha: unknown option $arg" >&2; return 2 ;;
        esac
    done
    if [ -n "$slots" ] && [ "$nfs4" = no ]; then
        echo "ganesha: --slots needs --nfs4 or --nfs4-only (NFSv3 has no sessions)" >&2
        return 2
    fi
    [ -d "$export_dir" ] || { echo "ganesha: export dir $export_dir does not exist" >&2; return 1; }
    command -v ganesha.nfsd >/dev/null ||
        { echo "ganesha: ganesha.nfsd not installed (apt-get install nfs-ganesha nfs-ganesha-vfs)" >&2; return 1; }
    mkdir -p "$state_dir/recovery"
    state_dir=$(realpath "$state_dir")
    if [ -f "$state_dir/ganesha.pid" ] && kill -0 "$(cat "$state_dir/ganesha.pid")" 2>/dev/null; then
        echo "ganesha: an instance is already running for $state_dir (pid $(cat "$state_dir/ganesha.pid"))" >&2
        return 1
    fi

    # ganesha registers with the portmapper; without one it still serves on
    # its fixed ports but logs errors, so start rpcbind when it is missing.
    if ! pgrep -x rpcbind >/dev/null; then
        rpcbind -w 2>/dev/null || rpcbind || echo "ganesha: warning: could not start rpcbind" >&2
    fi

    local nfs_port mnt_port='' nlm_port rq_port export_id
    # NLM/RQUOTA are disabled, but give their ports distinct values anyway so
    # two instances never fight over ganesha's fixed defaults.
    if ! { nfs_port=$(free_port) && nlm_port=$(free_port) && rq_port=$(free_port); }; then
        echo "ganesha: no free port" >&2
        return 1
    fi
    if [ "$nfs4" != only ]; then
        mnt_port=$(free_port) || { echo "ganesha: no free port" >&2; return 1; }
        while [ "$mnt_port" = "$nfs_port" ]; do mnt_port=$(free_port); done
    fi
    # Export_Id must be unique per server; 1..65535, derived from the port so
    # concurrent instances also differ (it is only ever seen by clients).
    export_id=$(((nfs_port % 60000) + 2))
    # PrivilegedPort=false lets unprivileged clients (libnfs, nfsync as a
    # normal user) mount; ganesha's default refuses them with MNT3ERR_ACCES.
    local privileged_line="PrivilegedPort = $privileged;"

    # Lines that only some servers get; the empty ones are dropped below with
    # every blank line (the config has none of its own).
    local protocols=3 mnt_line="    MNT_Port = $mnt_port;" nfsv4_lines='' krb5_block=''
    if [ "$nfs4" != no ]; then
        if [ "$nfs4" = only ]; then protocols=4 mnt_line=''; else protocols='3, 4'; fi
        nfsv4_lines="\
    # 4.1 and 4.2 only: 4.0 has no sessions (nfsync refuses it too).
    Minor_Versions = 1, 2;
    # Owners as numbers (\"0\"), not user@domain names: no idmapping here.
    Only_Numeric_Owners = true;
    # A plain server: no pNFS layouts.
    pnfs_mds = false;
    pnfs_ds = false;${slots:+
    Slot_Table_Size = $slots;}"
        # SecType = sys only: no Kerberos principal to look for.
        krb5_block="NFS_KRB5 {
    Active_krb5 = false;
}"
    fi

    sed '/^$/d' >"$state_dir/ganesha.conf" <<EOF
# Generated by benches/lib.sh for $export_dir
NFS_CORE_PARAM {
    Bind_Addr = 127.0.0.1;
    NFS_Port = $nfs_port;
$mnt_line
    NLM_Port = $nlm_port;
    Rquota_Port = $rq_port;
    Protocols = $protocols;
    Enable_NLM = false;
    Enable_RQUOTA = false;
    Enable_UDP = false;
}
NFSV4 {
    # Without this every SETATTR is answered with NFS3ERR_JUKEBOX for the
    # 90 s grace period after start.
    Graceless = true;
    RecoveryBackend = fs;
    RecoveryRoot = "$state_dir/recovery";
$nfsv4_lines
}
$krb5_block
MDCACHE {
    Entries_HWMark = 100000;
}
EXPORT_DEFAULTS {
    $privileged_line
}
EXPORT {
    Export_Id = $export_id;
    Path = "$export_dir";
    Pseudo = "$export_dir";
    Protocols = $protocols;
    Transports = TCP;
    Access_Type = RW;
    Squash = No_Root_Squash;
    SecType = sys;
    $privileged_line
    FSAL {
        Name = VFS;
    }
}
LOG {
    Default_Log_Level = EVENT;
}
EOF

    local log=$state_dir/ganesha.log pid
    : >"$log"
    # ganesha answers NFS3ERR_JUKEBOX once its open-file cache hits the fd
    # limit, so give it plenty (in its own subshell: the limit is not ours).
    # -F keeps it in the foreground so we own the pid; setsid detaches it
    # from our terminal and process group. It writes its log itself (-L)
    # and we append what it prints before that to the same file.
    # shellcheck disable=SC2094
    (
        ulimit -n 1048576 2>/dev/null || ulimit -n 65536 2>/dev/null || true
        exec setsid ganesha.nfsd -F -f "$state_dir/ganesha.conf" -L "$log" \
            -p "$state_dir/ganesha.pid" -N NIV_EVENT </dev/null >>"$log" 2>&1
    ) &
    pid=$!
    echo "$pid" >"$state_dir/ganesha.pid"
    echo "$nfs_port" >"$state_dir/nfs_port"
    if [ -n "$mnt_port" ]; then echo "$mnt_port" >"$state_dir/mnt_port"; fi
    [ "$GANESHA_DETACH" = 1 ] || _GANESHA_STATES+=("$state_dir")

    for _ in $(seq 1 200); do
        if ! kill -0 "$pid" 2>/dev/null; then
            echo "ganesha: exited during startup; log tail:" >&2
            tail -n 30 "$log" >&2
            return 1
        fi
        if ganesha_answers "$nfs4" "$nfs_port" "$mnt_port"; then
            NFS_PORT=$nfs_port MNT_PORT=$mnt_port GANESHA_PID=$pid
            return 0
        fi
        sleep 0.1
    done
    echo "ganesha: no answer on 127.0.0.1:$nfs_port within 20 s; log tail:" >&2
    tail -n 30 "$log" >&2
    ganesha_stop "$state_dir" >/dev/null 2>&1 || true
    return 1
}

# ganesha_answers no|also|only NFS_PORT MNT_PORT: the protocols a server
# started with no option, --nfs4 or --nfs4-only serves answer NULL: NFSv3 and
# MOUNTv3, then NFSv4 (the same port) too, or NFSv4 only.
ganesha_answers() {
    if [ "$1" != only ]; then
        rpc_answers "$2" nfs && rpc_answers "$3" mountd || return 1
    fi
    [ "$1" = no ] || rpc_answers "$2" nfs 4
}

# ganesha_stop STATE_DIR: TERM, up to 5 s, then KILL (a clean shutdown
# takes 1–2 s).
ganesha_stop() {
    local state_dir=$1 pid
    [ -f "$state_dir/ganesha.pid" ] || { echo "ganesha: no pid file in $state_dir" >&2; return 1; }
    pid=$(cat "$state_dir/ganesha.pid")
    local sig
    for sig in TERM KILL; do
        kill -0 "$pid" 2>/dev/null || break
        kill -"$sig" "$pid" 2>/dev/null || true
        for _ in $(seq 1 50); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
    done
    if kill -0 "$pid" 2>/dev/null; then
        echo "ganesha: pid $pid did not exit" >&2
        return 1
    fi
    rm -f "$state_dir/ganesha.pid"
    local s kept=()
    for s in "${_GANESHA_STATES[@]}"; do [ "$s" = "$(realpath "$state_dir")" ] || kept+=("$s"); done
    _GANESHA_STATES=("${kept[@]}")
    echo "stopped $pid"
}

# -------------------------------------------------------------- delay proxy
PROXY_PID=
# proxy_start PRESET OUT_FILE: `rig proxy` in front of NFS_PORT and MNT_PORT
# with a one-way delay of PRESET/2 (so an RPC round trip costs PRESET);
# sets PNFS and PMNT, the ports to use. Tries three times.
proxy_start() {
    local oneway try
    oneway=$(echo "$(preset_ms "$1") / 2" | bc -l)
    for try in 1 2 3; do
        "$RIG" proxy --forward "$NFS_PORT" --forward "$MNT_PORT" --delay "$oneway" >"$2" 2>&1 &
        PROXY_PID=$!
        for _ in $(seq 1 100); do grep -q READY "$2" 2>/dev/null && break; sleep 0.05; done
        PNFS=$(awk -F'[ =]' -v p="$NFS_PORT" '$1=="LISTEN" && $2==p {print $3}' "$2")
        PMNT=$(awk -F'[ =]' -v p="$MNT_PORT" '$1=="LISTEN" && $2==p {print $3}' "$2")
        if [ -n "$PNFS" ] && [ -n "$PMNT" ] && proxy_up; then return 0; fi
        cat "$2" >&2
        log "proxy did not answer (try $try)"
        proxy_stop
    done
    die "the delay proxy did not start"
}
# Both forwarded ports accept a connection and the proxy lives.
proxy_up() {
    [ -n "$PROXY_PID" ] && kill -0 "$PROXY_PID" 2>/dev/null &&
        (exec 3<>"/dev/tcp/127.0.0.1/$PNFS") 2>/dev/null &&
        (exec 3<>"/dev/tcp/127.0.0.1/$PMNT") 2>/dev/null
}
proxy_stop() {
    if [ -n "$PROXY_PID" ]; then
        kill "$PROXY_PID" 2>/dev/null || true
        wait "$PROXY_PID" 2>/dev/null || true
    fi
    PROXY_PID=
}

# --------------------------------------------------------------------- A/B
# ab_alternate REPS FN: FN A|B REP for every rep, in the order A B B A A B
# ...; FN sets T (wall seconds). Sets TIMES_A and TIMES_B.
ab_alternate() {
    local rep side order
    TIMES_A=() TIMES_B=()
    for rep in $(seq 1 "$1"); do
        if [ $((rep % 2)) = 1 ]; then order="A B"; else order="B A"; fi
        for side in $order; do
            "$2" "$side" "$rep"
            if [ "$side" = A ]; then TIMES_A+=("$T"); else TIMES_B+=("$T"); fi
            printf 'rep %d %s %.2f s\n' "$rep" "$side" "$T"
        done
    done
}
# ab_summary A_BIN B_BIN FILES PRESET: medians, files/s, B / A, history line.
ab_summary() {
    local ma mb fa fb ratio
    ma=$(median "${TIMES_A[@]}")
    mb=$(median "${TIMES_B[@]}")
    fa=$(printf '%.0f' "$(echo "$3 / $ma" | bc -l)")
    fb=$(printf '%.0f' "$(echo "$3 / $mb" | bc -l)")
    ratio=$(printf '%.2f' "$(echo "$ma / $mb" | bc -l)")
    printf 'A %s: median %.2f s, %s files/s\n' "$1" "$ma" "$fa"
    printf 'B %s: median %.2f s, %s files/s\n' "$2" "$mb" "$fb"
    echo "B / A (files/s): $ratio"
    history_add "$4" "B / A $ratio: A $1 $fa, B $2 $fb files/s (medians of ${#TIMES_A[@]}, $3 files)"
}
