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
# runs as in the runs file, integrated again accurately (compare_trace.c):
# the same class and, at a plateau, the same final loss to the matching
# tolerance; at the global minimum below the traces' eps_stop 1e-12
runs = [json.loads(l) for l in open("c9.K9.runs.jsonl").read().splitlines()[1:]]
tr = r["traces"]
assert len(tr) == 2 and len({t["class"] for t in tr}) == 2, tr
assert r["traces_integrator"]["eps_stop"] == 1e-12 and r["traces_integrator"]["tail_eps"] == 1e-4
for t in tr:
    run = runs[t["index"]]
    assert run["class"] == t["class"] and all(x["class"] != t["class"] for x in runs[:t["index"]])
    assert t["class_traced"] == t["class"] and not t["class_differs"], t
    if run["class"].startswith("global_minimum"):
        assert t["eps"][-1] == t["eps_final"] < 1e-12 and t["tail_t"] > 0, (t["eps"][-1], run)
    else:
        assert abs(t["eps"][-1] - run["eps"]) <= 1e-8 * run["eps"], (t["eps"][-1], run)
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

# ---- issue 26: hostile inputs --------------------------------------------
# item 2: a runs file or a families file without end is refused, not read whole
# a 2 GB address-space limit (the code before read without one), unless the
# binary cannot start under it (AddressSanitizer reserves terabytes)
LIMV=2000000
( ulimit -v $LIMV; exec "$SCM" --version ) > /dev/null 2>&1 || LIMV=unlimited
badlim() { # bad under that limit
    local name=$1 pat=$2
    shift 2
    ( ulimit -v $LIMV; exec "$SCM" "$@" ) > /dev/null 2> e
    local rc=$?
    check "[ $rc -eq 2 ] && grep -q -- \"$pat\" e" "$name: rc $rc, stderr: $(cat e)"
}
badlim devzero "NUL byte" merge /dev/zero -o z.json
check "[ ! -e z.json ]" "merge /dev/zero wrote a summary"
badlim devfull "not a regular file" sweep k3.json --runs 2 -o /dev/full --resume
( ulimit -v $LIMV; "$SCM" sweep k3.json --runs 2 --families /dev/zero -o fz.jsonl > /dev/null 2> e )
check "[ $? -eq 2 ] && grep -q 'NUL byte\|larger than' e && [ ! -e fz.jsonl ]" "families /dev/zero: $(cat e)"
# item 3: shard [0, 0] (SIGFPE before), a header-only runs file
head -1 a10.jsonl > hdr.jsonl
"$SCM" merge hdr.jsonl -o hdr.json -q; check "[ $? -eq 0 ] && grep -q '\"count\":.10' hdr.json" "header-only runs file"
sed '1s/"shard":\[0,1\]/"shard":[0,0]/' a10.jsonl > sh00.jsonl
bad shard00 "out of range" merge sh00.jsonl -o x.json
sed '1s/"shard":\[0,1\]/"shard":[0,-1]/' a10.jsonl > sh0m.jsonl
bad shard0m "out of range" merge sh0m.jsonl -o x.json
sed '1s/"runs":10/"runs":-5/' a10.jsonl > runsm5.jsonl
bad runsm5 "out of range" merge runsm5.jsonl -o x.json
check "[ ! -e x.json ]" "a refused merge wrote its output"
# item 4: a runs file locked by another process (here python's fcntl lock)
cp a6.jsonl lk.jsonl
python3 -c '
import fcntl, sys, time
f = open("lk.jsonl", "r+"); fcntl.lockf(f, fcntl.LOCK_EX); open("lk.ready", "w").close(); time.sleep(20)' &
lkpid=$!
for _ in $(seq 100); do [ -e lk.ready ] && break; sleep 0.1; done
bad locked "locked by another process" sweep k3.json --runs 10 -o lk.jsonl --resume
kill $lkpid 2>/dev/null; wait $lkpid 2>/dev/null
check "cmp -s lk.jsonl a6.jsonl" "a locked runs file was changed"
# two scm sweep --resume at once: one of them refused, the file the uninterrupted one
"$SCM" sweep k3.json --runs 40 -o two.jsonl -q --threads 1 & p1=$!
for _ in $(seq 100); do [ -s two.jsonl ] && break; sleep 0.05; done
"$SCM" sweep k3.json --runs 40 -o two.jsonl --resume -q 2> e2; r2=$?
wait $p1; r1=$?
"$SCM" sweep k3.json --runs 40 -o two40.jsonl -q
check "[ $r1 -eq 0 ] && { [ $r2 -eq 0 ] || grep -q 'locked' e2; } && cmp -s two.jsonl two40.jsonl" "two concurrent sweeps: rc $r1 $r2 $(cat e2)"
# item 5: --resume onto a file that is not a runs file leaves it as it was
printf 'precious data, no newline' > notruns.txt; cp notruns.txt notruns.orig
bad notruns "not a runs file" sweep k3.json --runs 2 -o notruns.txt --resume
check "cmp -s notruns.txt notruns.orig" "--resume destroyed a file that is not a runs file"
printf 'line one\nline two\n' > notruns2.txt; cp notruns2.txt notruns2.orig
bad notruns2 "not a runs file" sweep k3.json --runs 2 -o notruns2.txt --resume
check "cmp -s notruns2.txt notruns2.orig" "--resume changed a text file"
head -c 40 a6.jsonl > cuthdr.jsonl
"$SCM" sweep k3.json --runs 6 -o cuthdr.jsonl --resume -q; check "[ $? -eq 0 ] && cmp -s cuthdr.jsonl a6.jsonl" "a cut header is rewritten"
# item 6: an output that is also an input
cp a10.jsonl in1.jsonl; cp in1.jsonl in1.orig
bad mergeself "also an input" merge in1.jsonl sh0.jsonl -o in1.jsonl
check "cmp -s in1.jsonl in1.orig" "merge overwrote its input"
bad sumout "also an input" sweep k3.json --runs 2 -o so.jsonl --summary so.jsonl
check "[ ! -e so.jsonl ]" "--summary = -o wrote something"
cp k3.json k3c.json
bad cfgout "also an input" sweep k3c.json --runs 2 -o k3c.json
check "cmp -s k3c.json k3.json" "-o = config changed the config"
# item 7: every option that changes a record is in the header and checked
for opt in "--dead-q 0.01" "--match-rtol 1e-6" "--loose-grad-stop 1e-6"; do
    cp a6.jsonl o7.jsonl
    bad "resume $opt" "different sweep" sweep k3.json --runs 6 -o o7.jsonl --resume $opt
    "$SCM" sweep k3.json --runs 10 --shard 1/2 -o o7s.jsonl -q $opt
    bad "merge $opt" "different sweep" merge sh0.jsonl o7s.jsonl -o x.json
    rm -f o7s.jsonl
done
python3 -c '
import json; h = json.loads(open("a6.jsonl").readline())
assert h["classify"] == {"match_rtol": 1e-8, "match_atol": 1e-10, "dead_q": 1e-3, "loose_grad_stop": 0}, h' && ok || ko "classify in the header"
# item 15: --certify needs --families, and excludes --certify-global
bad certnofam "needs --families" sweep k3.json --runs 2 -o x.jsonl --certify
bad certboth "exclude each other" sweep k3.json --runs 2 -o x.jsonl --certify --certify-global --families fp.json
# item 19: messages
mkdir -p adir
bad mergedir "is a directory" merge adir -o x.json
sed 's/$/\r/' a6.jsonl > crlf.jsonl
bad crlf "CRLF" sweep k3.json --runs 6 -o crlf.jsonl --resume
{ cat a6.jsonl; sed -n 8p a10.jsonl; } > extra.jsonl
bad extra "beyond the last run of this shard" sweep k3.json --runs 6 -o extra.jsonl --resume
# item 20: an output that cannot be written: exit 4, documented
mkdir -p ro && chmod 555 ro
if [ "$(id -u)" != 0 ]; then
    "$SCM" merge a10.jsonl -o ro/m.json -q 2> e; check "[ $? -eq 4 ]" "unwritable merge output: exit 4"
fi
"$SCM" merge a10.jsonl -o /dev/full -q 2> e; check "[ $? -eq 4 ] && grep -q 'No space' e" "merge onto /dev/full: exit $? $(cat e)"
"$SCM" sweep k3.json --runs 2 -o full.jsonl --summary /dev/full -q 2> e; r=$?
check "[ $r -eq 4 ] && [ \$(wc -l < full.jsonl) -eq 3 ]" "summary onto /dev/full: exit $r $(cat e)"

# item 14: families of another (K, M) refused, naming both shapes
bad famshape "K = 9, M = 9, but the model has K = 3, M = 3" sweep k3.json --runs 2 -o x.jsonl --families c9.K9.families.json
check "[ ! -e x.jsonl ]" "a refused sweep wrote its runs file"
# compare: refused before the first write (items 9, 14, 15)
mkdir -p cref && cd cref
bad cmpKbig "give the families of K = 100000 with --families 100000=FILE" compare --M 2 --K 100000 --runs 2 -o r1 --no-plots
bad cmpnull "/dev/null: invalid JSON" compare --M 2 --K 2 --runs 2 --families 2=/dev/null -o r2 --no-plots
bad cmpeps "eps_stop = 1 is not far below" compare --M 2 --K 2 --runs 2 --set integrator.eps_stop=1 -o r3 --no-plots
bad cmpshape "K = 9, M = 9, but the model has K = 2, M = 2" compare --M 2 --K 2 --runs 2 --families 2=../c9.K9.families.json -o r4 --no-plots
bad cmpKempty "--K must be a list" compare --M 2 --K 2,,3 --runs 2 -o r5 --no-plots
bad cmpKdup "lists K = 2 twice" compare --M 2 --K 2,2 --runs 2 -o r6 --no-plots
bad cmpcert "exclude each other" compare --M 2 --K 2 --runs 2 --certify --certify-global -o r7 --no-plots
check "[ -z \"\$(ls | grep -v '^e$')\" ]" "refused compares left files: $(ls | tr '\n' ' ')"
"$SCM" compare --M 2 --K 2 --runs 2 -o ok --no-plots -q; check "[ $? -eq 0 ]" "small compare"
cp ok.K2.config.json ok.cfg.orig
bad cmprerun "exists with another configuration" compare --M 2 --K 2 --runs 2 -o ok --no-plots --set integrator.rtol=1e-9
check "cmp -s ok.K2.config.json ok.cfg.orig" "a refused rerun changed PREFIX.K2.config.json"
bad cmpself "also an input" compare ok.K2.config.json --M 2 --K 2 --runs 2 -o ok --no-plots
# item 18: the .md is written atomically, not through a fixed PREFIX.md.tmp
mkdir ok.md.tmp
"$SCM" compare --M 2 --K 2 --runs 2 -o ok --no-plots -q; check "[ $? -eq 0 ] && [ -s ok.md ]" "compare .md beside a directory PREFIX.md.tmp"
# item 20: an unwritable .md: exit 4, and no .json without its .md
rm -f ok.json ok.md; mkdir ok.md
"$SCM" compare --M 2 --K 2 --runs 2 -o ok --no-plots -q 2> e; r=$?
check "[ $r -eq 2 -o $r -eq 4 ] && [ ! -e ok.json ]" "compare with .md unwritable: rc $r, ok.json $(ls ok.json 2>&1)"
cd ..

# issue 26 item 8: runs that cannot start (students too small for the loose
# stage at init.scale 1.2e-5) are failed records naming the reason; the sweep goes on
cat > dead.json <<'JSON'
{"model": {"K": 4, "M": 4, "activation": "relu"},
 "init": {"type": "random", "d": 1000, "sigma": 1, "seed": 1, "scale": 1.2e-5},
 "integrator": {"linear_solver": "gmres", "loose_until": 1e-6, "loose_rtol": 1e-4,
                "loose_atol": 1e-6, "jtimes": "lagged", "eps_stop": 1e-10, "max_steps": 100000}}
JSON
"$SCM" sweep dead.json --runs 12 -o dead.jsonl --threads 2 -q 2> e; r=$?
check "[ $r -eq 0 ] && [ \$(wc -l < dead.jsonl) -eq 13 ] && [ \$(grep -c '\"stop\":\"failed\",\"converged\":false,\"why\":\"the run cannot go on: integrator.loose_atol' dead.jsonl) -eq 12 ]" "dead starts: rc $r $(cat e) $(sed -n 2p dead.jsonl)"
"$SCM" merge dead.jsonl -o dead.sum.json -q; check "[ $? -eq 0 ]" "merge of failed records"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
