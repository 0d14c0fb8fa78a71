"""benchmarks/xla_floor.py on the tests' tiny GPT: the JAX program it runs through run_stablehlo,
the same step as three JAX programs (cut where torch.compile cuts it) and the torch ways
(compiled, compiled with Dynamo tracing backward(), Fused, Strict) agree, forward and AdamW
training step, so the benchmark compares equal work."""

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "xla_floor.py"


def test_every_way_matches_the_jax_program():
    command = [sys.executable, str(SCRIPT), "--cases", "gpt_tiny", "--rounds", "1", "--steps", "1",
               "--ways", "jax,jax_split,compiled,compiled_bwd,fused,strict"]  # fmt: skip
    run = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    result = json.loads(run.stdout.strip().splitlines()[-1])
    for kind in ("forward", "train"):
        entry = result[f"gpt_tiny_{kind}"]
        for way in ("compiled", "fused", "strict"):
            assert entry[f"{way}_s"] > 0 and entry[f"{way}_vs_jax"] > 0
            assert 0 < entry[f"{way}_host_s"] <= entry[f"{way}_s"]  # one thread's CPU time
        # the compiled way's host time inside torch_pjrt's program calls
        assert 0 < entry["compiled_replay_host_s"] < entry["compiled_host_s"]
        assert "fused_replay_host_s" not in entry
    for way in ("jax_split", "compiled_bwd"):  # training steps only
        assert result["gpt_tiny_train"][f"{way}_s"] > 0
        assert f"{way}_s" not in result["gpt_tiny_forward"]
    assert "VALUES DIFFER" not in run.stdout
