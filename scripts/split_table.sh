#!/bin/bash
# Regenerate data/split_erf.csv, data/split_erf.png, data/split/*.json and
# data/split/inputs/*.json:
# the lambda lines of a few erf fixed points (docs/split.md section 5).
# Usage: scripts/split_table.sh [BUILD_DIR]   (default: build); about a minute.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
[ -d "$build" ] || meson setup "$build" >/dev/null
ninja -C "$build" scm >/dev/null
scm=$build/scm
out=data/split
mkdir -p "$out"
tmp=$out/inputs  # the parents' starting points, before --polish
mkdir -p "$tmp"
grid="--lambda-grid 41 --perturb -q"
# M = 1, teacher norm T and weight v* the student cannot fit: PD and ND lines
echo '{"activation":"erf","T":[[2]],"Q":[[1]],"R":[[0.5]],"vs":[1.5]}' > "$tmp/m1_pd.json"
echo '{"activation":"erf","T":[[8]],"Q":[[1]],"R":[[0.5]],"vs":[0.5]}' > "$tmp/m1_nd.json"
# K = 1, M = 2 (T = I): the best single neuron, symmetric between the teachers
echo '{"activation":"erf","Q":[[0.5]],"R":[[0.5,0.5]]}' > "$tmp/k1m2.json"
# the same with v = 2: its lambda = 1/2 point is the K = M = 2 plateau
echo '{"activation":"erf","Q":[[0.5]],"R":[[0.5,0.5]],"v":[2]}' > "$tmp/k1m2_v2.json"
for p in m1_pd m1_nd k1m2 k1m2_v2; do
    "$scm" split --point "$tmp/$p.json" --polish --neuron 0 $grid -o "$out/$p.json"
done
# an enumerated saddle: K = M = 3, the lowest non-zero loss (0.013789)
"$scm" split --K 3 --M 3 --activation erf --index 2 --neuron 0 $grid -o "$out/k3m3_i2.json"
/usr/bin/python3 scripts/plot_split.py data/split_erf "$out"/m1_pd.json "$out"/m1_nd.json \
    "$out"/k1m2.json "$out"/k1m2_v2.json "$out"/k3m3_i2.json
