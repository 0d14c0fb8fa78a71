#!/usr/bin/env bash
# Fuzzes the StableHLO builder's validation with libFuzzer (tests/cpp/fuzz/builder_fuzz.cpp):
# builds the torch-free layers with clang, AddressSanitizer, UndefinedBehaviorSanitizer and
# coverage in build-fuzz/ and runs the target for the given seconds (default 60). scripts/setup.sh
# installs clang; scripts/test.sh runs one minute. A finding stops the run and leaves its input as
# crash-* in build-fuzz/.
#   bash scripts/fuzz_builder.sh [seconds]
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
dir=$root/build-fuzz
seconds=${1:-60}
flags="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
# shellcheck disable=SC1091
. .venv/bin/activate
if [ ! -f "$dir/build.ninja" ]; then
  CC=clang CXX=clang++ cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" \
    -DTORCH_PJRT_FUZZ=ON -DTORCH_PJRT_EXTENSION_DIR="$dir/extension" \
    -DPython3_EXECUTABLE="$root/.venv/bin/python" >/dev/null
fi
cmake --build "$dir" --target hlo_builder_fuzz
mkdir -p "$dir/corpus"
cd "$dir"
ASAN_OPTIONS=detect_leaks=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ./hlo_builder_fuzz -max_total_time="$seconds" -max_len=256 corpus
