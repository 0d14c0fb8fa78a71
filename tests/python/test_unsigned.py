"""uint16, uint32 and uint64 tensors: creation, copies, casts, elementwise basics, comparisons and
reductions, against CPU PyTorch where its kernels support these types and against values computed
in int64 (then wrapped) where they do not."""

import pytest
import torch
from conftest import assert_same


UNSIGNED = [torch.uint16, torch.uint32, torch.uint64]


pytestmark = pytest.mark.usefixtures("no_fallback")


def values(dtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    top = min(torch.iinfo(dtype).max, 2**40)
    v = torch.randint(0, top, (4, 5), generator=g, dtype=torch.int64)
    v[0, 0], v[0, 1] = 0, top - 1
    return v.to(dtype)


@pytest.mark.parametrize("dtype", UNSIGNED)
def test_creation_copies_and_casts(dtype):
    a = values(dtype)
    t = a.to("tpu")
    assert t.dtype == dtype
    assert torch.equal(t.cpu(), a)
    assert torch.equal(t.clone().cpu(), a)
    assert torch.equal(t.t().contiguous().cpu(), a.t().contiguous())
    assert torch.equal(torch.cat([t, t[:1]]).cpu(), torch.cat([a, a[:1]]))
    assert torch.equal(torch.zeros(3, dtype=dtype, device="tpu").cpu(), torch.zeros(3, dtype=dtype))
    assert torch.equal(torch.full((2,), 7, dtype=dtype, device="tpu").cpu(), torch.full((2,), 7, dtype=dtype))  # fmt: skip
    top = torch.tensor([torch.iinfo(dtype).max], dtype=dtype)
    assert torch.equal(top.to("tpu").cpu(), top)  # all bits set survives the round trip
    for to in (torch.float64, torch.int64, torch.uint8, torch.bool):
        assert_same(t.to(to), a.to(to))
    f = torch.tensor([0.0, 1.5, 65535.0, 3.0e4])
    assert_same(f.to("tpu").to(dtype), f.to(dtype))
    t.fill_(5)
    assert_same(t, torch.full((4, 5), 5, dtype=dtype))


@pytest.mark.parametrize("dtype", UNSIGNED)
def test_elementwise_and_comparisons(dtype):
    a, b = values(dtype), values(dtype, seed=1)
    ta, tb = a.to("tpu"), b.to("tpu")
    assert_same(ta * tb, a * b)  # wraps as the CPU's does
    assert_same(ta & tb, a & b)
    assert_same(ta == tb, a == b)
    assert_same(ta != 3, a != 3)
    assert_same(torch.where(ta == tb, ta, tb), torch.where(a == b, a, b))
    # The CPU has no add/lt/max kernels for these types: compare with int64 arithmetic, wrapped.
    bits = torch.iinfo(dtype).bits
    wide_a, wide_b = a.to(torch.int64), b.to(torch.int64)

    def wrapped(v):
        return (v & ((1 << bits) - 1) if bits < 64 else v).to(dtype)

    assert_same(ta + tb, wrapped(wide_a + wide_b))
    assert_same(ta - tb, wrapped(wide_a - wide_b))
    assert_same(ta < tb, wide_a < wide_b)  # unsigned order (no value here reaches 2**63)
    assert_same(torch.maximum(ta, tb), wrapped(torch.maximum(wide_a, wide_b)))
    big = torch.tensor([torch.iinfo(dtype).max, 1], dtype=dtype, device="tpu")
    assert (big > 1).cpu().tolist() == [True, False]  # the top bit is magnitude, not sign


@pytest.mark.parametrize("dtype", UNSIGNED)
def test_reductions(dtype):
    a = (values(dtype).to(torch.int64) % 1000).to(dtype)
    t = a.to("tpu")
    assert_same(t.sum(), a.sum())
    assert_same(t.sum(0), a.sum(0))
    assert_same(t.prod(1), a.prod(1))
    assert_same(t.all(), a.all())
    assert_same(t.any(1), a.any(1))
    assert_same(torch.nansum(t), torch.nansum(a))
    wide = a.to(torch.int64)
    assert t.max().item() == wide.max().item()
    assert t.min().item() == wide.min().item()
    assert_same(t.amax(0), wide.amax(0).to(dtype))
    assert torch.equal(t, a.to("tpu"))


def test_uint64_fill_past_int64_max():
    # A value past INT64_MAX (a Scalar holding a uint64) fills a uint64 tensor, as on the CPU.
    for value in (2**63, 2**64 - 1):
        expected = torch.full((3,), value, dtype=torch.uint64)
        assert_same(torch.full((3,), value, dtype=torch.uint64, device="tpu"), expected)
        t = torch.zeros(2, 3, dtype=torch.uint64, device="tpu").fill_(value)
        assert_same(t, expected.expand(2, 3))


def test_uint64_scalar_past_int64_max_in_a_list_op():
    # A list op's per-tensor steps share its scalar (keyed by its bits); a uint64 past INT64_MAX
    # has no int64 value to key by. The CPU has no uint64 add kernel: fixed expected values.
    ts = [torch.zeros(3, dtype=torch.uint64, device="tpu"), torch.ones(2, dtype=torch.uint64,
                                                                       device="tpu")]  # fmt: skip
    torch._foreach_add_(ts, 2**63 + 5)
    assert [t.cpu().tolist() for t in ts] == [[2**63 + 5] * 3, [2**63 + 6] * 2]
