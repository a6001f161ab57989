#!/usr/bin/env bash
# continuation_table.sh [BUILD_DIR]: data/continuation_M7.csv and its figure
# data/continuation_M7.png: the fixed points at M = 7 for K = 7, 8, 9
# (K - M = 0, 1, 2) continued in M up to 1000 (`scm fixed-points --starts 40
# --continue-to 1000`), the branches starting below loss 0.06.  About 15 s.
# docs/plots.md.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for K in 7 8 9; do
    "$build/scm" fixed-points --K "$K" --M 7 --starts 40 --continue-to 1000 -q -o "$tmp/K$K.json"
done
/usr/bin/python3 scripts/plot_fixed_points.py continuation --max-loss 0.06 \
    --csv data/continuation_M7.csv -o data/continuation_M7.png "$tmp"/K7.json "$tmp"/K8.json "$tmp"/K9.json
