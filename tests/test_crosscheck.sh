#!/usr/bin/env bash
# test_crosscheck.sh SCM: `scm crosscheck` end to end: a small complete case
# (exit 0, every converged end point matched), an enumeration restricted to
# the global minimum by an ansatz file (exit 3, each unmatched end point in
# the JSON with its loss, Q, R and groups, and in the summary), and bad
# input (exit 2).
set -u
SCM=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
pass=0 fail=0
ok() { pass=$((pass + 1)); }
ko() { fail=$((fail + 1)); echo "FAIL: $*" >&2; }
check() { if eval "$1"; then ok; else ko "$2"; fi; }

"$SCM" crosscheck --K 5 --M 5 --runs 6 -o "$W/c5.json" > "$W/c5.txt" 2> "$W/c5.err"
check "[ $? -eq 0 ]" "K = M = 5: exit $(cat "$W/c5.err")"
check "grep -q '^complete: 0 unmatched' '$W/c5.txt'" "K = M = 5: no 'complete' line"
python3 - "$W/c5.json" <<'PY' && ok || ko "K = M = 5 JSON"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["command"] == "crosscheck" and r["unmatched"] == 0
for m in ("ode", "gd"):
    s = r["summary"][m]
    assert s["runs"] == 6 and s["matched"] + s["not_converged"] == 6, s
assert sum(f["ode"] + f["gd"] for f in r["matched_families"]) == \
    r["summary"]["ode"]["matched"] + r["summary"]["gd"]["matched"]
PY

# --threads: the same summary and listing on 1 and 3 threads (the JSON
# differs only in its timings)
"$SCM" crosscheck --K 5 --M 5 --runs 6 --threads 1 > "$W/t1.txt" 2> "$W/t.err"
"$SCM" crosscheck --K 5 --M 5 --runs 6 --threads 3 > "$W/t3.txt" 2>> "$W/t.err"
check "[ -s '$W/t1.txt' ] && cmp -s '$W/t1.txt' '$W/t3.txt'" "crosscheck --threads 3 differs from 1: $(cat "$W/t.err")"
"$SCM" crosscheck --K 5 --M 5 --runs 6 --threads 0 > /dev/null 2> "$W/t.err"
check "[ $? -eq 2 ] && grep -q -- '--threads' '$W/t.err'" "crosscheck --threads 0: $(cat "$W/t.err")"

# the k1 ansatz with k1 = 0 only: spurious end points cannot match
cat > "$W/only0.json" <<'A'
{"name": "k1_only0", "require": ["K - M"], "k1": ["0", "0"],
 "students": {"anti": "k1", "al": "K - k1"}, "teachers": {"tanti": "k1", "tal": "M - k1"},
 "pairs": {"anti": "tanti", "al": "tal"}}
A
"$SCM" crosscheck --K 8 --M 8 --runs 40 --seed 3 --method gd --ansatz "$W/only0.json" \
    -o "$W/r.json" > "$W/r.txt" 2> "$W/r.err"
check "[ $? -eq 3 ]" "restricted: exit status not 3: $(cat "$W/r.err")"
check "grep -q '^INCOMPLETE: [1-9]' '$W/r.txt'" "restricted: no INCOMPLETE line"
check "grep -q 'groups of students with equal overlaps' '$W/r.txt'" "restricted: no groups"
python3 - "$W/r.json" <<'PY' && ok || ko "restricted JSON"
import json, sys
r = json.load(open(sys.argv[1]))
u = r["unmatched_points"]
assert r["unmatched"] == len(u) > 0 and r["summary"]["gd"]["unmatched"] == len(u)
for p in u:
    assert p["method"] == "gd" and p["loss"] > 1e-10 and p["residual"] < 1e-12, p
    assert len(p["Q"]) == 8 and len(p["R"]) == 8 and len(p["R"][0]) == 8
    assert sum(g["size"] for g in p["groups"]) == 8
    assert p["anti"] + p["aligned"] + p["unpaired"] + p["none"] == 8
PY
# the same runs against the built-in ansätze: all matched
"$SCM" crosscheck --K 8 --M 8 --runs 40 --seed 3 --method gd -q -o "$W/f.json" > "$W/f.txt" 2>&1
check "[ $? -eq 0 ]" "built-in ansätze at K = M = 8: $(tail -3 "$W/f.txt")"

"$SCM" crosscheck --K 5 > "$W/bad.txt" 2>&1
check "[ $? -eq 2 ]" "missing --M accepted"
"$SCM" crosscheck --K 5 --M 5 --method sgd > "$W/bad.txt" 2>&1
check "[ $? -eq 2 ] && grep -q 'method' '$W/bad.txt'" "bad --method accepted"

# issue 26: --runs 0 refused; an output that is an input refused before any work;
# an unwritable output: exit 4
"$SCM" crosscheck --K 2 --M 2 --runs 0 > "$W/bad.txt" 2>&1
check "[ $? -eq 2 ] && grep -q -- '--runs needs an integer in \[1' '$W/bad.txt'" "--runs 0 accepted: $(cat "$W/bad.txt")"
echo '{}' > "$W/an.json"; cp "$W/an.json" "$W/an.orig"
"$SCM" crosscheck --K 2 --M 2 --runs 2 --ansatz "$W/an.json" -o "$W/an.json" > "$W/bad.txt" 2>&1
check "[ $? -eq 2 ] && grep -q 'also an input' '$W/bad.txt' && cmp -s '$W/an.json' '$W/an.orig'" "-o = --ansatz: $(cat "$W/bad.txt")"
"$SCM" crosscheck --K 2 --M 2 --runs 2 --method gd -q -o /dev/full > "$W/bad.txt" 2>&1
check "[ $? -eq 4 ]" "crosscheck -o /dev/full: exit $?: $(tail -1 "$W/bad.txt")"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
