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
#   9   a refused `scm compare` changes no file.
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

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
