#!/usr/bin/env bash
# Builds the torch-free C++ layers (runtime, hlo, graph, lowering, collectives) and their GoogleTests
# with AddressSanitizer + UndefinedBehaviorSanitizer in build-asan/, and runs the tests on the
# default CPU plugin: any sanitizer report fails the run. With --thread: ThreadSanitizer in
# build-tsan/ over the runtime's tests, whose asynchronous paths (completion callbacks on the
# plugin's threads, the timeline behind events, host leases) are where threads meet; with
# --thread --all, over every layer's tests. The PJRT plugin itself is not instrumented; leak
# checking is off, since XLA keeps process-lifetime allocations by design. scripts/test.sh runs
# the ASan+UBSan build (about 8 minutes to build on 2 cores, 20 s to run) and the runtime's TSan
# one (20 s to build, 10 s to run); --thread --all (70 s to run) is run by hand.
#
#   bash scripts/sanitize.sh [--thread [--all]] [ctest arguments, e.g. -R graph]
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
dir=$root/build-asan
flags="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
targets=(runtime_test hlo_test graph_test collectives_test)
only=()
if [ "${1:-}" = "--thread" ]; then
  shift
  dir=$root/build-tsan
  flags="-fsanitize=thread"
  if [ "${1:-}" = "--all" ]; then
    shift
  else
    targets=(runtime_test)
    only=(-R '^runtime\.')
  fi
fi
# shellcheck disable=SC1091
. .venv/bin/activate
if [ ! -f "$dir/build.ninja" ]; then
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS="$flags" \
    -DCMAKE_EXE_LINKER_FLAGS="$flags" -DCMAKE_MODULE_LINKER_FLAGS="$flags" \
    -DTORCH_PJRT_EXTENSION_DIR="$dir/extension" -DPython3_EXECUTABLE="$root/.venv/bin/python" >/dev/null
fi
cmake --build "$dir" --target "${targets[@]}" fake_pjrt_plugin
plugin=$(python -c "import lammps_jax_pjrt_cpu as p; print(p.PLUGIN_PATH)")
# allocator_may_return_null: a test asks the plugin for 4 TiB, which must fail as out of memory.
export ASAN_OPTIONS=detect_leaks=0:abort_on_error=0:halt_on_error=1:allocator_may_return_null=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# The plugin is not instrumented: TSan cannot see its atomics, and reported its allocator calls
# as races (freed on its worker threads). Its own accesses are ignored; ours, callbacks on its
# threads included, are checked.
export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1:ignore_noninstrumented_modules=1
(cd "$dir" && TORCH_PJRT_TEST_PLUGIN=$plugin ctest --output-on-failure -j2 "${only[@]}" "$@")
