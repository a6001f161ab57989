#!/usr/bin/env bash
# test_k1_shared.sh SCM: the example ansatz examples/ansatz/k1_shared.json
# (docs/map.md, "Points outside the built-in ansätze") holds the spurious
# K = M + 2 minimum that gradient flow reaches in the map of record (run 464
# of the Gaussian cell M = 36, K = 38):
#  - `scm fixed-points` with it finds, at k1 = 19, a point of full residual
#    below 1e-12 that the symmetric Hessian spectrum classes a strict
#    minimum (smallest eigenvalue 1.92e-5, as the dense Hessian of the run's
#    end state found: docs/map.md);
#  - the gradient flow from the run's seed (`scm run` of the cell's config)
#    stops on the gradient at the same point, computed another way: its
#    loss within 1e-9, and the permutation invariants of its state (the
#    sorted student norms Q_kk and the sorted |R_kn| of each student's
#    largest overlap) within 1e-6 of the point's.
set -u
SCM=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
SRC=$(cd "$(dirname "$0")/.." && pwd)
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
pass=0 fail=0
ok() { pass=$((pass + 1)); }
ko() { fail=$((fail + 1)); echo "FAIL: $*" >&2; }
check() { if eval "$1"; then ok; else ko "$2"; fi; }
cd "$W"

"$SCM" fixed-points --K 38 --M 36 --ansatz "$SRC/examples/ansatz/k1_shared.json" --k1 19 \
    --stability --threads 1 -q -o fp.json 2> e
check "[ $? -eq 0 ]" "fixed-points: $(head -3 e)"
"$SCM" run "$SRC/data/map/gaussian/map_gaussian.M36.K38.config.json" --set init.seed=116269843 \
    -q -o run.json 2> e
check "[ $? -eq 0 ]" "run: $(head -3 e)"
out=$("$PY" - fp.json run.json <<'PYEOF'
import json, sys
fp = json.load(open(sys.argv[1]))
run = json.load(open(sys.argv[2]))
fin = run["final"]
def invariants(Q, R):
    return (sorted(Q[k][k] for k in range(len(Q))),
            sorted(max(abs(x) for x in row) for row in R))
pts = [p for p in fp["fixed_points"] if p["class"] == "minimum"]
if len(pts) != 1:
    print("want one minimum at k1 = 19, got %d" % len(pts)); sys.exit()
p = pts[0]
bad = []
if not (p["residual_ok"] and p["hessian_min"] > 1.5e-5 and p["structure"]["anti"] == 19):
    bad.append("point: residual_ok %s hessian_min %s anti %s" % (p["residual_ok"], p["hessian_min"], p["structure"]["anti"]))
if run["stop_reason"] != "fixed_point":
    bad.append("run stopped on %s" % run["stop_reason"])
if abs(fin["eps"] - p["loss"]) > 1e-9:
    bad.append("loss: run %.15g, point %.15g" % (fin["eps"], p["loss"]))
a, b = invariants(p["Q"], p["R"]), invariants(fin["Q"], fin["R"])
dev = max(abs(x - y) for u, v in zip(a, b) for x, y in zip(u, v))
if dev > 1e-6:
    bad.append("state invariants differ by %.3g" % dev)
print("; ".join(bad) if bad else "ok %.3g" % dev)
PYEOF
)
check "[ \"\${out%% *}\" = ok ]" "k1_shared point against the run: $out"

echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
