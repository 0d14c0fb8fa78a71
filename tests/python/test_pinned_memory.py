"""Pinned host memory and non_blocking copies between it and "tpu", as on CUDA: pin_memory() and
pin_memory=True give memory is_pinned() reports, DataLoader pins its batches, non_blocking copies
into or out of pinned memory return before the data moved and complete behind the stream/event
API, pageable memory keeps synchronous copies, and a pinned block outlives its transfer."""

import gc

import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset

import torch_pjrt  # noqa: F401


def _busy(n=8, size=512):
    """A "tpu" value behind a chain of matmuls whose device time is far above the Python overhead
    of a copy call (compiled once in a warm-up, so that the call itself launches it)."""
    x = torch.randn(size, size, device="tpu") / size**0.5
    for _ in range(n):
        x = x @ x
    return x


def test_pin_memory_and_pin_memory_true_give_pinned_memory():
    src = torch.randn(5, 7)
    assert not src.is_pinned()
    pinned = src.pin_memory()
    assert pinned.is_pinned() and pinned.is_pinned("tpu") and torch.equal(pinned, src)
    assert pinned.pin_memory().data_ptr() == pinned.data_ptr()  # already pinned: itself
    assert pinned[2:].is_pinned() and pinned.t().is_pinned()  # views of a pinned block
    assert src.pin_memory("tpu").is_pinned()
    assert torch.empty(3, 4, pin_memory=True).is_pinned()
    assert torch.zeros(8, dtype=torch.int64, pin_memory=True).is_pinned()
    assert torch.empty_like(src, pin_memory=True).is_pinned()
    assert not torch.empty(3, 4).is_pinned() and not pinned.clone().is_pinned()
    with pytest.raises(RuntimeError, match="cannot be pinned|only dense CPU tensors"):
        torch.ones(2, device="tpu").pin_memory()


def test_dataloader_pins_its_batches_for_tpu():
    ds = TensorDataset(torch.arange(40.0).reshape(20, 2), torch.arange(20))
    # pin_memory_device="tpu" (deprecated in torch 2.13 with a warning) and the current
    # accelerator, which is "tpu", pin the same way.
    for device in ("tpu", ""):
        loader = DataLoader(ds, batch_size=8, pin_memory=True, pin_memory_device=device)
        seen = []
        for x, y in loader:
            assert x.is_pinned() and y.is_pinned()
            seen.append(x.to("tpu", non_blocking=True) * 2)
        torch.tpu.synchronize()
        torch.testing.assert_close(torch.cat([s.cpu() for s in seen]), ds.tensors[0] * 2)


def test_device_to_pinned_host_returns_before_the_data_is_there():
    _busy()  # compiles the chain
    torch.tpu.synchronize()
    x = _busy()
    dst = torch.empty(x.shape, pin_memory=True)
    dst.copy_(x, non_blocking=True)
    done = torch.tpu.Event()
    done.record()
    # The copy waits for the matmuls on the device, not here: the work behind it is still running.
    assert not done.query()
    done.synchronize()
    assert done.query()
    expected = x.cpu()
    torch.testing.assert_close(dst, expected, rtol=0, atol=0)
    # .to("cpu", non_blocking=True) gives pinned memory and the same ordering.
    y = _busy()
    out = y.to("cpu", non_blocking=True)
    assert out.is_pinned()
    assert not torch.tpu.current_stream().query()
    torch.tpu.current_stream().synchronize()
    torch.testing.assert_close(out, y.cpu(), rtol=0, atol=0)


def test_pinned_host_to_device_returns_before_the_transfer_finished():
    src = torch.randn(16, 1024, 1024).pin_memory()  # 64 MB
    expected = src.clone()
    # A large copy can still finish before the next line on a loaded host now and then; that it
    # never shows pending in several tries is what a blocking copy does.
    pending = []
    for _ in range(4):
        y = src.to("tpu", non_blocking=True)
        e = torch.Event("tpu")
        e.record()
        pending.append(not e.query())
        torch.tpu.synchronize()
        assert e.query()
        torch.testing.assert_close(y.cpu(), expected, rtol=0, atol=0)
    assert any(pending), pending


def test_non_blocking_into_a_view_and_with_a_dtype_change():
    src = torch.arange(24.0).reshape(4, 6).pin_memory()
    dst = torch.zeros(4, 8, device="tpu")
    dst[:, 1:7].copy_(src, non_blocking=True)  # a view of the device tensor is written
    as_int = src.to("tpu", dtype=torch.int32, non_blocking=True)  # converted on the host first
    back = torch.full((4, 6), -1, dtype=torch.int64, pin_memory=True)
    back.copy_(dst[:, 1:7], non_blocking=True)  # device view, converted on the device
    torch.tpu.synchronize()
    expected = torch.zeros(4, 8)
    expected[:, 1:7] = src
    torch.testing.assert_close(dst.cpu(), expected)
    torch.testing.assert_close(as_int.cpu(), src.int())
    torch.testing.assert_close(back, src.long())
    strided = torch.zeros(6, 4, pin_memory=True).t()  # not contiguous: copied synchronously
    strided.copy_(dst[:, :6], non_blocking=True)
    torch.testing.assert_close(strided, expected[:, :6])


def test_pageable_memory_keeps_synchronous_copies():
    _busy()
    torch.tpu.synchronize()
    x = _busy()
    dst = torch.empty(x.shape)
    dst.copy_(x, non_blocking=True)
    at_return = dst.clone()  # the copy waited for the matmuls: dst is final when it returns
    torch.testing.assert_close(at_return, x.cpu(), rtol=0, atol=0)
    src = torch.arange(10.0)
    y = src.to("tpu", non_blocking=True)
    src.fill_(-1)  # the device copy was taken during the call
    torch.testing.assert_close(y.cpu(), torch.arange(10.0))


def test_a_pinned_source_freed_right_after_a_non_blocking_copy_stays_until_it_completed():
    expected = torch.randn(8, 1024, 1024)
    results = []
    for _ in range(3):
        src = expected.pin_memory()
        results.append(src.to("tpu", non_blocking=True))
        del src
        gc.collect()
        # New pinned memory, written at once: would overwrite a block released too early.
        torch.full((8, 1024, 1024), 7.0, pin_memory=True).fill_(-3.0)
    torch.tpu.synchronize()
    for r in results:
        torch.testing.assert_close(r.cpu(), expected, rtol=0, atol=0)
    torch.accelerator.empty_host_cache()


def test_a_device_source_freed_right_after_a_non_blocking_copy_to_the_host():
    _busy()
    torch.tpu.synchronize()
    x = _busy()
    ref = x.clone()
    dst = torch.empty(x.shape, pin_memory=True)
    dst.copy_(x, non_blocking=True)
    del x  # PJRT frees its device memory once the transfer is done with it
    gc.collect()
    torch.tpu.synchronize()
    torch.testing.assert_close(dst, ref.cpu(), rtol=0, atol=0)
