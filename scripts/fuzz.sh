#!/usr/bin/env bash
# fuzz.sh: run the libFuzzer targets (docs/fuzzing.md).
#   bash scripts/fuzz.sh SECONDS [TARGET...]   (targets: config set ansatz runs families seeds; default all)
# Builds build-fuzz/ with clang (-Dfuzz=true, ASan + UBSan), then fuzzes each
# target in turn for SECONDS on one core, starting from tests/fuzz/corpus/<target>.
# The growing corpus goes to build-fuzz/corpus/<target>, crashers to
# build-fuzz/crashers/<target>, the log to build-fuzz/fuzz-<target>.log.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:?usage: fuzz.sh SECONDS [TARGET...]}
shift
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(config set ansatz runs families seeds)
if [ ! -f build-fuzz/build.ninja ]; then
    CC=clang meson setup build-fuzz -Dfuzz=true -Db_sanitize=address,undefined \
        -Db_lundef=false -Dbuildtype=debug -Doptimization=1
fi
ninja -C build-fuzz
for t in "${targets[@]}"; do
    mkdir -p "build-fuzz/corpus/$t" "build-fuzz/crashers/$t"
    cp -n tests/fuzz/corpus/"$t"/* "build-fuzz/corpus/$t/" 2>/dev/null || true
    UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 ASAN_OPTIONS=detect_leaks=1 \
        "build-fuzz/tests/fuzz_$t" -max_total_time="$secs" -max_len=4096 -timeout=10 \
        -rss_limit_mb=2048 -dict=tests/fuzz/scm.dict -print_final_stats=1 \
        -artifact_prefix="build-fuzz/crashers/$t/" "build-fuzz/corpus/$t" \
        >"build-fuzz/fuzz-$t.log" 2>&1 || echo "fuzz_$t stopped with status $? (see build-fuzz/fuzz-$t.log)"
done
