#!/usr/bin/env bash
# Sets everything up, then runs the whole test suite: the C++ layers (GoogleTest via ctest, then
# again built with ASan and UBSan, and the runtime's with TSan; one minute of libFuzzer on the
# StableHLO builder) and the Python package (pytest) on the default CPU plugin (lammps-jax-pjrt-cpu,
# PJRT API 0.115), then the C++ layers and the model-training, compile, eager-mode, plugin and
# custom-kernel tests on the other CPU plugin (xla-cpu-pjrt, PJRT API 0.81, the version of the
# header), and the op suites that compare with CPU PyTorch once more with its scalar CPU kernels.
# Arguments go to the first pytest run.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# shellcheck disable=SC1091
. .venv/bin/activate
default=$(python -c "import lammps_jax_pjrt_cpu as p; print(p.PLUGIN_PATH)")  # preferred when installed
(cd build && TORCH_PJRT_TEST_PLUGIN=$default ctest --output-on-failure -j2)
bash scripts/sanitize.sh  # the same GoogleTests under AddressSanitizer + UndefinedBehaviorSanitizer
bash scripts/sanitize.sh --thread  # the runtime's GoogleTests under ThreadSanitizer
bash scripts/fuzz_builder.sh 60  # libFuzzer on the StableHLO builder's validation, one minute
# The default plugin, found as users find it; --durations lists the slowest tests (the suite's
# budget is about 30 minutes)
python -m pytest -q --durations=40 tests/python "$@"

second=$(python -c "import os, xla_plugins.xla_cpu_pjrt as p; print(os.path.join(os.path.dirname(p.__file__), 'xla_cpu_pjrt.so'))")
echo "== second plugin: $second"
(cd build && TORCH_PJRT_TEST_PLUGIN=$second ctest --output-on-failure -j2)
TORCH_PJRT_PLUGIN=$second python -m pytest -q tests/python/test_models.py \
  tests/python/test_compile.py tests/python/test_eager_modes.py tests/python/test_plugins.py \
  tests/python/test_custom_kernels.py  # its StableHLO (1.13.3) is older than JAX's: kernels are downgraded
# The suites that compare ops with CPU PyTorch, again with PyTorch's scalar CPU kernels: they must
# not depend on this machine's vector path (special values are checked against fixed values).
ATEN_CPU_CAPABILITY=default python -m pytest -q tests/python/test_activations.py \
  tests/python/test_elementwise_more.py tests/python/test_ops.py tests/python/test_reductions_more.py \
  tests/python/test_softmax.py tests/python/test_normalization.py tests/python/test_losses.py \
  tests/python/test_pooling.py
