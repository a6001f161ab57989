#!/bin/bash
# Regenerate data/plateau_table.csv and data/plateau_table.json (ReLU, T = I,
# v = v* = 1; K = M, M + 1, M + 2; M = 2..40).  See docs/fixed-points.md.
# Usage: scripts/plateau_table.sh [BUILD_DIR]   (default: build)
# Builds bench/gen_plateau_table in BUILD_DIR and runs it; about 40 minutes
# on a loaded two-core machine (851 s for K = M, 1548 s for K = M + 1, M + 2).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
[ -d "$build" ] || meson setup "$build" >/dev/null
ninja -C "$build" bench/gen_plateau_table >/dev/null
mkdir -p data
"$build/bench/gen_plateau_table" --Mmin 2 --Mmax 40 --dK-max 2 --starts 60 \
    --stab-max-K 20 --polish-max-K 24 \
    --csv data/plateau_table.csv.tmp --json data/plateau_table.json.tmp
mv data/plateau_table.csv.tmp data/plateau_table.csv
mv data/plateau_table.json.tmp data/plateau_table.json
echo "wrote data/plateau_table.csv ($(($(wc -l < data/plateau_table.csv) - 1)) rows) and data/plateau_table.json"
