#!/usr/bin/env bash
# test_map.sh SCM: `scm map` (docs/map.md) at a tiny size.
#  1. every cell equals `scm compare` at that (M, K): the runs files byte for
#     byte, and the map's global / family / not-converged counts equal those
#     counted from the compare's runs file (under the Gaussian law and
#     xavier_uniform, M = 3, 4, dK = 0, 1, 24 runs);
#  2. the same map.json, map.csv and runs files with 1 and 2 threads, and
#     under scm-mpi -np 2, whose ranks compute the families (a job made to
#     fail on rank 1, or 0, stops the map naming the rank, nothing written);
#  3. a map killed (SIGKILL) inside a sweep and run again ends byte-identical
#     to the uninterrupted one (at least one kill must land mid-sweep);
#  4. bad input (ranges, --runs 0, an unknown law, a config key) exits 2 and
#     writes nothing; a rerun with another --runs exits 2 naming the reason
#     once and changes nothing.
set -u
SCM=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
SRC=$(cd "$(dirname "$0")/.." && pwd)
PY=/usr/bin/python3
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
pass=0 fail=0
ok() { pass=$((pass + 1)); }
ko() { fail=$((fail + 1)); echo "FAIL: $*" >&2; }
check() { if eval "$1"; then ok; else ko "$2"; fi; }
cd "$W"

# counts of a runs file: global, not_converged, and every other class
counts() {
    $PY - "$1" <<'EOF'
import json, sys, collections
c = collections.Counter()
for i, l in enumerate(open(sys.argv[1])):
    if i:
        r = json.loads(l)
        c[r["class"]] += 1
print(json.dumps(sorted(c.items())))
EOF
}
# the same counts from a map.json cell
map_counts() {
    $PY - "$1" "$2" "$3" <<'EOF'
import json, sys
m = json.load(open(sys.argv[1]))
c = [x for x in m["cells"] if x["M"] == int(sys.argv[2]) and x["K"] == int(sys.argv[3])][0]
d = {"global_minimum/k1=0": c["global"]["count"], "not_converged": c["not_converged"]["count"]}
for f in c["families"]:
    d[f["class"]] = f["count"]
print(json.dumps(sorted((k, v) for k, v in d.items() if v)))
EOF
}

# 1. cell by cell against scm compare
for law in gaussian xavier_uniform; do
    mkdir -p "eq_$law" && cd "eq_$law"
    "$SCM" map --M 3,4 --dK 0:1 --runs 24 --law $law --no-plots -q -o m
    check "[ $? -eq 0 ]" "map ($law)"
    for M in 3 4; do
        extra=""
        [ $law != gaussian ] && extra="--set init.law=$law --set init.d=$M"
        "$SCM" compare --M $M --K $M,$((M + 1)) --runs 24 --no-plots --traces 0 -q -o c$M $extra
        check "[ $? -eq 0 ]" "compare M = $M ($law)"
        for K in $M $((M + 1)); do
            check "cmp -s m.M$M.K$K.runs.jsonl c$M.K$K.runs.jsonl" \
                "$law M = $M K = $K: map's runs file differs from compare's"
            check "cmp -s m.M$M.K$K.summary.json c$M.K$K.summary.json" \
                "$law M = $M K = $K: summaries differ"
            a=$(counts c$M.K$K.runs.jsonl)
            b=$(map_counts m.json $M $K)
            check "[ '$a' = '$b' ]" "$law M = $M K = $K: compare $a, map $b"
        done
    done
    check "grep -q '\"law\":.*\"$law\"' m.json" "$law not recorded in map.json"
    [ $law != gaussian ] && check "grep -q '\"law\":.*\"$law\"' m.M3.K3.config.json" \
        "$law not recorded in the cell's config"
    check "[ \$(grep -c '^$law,' m.csv) -ge 8 ]" "map.csv rows of $law"
    cd "$W"
done

# 1b. dK = 3, 4: k1_extra applies beyond K = M + 2 (before: "no ansatz
# applies", and the goal grid dK = 0..4 could not run)
mkdir -p dk34 && cd dk34
"$SCM" map --M 2 --dK 3:4 --runs 12 --no-plots -q -o m 2> err
check "[ $? -eq 0 ]" "map --dK 3:4: $(head -3 err)"
"$SCM" compare --M 2 --K 5,6 --runs 12 --no-plots --traces 0 -q -o c 2> err
check "[ $? -eq 0 ]" "compare --K 5,6: $(head -3 err)"
for K in 5 6; do
    check "cmp -s m.M2.K$K.runs.jsonl c.K$K.runs.jsonl" "dK = $((K - 2)): map's runs file differs from compare's"
    check "[ '$(counts c.K$K.runs.jsonl)' = '$(map_counts m.json 2 $K)' ]" "dK = $((K - 2)): counts"
    check "grep -q '\"ansatz\":[[:space:]]*\"k1_extra\"' m.M2.K$K.families.json" "K = $K: no k1_extra point listed"
done
cd "$W"

# 1c. --ansatz FILE: the example ansatz k1_shared (K >= M + 2) enumerated
# besides the built-in ones where it applies.  At dK = 1 the families file
# is the map's without it, byte for byte; at dK = 2 it lists the same
# built-in points (ansatz, loss) and k1_shared ones besides; every run
# ends where it did, classified as before or, unmatched before, now in a
# k1_shared family; the map records the file; a rerun without --ansatz is
# refused naming the families, and changes nothing
mkdir -p an && cd an
ANS="$SRC/examples/ansatz/k1_shared.json"
"$SCM" map --M 4 --dK 1,2 --runs 16 --threads 2 --no-plots -q -o base 2> err
check "[ $? -eq 0 ]" "map without --ansatz: $(head -3 err)"
"$SCM" map --M 4 --dK 1,2 --runs 16 --threads 2 --no-plots -q --ansatz "$ANS" -o ext 2> err
check "[ $? -eq 0 ]" "map --ansatz: $(head -3 err)"
check "cmp -s base.M4.K5.families.json ext.M4.K5.families.json" "--ansatz changed the families of K = M + 1"
out=$("$PY" - "$ANS" <<'PYEOF'
import json, sys
bad = []
def pts(f):
    return json.load(open(f))["fixed_points"]
b, e = pts("base.M4.K6.families.json"), pts("ext.M4.K6.families.json")
key = lambda p: (p["ansatz"], p["loss"])
if sorted(map(key, b)) != sorted(key(p) for p in e if p["ansatz"] != "k1_shared"):
    bad.append("the built-in points differ")
if not any(p["ansatz"] == "k1_shared" for p in e):
    bad.append("no k1_shared point")
for K in (5, 6):
    rb = [json.loads(l) for l in open("base.M4.K%d.runs.jsonl" % K)][1:]
    re = [json.loads(l) for l in open("ext.M4.K%d.runs.jsonl" % K)][1:]
    if len(rb) != 16 or len(re) != 16:
        bad.append("K = %d: %d and %d runs" % (K, len(rb), len(re)))
    for x, y in zip(rb, re):
        if (x["eps"], x["stop"]) != (y["eps"], y["stop"]):
            bad.append("K = %d run %d ends elsewhere" % (K, x["index"]))
        elif x["class"] != y["class"] and not (x.get("family") is None and y.get("family") == "k1_shared"):
            bad.append("K = %d run %d: %s, then %s" % (K, x["index"], x["class"], y["class"]))
m = json.load(open("ext.json"))
if m.get("ansatz") != [sys.argv[1]] or "ansatz" in json.load(open("base.json")):
    bad.append("the map's ansatz key: %s" % m.get("ansatz"))
print("; ".join(bad) if bad else "ok")
PYEOF
)
check "[ \"$out\" = ok ]" "map --ansatz against the map without: $out"
cp ext.M4.K6.runs.jsonl keep.jsonl
"$SCM" map --M 4 --dK 1,2 --runs 16 --threads 2 --no-plots -q -o ext 2> err
check "[ $? -eq 2 ] && grep -q 'another --ansatz' err" "rerun without --ansatz: $(head -3 err)"
check "cmp -s keep.jsonl ext.M4.K6.runs.jsonl" "a refused rerun changed the runs file"
cd "$W"

# 2. threads
mkdir t1 t2
(cd t1 && "$SCM" map --M 3,4 --dK 0,1 --runs 30 --law xavier --threads 1 --no-plots -q -o m > out)
check "[ $? -eq 0 ]" "map --threads 1"
(cd t2 && "$SCM" map --M 3,4 --dK 0,1 --runs 30 --law xavier --threads 2 --no-plots -q -o m > out)
check "[ $? -eq 0 ]" "map --threads 2"
for f in $(cd t1 && ls); do
    check "cmp -s t1/$f t2/$f" "$f differs between 1 and 2 threads"
done
check "[ \$(ls t1 | wc -l) -ge 19 ]" "files of the map: $(ls t1 | wc -l)"

# the same under scm-mpi on 2 ranks, when it and mpirun are there
SCMM="$(dirname "$SCM")/scm-mpi"
if [ -x "$SCMM" ] && command -v mpirun > /dev/null; then
    mkdir mp
    (cd mp && OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 mpirun -np 2 \
        --allow-run-as-root --oversubscribe "$SCMM" map --M 3,4 --dK 0,1 --runs 30 --law xavier \
        --no-plots -q -o m > out 2> err)
    mrc=$?
    check "[ $mrc -eq 0 ]" "scm-mpi map exit $mrc: $(head -3 mp/err)"
    if [ "$mrc" -eq 0 ]; then
        for f in $(cd t1 && ls | grep -v '^out$'); do
            check "cmp -s t1/$f mp/$f" "$f differs between scm --threads 1 and scm-mpi -np 2"
        done
    fi
    # the families are jobs of the ranks (issue 29): rank 1's first job,
    # and rank 0's, made to fail, stop the map before any file is written,
    # naming the rank
    for r in 1 0; do
        rm -rf mf && mkdir mf
        (cd mf && SCM_MPI_TEST_FAIL_TASK=$r:1 OMPI_ALLOW_RUN_AS_ROOT=1 \
            OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 mpirun -np 2 --allow-run-as-root --oversubscribe \
            -x SCM_MPI_TEST_FAIL_TASK "$SCMM" map --M 3,4 --dK 0,1 --runs 30 --law xavier \
            --no-plots -q -o m > out 2> err)
        frc=$?
        check "[ $frc -eq 1 ] && grep -q 'rank $r: failure injected' mf/err" \
            "scm-mpi map with job $r:1 failing: exit $frc: $(head -3 mf/err)"
        check "[ \$(ls mf | grep -v '^out$' | grep -v '^err$' | wc -l) -eq 0 ]" \
            "scm-mpi map with a failed job wrote $(ls mf)"
    done
fi

# the figures (when matplotlib is there), and a file that is not a map refused
if $PY -c 'import matplotlib' 2>/dev/null; then
    $PY "$SRC/scripts/plot_map.py" t1/m.json t1/fig > /dev/null
    check "[ $? -eq 0 ]" "plot_map.py"
    for f in heatmap global families time; do
        check "[ -s t1/fig.$f.png ] && [ \"\$(head -c 4 t1/fig.$f.png | tail -c 3)\" = PNG ]" \
            "plot_map.py drew no $f figure"
    done
    # rows run as maps of their own are drawn as one map when joined by '+':
    # t1/m.json split by dK and joined draws the same bytes
    mkdir split
    $PY - t1/m.json split <<'PYEOF'
import json, sys
m = json.load(open(sys.argv[1]))
for d in (0, 1):
    json.dump(dict(m, dK=[d], cells=[c for c in m["cells"] if c["dK"] == d]),
              open("%s/dk%d.json" % (sys.argv[2], d), "w"))
json.dump(dict(m, law="gaussian", cells=[c for c in m["cells"] if c["dK"] == 1]),
          open("%s/other_law.json" % sys.argv[2], "w"))
PYEOF
    $PY "$SRC/scripts/plot_map.py" split/dk1.json+split/dk0.json split/fig > /dev/null
    check "[ $? -eq 0 ]" "plot_map.py on two maps joined by +"
    for f in heatmap global families time; do
        check "cmp -s t1/fig.$f.png split/fig.$f.png" \
            "the $f figure of the split map joined differs from the map's"
    done
    $PY "$SRC/scripts/plot_map.py" split/dk0.json+split/dk0.json split/dup 2> err.txt
    check "[ $? -eq 2 ] && grep -q 'cell M = 3, K - M = 0 is also in split/dk0.json' err.txt" \
        "plot_map.py with a cell twice: $(cat err.txt)"
    $PY "$SRC/scripts/plot_map.py" split/dk0.json+split/other_law.json split/law 2> err.txt
    check "[ $? -eq 2 ] && grep -q 'other_law.json: its \"law\" is' err.txt" \
        "plot_map.py joining two laws: $(cat err.txt)"
    check "[ -z \"\$(ls split | grep png | grep -v '^fig')\" ]" "a refused join drew $(ls split)"
    rm -f t1/fig.*.png
    $PY "$SRC/scripts/plot_map.py" t1/m.M3.K3.summary.json t1/fig 2> err.txt
    check "[ $? -eq 2 ] && grep -q 'not a map' err.txt" "plot_map.py on a summary: $(cat err.txt)"
fi

# 3. kill and run again
mkdir k
hits=0
for delay in 0.3 0.8 1.5 2.5 4; do
    (cd k && exec "$SCM" map --M 3,4 --dK 0,1 --runs 30 --law xavier --threads 2 --no-plots -q -o m > out 2>&1) &
    pid=$!
    sleep $delay
    kill -KILL $pid 2>/dev/null
    wait $pid 2>/dev/null
    [ $? -eq 137 ] && hits=$((hits + 1))
done
(cd k && "$SCM" map --M 3,4 --dK 0,1 --runs 30 --law xavier --threads 2 --no-plots -q -o m > out)
check "[ $? -eq 0 ]" "map resumed"
check "[ $hits -ge 1 ]" "no kill landed while the map ran"
for f in $(cd t1 && ls | grep -v '^out$'); do
    check "cmp -s t1/$f k/$f" "$f differs after kills and a resume"
done

# 3b. a rerun with another --runs is refused naming the reason, once,
#     and changes nothing (issue 26: it used to print no reason at all)
(cd k && "$SCM" map --M 3,4 --dK 0,1 --runs 31 --law xavier --threads 2 --no-plots -q -o m \
    > out 2> err)
check "[ $? -eq 2 ]" "map rerun with --runs 31: exit status"
check "[ \$(grep -c 'runs = 30, not 31' k/err) -eq 1 ]" "map rerun with --runs 31: $(cat k/err)"
for f in $(cd t1 && ls | grep -v '^out$'); do
    check "cmp -s t1/$f k/$f" "$f changed by a refused rerun"
done

# 4. bad input: exit 2, nothing written
bad() {
    rm -rf b && mkdir b && cd b
    "$SCM" map "$@" --no-plots -q -o m > out 2> err
    rc=$?
    check "[ $rc -eq 2 ]" "map $* exited $rc, want 2"
    check "[ \$(ls | grep -v '^out$' | grep -v '^err$' | wc -l) -eq 0 ]" "map $* wrote $(ls)"
    check "grep -q -- \"\$EXPECT\" err" "map $*: no message naming '$EXPECT': $(cat err | head -2)"
    cd "$W"
}
EXPECT="empty" bad --M 5:3 --dK 0 --runs 4
EXPECT="step" bad --M 3:5:0 --dK 0 --runs 4
EXPECT="twice" bad --M 3,3 --dK 0 --runs 4
EXPECT="out of" bad --M 3 --dK -1 --runs 4
EXPECT="not an integer" bad --M x --dK 0 --runs 4
EXPECT="--runs" bad --M 3 --dK 0 --runs 0
EXPECT="--law" bad --M 3 --dK 0 --runs 4 --law lecun
EXPECT="init.law" bad --M 3 --dK 0 --runs 4 --set init.law=xavier
EXPECT="init.d" bad --M 3 --dK 0 --runs 4 --law xavier --set init.d=10
EXPECT="init.d" bad --M 3,12 --dK 0 --runs 4 --set init.d=10
EXPECT="model.activation" bad --M 3 --dK 0 --runs 4 --set model.activation=tanh2
EXPECT="required" bad --M 3 --runs 4
printf '{"init": {"law": "lecun"}}' > "$W/badlaw.json"
EXPECT="init.law" bad "$W/badlaw.json" --M 3 --dK 0 --runs 4
printf '{"init": {"law": "xavier"}}' > "$W/xlaw.json"
EXPECT="contradicts" bad "$W/xlaw.json" --M 3 --dK 0 --runs 4 --law gaussian
# --ansatz: a file that cannot be read, or named like a built-in ansatz
EXPECT="nonexist.json" bad --M 3 --dK 2 --runs 4 --ansatz "$W/nonexist.json"
EXPECT="built-in" bad --M 3 --dK 2 --runs 4 --ansatz "$SRC/ansatz/k1_extra.json"
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
