#!/usr/bin/env bash
# Differential fuzzing of device "tpu" against CPU PyTorch, by hand: `bash scripts/fuzz.sh [minutes]
# [fuzz_ops.py options]` runs random (op, eager mode) pairs with random seeds for that long (10
# minutes by default) and prints each distinct finding with a runnable reproducer (the bounded,
# derandomized run is tests/python/test_fuzz.py). Exits 1 when there were findings.
set -euo pipefail
cd "$(dirname "$0")/.."
minutes=${1:-10}
shift || true
exec .venv/bin/python tests/python/fuzz_ops.py --minutes "$minutes" "$@"
