#!/usr/bin/env bash
# slurm_sweep.sh: one shard of a large `scm sweep` on a Slurm cluster, run by
# scm-mpi on the job's ranks (docs/sweeps.md, "MPI and clusters").
#
#   sbatch --array=0-9 --ntasks=128 --time=04:00:00 \
#          scripts/slurm_sweep.sh CONFIG.json RUNS SHARDS OUTDIR [scm sweep options...]
#   ... when every task has ended (squeue shows none):
#   scm merge OUTDIR/runs.*.jsonl -o OUTDIR/summary.json
#
# Array task i computes the runs of index = i mod SHARDS (--shard i/SHARDS)
# into OUTDIR/runs.i.jsonl, always with --resume: a task that was killed,
# timed out or requeued (--requeue below) continues where its file ends, so
# resubmitting the same command only does the runs still missing, and the
# finished files are byte-identical to an uninterrupted sweep's.  `scm merge`
# names any run still missing.  CONFIG.json and OUTDIR must be on a file
# system the job's first node sees (only rank 0 reads and writes files).
# The runs file is fsync'ed every 10 s (--fsync-interval 10; a later
# --fsync-interval among the options wins): one fsync per record would cap
# a shard at a few hundred records per second on a network file system.
#
# Environment: SCM_MPI (default scm-mpi), MPIRUN (default mpirun; Open MPI
# takes the ranks and nodes from the Slurm allocation).
#SBATCH --job-name=scm-sweep
#SBATCH --requeue
#SBATCH --output=scm-sweep.%A_%a.out
set -euo pipefail
if [ $# -lt 4 ]; then
    echo "usage: sbatch --array=0-<SHARDS-1> --ntasks=N $0 CONFIG.json RUNS SHARDS OUTDIR [options]" >&2
    exit 2
fi
config=$1 runs=$2 shards=$3 outdir=$4
shift 4
i=${SLURM_ARRAY_TASK_ID:?"submit as an array job: sbatch --array=0-$((shards - 1)) ..."}
if [ "$i" -ge "$shards" ]; then
    echo "slurm_sweep.sh: array task $i is not below SHARDS = $shards" >&2
    exit 2
fi
mkdir -p "$outdir"
read -r -a mpirun <<< "${MPIRUN:-mpirun}"
exec "${mpirun[@]}" "${SCM_MPI:-scm-mpi}" sweep "$config" --runs "$runs" --shard "$i/$shards" \
    -o "$outdir/runs.$i.jsonl" --resume --fsync-interval 10 --quiet "$@"
