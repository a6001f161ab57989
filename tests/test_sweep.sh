#!/usr/bin/env bash
# test_sweep.sh SCM: `scm sweep` and `scm merge` end to end.
#  - run i is the same whatever else runs: a sweep of 6 = the first 6 runs
#    of a sweep of 10 (record lines compared, the header differs in runs);
#  - 1 vs 2 threads: byte-identical files;
#  - shards 0/2 + 1/2 merged = the single file merged (byte for byte);
#  - resume after a simulated kill (file cut in the middle of a line) gives
#    the uninterrupted file byte for byte, and the summary it writes equals
#    scm merge's;
#  - a budget too small to converge: every run not converged, in no family;
#  - families from a file: runs whose loss matches are counted in it;
#  - bad inputs: named errors, exit 2.
set -u
SCM=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
pass=0 fail=0
ok() { pass=$((pass + 1)); }
ko() { fail=$((fail + 1)); echo "FAIL: $*" >&2; }
check() { if eval "$1"; then ok; else ko "$2"; fi; }
cd "$W"

cat > k3.json <<'JSON'
{"model": {"K": 3, "M": 3, "activation": "relu"},
 "init": {"type": "random", "d": 1000, "sigma": 1.0, "seed": 3}}
JSON

"$SCM" sweep k3.json --runs 10 -o a10.jsonl -q; check "[ $? -eq 0 ]" "sweep of 10"
"$SCM" sweep k3.json --runs 6 -o a6.jsonl -q; check "[ $? -eq 0 ]" "sweep of 6"
check "[ \$(wc -l < a10.jsonl) -eq 11 ] && [ \$(wc -l < a6.jsonl) -eq 7 ]" "line counts"
check "cmp -s <(tail -n +2 a6.jsonl) <(sed -n 2,7p a10.jsonl)" "runs 0..5 differ between sweeps of 6 and 10"
"$SCM" sweep k3.json --runs 10 -o t2.jsonl --threads 2 -q
check "cmp -s a10.jsonl t2.jsonl" "1 vs 2 threads not byte-identical"
"$SCM" sweep k3.json --runs 10 -o fs.jsonl --threads 2 --fsync-interval 0.5 -q
check "cmp -s a10.jsonl fs.jsonl" "--fsync-interval changed the file"
"$SCM" sweep k3.json --runs 10 -o s10.jsonl --seed 4 -q
check "! cmp -s a10.jsonl s10.jsonl" "--seed has no effect"
python3 - a10.jsonl <<'PY' && ok || ko "record content"
import json, sys
lines = open(sys.argv[1]).read().splitlines()
h = json.loads(lines[0])
assert h["scm_sweep"] == 1 and h["runs"] == 10 and h["seed"] == 3 and h["shard"] == [0, 1]
recs = [json.loads(l) for l in lines[1:]]
assert [r["index"] for r in recs] == list(range(10))
assert len(set(r["seed"] for r in recs)) == 10
for r in recs:
    assert r["converged"] == (r["stop"] in ("fixed_point", "eps_threshold"))
    assert (r["why"] is None) == r["converged"]
    assert "time" not in json.dumps(r) and "wall" not in json.dumps(r)
    if r["converged"] and r["stop"] == "fixed_point":
        assert r["max_F"] < 1e-10
PY

# shards
"$SCM" sweep k3.json --runs 10 --shard 0/2 -o sh0.jsonl -q
"$SCM" sweep k3.json --runs 10 --shard 1/2 -o sh1.jsonl -q --threads 2
check "[ \$(wc -l < sh0.jsonl) -eq 6 ] && [ \$(wc -l < sh1.jsonl) -eq 6 ]" "shard sizes"
"$SCM" merge a10.jsonl -o m1.json -q; check "[ $? -eq 0 ]" "merge single"
"$SCM" merge sh1.jsonl sh0.jsonl -o m2.json -q; check "[ $? -eq 0 ]" "merge shards"
check "cmp -s m1.json m2.json" "merged shards differ from the single run's summary"
python3 - m1.json a10.jsonl <<'PY' && ok || ko "summary content"
import json, sys
s = json.load(open(sys.argv[1]))["summary"]
recs = [json.loads(l) for l in open(sys.argv[2]).read().splitlines()[1:]]
assert s["runs"] == 10 and s["done"] == 10 and s["missing"]["count"] == 0
assert s["converged"] == sum(r["converged"] for r in recs)
for c in s["classes"]:
    n = sum(r["class"] == c["class"] for r in recs)
    assert c["count"] == n and abs(c["fraction"] - n / 10) < 1e-15, c
    lo, hi = c["wilson95"]
    assert lo <= n / 10 <= hi
assert sum(c["count"] for c in s["classes"]) == 10
PY
# only one shard: missing runs reported, exit 0
"$SCM" merge sh0.jsonl -o m3.json 2> e; check "[ $? -eq 0 ] && grep -q '5 of 10 runs missing (first: run 1)' e" "missing report: $(cat e)"
check "python3 -c \"import json; m=json.load(open('m3.json'))['summary']['missing']; assert m['count']==5 and m['first']==[1,3,5,7,9]\"" "missing list"

# resume after a kill: cut in the middle of line 5, resume, compare
size=$(head -n 5 a10.jsonl | wc -c)
head -c $((size + 37)) a10.jsonl > r.jsonl
"$SCM" sweep k3.json --runs 10 -o r.jsonl --resume -q --summary rs.json; check "[ $? -eq 0 ]" "resume"
check "cmp -s a10.jsonl r.jsonl" "resumed file differs from the uninterrupted one"
python3 -c "import json; a=json.load(open('rs.json')); b=json.load(open('m1.json'))['summary']; b.pop('missing'); assert a==b" && ok || ko "sweep --summary differs from merge's"
# cut exactly at a line end, and inside the header
head -n 3 a10.jsonl > r2.jsonl
"$SCM" sweep k3.json --runs 10 -o r2.jsonl --resume --threads 2 -q
check "cmp -s a10.jsonl r2.jsonl" "resume at a line end"
head -c 40 a10.jsonl > r3.jsonl
"$SCM" sweep k3.json --runs 10 -o r3.jsonl --resume -q
check "cmp -s a10.jsonl r3.jsonl" "resume with a cut header"
# resume of a complete file: nothing to do, unchanged
"$SCM" sweep k3.json --runs 10 -o r3.jsonl --resume -q
check "cmp -s a10.jsonl r3.jsonl" "resume of a complete file"
# resume with another config: refused
"$SCM" sweep k3.json --runs 10 -o r3.jsonl --resume -q --set init.sigma=0.5 2> e
check "[ $? -eq 2 ] && grep -q 'different sweep' e" "resume with another config: $(cat e)"
# a corrupt line in the middle: refused
sed '4s/"index":2/"index":7/' a10.jsonl > c.jsonl
"$SCM" sweep k3.json --runs 10 -o c.jsonl --resume -q 2> e
check "[ $? -eq 2 ] && grep -q 'line 4: run index 7, expected 2' e" "resume over a bad line: $(cat e)"

# not converged within the budget
"$SCM" sweep k3.json --runs 4 -o nc.jsonl -q --set integrator.max_steps=5
"$SCM" merge nc.jsonl -o nc.json -q
python3 - nc.jsonl nc.json <<'PY' && ok || ko "budget runs"
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1]).read().splitlines()[1:]]
assert all(not r["converged"] and r["why"] == "max_steps" and r["family"] is None for r in recs)
s = json.load(open(sys.argv[2]))["summary"]
assert s["converged"] == 0 and s["not_converged"]["max_steps"] == 4
assert [c["class"] for c in s["classes"]] == ["not_converged"]
assert sum(s["loss_histogram"]["counts"]) == 0
PY
"$SCM" sweep k3.json --runs 3 -o nt.jsonl -q --set integrator.t_max=0.5
check "python3 -c \"import json; r=[json.loads(l) for l in open('nt.jsonl').read().splitlines()[1:]]; assert all(x['why']=='t_max' and not x['converged'] for x in r)\"" "t_max runs"

# families from a file: K = M = 2 runs end at the global minimum
cat > k2.json <<'JSON'
{"model": {"K": 2, "M": 2}, "init": {"seed": 11}, "integrator": {"eps_stop": 0}}
JSON
echo '[{"family": "k1", "k1": 0, "loss": 0}, {"family": "k1", "k1": 1, "loss": 0.25}]' > fam.json
"$SCM" sweep k2.json --runs 4 -o f.jsonl -q --families fam.json --set integrator.rtol=1e-10 --set integrator.atol=1e-13
check "python3 -c \"import json; r=[json.loads(l) for l in open('f.jsonl').read().splitlines()[1:]]; assert all(x['class']=='global_minimum/k1=0' and x['stop']=='fixed_point' for x in r), r\"" "families matched: $(tail -1 f.jsonl)"

# progress goes nowhere near the files; --quiet prints nothing
"$SCM" sweep k3.json --runs 2 -o q.jsonl -q > out 2> err
check "[ ! -s out ] && [ ! -s err ]" "--quiet printed something"
"$SCM" sweep k3.json --runs 2 -o q2.jsonl > out 2> err
check "grep -q 'runs/s' err && cmp -s q.jsonl q2.jsonl" "final summary on stderr, file unchanged"

# bad inputs: exit 2, named
bad() {
    local name=$1 pat=$2
    shift 2
    "$SCM" "$@" > /dev/null 2> e
    local rc=$?
    check "[ $rc -eq 2 ] && grep -q -- \"$pat\" e" "$name: rc $rc, stderr: $(cat e)"
}
bad runs0 "--runs must be an integer in \[1" sweep k3.json --runs 0 -o x.jsonl
bad noruns "--runs N is required" sweep k3.json -o x.jsonl
bad shard "--shard must be i/n with 0 <= i < n, got '3/2'" sweep k3.json --runs 4 --shard 3/2 -o x.jsonl
bad shardform "--shard must be i/n" sweep k3.json --runs 4 --shard 1 -o x.jsonl
bad threads "--threads must be an integer" sweep k3.json --runs 4 --threads 0 -o x.jsonl
bad fsync "--fsync-interval must be a number >= 0, got '-1'" sweep k3.json --runs 4 --fsync-interval -1 -o x.jsonl
bad exists "exists: continue it with --resume" sweep k3.json --runs 10 -o a10.jsonl
echo '{"model": {"K": 1, "M": 1}, "init": {"type": "given", "Q": [[1]], "R": [[0.5]]}}' > given.json
bad given "given.json: a sweep needs init.type = \\\"random\\\"" sweep given.json --runs 2 -o x.jsonl
bad famfile "cannot read families file 'nofile.json'" sweep k3.json --runs 2 -o x.jsonl --families nofile.json
echo '[{"k1": 1}]' > badfam.json
bad famcontent "badfam.json: family 0: needs a finite number 'loss'" sweep k3.json --runs 2 -o x.jsonl --families badfam.json
bad option "unknown option '--frob'" sweep k3.json --runs 2 --frob
check "[ ! -e x.jsonl ]" "a runs file was written on bad input"
# merge of malformed files
head -c $((size + 37)) a10.jsonl > cut.jsonl
bad mergecut "'cut.jsonl' line 6: truncated line" merge cut.jsonl -o x.json
sed '3s/"seed"/"sead"/' a10.jsonl > badf.jsonl
bad mergefield "'badf.jsonl' line 3: missing or invalid field 'seed'" merge badf.jsonl -o x.json
echo 'not json' > nothdr.jsonl
bad mergehdr "'nothdr.jsonl' line 1: not a scm sweep header" merge nothdr.jsonl -o x.json
bad mergedup "run 0 appears twice" merge a10.jsonl sh0.jsonl -o x.json
bad mergesame "are the same shard 0/2" merge sh0.jsonl sh0.jsonl -o x.json
bad mergediff "is from a different sweep" merge a10.jsonl s10.jsonl -o x.json
bad mergenone "cannot read 'none.jsonl'" merge none.jsonl -o x.json
bad mergeusage "usage: scm merge" merge a10.jsonl
check "[ ! -e x.json ]" "a summary was written on bad input"
check "'$SCM' sweep --help | grep -q 'usage: scm sweep'" "sweep --help"
check "'$SCM' merge --help | grep -q 'usage: scm merge'" "merge --help"

# compare: two K, its table against the per-K summaries
echo '[{"family": "k1", "k1": 0, "loss": 0}]' > f2.json
"$SCM" compare --M 2 --K 2,3 --runs 4 --families 2=f2.json --traces 1 -o cmp -q
check "[ $? -eq 0 ] && [ -s cmp.md ] && [ -s cmp.json ]" "compare ran"
python3 - cmp.json <<'PY' && ok || ko "compare report content"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["K"] == [2, 3] and r["M"] == 2 and r["runs"] == 4
t = r["fractions"]
for j, K in enumerate(r["K"]):
    s = json.load(open("cmp.K%d.summary.json" % K))
    assert sum(row[j] for row in t["count"]) == s["done"] == 4
    assert abs(sum(row[j] for row in t["fraction"]) - 1) < 1e-12
assert len(r["traces"]) == 2 and r["traces"][0]["t"][0] == 0
assert [f for f in r["families"] if f["K"] == 2] == [{"K": 2, "family": "k1", "k1": 0, "loss": 0}]
PY
# compare without --families: enumerated families, the reached k1 = 1
# family of K = M = 9 with the stability verdict that `scm stability`
# gives for the same point; an eps_stop near a plateau is refused
"$SCM" compare --M 9 --K 9 --runs 24 --threads 2 --traces 2 -o c9 -q
check "[ $? -eq 0 ] && [ -s c9.K9.families.json ]" "compare with enumerated families"
python3 - c9.json <<'PY' > c9.idx && ok || ko "compare families reached"
import json, sys
r = json.load(open(sys.argv[1]))
fr = r["families_reached"]
k1 = [f for f in fr if f["k1"] == 1]
assert [f["verdict"] for f in fr if f["class"].startswith("global_minimum")] == ["global_minimum"]
assert len(k1) == 1 and abs(k1[0]["loss"] - 0.0200141758085) < 1e-11, fr
assert k1[0]["verdict"] == "stable" and k1[0]["hessian_verdict"] == "min", k1
assert sum(f["count"] for f in fr) == 24
# traces: the first run of each of the two most frequent classes, the same
# runs as in the runs file (same final loss)
runs = [json.loads(l) for l in open("c9.K9.runs.jsonl").read().splitlines()[1:]]
tr = r["traces"]
assert len(tr) == 2 and len({t["class"] for t in tr}) == 2, tr
for t in tr:
    run = runs[t["index"]]
    assert run["class"] == t["class"] and all(x["class"] != t["class"] for x in runs[:t["index"]])
    assert abs(t["eps"][-1] - run["eps"]) <= 1e-12 * max(1e-3, abs(run["eps"])), (t["eps"][-1], run)
print(k1[0]["point_index"])
PY
"$SCM" stability --point c9.K9.families.json --index "$(cat c9.idx)" --trials 3 \
    --sigma 1e-4,1e-3,1e-2 -q -o st9.json
check "python3 -c \"import json; s=json.load(open('st9.json')); r=[f for f in json.load(open('c9.json'))['families_reached'] if f['k1']==1][0]; assert s['verdict']==r['verdict'] and s['hessian']['verdict']==r['hessian_verdict'], (s['verdict'], r)\"" "compare verdict = scm stability verdict"
bad cmpeps "integrator.eps_stop = 0.001 is not far below the lowest positive family loss" \
    compare --M 9 --K 9 --runs 2 --families 9=c9.K9.families.json --set integrator.eps_stop=1e-3 -o c9b
# the early stop (--certify): same classes as the full runs, fewer steps;
# a header that records it; tagging of unconverged runs with a tiny t_max
"$SCM" sweep c9.K9.config.json --runs 16 --threads 2 --families c9.K9.families.json -o full9.jsonl -q
"$SCM" sweep c9.K9.config.json --runs 16 --threads 2 --families c9.K9.families.json --certify -o cert9.jsonl -q
check "[ $? -eq 0 ]" "sweep --certify"
python3 - full9.jsonl cert9.jsonl <<'PY' && ok || ko "early stop keeps the classes"
import json, sys
a = [json.loads(l) for l in open(sys.argv[1])]
b = [json.loads(l) for l in open(sys.argv[2])]
assert "certify" not in a[0] and b[0]["certify"] == {"grad": 1e-3, "global": 1e-3, "rmax": 0.05, "basin": "proved"}, b[0]
a, b = a[1:], b[1:]
assert [r["class"] for r in a] == [r["class"] for r in b]
assert sum(r["stop"] == "certified" for r in b) >= 12, [r["stop"] for r in b]
assert sum(r["steps"] for r in b) < sum(r["steps"] for r in a)
for r in b:
    if r["stop"] == "certified":
        assert r["converged"] and (r["cert"]["point"] is None or r["cert"]["dist"] < r["cert"]["radius"]), r
PY
# --certify-global: the loss rule only, so every certified run is the
# global minimum; the same classes, the header records it
"$SCM" sweep c9.K9.config.json --runs 16 --threads 2 --families c9.K9.families.json --certify-global -o glob9.jsonl -q
check "[ $? -eq 0 ]" "sweep --certify-global"
python3 - full9.jsonl glob9.jsonl <<'PY' && ok || ko "early stop by the loss rule only"
import json, sys
a = [json.loads(l) for l in open(sys.argv[1])]
b = [json.loads(l) for l in open(sys.argv[2])]
assert b[0]["certify"] == {"grad": 1e-3, "global": 1e-3, "rmax": 0.05, "basin": False}, b[0]
a, b = a[1:], b[1:]
assert [r["class"] for r in a] == [r["class"] for r in b]
cert = [r for r in b if r["stop"] == "certified"]
assert cert and all(r["cert"]["rule"] == "global" and r["class"].startswith("global_minimum") for r in cert), cert
assert any(r["class"] != "global_minimum/k1=0" for r in b)  # runs it could not certify
PY
"$SCM" sweep c9.K9.config.json --runs 16 --families c9.K9.families.json -o cert9.jsonl --resume -q 2> resume9.err
check "[ $? -eq 2 ] && grep -q 'different sweep' resume9.err" "resume without --certify refused"
"$SCM" sweep c9.K9.config.json --runs 4 --families c9.K9.families.json --certify \
    --set integrator.t_max=2 --set integrator.t_first=1 -o near9.jsonl --summary near9.sum.json -q
python3 - near9.jsonl near9.sum.json <<'PY' && ok || ko "unconverged runs tagged with the nearest point"
import json, sys
runs = [json.loads(l) for l in open(sys.argv[1])][1:]
pts = json.load(open("c9.K9.families.json"))["fixed_points"]
for r in runs:
    n = r["near"]
    assert not r["converged"] and n["dist"] > 0 and n["stability"] == "unknown", r
    assert abs(n["loss"] - pts[n["point"]]["loss"]) == 0, (n, pts[n["point"]]["loss"])
s = json.load(open(sys.argv[2]))["summary"] if "summary" in json.load(open(sys.argv[2])) else json.load(open(sys.argv[2]))
assert sum(g["count"] for g in s["not_converged_near"]) == 4, s["not_converged_near"]
PY
bad cmpreq "--M, --K and --runs are required" compare --K 2 --runs 3
bad cmpfam "K = 5 is not in --K" compare --M 2 --K 2 --runs 3 --families 5=x.json

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
