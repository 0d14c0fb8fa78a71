"""Runs a benchmark's native PyTorch measurements (CPU or CUDA eager) in a child process that never
imports torch_pjrt: on 2 cores the plugin's idle worker threads would slow PyTorch's CPU loops, and
once a PrivateUse1 backend is registered, torch's accelerator is PrivateUse1 and CUDA's backward
fails (autograd finds no stream for CUDA nodes)."""

import os
import subprocess
import sys


def run(script, args, *flags):
    """Runs `script` with `flags` and the --warmup/--rounds/--steps of `args`; its stdout."""
    counts = [
        "--warmup",
        str(args.warmup),
        "--rounds",
        str(args.rounds),
        "--steps",
        str(args.steps),
    ]
    child = subprocess.run(
        [sys.executable, script, *flags, *counts],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "TORCH_DEVICE_BACKEND_AUTOLOAD": "0"},
    )
    if child.returncode != 0:
        raise RuntimeError(f"{' '.join(flags)} child failed:\n{child.stderr[-4000:]}")
    return child.stdout
