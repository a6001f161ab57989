#!/usr/bin/env bash
# bench_fp_cli.sh BUILD [K] [M] [TRIALS]: the default `scm fixed-points --K K
# --M M -o F.json` on 1 thread (the baseline) and on the default threads
# (the processors online), TRIALS times each, interleaved: wall and CPU
# seconds, the wall ratio, and a byte comparison of the two result files
# (docs/fixed-points.md, "Threads").  Defaults: K = M = 20, 2 trials.
set -euo pipefail
B=$(cd "${1:?usage: bench_fp_cli.sh BUILD [K] [M] [TRIALS]}" && pwd)
K=${2:-20} M=${3:-${2:-20}} TRIALS=${4:-2}
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
echo "scm fixed-points --K $K --M $M -o F.json: $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
declare -A wall
for t in $(seq "$TRIALS"); do
    for mode in 1 default; do
        args=()
        [ "$mode" = 1 ] && args=(--threads 1)
        /usr/bin/time -f "%e %U %S" -o "$W/time" "$B/scm" fixed-points --K "$K" --M "$M" -q \
            "${args[@]}" -o "$W/F_$mode.json"
        read -r w u s < "$W/time"
        wall[$mode]="${wall[$mode]:-} $w"
        awk -v t="$t" -v m="$mode" -v w="$w" -v u="$u" -v s="$s" \
            'BEGIN { printf "trial %d  threads %-8s wall %6.2f s  CPU %6.2f s\n", t, m, w, u + s }' 
    done
    if cmp -s "$W/F_1.json" "$W/F_default.json"; then
        echo "trial $t: result files byte-identical"
    else
        echo "trial $t: RESULT FILES DIFFER" >&2
        exit 1
    fi
done
best() { tr ' ' '\n' | grep . | sort -g | head -1; }
b1=$(echo "${wall[1]}" | best) bd=$(echo "${wall[default]}" | best)
awk -v a="$b1" -v b="$bd" 'BEGIN { printf "best wall: 1 thread %.2f s, default threads %.2f s, ratio %.2f\n", a, b, a / b }' 
