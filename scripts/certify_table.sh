#!/bin/bash
# certify_table.sh: regenerate data/certified_minima.csv and
# data/certified_summary.csv (docs/certify.md section 6).
#
#   bash scripts/certify_table.sh SCM OUTDIR "M1 M2 ..." ["dK1 dK2 ..." [MODE]]
#
# For every dK listed (default "0 1") and every M (K = M + dK): the fixed
# points that `scm fixed-points --grow-from 8` finds (block level) are
# certified with `scm certify --point FILE --every` (MODE every, the
# default) or `--minima` (MODE minima: only the block-stable ones, the
# floating-point minimum candidates); below M = 8 (under the growth's start)
# `scm certify --K K --M M --all` (every family's minimum candidates, full
# floating-point spectrum).  Then the k1 = 1, 2, 3 minima at K = M = 1000
# (`scm certify --K 1000 --M 1000 --k1 k`).  Finished (K, M) are skipped,
# so a run can be resumed.  The JSON results stay in OUTDIR;
# scripts/certify_collect.py turns them into the tables.
set -u
SCM=${1:?scm binary}
OUT=${2:?output directory}
MS=${3:-"10 20 40 60 80 100"}
DKS=${4:-"0 1"}
MODE=${5:-every}
mkdir -p "$OUT"
for dK in $DKS; do
    for M in $MS; do
        K=$((M + dK))
        fp="$OUT/fp_${K}_${M}.json"
        res="$OUT/cert_${K}_${M}.json"
        [ -s "$res" ] && continue
        if [ "$M" -lt 8 ]; then
            /usr/bin/time -f "%e s certify --all K=$K M=$M" nice -n 10 timeout 1800 \
                "$SCM" certify --K $K --M $M --all -o "$res" > /dev/null
            continue
        fi
        /usr/bin/time -f "%e s fixed-points K=$K M=$M" nice -n 10 timeout 900 \
            "$SCM" fixed-points --K $K --M $M --grow-from 8 -o "$fp" > /dev/null || continue
        /usr/bin/time -f "%e s certify $MODE K=$K M=$M" nice -n 10 timeout 1800 \
            "$SCM" certify --point "$fp" --$MODE -o "$res" > /dev/null
        rm -f "$fp"
    done
done
[ "${SKIP_1000:-0}" = 1 ] && exit 0
for k in 1 2 3; do
    [ -s "$OUT/cert_1000_1000_k$k.json" ] && continue
    /usr/bin/time -f "%e s certify K=M=1000 k1=$k" nice -n 10 timeout 900 \
        "$SCM" certify --K 1000 --M 1000 --k1 $k -o "$OUT/cert_1000_1000_k$k.json" > /dev/null
done
