#!/usr/bin/env bash
# bench_map_mpi.sh BUILD [RUNS] [TRIALS]: the scaling of `scm-mpi map` from
# mpirun -np 1 to -np 2 on a small grid (M = 10, 12 by dK = 0, 1, RUNS runs
# per cell, default 100; compare's settings, the Gaussian law, no stability,
# no plots), TRIALS times each (default 1), interleaved: wall time, CPU
# (user + system) and a byte comparison of every file of the two maps with
# `scm map --threads 1`.  The families of each cell are enumerated in every
# map (a fresh prefix), so the wall time holds the enumeration (serial, on
# rank 0) as the full map's would.  docs/map.md, section "Speed".  Root
# needs OMPI_ALLOW_RUN_AS_ROOT(_CONFIRM), set here.
set -euo pipefail
B=$(cd "${1:?usage: bench_map_mpi.sh BUILD [RUNS] [TRIALS]}" && pwd)
RUNS=${2:-100} TRIALS=${3:-1}
GRID=(--M 10,12 --dK 0:1 --runs "$RUNS" --no-stability --no-plots -q)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
cd "$W"
measure() { # measure LABEL DIR CMD...: one line of figures, the map's files in DIR
    local label=$1 dir=$2
    shift 2
    rm -rf "$dir" && mkdir "$dir"
    (cd "$dir" && /usr/bin/time -f "%e %U %S" -o ../time.txt "$@" "${GRID[@]}" -o m > out)
    read -r wall user sys < time.txt
    awk -v l="$label" -v w="$wall" -v u="$user" -v s="$sys" \
        'BEGIN { printf "%-22s wall %7.2f s  CPU %7.2f s\n", l, w, u + s }'
}
echo "M = 10, 12, dK = 0, 1, $RUNS runs per cell, $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
measure "scm --threads 1" t1 "$B/scm" map --threads 1
for t in $(seq 1 "$TRIALS"); do
    for np in 1 2; do
        measure "mpirun -np $np scm-mpi" np$np mpirun -np "$np" "$B/scm-mpi" map
        for f in $(cd t1 && ls | grep -v '^out$'); do
            cmp -s "t1/$f" "np$np/$f" || { echo "trial $t: -np $np: $f differs"; exit 1; }
        done
    done
    echo "trial $t: the files of -np 1, -np 2 and --threads 1 identical"
done
