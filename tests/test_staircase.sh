#!/usr/bin/env bash
# test_staircase.sh SCM: `scm staircase` end to end (default activation
# relu: erf runs say --activation erf): K = M = 2 erf from four
# alphas (one plateau per run, matched to the enumerated symmetric fixed
# point; the fitted slope within 1e-3 of 1/lambda; JSON content), a
# byte-identical rerun, and the bad-input paths (exit 2, named, no file).
set -u
SCM=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
pass=0 fail=0
ok() { pass=$((pass + 1)); }
ko() { fail=$((fail + 1)); echo "FAIL: $*" >&2; }
check() { if eval "$1"; then ok; else ko "$2"; fi; }

"$SCM" staircase --K 2 --M 2 --activation erf --alpha 1e-3,1e-4,1e-5,1e-6 -o "$W/a.json" > "$W/a.txt" 2>&1
check "[ $? -eq 0 ] && grep -q 'escape time = ' '$W/a.txt'" "staircase run: $(cat "$W/a.txt")"
python3 - "$W/a.json" <<'PY' && ok || ko "staircase result content"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["command"] == "staircase" and len(r["runs"]) == 4
for run in r["runs"]:
    assert run["stop"] == "eps_threshold", run["stop"]
    assert len(run["plateaus"]) == 1, run["plateaus"]
    p = run["plateaus"][0]
    fp = r["fixed_points"][p["fixed_point"]]
    assert abs(p["loss"] - fp["loss"]) < 1e-6 * fp["loss"], (p, fp)
    assert abs(fp["loss"] - 0.0116108403) < 1e-9
(f,) = r["fits"]
assert abs(f["slope"] - f["inverse_lambda"]) < 1e-3 * f["inverse_lambda"], f
PY
"$SCM" staircase --K 2 --M 2 --activation erf --alpha 1e-3,1e-4,1e-5,1e-6 -q -o "$W/b.json" > "$W/b.txt" 2>&1
check "cmp -s '$W/a.json' '$W/b.json' && [ ! -s '$W/b.txt' ]" "rerun not byte-identical or -q printed"

# the two-step staircase (docs/staircase.md section 3): K = 4, M = 3, v* = (2, 1, 1):
# its second plateau is the K = M = 2 symmetric plateau (two students fit the
# v* = 2 teacher exactly, the other two face two unit teachers): the polished
# fixed point's loss and escape rate equal the enumerated K = M = 2 ones of a.json
"$SCM" staircase --K 4 --M 3 --activation erf --vstar 2,1,1 --alpha 1e-7,1e-8 --t-max 1e3 -q -o "$W/m.json" 2> "$W/m.err"
check "[ $? -eq 0 ]" "two-step staircase run: $(cat "$W/m.err")"
python3 - "$W/m.json" "$W/a.json" <<'PY' && ok || ko "two-step staircase: second plateau = K = M = 2 plateau"
import json, sys
r, a = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert r["matching"] == "polish" and r["vstar"] == [2, 1, 1]
ref = a["fixed_points"][a["fits"][0]["fixed_point"]]
for run in r["runs"]:
    assert len(run["plateaus"]) >= 2, run["plateaus"]
    p = run["plateaus"][1]
    assert p["polish_residual"] <= 1e-9, p
    fp = r["fixed_points"][p["fixed_point"]]
    assert abs(fp["loss"] - ref["loss"]) < 1e-7 * ref["loss"], (fp, ref)
    assert abs(fp["lambda"] - ref["lambda"]) < 1e-4 * ref["lambda"], (fp, ref)
PY

# ReLU, both layers from alpha (docs/staircase.md section 5): the first plateau
# is the origin; its escape times against log(1/alpha) have slope 1/lambda_0,
# lambda_0 = max over unit u of E[y*(x) relu(u.x)] (|w| and v grow together at
# that rate), computed here from the arc-cosine kernel by a search on the sphere
"$SCM" staircase --K 3 --M 3 --activation relu --rule two_layer --T-diag 4,1,0.25 \
    --alpha 1e-6,1e-8,1e-10,1e-12 --t-max 1e3 -q -o "$W/r.json" 2> "$W/r.err"
check "[ $? -eq 0 ]" "relu two-layer run: $(cat "$W/r.err")"
# the default activation is relu, as in every command (issue 25 item 6)
"$SCM" staircase --K 3 --M 3 --rule two_layer --T-diag 4,1,0.25 \
    --alpha 1e-6,1e-8,1e-10,1e-12 --t-max 1e3 -q -o "$W/rd.json" 2> "$W/rd.err"
check "[ $? -eq 0 ] && cmp -s '$W/r.json' '$W/rd.json'" \
    "staircase without --activation differs from --activation relu: $(cat "$W/rd.err")"
check "grep -q '\"activation\":[[:space:]]*\"relu\"' '$W/rd.json'" "staircase's default records relu"
python3 - "$W/r.json" <<'PY' && ok || ko "relu two-layer: origin escape slope = 1/lambda_0"
import json, math, sys
r = json.load(open(sys.argv[1]))
T = r["T_diag"]
def gain(th, ph):
    u = (math.cos(th), math.sin(th) * math.cos(ph), math.sin(th) * math.sin(ph))
    s = 0.0
    for m in range(3):
        c = max(-1.0, min(1.0, u[m]))
        a = math.acos(c)
        s += math.sqrt(T[m]) / (2 * math.pi) * (math.sin(a) + (math.pi - a) * c)
    return s
best, th, ph = max((gain(math.radians(i / 2), math.radians(j)), math.radians(i / 2),
                    math.radians(j)) for i in range(181) for j in range(361))
h = 0.01
for _ in range(300):
    for dt, dp in ((h, 0), (-h, 0), (0, h), (0, -h)):
        g = gain(th + dt, ph + dp)
        if g > best:
            best, th, ph = g, th + dt, ph + dp
    h *= 0.95
x, y = [], []
for run in r["runs"]:
    p = run["plateaus"][0]
    assert p["tau_start"] == 0 and abs(p["loss"] - run["loss"][0]) < 1e-6 * run["loss"][0], p
    x.append(math.log(1 / run["alpha"]))
    y.append(p["tau_escape"])
mx, my = sum(x) / len(x), sum(y) / len(y)
slope = sum((a - mx) * (b - my) for a, b in zip(x, y)) / sum((a - mx) ** 2 for a in x)
assert abs(slope - 1 / best) < 1e-3 / best, (slope, 1 / best)
# the command matches the first plateau to the origin with its own lambda_0
o = r["fixed_points"][r["runs"][0]["plateaus"][0]["fixed_point"]]
assert o["ansatz"] == "origin" and abs(o["lambda"] - best) < 1e-8 * best, (o, best)
assert all(run["plateaus"][0]["fixed_point"] == r["runs"][0]["plateaus"][0]["fixed_point"]
           for run in r["runs"])
fit = [f for f in r["fits"] if r["fixed_points"][f["fixed_point"]]["ansatz"] == "origin"][0]
assert abs(fit["slope"] - fit["inverse_lambda"]) < 1e-3 * fit["inverse_lambda"], fit
PY

# erf, both layers: the origin's rate is linear, lambda_0 = g'(0) |E[y* x]|,
# |E[y* x]|^2 = sum_m v*_m^2 T_mm (2/pi)/(1 + T_mm) (Stein; T diagonal)
"$SCM" staircase --K 3 --M 3 --activation erf --rule two_layer --T-diag 4,1,0.25 \
    --alpha 1e-6,1e-8,1e-10,1e-12 --t-max 1e2 -q -o "$W/e.json" 2> "$W/e.err"
check "[ $? -eq 0 ]" "erf two-layer run: $(cat "$W/e.err")"
python3 - "$W/e.json" <<'PY' && ok || ko "erf two-layer: origin escape slope = 1/lambda_0"
import json, math, sys
r = json.load(open(sys.argv[1]))
lam0 = math.sqrt(2 / math.pi) * math.sqrt(sum(
    v * v * t * (2 / math.pi) / (1 + t) for v, t in zip(r["vstar"], r["T_diag"])))
x = [math.log(1 / run["alpha"]) for run in r["runs"]]
y = [run["plateaus"][0]["tau_escape"] for run in r["runs"]]
assert all(run["plateaus"][0]["tau_start"] == 0 for run in r["runs"])
mx, my = sum(x) / len(x), sum(y) / len(y)
slope = sum((a - mx) * (b - my) for a, b in zip(x, y)) / sum((a - mx) ** 2 for a in x)
assert abs(slope - 1 / lam0) < 1e-3 / lam0, (slope, 1 / lam0)
o = r["fixed_points"][r["runs"][0]["plateaus"][0]["fixed_point"]]
assert o["ansatz"] == "origin" and abs(o["lambda"] - lam0) < 1e-12 * lam0, (o, lam0)
assert abs(o["loss"] - r["runs"][0]["loss"][0]) < 1e-6 * o["loss"], o
PY

expect_error() {
    local name=$1 pat=$2
    shift 2
    "$SCM" staircase "$@" -o "$W/$name.out.json" > "$W/$name.stdout" 2> "$W/$name.stderr"
    local rc=$?
    check "[ $rc -eq 2 ]" "$name: exit status $rc, want 2"
    check "grep -q -- \"$pat\" '$W/$name.stderr'" "$name: stderr lacks '$pat': $(cat "$W/$name.stderr")"
    check "[ ! -e '$W/$name.out.json' ]" "$name: a result file was written"
}
expect_error noalpha "are required" --K 2 --M 2
expect_error badalpha "needs a positive number, got '-1'" --K 2 --M 2 --alpha 1e-3,-1
expect_error act "unknown activation 'tanh'" --K 2 --M 2 --alpha 1e-3 --activation tanh
expect_error dsmall "below M" --K 2 --M 3 --alpha 1e-3 --d 2
expect_error rate "rate-tol needs a positive number" --K 2 --M 2 --alpha 1e-3 --rate-tol 0
expect_error rule "rule 'stiefel': gd or two_layer" --K 2 --M 2 --alpha 1e-3 --rule stiefel
expect_error tdiag "need M = 2 entries" --K 2 --M 2 --alpha 1e-3 --T-diag 1,2,3
expect_error tneg "T-diag needs a positive number" --K 2 --M 2 --alpha 1e-3 --T-diag 1,-1
expect_error opt "unknown option '--frob'" --K 2 --M 2 --alpha 1e-3 --frob 1

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
