#!/usr/bin/env bash
# The GPU check, for an NVIDIA machine with torch, jax-cuda13-pjrt (or -cuda12-), CMake, Ninja, a
# C++ compiler and pytest, and no network: builds torch_pjrt against that machine's torch, runs a GPU
# subset of the test suite on the XLA CUDA plugin (ops against CPU, the eager modes, compile,
# models), then the benchmarks next to native CUDA eager and Inductor on the same GPU. Writes
# device_check.log, info.txt, pytest logs and JUnit XML, one JSON per benchmark and summary.json to
# the output folder. Stops at the first failing step unless --keep-going.
#
#   bash scripts/device_check.sh --prepare     here, before sending the tree: copies pjrt_c_api.h
#                                              (and Python 3.12 headers) into .device/ (ignored),
#                                              with the XLA-floor benchmark's JAX programs
#   bash scripts/device_check.sh [--dry-run] [--keep-going] [--skip STEPS] [OUT_DIR]
#
# OUT_DIR defaults to $OUT, else ./device_check_out. --dry-run does everything on the XLA CPU plugin
# instead (no GPU needed), with shorter benchmarks. --skip takes a comma-separated list of steps:
# build, info, tests, op_overhead, eager_modes, compile, amp, first_step, xla_floor, mfu, serving.
# PYTHON selects the interpreter
# (default: python3, or .venv/bin/python in a dry run); JOBS the test processes (default 6,
# 2 in a dry run); DEVICE_CHECK_BUDGET_S the whole run's time (default 570 s,
# an hour in a dry run).
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD

dry_run=0 keep_going=0 prepare=0 skip="" out=""
while [ $# -gt 0 ]; do
  case "$1" in
    --dry-run) dry_run=1 ;;
    --keep-going) keep_going=1 ;;
    --prepare) prepare=1 ;;
    --skip) skip=",$2,"; shift ;;
    --skip=*) skip=",${1#--skip=},";;
    -h | --help) sed -n '2,20p' "$0"; exit 0 ;;
    -*) echo "device_check: unknown option $1" >&2; exit 2 ;;
    *) out=$1 ;;
  esac
  shift
done

if [ "$prepare" = 1 ]; then
  # The PJRT header comes from xla-cpu-pjrt, which the GPU machine lacks; its Python may lack
  # development headers, so 3.12's travel too when this machine has them.
  py=${PYTHON:-$root/.venv/bin/python}
  header=$("$py" -c "import os, xla_plugins.xla_cpu_pjrt as p; print(os.path.join(os.path.dirname(p.__file__), 'include', 'pjrt_c_api.h'))") ||
    { echo "device_check --prepare: xla-cpu-pjrt is not installed for $py (run scripts/setup.sh)" >&2; exit 1; }
  mkdir -p .device/include
  cp "$header" .device/include/
  echo "copied $header -> .device/include/"
  for py312 in python3.12 "$(pyenv root 2>/dev/null)"/versions/3.12*/bin/python3.12; do
    inc=$("$py312" -c "import sysconfig; print(sysconfig.get_paths()['include'])" 2>/dev/null) || continue
    if [ -f "$inc/Python.h" ]; then
      rm -rf .device/python3.12 && mkdir -p .device/python3.12 && cp -r "$inc" .device/python3.12/include
      echo "copied $inc -> .device/python3.12/include"
      break
    fi
  done
  # The XLA-floor benchmark's JAX programs, lowered here: the GPU machine has no jax.
  TORCH_DEVICE_BACKEND_AUTOLOAD=0 "$py" benchmarks/xla_floor.py --lower-only \
    --cases gpt_small,gpt_large,llama_100m --write-programs .device/xla_floor >/dev/null &&
    echo "lowered the XLA-floor programs -> .device/xla_floor/"
  du -sh .device
  exit 0
fi

out=${out:-${OUT:-$root/device_check_out}}
mkdir -p "$out"
out=$(cd "$out" && pwd)
log=$out/device_check.log
: >"$log"
steps_file=$out/steps.tsv
: >"$steps_file"
if [ "$dry_run" = 1 ]; then
  python=${PYTHON:-$root/.venv/bin/python}
  plugin=cpu
  build_dir=$root/build-device-dry
else
  python=${PYTHON:-python3}
  plugin=cuda
  build_dir=$root/build-device
fi
jobs=${JOBS:-$([ "$dry_run" = 1 ] && echo 2 || echo 6)}
export PYTHONPATH=$root${PYTHONPATH:+:$PYTHONPATH}
export TORCH_PJRT_PLUGIN=$plugin
export PYTHONUNBUFFERED=1
start_all=$(date +%s)
# The whole run stays within the budget (the device tool stops a command at 600 s): each step's
# limit is cut to what is left, and steps with no time left are recorded as such.
budget=${DEVICE_CHECK_BUDGET_S:-$([ "$dry_run" = 1 ] && echo 3600 || echo 570)}
# A dry run on a small machine gets longer step limits (the limits below are for 16 cores).
scale=$([ "$dry_run" = 1 ] && echo "${DEVICE_CHECK_LIMIT_SCALE:-5}" || echo "${DEVICE_CHECK_LIMIT_SCALE:-1}")
deadline=$((start_all + budget))

say() { echo "[device_check $(date +%H:%M:%S) +$(($(date +%s) - start_all))s] $*" | tee -a "$log"; }

finish() {
  "$python" - "$out" "$dry_run" <<'EOF' 2>&1 | tee -a "$log"
import json, pathlib, sys
out = pathlib.Path(sys.argv[1])
steps = [dict(zip(("step", "status", "seconds"), line.split("\t")))
         for line in (out / "steps.tsv").read_text().splitlines() if line]
bench = {}
for name in ("op_overhead", "eager_modes", "compile", "amp", "first_step", "xla_floor", "mfu", "serving"):
    f = out / f"{name}.json"
    try:
        bench[name] = json.loads(f.read_text())
    except (OSError, ValueError):
        pass
summary = {"dry_run": sys.argv[2] == "1", "steps": steps, "benchmarks": bench}
(out / "summary.json").write_text(json.dumps(summary, indent=1))
print("summary:", json.dumps(steps))
EOF
}
trap finish EXIT

# step NAME TIMEOUT_S FATAL COMMAND...: runs COMMAND with a time limit, its output in the log.
failed=0
step() {
  local name=$1 limit=$2 fatal=$3
  shift 3
  if [[ "$skip" == *",$name,"* ]]; then
    say "skip $name"
    printf '%s\tskipped\t0\n' "$name" >>"$steps_file"
    return 0
  fi
  local left=$((deadline - $(date +%s)))
  if [ "$left" -lt 15 ]; then
    say "skip $name: the ${budget}s budget is spent"
    printf '%s\tno time\t0\n' "$name" >>"$steps_file"
    failed=1
    return 0
  fi
  limit=$((limit * scale))
  [ "$left" -lt "$limit" ] && limit=$left
  say "start $name (limit ${limit}s)"
  local t0 rc
  t0=$(date +%s)
  # The step functions run in a child bash (timeout runs programs, not functions).
  timeout --kill-after=10 "$limit" bash -c '"$@"' "$name" "$@" 2>&1 | tee -a "$log"
  rc=${PIPESTATUS[0]}
  local took=$(($(date +%s) - t0))
  if [ "$rc" = 0 ]; then
    say "ok $name (${took}s)"
    printf '%s\tok\t%s\n' "$name" "$took" >>"$steps_file"
    return 0
  fi
  [ "$rc" = 124 ] && say "FAILED $name: timed out after ${limit}s" || say "FAILED $name: exit $rc (${took}s); see $log"
  printf '%s\tfailed\t%s\n' "$name" "$took" >>"$steps_file"
  failed=1
  if [ "$fatal" = 1 ] || [ "$keep_going" = 0 ]; then
    say "stopping at the first broken step ($name)"
    exit 1
  fi
}

preflight() {
  "$python" - "$dry_run" "$root" <<'EOF'
import glob, os, platform, shutil, site, sys, sysconfig
dry, root = sys.argv[1] == "1", sys.argv[2]
print("python", sys.version.split()[0], sys.executable)
import torch
print("torch", torch.__version__, "cuda", torch.version.cuda, "available", torch.cuda.is_available())
if torch.cuda.is_available():
    print("gpu", torch.cuda.get_device_name(0), torch.cuda.device_count(), "device(s)")
elif not dry:
    sys.exit("torch sees no GPU: run with --dry-run on a machine without one")
for tool in ("cmake", "ninja", "c++"):
    print(tool, shutil.which(tool) or "MISSING")
    if not shutil.which(tool):
        sys.exit(f"{tool} is not installed")
dirs = list(dict.fromkeys(site.getsitepackages() + [p for p in sys.path if os.path.isdir(p)]))
plugins = [p for d in dirs for p in glob.glob(os.path.join(d, "jax_plugins/xla_cuda1[23]/xla_cuda_plugin.so"))]
print("cuda plugin", plugins[0] if plugins else "not installed")
if not plugins and not dry:
    sys.exit("jax-cuda13-pjrt (or jax-cuda12-pjrt) is not installed")
# What the CUDA plugin needs besides itself (torch_pjrt.plugins preloads the libraries and points
# XLA_FLAGS at the ptxas/libdevice folder): XLA compiles PTX with ptxas or libnvJitLink.
for what, pattern in [("nccl", "nvidia/nccl/lib/libnccl.so.2"), ("ptxas", "nvidia/*/bin/ptxas"),
                      ("libdevice", "nvidia/*/nvvm/libdevice/libdevice.10.bc"),
                      ("nvjitlink", "nvidia/*/lib/libnvJitLink.so*"), ("cudnn", "nvidia/cudnn/lib/libcudnn.so.9")]:
    found = [p for d in dirs for p in glob.glob(os.path.join(d, pattern))]
    print(what, found[0] if found else "not found", "(PATH: %s)" % shutil.which("ptxas") if what == "ptxas" else "")
print("XLA_FLAGS", os.environ.get("XLA_FLAGS", ""))
header = os.path.join(root, ".device/include/pjrt_c_api.h")
if not os.path.exists(header):
    try:
        import xla_plugins.xla_cpu_pjrt  # noqa: F401
        print("pjrt header: from xla-cpu-pjrt")
    except ImportError:
        sys.exit("no pjrt_c_api.h: run 'bash scripts/device_check.sh --prepare' where xla-cpu-pjrt "
                 "is installed and send .device/ along")
else:
    print("pjrt header:", header)
inc = sysconfig.get_paths()["include"]
print("Python.h:", "present" if os.path.exists(os.path.join(inc, "Python.h")) else f"missing in {inc}")
print("cores", os.cpu_count(), "machine", platform.machine())
EOF
}

build() {
  # The C++ compiler on PATH, not $CXX: the H200 image's CXX (/opt/gcc/bin/g++) links libstdc++
  # into the extension statically, and its iostreams then crash beside torch's shared libstdc++.
  local cxx=${DEVICE_CHECK_CXX:-$(command -v c++)}
  echo "C++ compiler: $cxx ($("$cxx" --version | head -n 1)); CXX was ${CXX:-unset}"
  local args=(-S "$root" -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
    -DTORCH_PJRT_BUILD_TESTS=OFF -DPython3_EXECUTABLE="$(command -v "$python")"
    -DCMAKE_CXX_COMPILER="$cxx")
  [ -f "$root/.device/include/pjrt_c_api.h" ] && args+=(-DPJRT_INCLUDE_DIR="$root/.device/include")
  local inc version
  inc=$("$python" -c "import sysconfig; print(sysconfig.get_paths()['include'])")
  version=$("$python" -c "import sys; print(f'{sys.version_info[0]}.{sys.version_info[1]}')")
  if [ ! -f "$inc/Python.h" ] && [ -f "$root/.device/python$version/include/Python.h" ]; then
    echo "using the Python headers brought in .device/python$version/include"
    args+=(-DPython3_INCLUDE_DIR="$root/.device/python$version/include")
  fi
  TORCH_DEVICE_BACKEND_AUTOLOAD=0 cmake "${args[@]}" && cmake --build "$build_dir" -j "$(nproc)"
}

info() {
  "$python" -m torch_pjrt.info | tee "$out/info.txt"
  # One op against the CPU, as a smoke test before the suite.
  "$python" -c "
import torch, torch_pjrt
a = torch.randn(256, 256, dtype=torch.float64)
got = (a.float().to('tpu') @ a.float().to('tpu')).cpu().double()
err = ((got - a @ a).abs().max() / (a @ a).abs().max()).item()
print('matmul 256x256 rel. error vs float64:', err)
assert err < 1e-5, 'float32 matmul lost precision (TF32?)'
"
}

# The GPU subset: ops against the CPU, the eager modes, compile, models, plugin negotiation. Test ids
# are dealt round-robin to $jobs pytest processes (the GPT tests are the long ones).
test_files="test_ops.py test_eager_modes.py test_compile.py test_models.py test_plugins.py test_precision.py test_amp.py"
tests() {
  local files=() shard pids=() rc=0
  for f in $test_files; do files+=("tests/python/$f"); done
  "$python" -m pytest -q -p no:cacheprovider --collect-only "${files[@]}" | grep '::' >"$out/test_ids.txt" ||
    { echo "collecting the tests failed"; return 1; }
  echo "$(wc -l <"$out/test_ids.txt") tests in $jobs shards"
  for ((shard = 0; shard < jobs; shard++)); do
    local ids=()
    mapfile -t ids < <(awk -v n="$jobs" -v k="$shard" 'NR % n == k' "$out/test_ids.txt")
    "$python" -m pytest -q -p no:cacheprovider --maxfail=25 --junitxml="$out/pytest_$shard.xml" \
      "${ids[@]}" >"$out/pytest_$shard.log" 2>&1 &
    pids+=($!)
  done
  for ((shard = 0; shard < jobs; shard++)); do
    wait "${pids[$shard]}" || rc=1
    echo "--- shard $shard: $(tail -n 1 "$out/pytest_$shard.log")"
  done
  grep -h -E "^(FAILED|ERROR) " "$out"/pytest_*.log | head -n 60
  return $rc
}

bench() {
  local name=$1
  shift
  "$python" "$@" | tee "$out/$name.out"
  local rc=${PIPESTATUS[0]}
  tail -n 1 "$out/$name.out" >"$out/$name.json"
  return "$rc"
}

if [ "$dry_run" = 1 ]; then
  eager_args=(--modes strict,fused,cpu --skip-tiny --warmup 2 --rounds 1 --steps 2)
  compile_args=(--configs small --ways compiled,fused,cpu_eager --warmup 1 --steps 2 --skip-first-step)
  first_args=(--configs small --ways none)
  overhead_args=(--iters 300)
  amp_args=(--warmup 2 --rounds 1 --steps 2)
  floor_args=(--cases gpt_small --rounds 1 --steps 1)
  mfu_args=(--config small --warmup 1 --steps 1 --repeats 1)
else
  eager_args=(--modes strict,fused,cuda --skip-tiny --warmup 3 --rounds 3 --steps 5)
  compile_args=(--configs large --ways compiled,fused,cuda_eager,inductor_cuda --warmup 2 --steps 10
    --skip-first-step)
  first_args=(--configs large --ways none)
  overhead_args=(--iters 3000)
  amp_args=(--cuda --warmup 2 --rounds 3 --steps 5)
  floor_args=(--cases gpt_small,gpt_large,llama_100m --rounds 3 --steps 5
    --read-programs "$root/.device/xla_floor")
  mfu_args=(--config 350m --warmup 2 --steps 5 --repeats 2)
fi

export -f preflight build info tests bench
export python root out dry_run build_dir jobs test_files
say "torch_pjrt device check: plugin $plugin, output $out, dry run $dry_run"
# Steps run in the order of what the figures are for (the XLA floor, MFU, the eager modes and
# compile against Inductor first), so that the 570 s budget, which the step limits below exceed
# together, cuts the least needed ones: they are then recorded as skipped for time.
step preflight 60 1 preflight
step build 240 1 build
step info 60 1 info
# The JAX programs of the same models on the same plugin (lowered by --prepare) against ours.
step xla_floor 120 0 bench xla_floor benchmarks/xla_floor.py "${floor_args[@]}"
# A ~350M-parameter GPT step in bfloat16: compiled on "tpu", CUDA eager and Inductor-CUDA, as MFU.
step mfu 120 0 bench mfu benchmarks/mfu.py "${mfu_args[@]}"
step eager_modes 120 0 bench eager_modes benchmarks/eager_modes.py "${eager_args[@]}"
step compile 180 0 bench compile benchmarks/compile.py "${compile_args[@]}"
step op_overhead 60 0 bench op_overhead benchmarks/op_overhead.py "${overhead_args[@]}"
# Autotuning picks GEMM algorithms per new shape; the tests compile thousands of small programs.
saved_flags=${XLA_FLAGS-}
[ "$dry_run" = 0 ] && export XLA_FLAGS="${XLA_FLAGS:-} --xla_gpu_autotune_level=0"
step tests 180 0 tests
export XLA_FLAGS=$saved_flags
step amp 90 0 bench amp benchmarks/amp.py "${amp_args[@]}"
step first_step 120 0 bench first_step benchmarks/compile.py "${first_args[@]}"
step serving 240 0 bench serving benchmarks/serving.py --models tiny --prompts 16
say "done in $(($(date +%s) - start_all))s; failed steps: $failed"
exit $failed
