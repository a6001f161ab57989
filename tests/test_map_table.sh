#!/usr/bin/env bash
# test_map_table.sh PYTHON MAP_TABLE DATA_DIR: scripts/map_table.py --check
# passes on a copy of a map directory (data/map/m100: maps, and a cell swept
# again with --families in shared/) and fails on each planted defect: a
# map's count, a run of the record that ends elsewhere in the sweep, a run
# the sweep puts in a family that is not the ansatz's of its cell
# (k1_shared at K = M + 2, k1_shared2 at M + 3), and a sweep summary that
# miscounts a class; and --same-runs fails on a run that differs from the
# other map's; bad arguments are refused, named.
set -u
PY=$1
TABLE=$2
DATA=$3
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
fail=0
ok() { echo "ok: $1"; }
bad() { echo "FAIL: $1"; fail=1; }

fresh() { rm -rf "$W/m"; cp -r "$DATA" "$W/m"; }

# edit_runs FILE.gz INDEX KEY VALUE: set KEY of run INDEX (JSON value)
edit_runs() {
    "$PY" - "$@" <<'EOF'
import gzip, json, sys
path, index, key, value = sys.argv[1], int(sys.argv[2]), sys.argv[3], json.loads(sys.argv[4])
lines = gzip.open(path, "rt").read().splitlines()
r = json.loads(lines[index + 1])
r[key] = value
lines[index + 1] = json.dumps(r, separators=(",", ":"))
with gzip.open(path, "wt") as f:
    f.write("\n".join(lines) + "\n")
EOF
}

expect_fail() {
    if "$PY" "$TABLE" --check "$W/m" > "$W/out" 2> "$W/err"; then
        bad "$1: --check passed"
    elif grep -q "$2" "$W/err"; then
        ok "$1: refused ($(head -n 1 "$W/err"))"
    else
        bad "$1: refused without naming '$2': $(head -n 3 "$W/err")"
    fi
}

fresh
if "$PY" "$TABLE" --check "$W/m" > "$W/out" 2> "$W/err"; then
    ok "the copy passes: $(cat "$W/out")"
else
    bad "the copy fails: $(head -n 3 "$W/err")"
fi
grep -q "and 6 cells run again with more families, 0 differences" "$W/out" \
    && ok "the swept cells are checked" || bad "no swept cell checked: $(cat "$W/out")"

fresh
"$PY" - "$W/m/gaussian/m100_gaussian.json" <<'EOF'
import json, sys
m = json.load(open(sys.argv[1]))
m["cells"][0]["families"][0]["count"] += 1
json.dump(m, open(sys.argv[1], "w"))
EOF
expect_fail "a family count of a map" "gaussian M=100 K=100 k1"

fresh
edit_runs "$W/m/shared/sweep_gaussian.M100.K102.runs.jsonl.gz" 3 eps 0.05
expect_fail "a swept run that ends elsewhere" "run 3 ends as in the record"

fresh
edit_runs "$W/m/shared/sweep_xavier.M100.K102.runs.jsonl.gz" 5 class '"k1_extra/k1=30#0"'
expect_fail "a swept run in another ansatz's family" "run 5: unmatched, then k1_extra"

fresh
edit_runs "$W/m/shared/sweep_gaussian.M100.K103.runs.jsonl.gz" 7 class '"k1_shared/k1=30#0"'
expect_fail "a K = M + 3 run in k1_shared's family (the cell's ansatz is k1_shared2)" \
    "run 7: unmatched, then k1_shared/k1=30"

fresh
"$PY" - "$W/m/shared/sweep_gaussian.M100.K102.summary.json" <<'EOF'
import json, sys
s = json.load(open(sys.argv[1]))
s["classes"][0]["count"] += 1
json.dump(s, open(sys.argv[1], "w"))
EOF
expect_fail "a miscounted class of a sweep summary" "sweep_gaussian.M100.K102.summary.json class k1_shared/k1=23#0: 2 != 1"

# --same-runs: a copy against the original passes; a run whose steps
# differ (a count the classes do not see) fails, named
fresh
if "$PY" "$TABLE" --check "$W/m" --same-runs "$DATA" > "$W/out" 2> "$W/err"; then
    ok "--same-runs passes on a copy: $(tail -n 1 "$W/out")"
else
    bad "--same-runs fails on a copy: $(head -n 3 "$W/err")"
fi
edit_runs "$W/m/xavier/m100_xavier.M100.K101.runs.jsonl.gz" 9 steps 1
if "$PY" "$TABLE" --check "$W/m" --same-runs "$DATA" > "$W/out" 2> "$W/err"; then
    bad "--same-runs passed a changed run"
elif grep -q "xavier M=100 K=101: run 9 differs" "$W/err"; then
    ok "--same-runs refused a changed run ($(head -n 1 "$W/err"))"
else
    bad "--same-runs refused without naming the run: $(head -n 3 "$W/err")"
fi

# bad arguments: refused with a message naming them, --help prints the usage
refuse() { # refuse WHAT PATTERN ARGS...
    local what=$1 pat=$2
    shift 2
    if "$PY" "$TABLE" "$@" > "$W/out" 2> "$W/err"; then
        bad "$what: accepted"
    elif grep -q -- "$pat" "$W/err"; then
        ok "$what: refused ($(head -n 1 "$W/err"))"
    else
        bad "$what: refused without naming it: $(head -n 3 "$W/err")"
    fi
}
refuse "an unknown option" "unknown option --bogus" --bogus
refuse "a directory that does not exist" "$W/none: not a directory" "$W/none"
refuse "two directories" "one directory, not 2" "$DATA" "$DATA"
refuse "--same-runs without a directory" "needs a directory" --check "$DATA" --same-runs
refuse "--same-runs of no directory" "$W/none: not a directory" --check "$DATA" --same-runs "$W/none"
"$PY" "$TABLE" --help > "$W/out" 2>&1 && grep -q -- "--same-runs REF" "$W/out" \
    && ok "--help prints the usage" || bad "--help: $(head -n 3 "$W/out")"

exit $fail
