#!/bin/sh
# crosscheck_grid.sh BUILD_DIR OUT_DIR RUNS DK M...: scm crosscheck at
# K = M + DK for each M, default `scm fixed-points` options, RUNS runs of each
# method; writes OUT_DIR/K{K}_M{M}.json and .txt (docs/crosscheck.md).
# Then run scripts/crosscheck_table.py OUT_DIR > OUT_DIR/unmatched.csv.
set -u
B=$1; O=$2; N=$3; DK=$4; shift 4
mkdir -p "$O"
for M in "$@"; do
    K=$((M + DK))
    "$B/scm" crosscheck --K "$K" --M "$M" --runs "$N" -o "$O/K${K}_M${M}.json" \
        > "$O/K${K}_M${M}.txt" 2> "$O/K${K}_M${M}.log"
    echo "K=$K M=$M exit $?" >> "$O/K${K}_M${M}.log"
done
