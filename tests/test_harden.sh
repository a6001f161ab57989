#!/usr/bin/env bash
# test_harden.sh SCM: what the hostile-input and fault campaign of issue 26
# found, end to end (the items named below).  Each check fails on the code
# before its fix.
#   12  extreme options of `scm lintarget` and `scm staircase`: a named
#       bad-input error, exit 2, nothing written;
#   13  `scm stability` with a GD step or a perturbation that overflows:
#       "diverged", never a stable/unstable verdict;
#   18  a command killed by SIGTERM or SIGINT while it writes leaves no
#       OUT.tmpXXXXXX, and each output is the old file or the new one,
#       complete;
#   19  `scm split --lambda 1e300` names the real problem;
#   9   a refused `scm compare` changes no file;
#   2, 14, 19  the readers of user files (what fuzzing them found,
#       docs/fuzzing.md): bounded reads, allocations bounded by the input;
#   and the accepted ranges of lintarget, staircase and split as their
#   docs print them: each bound accepted, one step outside refused.
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

# refused NAME PATTERN CMD...: exit 2, PATTERN on stderr, nothing new in $W/o
refused() {
    local name=$1 pat=$2
    shift 2
    rm -rf "$W/o" && mkdir "$W/o"
    "$@" > "$W/$name.out" 2> "$W/$name.err"
    local rc=$?
    check "[ $rc -eq 2 ]" "$name: exit status $rc, want 2 ($(head -c 300 "$W/$name.err"))"
    check "grep -q -- \"$pat\" '$W/$name.err'" "$name: stderr lacks '$pat': $(head -c 300 "$W/$name.err")"
    check "[ -z \"\$(ls -A '$W/o')\" ]" "$name: files written: $(ls "$W/o")"
}

# ---- item 12: lintarget and staircase ----
LT="$SCM lintarget --c 0.5 -q -o $W/o/lt"
refused lt_alpha_tiny "alpha = 1e-300" $LT --alpha 1e-300
refused lt_alpha_small "alpha = 1e-101" $LT --alpha 1e-101
refused lt_t_big "t = 1e+300" $LT --alpha 1e-2 --t 1e300
refused lt_t_tiny "t = 1e-300" $LT --alpha 1e-2 --t 1e-300
refused lt_tmax_big "t_max = 1e+300" $LT --alpha 1e-2 --t-max 1e300
refused lt_tmax_tiny "t_max = 1e-300" $LT --alpha 1e-2 --t-max 1e-300
refused lt_c_big "c = 1e+300" $SCM lintarget --alpha 1e-2 --c 1e300 -q -o "$W/o/lt"
refused lt_alpha_t "not a small initialisation" $LT --alpha 0.5 --t 1e-4
for v in nan inf -1; do
    refused "lt_t_$v" "--t" $LT --alpha 1e-2 --t $v
    refused "lt_alpha_$v" "--alpha" $LT --alpha $v
done
ST="$SCM staircase --K 2 --M 2 --n-out 50 --t-max 100 -q -o $W/o/st.json"
refused st_alpha_tiny "alpha = 1e-300" $ST --alpha 1e-300
refused st_alpha_big "alpha = 1e+300" $ST --alpha 1e300
refused st_tmax_big "t_max = 1e+300" $SCM staircase --K 2 --M 2 --alpha 1e-3 --t-max 1e300 -q -o "$W/o/st.json"
refused st_tmax_tiny "t_max = 1e-300" $SCM staircase --K 2 --M 2 --alpha 1e-3 --t-max 1e-300 -q -o "$W/o/st.json"
refused st_T_big "T_diag\[0\] = 1e+300" $ST --alpha 1e-3 --T-diag 1e300,1
refused st_T_tiny "T_diag\[0\] = 1e-300" $ST --alpha 1e-3 --T-diag 1e-300,1
refused st_vstar_big "vstar\[1\] = 1e+300" $ST --alpha 1e-3 --vstar 1,1e300
refused st_vstar_neg "vstar\[1\] = -1e+300" $ST --alpha 1e-3 --vstar 1,-1e300
refused st_lr_big "lr_v_ratio = 1e+300" $ST --alpha 1e-3 --rule two_layer --lr-v-ratio 1e300
refused st_lr_tiny "lr_v_ratio = 1e-300" $ST --alpha 1e-3 --rule two_layer --lr-v-ratio 1e-300
for v in nan inf -1; do
    refused "st_alpha_$v" "--alpha" $ST --alpha $v
    refused "st_rate_$v" "--rate-tol" $ST --alpha 1e-3 --rate-tol $v
done

# ---- item 13: a diverged perturbation test ----
"$SCM" stability --K 2 --M 2 --k1 0 --trials 2 --perturb-size 1e-3 --gd-step 1e300 \
    -o "$W/stab.json" > "$W/stab.out" 2> "$W/stab.err"
check "[ $? -eq 0 ]" "stability --gd-step 1e300: exit $? ($(head -c 300 "$W/stab.err"))"
check "grep -q '^verdict *diverged' '$W/stab.out'" "stability --gd-step 1e300: $(grep verdict "$W/stab.out")"
/usr/bin/python3 - "$W/stab.json" <<'PY' && ok || ko "stability --gd-step 1e300: JSON verdicts"
import json, sys
d = json.load(open(sys.argv[1]))
def find(o, key, acc):
    if isinstance(o, dict):
        for k, v in o.items():
            if k == key:
                acc.append(v)
            find(v, key, acc)
    elif isinstance(o, list):
        for v in o:
            find(v, key, acc)
    return acc
v = find(d, "verdict", [])
assert "diverged" in v and "stable" not in v and "unstable" not in v, v
PY

# ---- item 18: killed while writing ----
# `scm run` with 4000 recorded points writes a 1 MB JSON and a CSV.  Each
# round starts it and sends SIGTERM or SIGINT either as soon as a
# temporary file appears (the window the fix closes) or at a random
# moment; after it, no *.tmp* may be left and each file must be byte for
# byte the old complete one (seed 1) or the new one (seed 2).  Job control
# (set -m): a background job of a non-interactive shell ignores SIGINT.
RUN=("$SCM" run "$SRC/examples/relu_k2.json" --set integrator.n_out=4000
     --set integrator.eps_stop=0 --set integrator.grad_stop=0 --set integrator.t_max=1e4 -q)
mkdir -p "$W/k" && cd "$W/k"
"${RUN[@]}" --set init.seed=2 -o big.json --csv big.csv > /dev/null 2>&1
sum_new_j=$(md5sum < big.json) sum_new_c=$(md5sum < big.csv)
"${RUN[@]}" --set init.seed=1 -o big.json --csv big.csv > /dev/null 2>&1
sum_old_j=$(md5sum < big.json) sum_old_c=$(md5sum < big.csv)
check "[ '$sum_old_j' != '$sum_new_j' ] && [ '$sum_old_c' != '$sum_new_c' ]" "kill test: seeds 1 and 2 give the same files"
set -m
RANDOM=2385
rounds=${SCM_HARDEN_ROUNDS:-16} hit=0 leftover=0 torn=0
for r in $(seq 1 "$rounds"); do
    sig=TERM; [ $((r % 2)) -eq 0 ] && sig=INT
    "${RUN[@]}" --set init.seed=$((1 + r % 2)) -o big.json --csv big.csv > /dev/null 2>&1 &
    pid=$!
    if [ $((r % 4)) -lt 2 ]; then          # at the first temporary file
        while kill -0 $pid 2> /dev/null; do
            compgen -G 'big.*.tmp*' > /dev/null && { kill -$sig $pid; hit=$((hit + 1)); break; }
        done
    else                                    # at a random moment
        sleep "0.$((RANDOM % 100))"
        kill -$sig $pid 2> /dev/null
    fi
    wait $pid 2> /dev/null
    if compgen -G '*.tmp*' > /dev/null; then
        leftover=$((leftover + 1)); echo "round $r (SIG$sig): left $(ls ./*.tmp*)" >&2
        rm -f ./*.tmp*
    fi
    j=$(md5sum < big.json) c=$(md5sum < big.csv)
    if ! { [ "$j" = "$sum_old_j" ] || [ "$j" = "$sum_new_j" ]; } ||
       ! { [ "$c" = "$sum_old_c" ] || [ "$c" = "$sum_new_c" ]; }; then
        torn=$((torn + 1)); echo "round $r (SIG$sig): a file is neither the old nor the new one" >&2
    fi
done
set +m
cd "$W"
check "[ $leftover -eq 0 ]" "kill test: temporaries left in $leftover of $rounds rounds"
check "[ $torn -eq 0 ]" "kill test: $torn of $rounds rounds left a file neither old nor new"
check "[ $hit -ge 1 ]" "kill test: no round caught the write (the test did not test anything)"
echo "kill test: $rounds rounds, $hit killed at a temporary file"

# ---- item 19: messages that name the real problem ----
refused split_lambda "|lambda| must be <= 1000" $SCM split --K 2 --M 2 --index 0 --neuron 0 --lambda 1e300 -o "$W/o/sp.json"
refused split_lambda_neg "--lambda -1e+300 is out of range" $SCM split --K 2 --M 2 --index 0 --neuron 0 --lambda 0.5,-1e300 -o "$W/o/sp.json"
refused split_weights "weight 1 = -1e+300" $SCM split --K 2 --M 2 --index 0 --neuron 0 --weights 1,-1e300,1e300 -o "$W/o/sp.json"
# (the other messages of item 19, fixed before: kept fixed)
/usr/bin/python3 -c "print('{\"model\":' * 2000 + '1' + '}' * 2000)" > "$W/deep.json"
refused deep "nested deeper than 1000 levels" $SCM run "$W/deep.json" -o "$W/o/r.json"
mkdir -p "$W/adir"
refused dir_config "it is a directory" $SCM run "$W/adir" -o "$W/o/r.json"
refused dir_merge "it is a directory" $SCM merge "$W/adir" -o "$W/o/m.json"
"$SCM" sweep "$SRC/examples/relu_k2.json" --runs 3 -o "$W/runs.jsonl" -q > /dev/null 2>&1
sed 's/$/\r/' "$W/runs.jsonl" > "$W/o_crlf.jsonl"
refused crlf "CRLF line ends" $SCM sweep "$SRC/examples/relu_k2.json" --runs 3 -o "$W/o_crlf.jsonl" --resume -q
{ cat "$W/runs.jsonl"; tail -1 "$W/runs.jsonl"; } > "$W/o_extra.jsonl"
refused extra_line "beyond the last run" $SCM sweep "$SRC/examples/relu_k2.json" --runs 3 -o "$W/o_extra.jsonl" --resume -q

# ---- items 2, 14, 19: the readers of user files (fuzz targets runs, families, seeds) ----
# --seed-from read with a bound (before: unbounded, /dev/zero grew until
# the memory ran out); a directory named as such.
refused seed_zero "'/dev/zero' is larger than 268435456 bytes" \
    $SCM fixed-points --K 2 --M 2 --seed-from /dev/zero -o "$W/o/f.json"
refused seed_dir "cannot read '$W/adir': it is a directory" \
    $SCM fixed-points --K 2 --M 2 --seed-from "$W/adir" -o "$W/o/f.json"
# the other readers of user files: stability --point bounded (before: /dev/zero
# grew until the memory ran out) and a directory named as such (before: "cannot
# read" with no reason), split --point likewise
refused stab_zero "'/dev/zero' is larger than 268435456 bytes" \
    $SCM stability --point /dev/zero --index 0 -o "$W/o/y.json"
refused stab_dir "cannot read '$W/adir': Is a directory" \
    $SCM stability --point "$W/adir" --index 0 -o "$W/o/y.json"
refused split_dir "cannot read '$W/adir': Is a directory" \
    $SCM split --point "$W/adir" --neuron 0 -o "$W/o/x.json"
# compare: the enumeration's failure on one line, as compare's (before: a
# line prefixed "scm fixed-points:")
refused cmp_noansatz "scm compare: K = 3: the family enumeration failed: no ansatz applies" \
    $SCM compare --M 5 --K 3 --runs 4 -o "$W/o/cx"
# --perturb is honoured on the dense path (before: refused with --dense, and
# ignored for a point that names no ansatz, which always ran the weight-space
# test): qr and none beside the dense spectra, whose verdict does not change
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
$SCM fixed-points --K 4 --M 4 --k1 1 -q -o "$W/pfp.json" 2> "$W/e"
check "[ $? -eq 0 ]" "fixed-points for the perturb checks: $(head -c 300 "$W/e")"
"$PY" -c 'import json, sys
f = json.load(open(sys.argv[1]))
for p in f["fixed_points"]:
    p.pop("ansatz", None)
json.dump(f, open(sys.argv[2], "w"))' "$W/pfp.json" "$W/pfp_noansatz.json"
for mode in weights qr none; do
    $SCM stability --K 4 --M 4 --k1 1 --index 0 --dense --perturb $mode --trials 2 -q -o "$W/sd_$mode.json" 2> "$W/e"
    check "[ $? -eq 0 ]" "stability --dense --perturb $mode: $(head -c 300 "$W/e")"
    $SCM stability --point "$W/pfp_noansatz.json" --index 0 --perturb $mode --trials 2 -q \
        -o "$W/sn_$mode.json" 2> "$W/e"
    check "[ $? -eq 0 ]" "stability of a point without ansatz, --perturb $mode: $(head -c 300 "$W/e")"
done
out=$("$PY" - "$W" <<'PYEOF'
import json, sys
w = sys.argv[1]
bad = []
for kind in ("sd", "sn"):
    r = {m: json.load(open("%s/%s_%s.json" % (w, kind, m))) for m in ("weights", "qr", "none")}
    for m, x in r.items():
        pt = x["perturbation"]
        if x["spectrum_method"] != "dense" or pt["space"] != m:
            bad.append("%s %s: spectrum %s, space %s" % (kind, m, x["spectrum_method"], pt["space"]))
        if len(pt["rows"]) != (0 if m == "none" else 4):
            bad.append("%s %s: %d rows" % (kind, m, len(pt["rows"])))
        if x["hessian"] != r["weights"]["hessian"]:
            bad.append("%s %s: the Hessian differs from the weights run's" % (kind, m))
        if m != "none" and x["verdict"] != r["weights"]["verdict"]:
            bad.append("%s %s: verdict %s, weights %s" % (kind, m, x["verdict"], r["weights"]["verdict"]))
    if r["none"]["verdict"] != "undecided":
        bad.append("%s none: verdict %s" % (kind, r["none"]["verdict"]))
    if kind == "sn" and "no ansatz" not in r["none"].get("dense_because", ""):
        bad.append("sn: dense_because %r" % r["none"].get("dense_because"))
print("; ".join(bad) if bad else "ok")
PYEOF
)
check "[ \"$out\" = ok ]" "stability --perturb on the dense path: $out"
# a named ansatz that does not apply names both kinds of condition
refused fp_shared_KM "ansatz 'k1_shared' does not apply at K = 4, M = 3 (its .require. or .require_positive. conditions fail" \
    $SCM fixed-points --K 4 --M 3 --ansatz "$SRC/examples/ansatz/k1_shared.json" -o "$W/o/f.json"
# above K = 400 the enumeration's points have no k1 (block level only):
# refused before anything is written (before k1_extra applied at any K > M,
# no ansatz applied there)
refused cmp_bigK "scm compare: the family enumeration classifies points up to K = 400" \
    $SCM compare --M 3 --K 100000 --runs 4 -o "$W/o/cx"
# a families matrix's allocation bounded by its numbers: a first row of
# 1e5 zeros and 1e5 - 1 empty rows (500 kB) asked for 80 GB before its
# shape was checked ("out of memory"); now the shape error
/usr/bin/python3 -c "n = 100000
print('[{\"family\": \"x\", \"k1\": 0, \"loss\": 0, \"Q\": [[' + ','.join(['0'] * n) + ']'
      + ',[]' * (n - 1) + '], \"R\": [[1]]}]')" > "$W/bigQ.json"
refused fam_bigQ "family 0: 'Q' and 'R' must be K x K and K x M matrices" \
    $SCM sweep "$SRC/examples/relu_k2.json" --runs 1 --families "$W/bigQ.json" -o "$W/o/s.jsonl" -q
# an integral instance beyond int (undefined behaviour of the cast before)
printf '{"fixed_points": [{"ansatz": "k1", "instance": 1e300, "scalars": {"a": 1}}]}' > "$W/inst.json"
refused seed_instance "fixed_points\[0\]: missing or bad 'instance'" \
    $SCM fixed-points --K 2 --M 2 --seed-from "$W/inst.json" -o "$W/o/f.json"

# ---- accepted ranges (docs/lintarget.md, docs/staircase.md, docs/split.md) ----
# Each row: NAME|ACCEPT|REFUSE|PATTERN on a cheap base command.  ACCEPT is
# the option at its bound: it must pass the checks (exit 0, or 1 for a run
# that fails numerically, never 2); "-" skips it where the run at the bound
# is too costly for a test (--n-out 1e6 writes 126 MB).  REFUSE is one step
# outside (the next integer, a relative step of about 1e-9, or one more
# list entry): exit 2, PATTERN on stderr, nothing written.
ranges() { # BASE, then the rows on stdin
    local base=$1 name acc ref pat rc
    while IFS='|' read -r name acc ref pat; do
        [ -z "$name" ] && continue
        if [ "$acc" != - ]; then
            rm -rf "$W/o" && mkdir "$W/o"
            $base $acc > "$W/$name.out" 2> "$W/$name.err" < /dev/null
            rc=$?
            check "[ $rc -eq 0 ] || [ $rc -eq 1 ]" "$name: at the bound ($acc): exit $rc ($(head -c 300 "$W/$name.err"))"
        fi
        refused "$name" "$pat" $base $ref < /dev/null
    done
}
l32=$(printf '0.1,%.0s' $(seq 31))0.1 l1000=$(printf '0.5,%.0s' $(seq 999))0.5
w16=$(printf '0.0625,%.0s' $(seq 15))0.0625
ranges "$SCM lintarget --alpha 1e-2 --c 0.5 --n-out 3 --t-max 0.0011 -q -o $W/o/lt" <<ROWS
rg_lt_alpha_min|--alpha 1e-100|--alpha 9.99e-101|alpha = 9.99e-101 is below 1e-100
rg_lt_alpha_max|--alpha 0.999999999|--alpha 1|--alpha values must be in (0, 1)
rg_lt_alpha_t|--alpha 0.499999999 --t 0.0625|--alpha 0.5 --t 0.0625|alpha = 0.5 is not a small initialisation
rg_lt_alpha_n|--alpha $l32|--alpha $l32,0.1|--alpha takes at most 32 values
rg_lt_t_min|--t 1e-100 --alpha 1e-30|--t 9.99e-101 --alpha 1e-30|t = 9.99e-101 is out of range
rg_lt_t_max|--t 1e4|--t 1.00000001e4|t = 10000.0001 is out of range
rg_lt_d_min|--d 3|--d 2|--d needs an integer in \[3, 100000000\]
rg_lt_d_max|--d 100000000|--d 100000001|--d needs an integer in \[3, 100000000\]
rg_lt_seed_min|--seed 0|--seed -1|--seed needs an integer in \[0, 2147483647\]
rg_lt_seed_max|--seed 2147483647|--seed 2147483648|--seed needs an integer in \[0, 2147483647\]
rg_lt_tmax_min|--t-max 1.000000001e-3|--t-max 1e-3|t_max = 0.001 is out of range
rg_lt_tmax_max|--t-max 1e20|--t-max 1.0000001e20|t_max = 1.0000001e+20 is out of range
rg_lt_nout_min|--n-out 3|--n-out 2|--n-out needs an integer in \[3, 1000000\]
rg_lt_nout_max|-|--n-out 1000001|--n-out needs an integer in \[3, 1000000\]
rg_lt_c_max|--c 10000|--c 10000.0001|c = 10000.0001 is out of range
rg_lt_c_min|--c -10000|--c -10000.0001|c = -10000.0001 is out of range
rg_lt_c_n|--c $l32|--c $l32,0.1|--c takes at most 32 values
ROWS
ranges "$SCM staircase --K 2 --M 2 --alpha 1e-3 --n-out 10 --t-max 0.011 --starts 0 -q -o $W/o/st.json" <<ROWS
rg_st_K_min|--K 1|--K 0|--K needs an integer in \[1, 200\]
rg_st_K_max|--K 200|--K 201|--K needs an integer in \[1, 200\]
rg_st_M_min|--M 1 --d 1|--M 0|--M needs an integer in \[1, 200\]
rg_st_M_max|--M 200 --d 200|--M 201|--M needs an integer in \[1, 200\]
rg_st_alpha_min|--alpha 1e-20|--alpha 9.99e-21|alpha = 9.99e-21 is out of range
rg_st_alpha_max|--alpha 1000|--alpha 1000.000001|alpha = 1000.000001 is out of range
rg_st_alpha_n|--alpha $l32|--alpha $l32,0.1|--alpha takes at most 32 values
rg_st_lr_min|--rule two_layer --lr-v-ratio 1e-6|--rule two_layer --lr-v-ratio 9.99e-7|lr_v_ratio = 9.99e-07 is out of range
rg_st_lr_max|--rule two_layer --lr-v-ratio 1e6|--rule two_layer --lr-v-ratio 1000001|lr_v_ratio = 1000001 is out of range
rg_st_T_min|--T-diag 1e-6,1|--T-diag 9.99e-7,1|T_diag\[0\] = 9.99e-07 is out of range
rg_st_T_max|--T-diag 1,1e6|--T-diag 1,1000001|T_diag\[1\] = 1000001 is out of range
rg_st_T_n|--T-diag 1,1|--T-diag 1,1,1|--T-diag and --vstar need M = 2 entries
rg_st_vstar_max|--vstar 1000,1|--vstar 1000.000001,1|vstar\[0\] = 1000.000001 is out of range
rg_st_vstar_min|--vstar 1,-1000|--vstar 1,-1000.000001|vstar\[1\] = -1000.000001 is out of range
rg_st_d_M|--d 2|--d 1|--d 1 is below M = 2
rg_st_d_max|--d 100000000|--d 100000001|--d needs an integer in \[1, 100000000\]
rg_st_seed_min|--seed 0|--seed -1|--seed needs an integer in \[0, 2147483647\]
rg_st_seed_max|--seed 2147483647|--seed 2147483648|--seed needs an integer in \[0, 2147483647\]
rg_st_tmax_min|--t-max 0.010000001|--t-max 0.01|t_max = 0.01 is out of range
rg_st_tmax_max|--t-max 1e20|--t-max 1.0000001e20|t_max = 1.0000001e+20 is out of range
rg_st_nout_min|--n-out 10|--n-out 9|--n-out needs an integer in \[10, 1000000\]
rg_st_nout_max|-|--n-out 1000001|--n-out needs an integer in \[10, 1000000\]
rg_st_rate|--rate-tol 1e-300|--rate-tol 0|--rate-tol needs a positive number
rg_st_mindur|--min-dur 1e-300|--min-dur 0|--min-dur needs a positive number
rg_st_match|--match-tol 1e-300|--match-tol 0|--match-tol needs a positive number
rg_st_starts_min|--starts 0|--starts -1|--starts needs an integer in \[0, 1000000\]
rg_st_starts_max|-|--starts 1000001|--starts needs an integer in \[0, 1000000\]
ROWS
ranges "$SCM split --K 2 --M 2 --index 0 --neuron 0 --activation erf -q -o $W/o/sp.json" <<ROWS
rg_sp_K_min|--K 1 --M 1|--K 0|--K needs an integer in \[1, 1000\]
rg_sp_K_max|--K 1000 --M 1|--K 1001|--K needs an integer in \[1, 1000\]
rg_sp_M_min|--K 1 --M 1|--M 0|--M needs an integer in \[1, 1000\]
rg_sp_M_max|--K 1 --M 1000|--M 1001|--M needs an integer in \[1, 1000\]
rg_sp_index_min|--index 0|--index -1|--index needs an integer in \[0, 1000000\]
rg_sp_index_max|-|--index 1000001|--index needs an integer in \[0, 1000000\]
rg_sp_neuron_K|--neuron 1|--neuron 2|--neuron 2 out of range: the point has K = 2 students
rg_sp_neuron_max|-|--neuron 1000|--neuron needs an integer in \[0, 999\]
rg_sp_lambda_max|--lambda 1000|--lambda 1000.000001|--lambda 1000 is out of range
rg_sp_lambda_min|--lambda -999|--lambda -999.000001|split weight 1 = 1000 is out of range
rg_sp_lambda_n|--lambda $l1000|--lambda $l1000,0.5|--lambda takes at most 1000 values
rg_sp_grid_min|--lambda-grid 1|--lambda-grid 0|--lambda-grid needs an integer in \[1, 1000\]
rg_sp_grid_max|--lambda-grid 1000|--lambda-grid 1001|--lambda-grid needs an integer in \[1, 1000\]
rg_sp_weights_max|--weights 1000,-999|--weights 1000.000001,-999.000001|weight 0 = 1000 is out of range
rg_sp_weights_n|--weights $w16|--weights $w16,0.0625|--weights takes at most 16 values
rg_sp_weights_2|--weights 0.5,0.5|--weights 1|--weights needs at least 2 daughters
rg_sp_weights_sum|--weights 0.5,0.5000000000001|--weights 0.5,0.5000001|--weights must sum to 1
rg_sp_d_rank|--d 2|--d 1|numerical rank 2, more than the dimension d = 1
rg_sp_d_max|-|--d 2001|--d needs an integer in \[1, 2000\]
rg_sp_starts_min|--starts 0|--starts -1|--starts needs an integer in \[0, 1000000\]
rg_sp_starts_max|-|--starts 1000001|--starts needs an integer in \[0, 1000000\]
ROWS
ranges "$SCM split --K 2 --M 2 --neuron 0 --activation erf -q -o $W/o/sp.json" <<ROWS
rg_sp_k1_min|--k1 0|--k1 -1|--k1 needs an integer in \[0, 1000\]
rg_sp_k1_max|--k1 1000|--k1 1001|--k1 needs an integer in \[0, 1000\]
ROWS

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
