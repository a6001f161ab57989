#!/usr/bin/env bash
# test_staircase.sh SCM: `scm staircase` end to end: K = M = 2 erf from four
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

"$SCM" staircase --K 2 --M 2 --alpha 1e-3,1e-4,1e-5,1e-6 -o "$W/a.json" > "$W/a.txt" 2>&1
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
"$SCM" staircase --K 2 --M 2 --alpha 1e-3,1e-4,1e-5,1e-6 -q -o "$W/b.json" > "$W/b.txt" 2>&1
check "cmp -s '$W/a.json' '$W/b.json' && [ ! -s '$W/b.txt' ]" "rerun not byte-identical or -q printed"

# the two-step staircase (docs/staircase.md section 3): K = 4, M = 3, v* = (2, 1, 1):
# its second plateau is the K = M = 2 symmetric plateau (two students fit the
# v* = 2 teacher exactly, the other two face two unit teachers): the polished
# fixed point's loss and escape rate equal the enumerated K = M = 2 ones of a.json
"$SCM" staircase --K 4 --M 3 --vstar 2,1,1 --alpha 1e-7,1e-8 --t-max 1e3 -q -o "$W/m.json" 2> "$W/m.err"
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
