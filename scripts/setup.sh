#!/usr/bin/env bash
# Sets up everything on a fresh Debian machine with Python 3.11: system packages, the virtual
# environment at .venv, Python dependencies, and the C++ build. Each step is skipped when its
# inputs have not changed, so running it again costs about a second.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
stamps=$root/.stamps
mkdir -p "$stamps"

# System packages: a C++ compiler, CMake, Ninja, GoogleTest, clang with its libFuzzer runtime
# (only recommended by clang, so named) for the libFuzzer target, and the host allocators that
# benchmarks/host_allocator.py compares with glibc's.
need=()
for pkg in g++ cmake ninja-build libgtest-dev clang libclang-rt-14-dev libtcmalloc-minimal4 \
  libjemalloc2; do
  dpkg -s "$pkg" >/dev/null 2>&1 || need+=("$pkg")
done
if [ ${#need[@]} -gt 0 ]; then
  echo "setup: installing ${need[*]}"
  sudo_cmd=""
  [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "${need[@]}" >/dev/null
fi

python=${PYTHON:-python3.11}
command -v "$python" >/dev/null || python=python3
if [ ! -x .venv/bin/python ]; then
  "$python" -m venv .venv
fi
# shellcheck disable=SC1091
. .venv/bin/activate

# Python dependencies and the editable install, redone only when requirements.txt,
# pyproject.toml (entry points, packages) or the second plugin changes. The second CPU plugin (a
# newer PJRT API, which scripts/test.sh also runs the suites on) is installed without its declared
# jax dependency, which only its own users need.
# vLLM (serving, torch_pjrt.vllm) comes from its source distribution built with no native code
# (VLLM_TARGET_DEVICE=empty) against the torch installed here; its requirements are pinned in
# requirements-vllm.txt, and xgrammar is installed without its triton dependency.
second_plugin=lammps-jax-pjrt-cpu==0.11.2
vllm_version=0.29.0
vllm_pkgs="vllm==$vllm_version xgrammar==0.2.9"
req_hash=$( (cat requirements.txt requirements-vllm.txt pyproject.toml; echo "$second_plugin $vllm_pkgs") |
  sha256sum | cut -d' ' -f1)

# C++ build (Ninja; a no-change rebuild does nothing). It needs only torch and the PJRT header
# (xla-cpu-pjrt), so on a fresh machine it runs while pip installs the rest.
build_cpp() {
  if [ ! -f build/build.ninja ]; then
    cmake -S . -B build -G Ninja -DPython3_EXECUTABLE="$root/.venv/bin/python" >/dev/null
  fi
  cmake --build build
}

if [ "$(cat "$stamps/requirements" 2>/dev/null)" != "$req_hash" ]; then
  python -m pip install -q --upgrade pip
  python -m pip install -q "$(grep -E '^torch==' requirements.txt)" \
    "$(grep -E '^xla-cpu-pjrt==' requirements.txt)"
  build_cpp >"$stamps/build.log" 2>&1 &
  build_pid=$!
  python -m pip install -q -r requirements.txt -r requirements-vllm.txt
  python -m pip install -q --no-deps "$second_plugin"
  # The build would name itself "$vllm_version+empty", which pip rejects as inconsistent with the
  # release it downloaded: VLLM_VERSION_OVERRIDE keeps the release's version.
  # shellcheck disable=SC2086
  TORCH_DEVICE_BACKEND_AUTOLOAD=0 VLLM_TARGET_DEVICE=empty VLLM_VERSION_OVERRIDE=$vllm_version \
    python -m pip install -q --no-build-isolation --no-deps --no-binary vllm $vllm_pkgs
  # Editable install: registers the torch.backends entry point; the code stays in the checkout.
  TORCH_DEVICE_BACKEND_AUTOLOAD=0 python -m pip install -q --no-build-isolation --no-deps -e .
  echo "setup: Python packages installed after ${SECONDS}s; waiting for the C++ build"
  if ! wait "$build_pid"; then
    cat "$stamps/build.log"
    exit 1
  fi
  tail -1 "$stamps/build.log"
  echo "$req_hash" >"$stamps/requirements"
else
  build_cpp
fi
echo "setup: done in ${SECONDS}s"
