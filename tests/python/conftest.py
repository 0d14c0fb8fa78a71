"""Shared fixtures for the torch_pjrt Python tests."""

import pytest
import torch

import torch_pjrt


@pytest.fixture
def counters():
    """Resets the runtime counters and returns a function that reads them."""
    torch_pjrt.metrics.reset()
    return torch_pjrt.metrics.counters


def to_tpu(t):
    return t.to("tpu")


def assert_same(tpu_tensor, cpu_tensor, **kw):
    assert tpu_tensor.device.type == "tpu"
    torch.testing.assert_close(tpu_tensor.cpu(), cpu_tensor, **kw)
