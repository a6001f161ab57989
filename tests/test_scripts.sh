#!/usr/bin/env bash
# test_scripts.sh PYTHON SCRIPTS_DIR: every script of scripts/ answers a bad
# command line with one line naming the problem and a non-zero exit, never
# a traceback: --help prints its usage (exit 0), an unknown option is
# named, and so is an input file that does not exist (scripts/script_args.py;
# the plotting scripts scm calls are tested in test_plots.sh).
set -u
PY=$1
DIR=$2
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
fail=0
ok() { echo "ok: $1"; }
bad() { echo "FAIL: $1"; fail=1; }
NONE="$W/none.json"

# refused NAME PATTERN ARGS...: non-zero exit, PATTERN in stderr, no traceback
refused() {
    local name=$1 pat=$2
    shift 2
    (cd "$W" && "$PY" "$DIR/$name" "$@" > out 2> err)
    local rc=$?
    if [ $rc -eq 0 ]; then
        bad "$name $*: accepted"
    elif grep -q Traceback "$W/err"; then
        bad "$name $*: a traceback: $(tail -n 1 "$W/err")"
    elif ! grep -q -- "$pat" "$W/err"; then
        bad "$name $*: refused (exit $rc) without naming '$pat': $(head -n 2 "$W/err")"
    else
        ok "$name $*: refused ($(head -n 1 "$W/err"))"
    fi
}

n=0
for f in "$DIR"/*.py; do
    name=$(basename "$f")
    case $name in plot_common.py | script_args.py) continue ;; esac # modules
    n=$((n + 1))
    if (cd "$W" && "$PY" "$f" --help > out 2> err) && [ -s "$W/out" ] \
        && ! grep -q Traceback "$W/err"; then
        ok "$name --help"
    else
        bad "$name --help: $(tail -n 2 "$W/err")"
    fi
    refused "$name" "--bogus-option" --bogus-option
done
[ $n -ge 15 ] && ok "$n scripts" || bad "only $n scripts found in $DIR"

# an input that does not exist, in the place each script reads one
refused certify_collect.py "$NONE" "$NONE" "$W/dest"
refused certify_collect.py "$NONE" --table "$NONE" "$W/dest"
refused certify_crosscheck.py "$NONE" "$NONE" "$W"
refused check_layers.py "$NONE" "$NONE"
refused crosscheck_table.py "$NONE" "$NONE"
refused map_table.py "$NONE" "$NONE"
refused plateau_asymptotics.py "$NONE" "$NONE" "$W"
refused plot_certified.py "$NONE" "$NONE" "$W/out.png"
refused plot_simulate.py "$NONE" "$NONE"
refused plot_split.py "$NONE" "$W/out" "$NONE"
refused plot_staircase.py "$NONE" "$W/out" "$NONE"
refused plot_compare.py "$NONE" "$NONE"
refused plot_map.py "$NONE" "$NONE"
refused plot_rules.py "$NONE" "$NONE"
refused plot_lintarget.py "$W/none" "$W/none"
# and a count of arguments out of range
refused compare_agreement.py "3 arguments, not 1" a
refused earlystop_check.py "4 arguments, not 2" a b
refused plot_split.py "2 or more arguments, not 1" "$W/out"
refused symmetric_stability.py "0 arguments, not 1" extra
exit $fail
