#!/usr/bin/env bash
# Checks that the C++ extension builds against other torch releases and Python versions than the
# one installed: for each TORCH-PYTHON pair, downloads that torch wheel (pip download --no-deps,
# cached), unpacks its headers and libraries, compiles and links torch_pjrt/_C against them with
# that Python's headers, and checks that every torch/c10 symbol _C needs is defined by that
# wheel's libraries. Run by hand (the Linux wheels are ~0.5 GB CUDA builds), not in CI.
#
#   bash scripts/check_build_matrix.sh [TORCH-PYTHON ...]   default: 2.11.0-3.12 2.12.1-3.11 2.13.0-3.12
#
# Needs a pythonX.Y with its headers for each pair (python3.12 or a pyenv 3.12) and .venv (for
# pjrt_c_api.h). WHEEL_CACHE (default ~/.cache/torch_pjrt/wheels) keeps the wheels; the builds go
# to build-matrix/.
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD
cache=${WHEEL_CACHE:-$HOME/.cache/torch_pjrt/wheels}
work=$root/build-matrix
mkdir -p "$cache" "$work"
pairs=("$@")
[ ${#pairs[@]} -gt 0 ] || pairs=(2.11.0-3.12 2.12.1-3.11 2.13.0-3.12)
header_dir=$("$root/.venv/bin/python" -c "import os, xla_plugins.xla_cpu_pjrt as p; print(os.path.join(os.path.dirname(p.__file__), 'include'))") ||
  { echo "check_build_matrix: run scripts/setup.sh first (pjrt_c_api.h)"; exit 1; }

find_python() {  # an interpreter of version $1 that has its development headers
  local candidate
  for candidate in "python$1" "$(pyenv root 2>/dev/null)"/versions/"$1"*/bin/"python$1"; do
    if "$candidate" -c "import sysconfig, os, sys; sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()['include'], 'Python.h')))" 2>/dev/null; then
      command -v "$candidate" || echo "$candidate"
      return 0
    fi
  done
  return 1
}

check() {
  local torch_version=${1%-*} py_version=${1#*-}
  local tag=cp${py_version/./}
  local python
  python=$(find_python "$py_version") || { echo "no python$py_version with headers"; return 1; }
  local wheel
  wheel=$(ls "$cache"/torch-"$torch_version"-"$tag"-"$tag"-manylinux*_x86_64.whl 2>/dev/null | head -n 1)
  if [ -z "$wheel" ]; then
    pip download -q --no-deps --only-binary=:all: --python-version "$py_version" \
      --platform manylinux_2_28_x86_64 -d "$cache" "torch==$torch_version" || return 1
    wheel=$(ls "$cache"/torch-"$torch_version"-"$tag"-"$tag"-manylinux*_x86_64.whl | head -n 1)
  fi
  local dir=$work/$1
  if [ ! -f "$dir/torch/lib/libtorch_cpu.so" ]; then
    rm -rf "$dir/torch" && mkdir -p "$dir"
    # Headers and the libraries _C links against; not the CUDA libraries.
    unzip -q -o "$wheel" 'torch/include/*' 'torch/lib/libc10.so' 'torch/lib/libtorch.so' \
      'torch/lib/libtorch_cpu.so' 'torch/lib/libtorch_python.so' 'torch/version.py' -d "$dir" || return 1
  fi
  echo "torch $(grep -oP "(?<=__version__ = ')[^']+" "$dir/torch/version.py") with $("$python" --version)"
  cmake -S "$root" -B "$dir/build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTORCH_PJRT_BUILD_TESTS=OFF \
    -DPython3_EXECUTABLE="$python" -DPJRT_INCLUDE_DIR="$header_dir" \
    -DTORCH_PJRT_TORCH_DIR="$dir/torch" -DTORCH_PJRT_EXTENSION_DIR="$dir/ext" >"$dir/cmake.log" 2>&1 ||
    { tail -n 20 "$dir/cmake.log"; return 1; }
  # -k 0: every file that fails to compile is listed, not just the first.
  cmake --build "$dir/build" --target _C -- -k 0 >"$dir/build.log" 2>&1 ||
    { grep -A 6 "error:" "$dir/build.log" | head -n 80; return 1; }
  local ext
  ext=$(ls "$dir"/ext/_C*.so)
  # The link check: every symbol _C leaves undefined must be defined by the wheel's libraries, the
  # C and C++ runtimes, or (Py*) the interpreter.
  local system
  system=$(ldd "$(command -v "$python")" "$root"/.venv/bin/python 2>/dev/null | awk '/=>/ {print $3} /ld-linux/ {print $1}' | sort -u)
  nm -D --defined-only "$dir"/torch/lib/*.so $(c++ -print-file-name=libstdc++.so.6) \
    $(c++ -print-file-name=libgcc_s.so.1) $system 2>/dev/null | awk '{print $3}' | sed 's/@.*//' |
    sort -u >"$dir/defined.txt"
  nm -D --undefined-only "$ext" | awk '$1 == "U" {print $2}' | sed 's/@.*//' | grep -v -E '^_?Py' | sort -u >"$dir/needed.txt"
  local missing
  missing=$(comm -23 "$dir/needed.txt" "$dir/defined.txt")
  if [ -n "$missing" ]; then
    echo "undefined in torch $torch_version's libraries:"
    echo "$missing" | head -n 20 | c++filt
    return 1
  fi
  echo "ok: $(basename "$ext"), all $(wc -l <"$dir/needed.txt") undefined symbols resolved"
}

status=0
results=()
for pair in "${pairs[@]}"; do
  echo "== $pair"
  if check "$pair"; then results+=("$pair ok"); else results+=("$pair FAILED"); status=1; fi
done
printf '%s\n' "${results[@]}"
exit $status
