"""The compile cache is structural, and the counters report what happened."""

import torch

import torch_pjrt


def test_same_structure_compiles_once(counters):
    a = torch.randn(5, 6).to("tpu")
    b = torch.randn(5, 6).to("tpu")
    (a + b).cpu()
    first = counters()
    (b + a).cpu()
    (torch.randn(5, 6).to("tpu") + a).cpu()
    after = counters()
    assert after["compiles"] == first["compiles"]
    assert after["cache_hits"] >= first["cache_hits"] + 2
    (torch.randn(7, 6).to("tpu") + torch.randn(7, 6).to("tpu")).cpu()
    assert counters()["compiles"] == after["compiles"] + 1  # a new shape is a new program


def test_transfer_and_execution_counters(counters):
    x = torch.ones(256, dtype=torch.float32).to("tpu")
    assert counters()["host_to_device_bytes"] == 1024
    y = (x * 2).cpu()
    c = counters()
    assert c["device_to_host_bytes"] == 1024
    assert c["executions"] >= 1
    assert torch.equal(y, torch.full((256,), 2.0))
    assert c["cpu_fallbacks"] == {}


def test_report_is_readable(counters):
    torch.ones(2, device="tpu").sum().item()
    text = torch_pjrt.metrics.report()
    for word in ("compiles", "cache hits", "executions", "host to device", "cpu fallbacks"):
        assert word in text
