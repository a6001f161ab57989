#!/usr/bin/env bash
# test_certify_table.sh SCM: `scm certify --table` (docs/certify.md section 6)
# end to end: on the K = M = 8 rows of data/plateau_table_M100.csv it agrees
# with `--point` on the same points found by `scm fixed-points` (verdict,
# loss enclosures overlapping, eigenvalue bounds); a row whose scalar is moved
# by 1e-6 is refused; bad tables (missing column, bad number, unknown
# ansatz, bad integer) exit 2 naming the file, line and column, nothing written.
set -u
SCM=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
SRC=$(cd "$(dirname "$0")/.." && pwd)
TAB=$SRC/data/plateau_table_M100.csv
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
pass=0 fail=0
ok() { pass=$((pass + 1)); }
ko() { fail=$((fail + 1)); echo "FAIL: $*" >&2; }
check() { if eval "$1"; then ok; else ko "$2"; fi; }
PY=/usr/bin/python3

# a small table: the header and the K = M = 8 rows
awk -F, 'NR == 1 || ($1 == 8 && $2 == 8)' "$TAB" > "$W/t8.csv"
"$SCM" certify --table "$W/t8.csv" --rows every -q -o "$W/tab.json" > "$W/tab.txt" 2> "$W/tab.err"
check "[ $? -eq 0 ]" "--table failed: $(cat "$W/tab.err")"
"$SCM" fixed-points --K 8 --M 8 -o "$W/fp8.json" > /dev/null 2>&1
check "[ $? -eq 0 ]" "fixed-points K = M = 8"
"$SCM" certify --point "$W/fp8.json" --every -o "$W/pt.json" > /dev/null 2>&1
check "[ $? -eq 0 ]" "--point --every failed"
$PY - "$W/tab.json" "$W/pt.json" "$W/t8.csv" <<'PY' && ok || ko "--table against --point"
import collections, csv, json, re, sys
tab = json.load(open(sys.argv[1]))["points"]
pt = json.load(open(sys.argv[2]))["points"]
rows = list(csv.DictReader(open(sys.argv[3])))
assert len(tab) == len(rows) and [p["table_line"] for p in tab] == list(range(2, len(rows) + 2))
MIN, SAD = "certified strict local minimum", "certified saddle"
matched = collections.Counter()
for t in tab:
    assert t["polished"] and t["polish_shift"] < 1e-11, t  # 15 digits: the zero is that close
    if t["float_class"] == "min_candidate":
        assert t["verdict"] == MIN, t
    if t["float_class"] == "saddle":
        assert t["verdict"] != MIN, t
    same = [p for p in pt if p["ansatz"] == t["ansatz"] and p["instance"] == t["instance"]
            and abs(p["eps"] - t["eps"]) < 1e-9]
    if not same:
        continue
    p = same[0]
    num = lambda s: re.sub(r"[-+]?[0-9][0-9.e+-]*", "#", s)  # the reason, enclosures aside
    assert p["verdict"] == t["verdict"] and num(p["reason"]) == num(t["reason"]), (p, t)
    if t["certified"]:
        lo, hi = t["loss_enclosure"]
        plo, phi = p["loss_enclosure"]
        assert max(lo, plo) <= min(hi, phi), (t, p)  # the same true zero: enclosures meet
        assert lo <= t["eps"] <= hi and plo <= p["eps"] <= phi
        for k in ("lambda_min_lower", "negative_upper", "lambda_min_float"):
            a, b = t["hessian"][k], p["hessian"][k]
            assert (a is None) == (b is None), (k, a, b)
            if a is not None:
                assert abs(a - b) <= 1e-6 * abs(b) + 1e-12, (k, a, b)
    matched[t["verdict"]] += 1
# a few of each kind, on both paths
assert matched[MIN] >= 2 and matched[SAD] >= 5, matched
PY

# a min_candidate row, and the same with its first scalar moved by 1e-6
awk -F, 'NR == 1 || ($1 == 8 && $2 == 8 && $4 == 1 && $12 == "min_candidate")' "$TAB" > "$W/m.csv"
$PY - "$W/m.csv" "$W/moved.csv" <<'PY'
import csv, sys
r = list(csv.reader(open(sys.argv[1])))
sc = r[1][-1].split(";")
name, v = sc[0].split("=")
sc[0] = "%s=%.15g" % (name, float(v) + 1e-6)
r[1][-1] = ";".join(sc)
csv.writer(open(sys.argv[2], "w", newline="")).writerows(r)
PY
"$SCM" certify --table "$W/m.csv" -o "$W/m.json" > /dev/null 2>&1
# a table of before the rename of its column ansatz_k1 to instance is read alike
sed '1s/,ansatz,instance,/,ansatz,ansatz_k1,/' "$W/m.csv" > "$W/old.csv"
"$SCM" certify --table "$W/old.csv" -o "$W/old.json" > /dev/null 2>&1
check "[ $? -eq 0 ] && grep -q ',ansatz_k1,' '$W/old.csv' && \
    [ \"\$(sed 's/old\.csv/m.csv/' '$W/old.json')\" = \"\$(cat '$W/m.json')\" ]" \
    "a table with the column ansatz_k1 certified otherwise: $(diff "$W/old.json" "$W/m.json" | head -3)"
"$SCM" certify --table "$W/moved.csv" -o "$W/moved.json" > "$W/moved.txt" 2>&1
check "[ $? -eq 0 ]" "moved row: exit 0 (refused is not an error)"
$PY - "$W/m.json" "$W/moved.json" <<'PY' && ok || ko "a row moved by 1e-6 is refused"
import json, sys
a = json.load(open(sys.argv[1]))["points"]
b = json.load(open(sys.argv[2]))["points"]
assert len(a) == len(b) == 1
assert a[0]["verdict"] == "certified strict local minimum", a
assert b[0]["verdict"] == "not certified" and "Newton step" in b[0]["reason"], b
assert not b[0]["polished"] and 5e-7 < b[0]["polish_shift"] < 2e-6, b  # the polish is not taken
PY

# bad input: exit 2, one line naming file:line and column, nothing written
bad() {
    local name=$1 want=$2
    shift 2
    "$SCM" certify "$@" -o "$W/bad.json" > "$W/bad.out" 2> "$W/bad.err"
    local rc=$?
    check "[ $rc -eq 2 ] && grep -qF -- \"$want\" '$W/bad.err' && [ \$(wc -l < '$W/bad.err') -eq 1 ] && [ ! -e '$W/bad.json' ]" \
        "$name: rc $rc, want '$want', got: $(cat "$W/bad.err")"
}
sed '1s/,scalars$/,scalarz/' "$W/m.csv" > "$W/nocol.csv"
bad nocol "nocol.csv:1: no column scalars" --table "$W/nocol.csv"
sed '2s/=1\.0/=1.0x/' "$W/m.csv" > "$W/num.csv"
bad number "num.csv:2: column scalars: bad number '1.0x" --table "$W/num.csv"
sed '2s/,k1,/,k1_nosuch,/' "$W/m.csv" > "$W/ans.csv"
bad ansatz "ans.csv:2: column ansatz: no built-in ansatz named 'k1_nosuch'" --table "$W/ans.csv"
sed '2s/^8,/8a,/' "$W/m.csv" > "$W/int.csv"
bad integer "int.csv:2: column K: bad integer '8a'" --table "$W/int.csv"
sed '2s/R\[al,tal\]\.diag=/R[al,tal].dig=/' "$W/m.csv" > "$W/name.csv"
bad scalar "name.csv:2: column scalars: no scalar 'R[al,tal].dig'" --table "$W/name.csv"
bad missing "cannot read $W/none.csv" --table "$W/none.csv"
bad point "--table goes without --point" --table "$W/m.csv" --point "$W/fp8.json" --every
bad range "--M-min 5 exceeds --M-max 4" --table "$W/m.csv" --M-min 5 --M-max 4
bad notable "go with --table" --K 3 --M 3 --dK 0

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
