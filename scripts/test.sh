#!/usr/bin/env bash
# Sets everything up, then runs the whole test suite: the C++ layers (GoogleTest via ctest) and the
# Python package (pytest) on the default CPU plugin (xla-cpu-pjrt, PJRT API 0.81), then the C++
# layers and the model-training, compile, eager-mode and plugin tests on the second CPU plugin
# (lammps-jax-pjrt-cpu, PJRT API 0.115). Arguments go to the first pytest run.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# shellcheck disable=SC1091
. .venv/bin/activate
(cd build && ctest --output-on-failure -j2)
python -m pytest -q tests/python "$@"

second=$(python -c "import lammps_jax_pjrt_cpu as p; print(p.PLUGIN_PATH)")
echo "== second plugin: $second"
(cd build && TORCH_PJRT_TEST_PLUGIN=$second ctest --output-on-failure -j2)
TORCH_PJRT_PLUGIN=$second python -m pytest -q tests/python/test_models.py \
  tests/python/test_compile.py tests/python/test_eager_modes.py tests/python/test_plugins.py
