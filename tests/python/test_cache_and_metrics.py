"""The compile cache is structural, and the counters report what happened."""

import json

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


PROGRAMS_IN_A_LONG_PROCESS = """
import json, torch, torch_pjrt
def mappings():
    with open("/proc/self/maps") as f:
        return sum(1 for _ in f)
x = torch.arange(4.0, device="tpu")
(x + 1).cpu()
before = mappings()
ok = all(torch.equal((torch.ones(n, device="tpu") * 3).cpu(), torch.full((n,), 3.0))
         for n in range(1, 301))
c = torch_pjrt.metrics.counters()
print(json.dumps(dict(ok=ok, grown=mappings() - before, cached=torch_pjrt._C._cached_programs(),
                      capacity=torch_pjrt._C._program_cache_capacity(),
                      evictions=c["program_evictions"], compiles=c["compiles"])))
"""


def test_program_cache_is_bounded():
    """300 programs of distinct shapes with a cache of 16: the cache keeps 16, the evicted
    executables are destroyed (the process's memory mappings do not grow per program: XLA:CPU maps
    about 3.4 regions per live executable, and the kernel's limit of 65,530 crashed long runs)."""
    from conftest import run_python

    r = run_python(PROGRAMS_IN_A_LONG_PROCESS, TORCH_PJRT_PROGRAM_CACHE_SIZE="16")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["ok"] and out["capacity"] == 16 and out["cached"] == 16
    assert out["compiles"] >= 300 and out["evictions"] >= 300 - 16
    assert out["grown"] < 150, out


def test_program_cache_size_must_be_positive():
    from conftest import run_python

    r = run_python("import torch", TORCH_PJRT_PROGRAM_CACHE_SIZE="0")
    assert "TORCH_PJRT_PROGRAM_CACHE_SIZE must be a positive integer, got '0'" in r.stderr
