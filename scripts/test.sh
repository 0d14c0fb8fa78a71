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
