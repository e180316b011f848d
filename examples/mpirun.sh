#!/bin/bash
# One tree over N MPI ranks: every rank walks the tree and takes the next piece of
# work no rank has taken (rank 0 hands them out), then rank 0 sets directory
# attributes (the finalize step) and prints the totals of all ranks (with --json:
# one object, "ranks": N, each rank's part in "per_rank").
#
#   cargo build --release --features mpi          # Debian: apt-get install libopenmpi-dev libclang-dev
#   examples/mpirun.sh SRC/ DEST/ [N] [HOSTFILE]
#
# Spread the ranks over machines with a hostfile (one line per host: `node1 slots=2`):
# each rank is then its own NFS client. As root, Open MPI wants --allow-run-as-root;
# --bind-to none keeps Open MPI from binding a lone rank to one core (nfsync runs
# many workers per rank).
# A rank on a slower client or link takes less work; none waits for another.
set -euo pipefail

SRC=${1:?usage: mpirun.sh SRC/ DEST/ [N] [HOSTFILE]}
DEST=${2:?usage: mpirun.sh SRC/ DEST/ [N] [HOSTFILE]}
N=${3:-4}
ARGS=(-n "$N" --bind-to none)
[ -n "${4:-}" ] && ARGS+=(--hostfile "$4")
[ "$(id -u)" = 0 ] && ARGS+=(--allow-run-as-root)
exec mpirun "${ARGS[@]}" nfsync -a --json --mpi "$SRC" "$DEST"
