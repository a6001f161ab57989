#!/usr/bin/env bash
# bench_map_ab.sh OLD_SCM NEW_SCM [OUTDIR] [RUNS]: bench_map.sh for two
# builds in the same run, interleaved cell by cell (old, new, old, new, ..)
# so that a change of the machine's load hits both alike: the user CPU
# seconds per run of each at every (M, K), their ratio old/new, both power
# law fits and the goal grid's projected time on 2 cores.  MS and DKS as in
# bench_map.sh (default here M = 10, 20, 30, 40 and dK = 0, 1).  The old
# build is typically `git archive HEAD | tar -x -C DIR` built in DIR/build.
# Run under `nice -n 10`.  docs/map.md, section "Speed".
set -eu
OLD=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
NEW=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
OUT=${3:-.}
RUNS=${4:-16}
MS=${MS:-"10 20 30 40"}
DKS=${DKS:-"0 1"}
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$OUT"
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
for tag in old new; do
    echo "M,K,runs,cpu_s,cpu_s_per_run,steps_mean,rhs_mean" > "$OUT/bench_map_$tag.csv"
done
for M in $MS; do
    for dK in $DKS; do
        for tag in old new; do
            scm=$OLD
            [ "$tag" = new ] && scm=$NEW
            MS=$M DKS=$dK bash "$HERE/bench_map.sh" "$scm" "$W/$tag" "$RUNS" > /dev/null
            tail -n 1 "$W/$tag/bench_map.csv" >> "$OUT/bench_map_$tag.csv"
        done
    done
done
/usr/bin/python3 - "$OUT/bench_map_old.csv" "$OUT/bench_map_new.csv" <<'EOF'
import csv, math, sys
old = list(csv.DictReader(open(sys.argv[1])))
new = list(csv.DictReader(open(sys.argv[2])))
def fit(rs):
    x = [math.log(float(r["K"])) for r in rs]
    y = [math.log(float(r["cpu_s_per_run"])) for r in rs]
    n = len(x); mx = sum(x) / n; my = sum(y) / n
    b = sum((a - mx) * (c - my) for a, c in zip(x, y)) / sum((a - mx) ** 2 for a in x)
    return math.exp(my - b * mx), b
print("%4s %4s %12s %12s %7s  %s" % ("M", "K", "old s/run", "new s/run", "ratio", "steps old/new"))
for o, n in zip(old, new):
    po, pn = float(o["cpu_s_per_run"]), float(n["cpu_s_per_run"])
    same = "same" if o["steps_mean"] == n["steps_mean"] and o["rhs_mean"] == n["rhs_mean"] else "DIFFER"
    print("%4s %4s %12.4f %12.4f %7.2f  %s" % (o["M"], o["K"], po, pn, po / pn, same))
cells = [(M, M + d) for M in range(6, 41, 2) for d in range(5)]
for tag, rows in (("old", old), ("new", new)):
    a, b = fit(rows)
    need = sum(a * K ** b for M, K in cells) * 1000
    print("%s: cpu s per run = %.3g K^%.3f; goal grid (M 6..40 step 2, dK 0..4, 1000 runs) "
          "%.0f CPU s = %.2f h on 2 cores (mean %.4f s per run; the 1-hour goal needs %.4f)"
          % (tag, a, b, need, need / 2 / 3600, need / (1000 * len(cells)),
             7200 / (1000 * len(cells))))
    # a fit per dK where the rows have two M or more for it (the cells of
    # dK >= 2 cost more per run than one fit says: docs/map.md, Speed)
    dks = sorted({int(r["K"]) - int(r["M"]) for r in rows})
    per = {d: [r for r in rows if int(r["K"]) - int(r["M"]) == d] for d in dks}
    if len(dks) > 1 and all(len({r["M"] for r in rs}) > 1 for rs in per.values()):
        parts = []
        for d, rs in per.items():
            a, b = fit(rs)
            parts.append((d, b, 1000 * sum(a * K ** b for M, K in cells if K - M == d)))
        total = sum(p for d, b, p in parts if d <= 4)
        print("%s, fitted per dK: %s; the goal grid's dK %s: %.0f CPU s = %.2f h on 2 cores"
              % (tag, ", ".join("dK %d K^%.2f %.0f s" % p for p in parts),
                 "..".join(str(d) for d in (min(dks), max(dks))), total, total / 2 / 3600))
EOF
