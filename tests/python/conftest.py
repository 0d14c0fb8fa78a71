"""Shared fixtures for the torch_pjrt Python tests."""

import os
import subprocess
import sys

import pytest
import torch

import torch_pjrt


@pytest.fixture
def counters():
    """Resets the runtime counters and returns a function that reads them."""
    torch_pjrt.metrics.reset()
    return torch_pjrt.metrics.counters


@pytest.fixture(params=["strict", "fused"])
def mode(request):
    """Runs the test in Strict and in Fused eager mode (files that want every mode override it;
    a test's own parametrize of `mode` takes precedence)."""
    with torch_pjrt.eager_mode(request.param):
        yield request.param


@pytest.fixture
def no_fallback(counters):
    """Fails the test when an op ran through the CPU fallback (files use it for every test with
    `pytestmark = pytest.mark.usefixtures("no_fallback")`)."""
    yield
    assert counters()["cpu_fallbacks"] == {}


def to_tpu(t):
    return t.to("tpu")


def assert_same(tpu_tensor, cpu_tensor, **kw):
    assert tpu_tensor.device.type == "tpu"
    torch.testing.assert_close(tpu_tensor.cpu(), cpu_tensor, **kw)


def run_python(code, timeout=120, **env):
    """Runs `python -c code` in a fresh interpreter with `env` added to the environment; returns
    the CompletedProcess (stdout and stderr as text)."""
    return subprocess.run(
        [sys.executable, "-c", code],
        check=False,
        capture_output=True,
        text=True,
        env=dict(os.environ, **env),
        timeout=timeout,
    )
