#!/bin/bash
# Stability verdicts for the minima of the plateau table: writes
# data/plateau_stability.csv (one row per global_min and min_candidate
# row of data/plateau_table.csv with K <= 22) and
# data/plateau_stability_counts.csv (per (K, M): rows analysed, saddle rows
# and K > 22 min_candidate rows not run).
# See docs/stability.md section 5.
# Usage: scripts/plateau_stability.sh [BUILD_DIR] [JOBS]   (defaults: build, 2)
# Builds bench/plateau_stability in BUILD_DIR and runs JOBS processes over
# disjoint sets of K (K mod JOBS); the parts are merged deterministically
# (table order: stable sort by dK, then M); progress in
# BUILD_DIR/plateau_stability.part*.log.  About 55 CPU-minutes (32 with 2 jobs).
# Outputs are written as .tmp files and renamed at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
jobs=${2:-2}
[ -d "$build" ] || meson setup "$build" >/dev/null
ninja -C "$build" bench/plateau_stability >/dev/null
mkdir -p data
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pids=()
for ((i = 0; i < jobs; i++)); do
    counts=()
    [ "$i" -eq 0 ] && counts=(--counts "$tmp/counts.csv")
    "$build/bench/plateau_stability" --in data/plateau_table.csv --out "$tmp/part$i.csv" \
        --part "$i/$jobs" "${counts[@]}" 2> "$build/plateau_stability.part$i.log" &
    pids+=($!)
done
fail=0
for ((i = 0; i < jobs; i++)); do
    wait "${pids[$i]}" || { echo "part $i failed:" >&2; tail -5 "$build/plateau_stability.part$i.log" >&2; fail=1; }
done
[ "$fail" -eq 0 ] || exit 1
{
    head -n 1 "$tmp/part0.csv"
    for ((i = 0; i < jobs; i++)); do tail -n +2 "$tmp/part$i.csv"; done |
        LC_ALL=C sort -s -t, -k3,3n -k2,2n
} > data/plateau_stability.csv.tmp
cp "$tmp/counts.csv" data/plateau_stability_counts.csv.tmp
mv data/plateau_stability.csv.tmp data/plateau_stability.csv
mv data/plateau_stability_counts.csv.tmp data/plateau_stability_counts.csv
cat "$build"/plateau_stability.part*.log | grep 'rows analysed' >&2 || true
echo "wrote data/plateau_stability.csv ($(($(wc -l < data/plateau_stability.csv) - 1)) rows) and data/plateau_stability_counts.csv"
