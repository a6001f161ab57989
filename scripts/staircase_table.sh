#!/bin/bash
# Regenerate data/staircase_erf.csv and data/staircase_erf.png (the JSON
# results, ~0.5 MB each with the loss curves, stay in a temporary
# directory): small-initialisation runs of erf networks, plateaus
# matched to the enumerated fixed points, escape-time slopes
# (docs/staircase.md), data/staircase_multistep.{csv,png} and data/staircase_relu.{csv,png}.  Usage: scripts/staircase_table.sh [BUILD_DIR]; seconds.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
[ -d "$build" ] || meson setup "$build" >/dev/null
ninja -C "$build" scm >/dev/null
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
alphas=1e-2,1e-3,1e-4,1e-5,1e-6,1e-7
for km in "2 2" "4 4" "5 3"; do
    set -- $km
    "$build/scm" staircase --K "$1" --M "$2" --activation erf --alpha $alphas -q -o "$out/erf_K$1_M$2.json"
done
/usr/bin/python3 scripts/plot_staircase.py data/staircase_erf "$out"/erf_K2_M2.json \
    "$out"/erf_K4_M4.json "$out"/erf_K5_M3.json
# the two-step staircase (docs/staircase.md section 3): K = 4, M = 3,
# v* = (2, 1, 1), plateaus matched by Newton polish
"$build/scm" staircase --K 4 --M 3 --activation erf --vstar 2,1,1 --alpha 1e-5,1e-6,1e-7,1e-8,1e-9,1e-10 \
    --t-max 1e4 -q -o "$out/erf_K4_M3_v211.json"
/usr/bin/python3 scripts/plot_staircase.py data/staircase_multistep "$out"/erf_K4_M3_v211.json
# ReLU with both layers trained (docs/staircase.md section 5): K = M = 3,
# T = diag(4, 1, 0.25): the origin, then a second plateau (polished)
"$build/scm" staircase --K 3 --M 3 --activation relu --rule two_layer --T-diag 4,1,0.25 \
    --alpha 1e-6,1e-7,1e-8,1e-9,1e-10,1e-11,1e-12 --t-max 1e4 -q -o "$out/relu_K3_M3_2l.json"
/usr/bin/python3 scripts/plot_staircase.py data/staircase_relu "$out"/relu_K3_M3_2l.json
