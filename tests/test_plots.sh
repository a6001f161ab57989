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
    # k1 = the anti-aligned count, instance = the ansatz instance: a CSV written
    # with the old columns (n_anti, k1 the instance) reads to the same branches,
    # and from fixed-points JSON the columns are the points' structure.anti and
    # instance
    sed '1s/^K,M0,dK,branch,k1,ansatz,instance,/K,M0,dK,branch,n_anti,ansatz,k1,/' \
        "$SRC/data/continuation_M7.csv" > old.csv
    "$PY" "$PF" continuation --csv o.csv -o o.png old.csv > /dev/null
    check "[ $? -eq 0 ] && cmp -s o.csv '$SRC/data/continuation_M7.csv'" "old continuation CSV columns"
    "$SCM" fixed-points --K 4 --M 4 --starts 20 --continue-to 6 -o cont.json -q
    "$PY" "$PF" continuation --csv cont.csv -o cont.png --max-loss 1 cont.json > /dev/null
    "$PY" - cont.json cont.csv <<'PY'
import csv, json, sys
pts = json.load(open(sys.argv[1]))["fixed_points"]
rows = list(csv.DictReader(open(sys.argv[2])))
ok = rows and all(int(r["k1"]) == pts[int(r["branch"])]["structure"]["anti"] ==
                  pts[int(r["branch"])]["k1"] and
                  int(r["instance"]) == pts[int(r["branch"])]["instance"] for r in rows)
sys.exit(0 if ok else 1)
PY
    check "[ $? -eq 0 ]" "continuation CSV: k1 the anti-aligned count, instance the ansatz instance"
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
# The report's stamp (as every command's result) and issue 25 item 9's
# histogram: the count axis fits the data (its top between the largest count
# and 100 times it), no two drawn texts overlap (in the three figures), the
# dashed plateau lines are the lowest loss of a k1 >= 1 (none for k1 = 0, whose
# lowest point is the global minimum), on this small compare (K = 4, M = 3
# has k1 = 0 saddles at non-zero losses) and on data/compare_M17 (dense lines).
"$PYANY" -c "import json,sys; r=json.load(open('np.json')); sys.exit(not (list(r)[:3] == ['scmode_version', 'command', 'status'] and r['status'] == 'ok'))"
check "[ $? -eq 0 ]" "compare report without scmode_version, command, status first"
if [ -n "$PY" ]; then
    "$PY" - "$SRC/scripts" np.json "$SRC/data/compare_M17/compare_M17.json" > fig.txt 2>&1 <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
import matplotlib.ticker as ticker
import plot_compare as pc
from plot_common import text_overlaps
bad = 0
for path in sys.argv[2:]:
    rep = pc.load_report(path)
    fig = pc.hist_figure(plt, ticker, rep)
    for g in (fig, pc.fractions_figure(plt, rep), pc.traces_figure(plt, rep)):
        ov = text_overlaps(g)
        if ov:
            bad += 1
            print("%s: overlapping labels: %s" % (path, ov[:4]))
    for ax, h in zip(fig.axes, rep["histograms"]):
        cls = h["classes"]
        top, mx = ax.get_ylim()[1], max(c["count"] for c in cls if c["class"] != "not_converged")
        if not mx * 1.15 <= top <= 100 * mx:
            bad += 1
            print("%s: K = %d: count axis to %g for a largest count %d" % (path, h["K"], top, mx))
        fams = [f for f in rep["families"] if f["K"] == h["K"]]
        lowest = {}
        for f in fams:
            if f["loss"] > 1e-9 and f["loss"] < lowest.get(f["k1"], 1e300):
                lowest[f["k1"]] = f["loss"]
        for ln in ax.get_lines():
            x = ln.get_xdata()[0]
            ks = [k for k, l in lowest.items() if l == x]
            if ln.get_linestyle() == "--" and (not ks or min(ks) < 1):
                bad += 1
                print("%s: K = %d: a dashed line at %.10g (lowest of k1 %s)" % (path, h["K"], x, ks))
        labels = [t.get_text() for t in ax.texts if t.get_transform() != ax.transData]
        k1_max = max([c["k1"] for g in rep["histograms"] for c in g["classes"]
                      if c["k1"] is not None and c["eps_max"] > 1e-9] + [3])
        if "0" in labels or len(labels) != sum(1 for k in lowest if 1 <= k <= k1_max):
            bad += 1
            print("%s: K = %d: k1 labels %s" % (path, h["K"], labels))
print("figure checks:", "bad" if bad else "ok")
sys.exit(1 if bad else 0)
PY
    check "[ $? -eq 0 ]" "compare figures: $(cat fig.txt)"
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
