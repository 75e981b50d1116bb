#!/usr/bin/env bash
# The README's second command: build etsim and run the whole test suite.
# ETSIM_BUILD_DIR and extra cmake arguments select other builds (CI uses
# this for the sanitizer build).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${ETSIM_BUILD_DIR:-build}
cmake -S . -B "$BUILD" "${@:--DCMAKE_BUILD_TYPE=Release}" >/dev/null
cmake --build "$BUILD" -j"$(nproc)"
ctest --test-dir "$BUILD" --output-on-failure -j"$(nproc)"
