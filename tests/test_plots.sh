#!/usr/bin/env bash
# test_plots.sh SCM: the figures (docs/plots.md).
#  - the plotting scripts run on the committed data (data/compare_M17,
#    data/plateau_table.csv, data/continuation_M7.csv, data/continuation_k1.csv)
#    and write PNGs that decode to a plausible size;
#  - continuation --csv reads back its own CSV to the same file;
#  - malformed JSON / CSV: exit 2 with a message naming the file and the key
#    (column, line), before matplotlib is needed;
#  - scm compare (a tiny run): --no-plots writes no PNG, without it the three
#    PNGs; matplotlib made unimportable (a PYTHONPATH shadow package): exit 0,
#    no PNG, the apt-get line and the command to run later; a failing script
#    (SCM_SCRIPTS_DIR): exit 1 with the JSON and Markdown report kept; an
#    SCM_SCRIPTS_DIR without the script: exit 1, named.
# Without a python3 that imports matplotlib, the PNG checks are skipped (said
# so) and the rest runs.
set -u
SCM=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
SRC=$(cd "$(dirname "$0")/.." && pwd)
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
pass=0 fail=0
ok() { pass=$((pass + 1)); }
ko() { fail=$((fail + 1)); echo "FAIL: $*" >&2; }
check() { if eval "$1"; then ok; else ko "$2"; fi; }
cd "$W"

PY=
for p in ${SCM_PYTHON:-} python3 /usr/bin/python3; do
    if "$p" -c "import matplotlib" 2>/dev/null; then PY=$p; break; fi
done
PYANY=${PY:-python3}
PC="$SRC/scripts/plot_compare.py"
PF="$SRC/scripts/plot_fixed_points.py"

# png FILE...: each a PNG (signature, IHDR) of at least 400 x 250 pixels and 10 kB
png() {
    "$PYANY" - "$@" <<'PY'
import os, struct, sys
for f in sys.argv[1:]:
    b = open(f, "rb").read(33)
    assert b[:8] == b"\x89PNG\r\n\x1a\n" and b[12:16] == b"IHDR", f + ": not a PNG"
    w, h = struct.unpack(">II", b[16:24])
    assert w >= 400 and h >= 250, "%s: %d x %d" % (f, w, h)
    assert os.path.getsize(f) > 10000, f + ": nearly empty"
PY
}

if [ -n "$PY" ]; then
    "$PY" "$PC" "$SRC/data/compare_M17/compare_M17.json" M17 > /dev/null
    check "[ $? -eq 0 ]" "plot_compare.py on data/compare_M17"
    check "png M17.hist.png M17.fractions.png M17.traces.png" "compare_M17 PNGs"
    # K = 18 as a run without families: its plateaus one unmatched class
    "$PY" - "$SRC/data/compare_M17/compare_M17.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
h = r["histograms"][1]
sp = [c for c in h["classes"] if c["class"] != "not_converged" and c["eps_max"] > 1e-9]
h["classes"] = [c for c in h["classes"] if c not in sp] + [
    {"class": "unmatched", "family": None, "k1": None, "count": sum(c["count"] for c in sp),
     "fraction": 0, "eps_min": min(c["eps_min"] for c in sp),
     "eps_max": max(c["eps_max"] for c in sp)}]
json.dump(r, open("unmatched.json", "w"))
PY
    "$PY" "$PC" unmatched.json > /dev/null
    check "[ $? -eq 0 ] && png unmatched.hist.png" "plot_compare.py with an unmatched class"
    "$PY" "$PF" plateau "$SRC/data/plateau_table.csv" plateau.png > /dev/null
    check "[ $? -eq 0 ] && png plateau.png" "plot_fixed_points.py plateau"
    "$PY" "$PF" continuation --csv c.csv -o c.png "$SRC/data/continuation_M7.csv" > /dev/null
    check "[ $? -eq 0 ] && png c.png" "plot_fixed_points.py continuation (CSV)"
    check "cmp -s c.csv '$SRC/data/continuation_M7.csv'" "continuation CSV does not read back to itself"
    "$PY" "$PF" continuation -o k1.png "$SRC/data/continuation_k1.csv" > /dev/null
    check "[ $? -eq 0 ] && png k1.png" "plot_fixed_points.py continuation (M,loss,residual CSV)"
    PR="$SRC/scripts/plot_rules.py"
    "$PY" "$PR" "$SRC/data/compare_rules_M17/compare_rules_M17.rules.json" rules \
        --reference "$SRC/data/compare_rules_M17/paper_fractions.csv" > /dev/null
    check "[ $? -eq 0 ] && png rules.png" "plot_rules.py on data/compare_rules_M17"
    printf 'rule,K,percent\ngd,x,1\n' > badref.csv
    "$PY" "$PR" "$SRC/data/compare_rules_M17/compare_rules_M17.rules.json" rules2 \
        --reference badref.csv > /dev/null 2> e
    check "[ $? -eq 2 ] && grep -q 'badref.csv: line 2' e && [ ! -e rules2.png ]" "plot_rules.py bad reference: $(cat e)"
    "$PYANY" -c "import json,sys; r=json.load(open(sys.argv[1])); del r['rules'][0]['K'][1]['no_anti_aligned']; json.dump(r, open('r.json','w'))" \
        "$SRC/data/compare_rules_M17/compare_rules_M17.rules.json"
    "$PY" "$PR" r.json > /dev/null 2> e
    check "[ $? -eq 2 ] && grep -q \"rules\\[0\\].K\\[1\\]: key 'no_anti_aligned' is missing\" e && [ ! -e r.png ]" "plot_rules.py missing key: $(cat e)"
else
    echo "test_plots: no python3 with matplotlib: PNG checks skipped" >&2
fi

# Malformed inputs: exit 2, the file and the key named.
expect2() { # expect2 MESSAGE-PATTERN what command...
    local pat=$1 what=$2
    shift 2
    "$@" > out.txt 2> err.txt
    local rc=$?
    if [ $rc -eq 2 ] && grep -q -- "$pat" err.txt; then ok; else
        ko "$what: exit $rc, stderr: $(cat err.txt)"
    fi
}
"$PYANY" - "$SRC/data/compare_M17/compare_M17.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
del r["histograms"]
json.dump(r, open("nohist.json", "w"))
r = json.load(open(sys.argv[1]))
r["fractions"]["wilson95"][2][1] = [0.1]
json.dump(r, open("badwilson.json", "w"))
r = json.load(open(sys.argv[1]))
r["histograms"][1]["classes"][3]["count"] = "many"
json.dump(r, open("badcount.json", "w"))
PY
head -c 300 "$SRC/data/compare_M17/compare_M17.json" > cut.json
expect2 "nohist.json: key 'histograms' is missing" "missing key" "$PYANY" "$PC" nohist.json
expect2 "badwilson.json: fractions.wilson95 entry" "bad Wilson pair" "$PYANY" "$PC" badwilson.json
expect2 "badcount.json: histograms\[1\].classes\[3\]: key 'count'" "non-number count" \
    "$PYANY" "$PC" badcount.json
expect2 "cut.json: not JSON" "truncated JSON" "$PYANY" "$PC" cut.json
expect2 "nothere.json: cannot read" "missing file" "$PYANY" "$PC" nothere.json
head -3 "$SRC/data/plateau_table.csv" | cut -d, -f1-6 > nocol.csv
expect2 "nocol.csv: missing column(s) loss, classification" "CSV missing column" \
    "$PYANY" "$PF" plateau nocol.csv
head -3 "$SRC/data/plateau_table.csv" | sed '3s/^\([^,]*\),\([^,]*\),/\1,seven,/' > badm.csv
expect2 "badm.csv:3: column 'M' is not a number" "CSV bad number" "$PYANY" "$PF" plateau badm.csv
head -5 "$SRC/data/continuation_M7.csv" | sed '5s/,[^,]*$/,sideways/' > badend.csv
expect2 "badend.csv:5: column 'end' has unknown value" "CSV bad end" \
    "$PYANY" "$PF" continuation badend.csv
echo '{"K": 8, "M": 7, "fixed_points": [{"loss": 0.03}]}' > nocont.json
expect2 "nocont.json: fixed_points\[0\]: key 'continuation' is missing" "JSON without continuation" \
    "$PYANY" "$PF" continuation nocont.json

# scm compare writes the figures itself.
C="$SCM compare --M 3 --K 3,4 --runs 4 --traces 1 --no-stability --threads 1"
$C -o np --no-plots -q 2> err.txt
check "[ $? -eq 0 ] && [ -s np.json ] && [ -s np.md ]" "compare --no-plots: $(cat err.txt)"
check "[ -z \"\$(ls np*.png 2> /dev/null)\" ]" "compare --no-plots wrote a PNG"
if [ -n "$PY" ]; then
    $C -o wp -q 2> err.txt
    check "[ $? -eq 0 ] && png wp.hist.png wp.fractions.png wp.traces.png" \
        "compare without --no-plots: no figures: $(cat err.txt)"
fi
mkdir -p shadow/matplotlib
echo 'raise ImportError("simulated: no matplotlib")' > shadow/matplotlib/__init__.py
PYTHONPATH="$W/shadow" $C -o nm -q 2> err.txt
rc=$?
check "[ $rc -eq 0 ] && [ -s nm.json ] && [ -s nm.md ]" "compare without matplotlib: exit $rc"
check "[ -z \"\$(ls nm*.png 2> /dev/null)\" ]" "compare without matplotlib wrote a PNG"
check "grep -q 'apt-get install python3-matplotlib' err.txt && grep -q 'plot_compare.py nm.json' err.txt" \
    "no-matplotlib message: $(cat err.txt)"
PYTHONPATH="$W/shadow" "$PYANY" "$PC" np.json > /dev/null 2> err.txt
check "[ $? -eq 3 ] && grep -q 'apt-get install python3-matplotlib' err.txt" \
    "plot_compare.py without matplotlib: $(cat err.txt)"
if [ -n "$PY" ]; then # (without matplotlib the script is not run)
    mkdir -p failing
    printf 'import sys\nsys.exit(1)\n' > failing/plot_compare.py
    SCM_SCRIPTS_DIR="$W/failing" $C -o fp -q 2> err.txt
    rc=$?
    check "[ $rc -eq 1 ] && [ -s fp.json ] && [ -s fp.md ] && grep -q 'the figures failed' err.txt" \
        "a failing plot script: exit $rc, $(cat err.txt)"
fi
SCM_SCRIPTS_DIR="$W/none" $C -o ns -q 2> err.txt
rc=$?
check "[ $rc -eq 1 ] && [ -s ns.json ] && grep -q \"SCM_SCRIPTS_DIR = '$W/none'\" err.txt" \
    "SCM_SCRIPTS_DIR without the script: exit $rc, $(cat err.txt)"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
