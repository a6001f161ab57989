#!/usr/bin/env bash
# bench_mpi.sh BUILD [K] [RUNS] [TRIALS]: the same RUNS runs of a K = M sweep
# (scm compare's base config, no families) with `scm sweep --threads 2` and
# `mpirun -np 2 scm-mpi sweep`, TRIALS times each, interleaved: wall time,
# CPU (user + system) per run, and a byte comparison of the two files
# (docs/sweeps.md, "Speed: MPI ranks against threads").  Defaults: K 17,
# 100 runs, 2 trials.  Root needs OMPI_ALLOW_RUN_AS_ROOT(_CONFIRM), set here.
set -euo pipefail
B=$(cd "${1:?usage: bench_mpi.sh BUILD [K] [RUNS] [TRIALS]}" && pwd)
K=${2:-17} RUNS=${3:-100} TRIALS=${4:-2}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
cd "$W"
cat > k.json <<JSON
{"model": {"K": $K, "M": $K, "activation": "relu"},
 "init": {"type": "random", "d": 1000, "sigma": 1, "seed": 1},
 "integrator": {"linear_solver": "gmres", "grad_stop": 1e-10,
                "loose_until": 1e-6, "eps_stop": 1e-10, "max_steps": 100000}}
JSON
measure() { # measure LABEL CMD...: one line of figures
    local label=$1
    shift
    rm -f out.jsonl
    /usr/bin/time -f "%e %U %S" -o time.txt "$@" -o out.jsonl -q
    read -r wall user sys < time.txt
    awk -v l="$label" -v w="$wall" -v u="$user" -v s="$sys" -v n="$RUNS" \
        'BEGIN { printf "%-22s wall %7.2f s  %6.2f runs/s  CPU %.4f s per run\n", l, w, n / w, (u + s) / n }'
}
echo "K = M = $K, runs 0..$((RUNS - 1)), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
for t in $(seq 1 "$TRIALS"); do
    measure "scm --threads 2" "$B/scm" sweep k.json --runs "$RUNS" --threads 2
    mv out.jsonl threads.jsonl
    measure "mpirun -np 2 scm-mpi" mpirun -np 2 "$B/scm-mpi" sweep k.json --runs "$RUNS"
    cmp threads.jsonl out.jsonl && echo "trial $t: files identical"
done
