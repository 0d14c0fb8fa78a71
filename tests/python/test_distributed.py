"""The tpu_dist c10d backend: multi-process jobs under torchrun on loopback (2 and 4 ranks, world
size 1), failure behaviour, the launcher helpers, create options per plugin, and the PJRT
key-value callbacks against a real TCPStore. The per-rank checks are in dist_checks.py."""

import json
import os
import socket
import subprocess
import sys
import textwrap
import threading
import time

import pytest
import torch
import torch.distributed as dist

import torch_pjrt
from torch_pjrt import _C, plugins
from torch_pjrt.distributed import launch

HERE = os.path.dirname(os.path.abspath(__file__))
CHECKS = os.path.join(HERE, "dist_checks.py")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def worker_env(**extra):
    env = dict(os.environ)
    for name in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "MASTER_ADDR",
                 "MASTER_PORT", "TORCH_PJRT_CPU_DEVICE_COUNT"):  # fmt: skip
        env.pop(name, None)
    env.update(GLOO_SOCKET_IFNAME="lo", OMP_NUM_THREADS="1", **extra)
    return env


def torchrun(nproc, suites, timeout=600, **env):
    cmd = [sys.executable, "-m", "torch.distributed.run", f"--nproc-per-node={nproc}",
           "--rdzv-backend=c10d", f"--rdzv-endpoint=127.0.0.1:{free_port()}", CHECKS, suites]  # fmt: skip
    proc = subprocess.run(cmd, env=worker_env(**env), capture_output=True, text=True,
                          timeout=timeout)  # fmt: skip
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-6000:]
    for rank in range(nproc):
        assert f"rank {rank}: ok" in out, out[-3000:]
    return out


def test_two_ranks_collectives_training_dtensor_checkpoint_compile(tmp_path):
    torchrun(2, "collectives,training,dtensors,compiled", DIST_CHECKS_TMP=str(tmp_path / "ckpt"))


def test_four_ranks_collectives_and_subgroups():
    torchrun(4, "collectives,subgroups")


@pytest.mark.parametrize("transport", ["host", "device"])
def test_world_size_one(transport):
    # The device transport runs here too: its collective programs with a group of one.
    out = torchrun(1, "collectives", TORCH_PJRT_DIST_TRANSPORT=transport,
                   DIST_CHECKS_BACKEND="tpu")  # fmt: skip
    assert "rank 0: ok" in out
