#!/bin/bash
# Regenerate data/symmetric_stability/ (issue 30; docs/stability.md section 0):
# every specialised point of `scm fixed-points --grow-from 8` at K = M, M + 1,
# M + 2 classified by its symmetric Hessian spectrum, then the minima per
# (M, K - M), the smallest Hessian eigenvalue of the k1 = 1, 2, 3 minima
# against M, its power-law fit and plot.
# Usage: scripts/symmetric_stability.sh [BUILD_DIR] [Ms]   (default: build,
# 10,20,50,100,200; the grow takes minutes per (M, K - M) beyond M = 200)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
Ms=${2:-10,20,50,100,200}
[ -d "$build" ] || meson setup "$build" >/dev/null
ninja -C "$build" bench/bench_symstab >/dev/null
mkdir -p data/symmetric_stability
"$build/bench/bench_symstab" --classify data/symmetric_stability/classification.csv \
    --Ms "$Ms" --threads 2 2> data/symmetric_stability/classify.log
/usr/bin/python3 scripts/symmetric_stability.py
