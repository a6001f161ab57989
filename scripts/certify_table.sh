#!/bin/bash
# certify_table.sh: regenerate data/certified_minima.csv and
# data/certified_summary.csv (docs/certify.md section 6).
#
#   bash scripts/certify_table.sh SCM OUTDIR "M1 M2 ..."
#
# For every M listed and K = M, M + 1: every fixed point that
# `scm fixed-points --grow-from 8` finds (block level) is certified
# (`scm certify --point FILE --every`); then the k1 = 1, 2, 3 minima at
# K = M = 1000 (`scm certify --K 1000 --M 1000 --k1 k`).  The JSON results
# stay in OUTDIR; scripts/certify_collect.py turns them into the tables.
set -u
SCM=${1:?scm binary}
OUT=${2:?output directory}
MS=${3:-"10 20 40 60 80 100"}
mkdir -p "$OUT"
for M in $MS; do
    for K in $M $((M + 1)); do
        fp="$OUT/fp_${K}_${M}.json"
        [ -s "$OUT/cert_${K}_${M}.json" ] && continue
        /usr/bin/time -f "%e s fixed-points K=$K M=$M" nice -n 10 timeout 900 \
            "$SCM" fixed-points --K $K --M $M --grow-from 8 -o "$fp" > /dev/null || continue
        /usr/bin/time -f "%e s certify K=$K M=$M" nice -n 10 timeout 1800 \
            "$SCM" certify --point "$fp" --every -o "$OUT/cert_${K}_${M}.json" > /dev/null
        rm -f "$fp"
    done
done
for k in 1 2 3; do
    [ -s "$OUT/cert_1000_1000_k$k.json" ] && continue
    /usr/bin/time -f "%e s certify K=M=1000 k1=$k" nice -n 10 timeout 900 \
        "$SCM" certify --K 1000 --M 1000 --k1 $k -o "$OUT/cert_1000_1000_k$k.json" > /dev/null
done
