#!/usr/bin/env bash
# test_k1_shared.sh SCM: the example ansatze examples/ansatz/k1_shared.json,
# k1_shared2.json and k1_shared3.json (docs/map.md, "Points outside the
# built-in ansätze") hold the spurious minima that gradient flow reaches in
# the map of record: k1_shared the K = M + 2 one (run 464 of the Gaussian
# cell M = 36, K = 38, k1 = 19), k1_shared2 the K = M + 3 one (run 62 of
# the Gaussian dK = 3 cell M = 36, K = 39, k1 = 16), k1_shared3 the
# K = M + 4 one (run 464 of the Gaussian dK = 4 cell M = 36, K = 40,
# k1 = 16).  For each:
#  - `scm fixed-points` with the ansatz finds, at that k1, one point of
#    full residual below 1e-12 that the symmetric Hessian spectrum classes
#    a strict minimum (k1_shared: smallest eigenvalue 1.92e-5, as the dense
#    Hessian of the run's end state found: docs/map.md);
#  - the gradient flow from the run's seed (`scm run` of the cell's config)
#    stops on the gradient at the same point, computed another way: its
#    loss within 1e-9, and the permutation invariants of its state (the
#    sorted student norms Q_kk and the sorted |R_kn| of each student's
#    largest overlap) within 1e-6 of the point's.
# And the symmetric spectrum of k1_shared2 points (one-student groups on
# both sides) against the dense one, at K = 7, M = 4 where it is cheap.
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

# point_vs_run ANSATZ K M K1 CONFIG SEED HMIN: the checks above
point_vs_run() {
    local ans=$1 K=$2 M=$3 k1=$4 cfg=$5 seed=$6 hmin=$7
    "$SCM" fixed-points --K "$K" --M "$M" --ansatz "$SRC/examples/ansatz/$ans.json" --k1 "$k1" \
        --stability --threads 1 -q -o fp.json 2> e
    check "[ $? -eq 0 ]" "$ans fixed-points: $(head -3 e)"
    "$SCM" run "$SRC/data/map/$cfg" --set init.seed="$seed" -q -o run.json 2> e
    check "[ $? -eq 0 ]" "$ans run: $(head -3 e)"
    local out
    out=$("$PY" - fp.json run.json "$k1" "$hmin" <<'PYEOF'
import json, sys
fp = json.load(open(sys.argv[1]))
run = json.load(open(sys.argv[2]))
k1, hmin = int(sys.argv[3]), float(sys.argv[4])
fin = run["final"]
def invariants(Q, R):
    return (sorted(Q[k][k] for k in range(len(Q))),
            sorted(max(abs(x) for x in row) for row in R))
pts = [p for p in fp["fixed_points"] if p["class"] == "minimum"]
if len(pts) != 1:
    print("want one minimum at k1 = %d, got %d" % (k1, len(pts))); sys.exit()
p = pts[0]
bad = []
if not (p["residual_ok"] and p["hessian_min"] > hmin and p["structure"]["anti"] == k1):
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
    check "[ \"\${out%% *}\" = ok ]" "$ans point against the run: $out"
}

point_vs_run k1_shared 38 36 19 gaussian/map_gaussian.M36.K38.config.json 116269843 1.5e-5
point_vs_run k1_shared2 39 36 16 gaussian/dk3_gaussian.M36.K39.config.json 3470241820 3.5e-6
point_vs_run k1_shared3 40 36 16 gaussian/dk4_gaussian.M36.K40.config.json 116269843 4.5e-6

# k1_shared2's symmetric spectrum against the dense one at K = 7, M = 4,
# where its full enumeration is cheap: two points whose ansatz instance
# differs from their k1 (the instance, not k1, must pick the symmetric
# blocks), one where they agree, one with every student anti-aligned.
# The negative count and the 8 smallest Hessian eigenvalues to 1e-9 of
# the largest, the Jacobian's largest real part to 1e-9.
"$SCM" fixed-points --K 7 --M 4 --ansatz "$SRC/examples/ansatz/k1_shared2.json" \
    --threads 1 -q -o fp7.json 2> e
check "[ $? -eq 0 ]" "k1_shared2 at K = 7, M = 4: $(head -3 e)"
idx=$("$PY" -c 'import json, sys
ps = json.load(open(sys.argv[1]))["fixed_points"]
ok = [(i, p) for i, p in enumerate(ps) if p.get("ansatz") == "k1_shared2" and p["residual_ok"]
      and p.get("class") == "saddle"]
differ = [i for i, p in ok if p["instance"] != p["structure"]["anti"]]
same = [i for i, p in ok if p["instance"] == p["structure"]["anti"]]
allanti = [i for i in differ if ps[i]["structure"]["anti"] == 4]
if len(differ) >= 2 and same and allanti:
    print(" ".join(str(i) for i in sorted({differ[0], differ[1], same[0], allanti[0]})))' fp7.json)
check "[ -n \"$idx\" ]" "k1_shared2 at K = 7, M = 4: not the points the check needs"
for i in $idx; do
    rm -f st_sym.json st_dense.json
    "$SCM" stability --point fp7.json --index "$i" --ansatz "$SRC/examples/ansatz/k1_shared2.json" \
        --perturb none -q -o st_sym.json 2> e
    check "[ $? -eq 0 ]" "stability of point $i: $(head -3 e)"
    "$SCM" stability --point fp7.json --index "$i" --dense --perturb none -q -o st_dense.json 2> e
    check "[ $? -eq 0 ]" "stability --dense of point $i: $(head -3 e)"
    out=$("$PY" - st_sym.json st_dense.json <<'PYEOF'
import json, sys
s, d = (json.load(open(f)) for f in sys.argv[1:3])
bad = []
if (s["spectrum_method"], d["spectrum_method"]) != ("symmetric", "dense"):
    bad.append("methods %s, %s" % (s["spectrum_method"], d["spectrum_method"]))
hs, hd = s["hessian"], d["hessian"]
scale = abs(hd["largest"])
if (hs["n"], hs["negative"], hs["verdict"]) != (hd["n"], hd["negative"], hd["verdict"]):
    bad.append("counts %s against %s" % ((hs["n"], hs["negative"], hs["verdict"]), (hd["n"], hd["negative"], hd["verdict"])))
dev = max(abs(x - y) for x, y in zip(hs["smallest"], hd["smallest"]))
if dev > 1e-9 * scale or len(hs["smallest"]) != 8:
    bad.append("smallest eigenvalues differ by %.3g" % dev)
dj = abs(s["jacobian"]["re_max"] - d["jacobian"]["re_max"])
if dj > 1e-9 * abs(d["jacobian"]["re_min"]):
    bad.append("Jacobian re_max differs by %.3g" % dj)
print("; ".join(bad) if bad else "ok")
PYEOF
)
    check "[ \"$out\" = ok ]" "k1_shared2 point $i, symmetric against dense: $out"
done

# The minima at M = 100 of the three ansätze, at K = M + 2, 3, 4
# (data/map/shared/ANSATZ.K<K>.M100.*, docs/map.md): Newton from the stored
# block-level points (the lowest k1 with a strict minimum there, and for
# k1_shared also k1 = 1) finds them again, and the symmetric spectrum
# classes each a strict minimum with the loss (1e-11 relative) and smallest
# Hessian eigenvalue (1e-3 relative: it is printed to 4 digits) that the
# full run's families table, stored beside them, lists; the table's lowest
# k1 with a minimum is the stored one.
# m100_minima ANSATZ K K1...: the first K1 is the table's lowest.
m100_minima() {
    local ansatz=$1 K=$2
    shift 2
    local D=$SRC/data/map/shared/$ansatz.K$K.M100
    "$SCM" fixed-points --K "$K" --M 100 --ansatz "$SRC/examples/ansatz/$ansatz.json" \
        --seed-from "$D.seeds.json" --starts 0 --sweep-passes 0 --stability --states none \
        --threads 1 -q -o m100.json 2> e
    check "[ $? -eq 0 ]" "$ansatz at K = $K, M = 100 from the stored points: $(head -3 e)"
    $PY - m100.json "$D.families.txt" "$@" <<'PYEOF' && ok || ko "$ansatz minima at K = $K, M = 100 against the stored table"
import json, sys
fams = {}
for f in json.load(open(sys.argv[1]))["families"]:
    if f["minima"] > 0 and (f["k1"] not in fams or f["loss"] < fams[f["k1"]]["loss"]):
        fams[f["k1"]] = f
table = {}
for line in open(sys.argv[2]):
    w = line.split()
    if len(w) > 8 and w[0].isdigit() and w[-2] == "instance":  # a family with a minimum
        row = (float(w[-8]), float(w[-7]))  # lowest minimum, hess_min (4 digits)
        table[int(w[0])] = min(row, table.get(int(w[0]), row))
want = [int(k) for k in sys.argv[3:]]
assert min(k for k in table if k > 1) == min(k for k in want if k > 1), sorted(table)
for k1 in want:
    loss, hmin = table[k1]
    f = fams[k1]
    assert abs(f["loss"] - loss) <= 1e-11 * loss, (k1, f["loss"], loss)
    assert abs(f["hessian_min"] - hmin) <= 1e-3 * hmin, (k1, f["hessian_min"], hmin)
PYEOF
}
m100_minima k1_shared 102 24 1
m100_minima k1_shared2 103 13
m100_minima k1_shared3 104 7

echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
