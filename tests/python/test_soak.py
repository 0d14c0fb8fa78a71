"""A short soak (scripts/soak.py): 300 training steps per mode, each in its own process, must leave
RSS, memory mappings, device memory, executables and compiles flat after warm-up, with finite and
decreasing losses. The 10,000-step runs are by hand: `python scripts/soak.py --steps 10000`."""

import json
import os
import subprocess
import sys

import pytest

SOAK = os.path.join(os.path.dirname(__file__), "..", "..", "scripts", "soak.py")


@pytest.mark.parametrize("mode", ["fused", "strict", "compile"])
def test_short_soak_is_flat(mode, tmp_path):
    # A fresh process: the footprint of earlier tests in this one would blur the figures.
    r = subprocess.run(
        [sys.executable, SOAK, "--steps", "300", "--every", "10", "--modes", mode],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env=dict(os.environ, TORCH_PJRT_CACHE_DIR=str(tmp_path)),
    )
    summary = json.loads(r.stdout.strip().splitlines()[-1])
    result = summary["modes"][mode]
    assert r.returncode == 0, json.dumps(result["figures"], indent=1)
    assert result["ok"] and result["losses_finite"] and result["loss_decreased"]
    figures = result["figures"]
    for key in ("device_bytes", "executables", "compiles"):
        assert figures[key]["growth"] == 0, (key, figures[key])
    assert figures["executables"]["last"] > 0
    assert result["loss_last"] < 0.5 * result["loss_first"]


def test_check_flags_growth():
    """The verdict catches a leak: executables that grow in the second half are not flat."""
    sys.path.insert(0, os.path.dirname(SOAK))
    from soak import check

    base = {"rss_bytes": 100 << 20, "maps": 900, "device_bytes": 1000, "executables": 5,
            "compiles": 5, "evictions": 0, "step_seconds": 0.01}  # fmt: skip
    samples = [dict(base, step=i, loss=1.0 / (i + 1)) for i in range(20)]
    assert check(samples)["ok"]
    for i in range(15, 20):
        samples[i] = dict(samples[i], executables=6, maps=920)
    verdict = check(samples)
    assert not verdict["ok"]
    assert not verdict["figures"]["executables"]["flat"]
    assert not verdict["figures"]["maps"]["flat"]
    assert verdict["figures"]["rss_bytes"]["flat"]
