"""Memory statistics of "tpu": torch.tpu.memory_* and torch.accelerator.memory_* move by exactly
the bytes of the device buffers created and freed, per device, deferred values count once
computed, peaks reset, caches count as reserved only, and training does not leak."""

import math
import os
import time

import pytest
import torch
import torch.nn.functional as F
from models import GPT

import torch_pjrt

MB = 1 << 20


@pytest.fixture(autouse=True)
def strict_afterwards():
    yield
    torch_pjrt.set_eager_mode("strict")


def test_allocate_and_free_move_the_figures_by_exactly_their_size():
    before = torch.tpu.memory_allocated()
    x = torch.ones(256, 1024, device="tpu")  # 1 MiB of float32
    assert torch.tpu.memory_allocated() == before + MB
    y = torch.arange(15, dtype=torch.int64).reshape(3, 5).to("tpu")  # 120 bytes
    assert torch.tpu.memory_allocated() == before + MB + 120
    del x
    assert torch.tpu.memory_allocated() == before + 120
    del y
    assert torch.tpu.memory_allocated() == before
    # torch.accelerator reads the same figures through the allocator.
    z = torch.zeros(1000, dtype=torch.float16, device="tpu")
    assert torch.accelerator.memory_allocated(0) == before + 2000
    assert torch.tpu.memory_stats()["allocated_bytes.all.current"] == before + 2000
    del z
    # An uninitialized storage reads as zeros and holds no buffer until first written.
    e = torch.empty(1000, device="tpu")
    assert torch.tpu.memory_allocated() == before
    e.fill_(1)
    assert torch.tpu.memory_allocated() == before + 4000


def test_views_share_their_storage_and_in_place_ops_keep_the_size():
    x = torch.randn(512, 512, device="tpu")
    base = torch.tpu.memory_allocated()
    v = x[:, :256].t()
    x.mul_(2)  # a new buffer for the storage, the old one freed
    assert torch.tpu.memory_allocated() == base
    del v, x
    assert torch.tpu.memory_allocated() == base - MB


def test_devices_are_counted_separately():
    if torch.tpu.device_count() < 2:
        pytest.skip("needs two devices")
    before0, before1 = torch.tpu.memory_allocated(0), torch.tpu.memory_allocated("tpu:1")
    x = torch.ones(1024, device="tpu:1")
    assert torch.tpu.memory_allocated(1) == before1 + 4096
    assert torch.tpu.memory_allocated(0) == before0
    del x


def test_deferred_values_count_once_computed():
    torch_pjrt.set_eager_mode("fused")
    before = torch.tpu.memory_allocated()
    x = torch.ones(1024, device="tpu") * 3
    assert torch.tpu.memory_allocated() == before  # nothing computed yet
    torch.tpu.synchronize()
    assert torch.tpu.memory_allocated() == before + 4096
    del x
    assert torch.tpu.memory_allocated() == before


def test_peaks_and_their_reset():
    keep = torch.ones(1024, device="tpu")
    torch.tpu.reset_peak_memory_stats()
    base = torch.tpu.memory_allocated()
    assert torch.tpu.max_memory_allocated() == base
    tmp = torch.ones(2 * MB // 4, device="tpu")
    del tmp
    assert torch.tpu.memory_allocated() == base
    assert torch.tpu.max_memory_allocated() == base + 2 * MB
    assert torch.tpu.max_memory_reserved() >= base + 2 * MB
    torch.accelerator.reset_peak_memory_stats()
    assert torch.accelerator.max_memory_allocated() == base
    del keep


def test_memory_stats_keys_and_counters():
    torch.tpu.reset_accumulated_memory_stats()
    x = torch.ones(100, device="tpu")
    stats = torch.tpu.memory_stats()
    assert stats["allocated_bytes.all.current"] == torch.tpu.memory_allocated()
    assert stats["allocated_bytes.all.allocated"] >= 400
    assert stats["requested_bytes.all.current"] == stats["allocated_bytes.all.current"]
    assert stats["allocation.all.current"] >= 1
    assert stats["reserved_bytes.all.current"] == torch.tpu.memory_reserved()
    assert stats["num_device_alloc"] >= 1
    assert stats["num_alloc_retries"] == 0 and stats["num_ooms"] == 0
    # PJRT has no small and large pools: only "all" is filled.
    assert stats["allocated_bytes.large_pool.current"] == 0
    del x
    assert torch.tpu.memory_stats()["allocated_bytes.all.freed"] >= 400


def test_cached_scalar_packs_count_as_reserved_until_empty_cache():
    torch.tpu.empty_cache()
    assert torch.tpu.memory_reserved() == torch.tpu.memory_allocated()
    x = torch.ones(8, device="tpu")
    y = x * 0.123456  # the scalar is uploaded once and cached
    allocated = torch.tpu.memory_allocated()
    assert torch.tpu.memory_reserved() > allocated
    torch.tpu.empty_cache()
    assert torch.tpu.memory_reserved() == allocated == torch.tpu.memory_allocated()
    torch.testing.assert_close(y.cpu(), torch.full((8,), 0.123456))


def test_mem_get_info_is_the_host_memory_on_the_cpu_plugin():
    free, total = torch.tpu.mem_get_info()
    assert 0 <= free <= total
    if torch_pjrt._C._platform_name() == "cpu":
        assert total == os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    # torch.accelerator asks the allocator, which answers the same.
    assert torch.accelerator.get_memory_info(0)[1] == total


def test_bad_device_index_raises():
    with pytest.raises(IndexError, match="invalid device index 99"):
        torch.tpu.memory_allocated(99)
    with pytest.raises(IndexError, match="invalid device index 99"):
        torch.tpu.mem_get_info(99)
    assert torch.tpu.memory_allocated() >= 0  # still usable


# --- no leak over 1,000 training steps ----------------------------------------------------------


def _train_steps(model, opt, x, y, steps):
    for _ in range(steps):
        opt.zero_grad()
        logits = model(x)
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))
        loss.backward()
        opt.step()
    return loss.item()


@pytest.mark.parametrize("mode", ["strict", "fused"])
def test_training_does_not_leak(mode):
    torch.manual_seed(0)
    torch_pjrt.set_eager_mode(mode)
    model = GPT(vocab=16, d=8, heads=2, layers=1, seq=4).to("tpu")
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    x = torch.randint(0, 16, (2, 4)).to("tpu")
    y = torch.randint(0, 16, (2, 4)).to("tpu")
    _train_steps(model, opt, x, y, 10)  # warm-up: optimizer state, cached programs
    torch.tpu.synchronize()
    warm = torch.tpu.memory_allocated()
    start = time.perf_counter()
    loss = _train_steps(model, opt, x, y, 1000)
    torch.tpu.synchronize()
    elapsed = time.perf_counter() - start
    assert math.isfinite(loss)
    after = torch.tpu.memory_allocated()
    # Within 1 KiB: the same tensors are live after every step; small differences come from
    # values a step leaves computed or deferred (the loss, gradient buffers set to None).
    assert abs(after - warm) <= 1024, (warm, after)
    print(f"{mode}: 1000 steps in {elapsed:.1f} s, allocated {warm} -> {after} bytes")
