#!/usr/bin/env bash
# bench_map.sh SCM [OUTDIR] [RUNS]: the cost of one run of `scm map` (= one
# run of `scm compare`) against width, K = M (dK = 0) and K = M + 1, at
# compare's settings (the built-in config of scm compare: ReLU, T = I,
# d = 1000, GMRES, lagged Jacobian-vector product, two-stage accuracy),
# under the Gaussian law.  For each M it times `scm sweep` on RUNS runs
# (default 16) on one thread, without families (the classification is a
# loss comparison: negligible), and records the user CPU seconds per run.
# Then it fits cost = a K^b by least squares on log-log, writes
# OUTDIR/bench_map.csv and prints the fit and what the 1-hour goal needs.
# Run under `nice -n 10`; the machine may be shared: the figures are CPU
# time, not wall time.  docs/map.md, section "Speed".
set -eu
SCM=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
OUT=${2:-.}
RUNS=${3:-16}
MS=${MS:-"10 15 20 30 40 50 60"}
DKS=${DKS:-"0 1"}
mkdir -p "$OUT"
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
echo "M,K,runs,cpu_s,cpu_s_per_run,steps_mean,rhs_mean" > "$OUT/bench_map.csv"
for M in $MS; do
    for dK in $DKS; do
        K=$((M + dK))
        cat > "$W/c.json" <<EOF
{"model": {"K": $K, "M": $M, "activation": "relu"},
 "init": {"type": "random", "d": 1000, "sigma": 1, "seed": 1},
 "integrator": {"linear_solver": "gmres", "grad_stop": 1e-10,
                "loose_until": 1e-6, "loose_rtol": 1e-4, "loose_atol": 1e-6,
                "jtimes": "lagged", "krylov_dim": 20, "eps_stop": 1e-10,
                "max_steps": 100000}}
EOF
        rm -f "$W/r.jsonl" "$W/s.json"
        /usr/bin/time -f "%U" -o "$W/t" "$SCM" sweep "$W/c.json" --runs "$RUNS" --threads 1 \
            -o "$W/r.jsonl" --summary "$W/s.json" --quiet
        cpu=$(cat "$W/t")
        read -r steps rhs < <(/usr/bin/python3 -c "
import json; s = json.load(open('$W/s.json'))
s = s.get('summary', s)['solver']; print(s['steps_mean'], s['rhs_mean'])")
        per=$(/usr/bin/python3 -c "print('%.4f' % ($cpu / $RUNS))")
        echo "$M,$K,$RUNS,$cpu,$per,$steps,$rhs" | tee -a "$OUT/bench_map.csv"
    done
done
/usr/bin/python3 - "$OUT/bench_map.csv" <<'EOF'
import csv, math, sys
rows = list(csv.DictReader(open(sys.argv[1])))
if len({r["K"] for r in rows}) < 2:
    sys.exit(0)  # one K (bench_map_ab.sh's cells): nothing to fit
def fit(rs):
    x = [math.log(float(r["K"])) for r in rs]
    y = [math.log(float(r["cpu_s_per_run"])) for r in rs]
    n = len(x); mx = sum(x) / n; my = sum(y) / n
    b = sum((a - mx) * (c - my) for a, c in zip(x, y)) / sum((a - mx) ** 2 for a in x)
    return math.exp(my - b * mx), b
a, b = fit(rows)
print("fit: cpu s per run = %.3g K^%.3f (all rows)" % (a, b))
# the 1-hour goal: M = 6, 8, .., 40, K - M = 0..4, 1000 runs per cell, 2 cores
cells = [(M, M + d) for M in range(6, 41, 2) for d in range(5)]
need = sum(a * K ** b for M, K in cells) * 1000
print("goal grid at this fit: %.0f CPU s = %.2f h on 2 cores (goal 1 h: per-run cost "
      "must shrink %.1fx; mean per run at most %.3f s)"
      % (need, need / 2 / 3600, need / 7200, 7200 / (1000 * len(cells))))
EOF
