#!/bin/bash
# Regenerate data/plateau_table_M100.csv (ReLU, T = I, v = v* = 1; K = M,
# M + 1, M + 2; M = 2..100), data/plateau_counts_M100.csv and the large-M fit
# of the k1 = 1 plateau, data/plateau_k1_asymptotics.{csv,png}.  See
# docs/fixed-points.md ("The plateau table to M = 100").
# Usage: scripts/plateau_table_M100.sh [BUILD_DIR]   (default: build)
# Runs bench/gen_plateau_table with the options of scripts/plateau_table.sh,
# one process per K - M (three at once; about 25 minutes each on a loaded
# two-core machine), checks that the rows with M <= 40 are exactly those of
# data/plateau_table.csv, continues the k1 = 1 branch to M = 10^4 with
# `scm fixed-points --continue-to` and fits (scripts/plateau_asymptotics.py,
# /usr/bin/python3 with numpy and matplotlib).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
[ -d "$build" ] || meson setup "$build" >/dev/null
ninja -C "$build" bench/gen_plateau_table scm >/dev/null
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for dK in 0 1 2; do
    "$build/bench/gen_plateau_table" --Mmin 2 --Mmax 100 --dK-min $dK --dK-max $dK --starts 60 \
        --stab-max-K 20 --polish-max-K 24 --csv "$tmp/dk$dK.csv" --json "$tmp/dk$dK.json" \
        2> "$tmp/log$dK.txt" &
done
wait
{ head -n 1 "$tmp/dk0.csv"; for dK in 0 1 2; do tail -n +2 "$tmp/dk$dK.csv"; done; } \
    > "$tmp/table.csv"
if ! awk -F, 'NR == 1 || $2 <= 40' "$tmp/table.csv" | cmp -s - data/plateau_table.csv; then
    echo "plateau_table_M100.sh: the rows with M <= 40 differ from data/plateau_table.csv" >&2
    exit 1
fi
mv "$tmp/table.csv" data/plateau_table_M100.csv
"$build/scm" fixed-points --K 7 --M 7 --k1 1 --starts 40 --continue-to 10000 \
    -o "$tmp/branch.json" > /dev/null
/usr/bin/python3 scripts/plateau_asymptotics.py data/plateau_table_M100.csv "$tmp/branch.json" \
    "$tmp"/log*.txt
echo "wrote data/plateau_table_M100.csv ($(($(wc -l < data/plateau_table_M100.csv) - 1)) rows)"
