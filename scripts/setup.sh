#!/usr/bin/env bash
# setup.sh: the two set-up commands of README.md.
#   bash scripts/setup.sh run    install what is missing, build, run the default example
#   bash scripts/setup.sh test   install what is missing, build, run the whole test suite
#                                (a release build, then an ASan + UBSan build)
# Everything comes from Debian packages; run as root on a fresh Debian 12.
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(gcc pkg-config meson ninja-build libgsl-dev libsundials-dev libcjson-dev
          libflint-arb-dev   # ball arithmetic of scm certify (docs/certify.md)
          python3 python3-numpy python3-matplotlib python3-mpmath
          python3-venv python3-pip python3-mesonpy
          patchelf   # pip install . (meson-python only recommends it; docs/python.md)
          python3-nbclient python3-nbformat python3-ipykernel   # the notebook test
          libopenmpi-dev openmpi-bin)   # scm-mpi and its test (docs/sweeps.md)

install_missing() {
    local missing=()
    for p in "${PACKAGES[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
    done
    if [ ${#missing[@]} -gt 0 ]; then
        echo "== installing: ${missing[*]}"
        local sudo=""
        [ "$(id -u)" -eq 0 ] || sudo="sudo"
        $sudo apt-get update -q
        DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
    fi
}

build() { # build DIR [meson options...]
    local dir=$1
    shift
    if [ ! -f "$dir/build.ninja" ]; then
        meson setup "$dir" "$@"
    fi
    ninja -C "$dir"
}

case "${1:-}" in
run)
    install_missing
    build build
    mkdir -p out
    ./build/scm run examples/relu_k2.json -o out/relu_k2.result.json --csv out/relu_k2.csv
    ;;
test)
    install_missing
    build build
    meson test -C build --print-errorlogs
    build build-asan -Db_sanitize=address,undefined -Dbuildtype=debug -Db_lundef=false
    ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
        meson test -C build-asan --print-errorlogs
    ;;
*)
    echo "usage: bash scripts/setup.sh run|test" >&2
    exit 2
    ;;
esac
