#!/usr/bin/env bash
# Sets everything up, then runs the whole test suite: the C++ layers (GoogleTest via ctest) and the
# Python package (pytest).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# shellcheck disable=SC1091
. .venv/bin/activate
(cd build && ctest --output-on-failure -j2)
python -m pytest -q tests/python "$@"
# The suites that compare ops with CPU PyTorch, again with PyTorch's scalar CPU kernels: they must
# not depend on this machine's vector path (special values are checked against fixed values).
ATEN_CPU_CAPABILITY=default python -m pytest -q tests/python/test_activations.py \
  tests/python/test_elementwise_more.py tests/python/test_ops.py tests/python/test_reductions_more.py \
  tests/python/test_softmax.py tests/python/test_normalization.py tests/python/test_losses.py \
  tests/python/test_pooling.py "$@"
