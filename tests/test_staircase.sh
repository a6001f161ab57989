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
expect_error opt "unknown option '--frob'" --K 2 --M 2 --alpha 1e-3 --frob 1

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
