"""Selection, scans and searching ops on "tpu" against CPU PyTorch, with no CPU fallback: cummax,
cummin, logcumsumexp, cumsum in half precision, median, nanmedian, kthvalue, mode, searchsorted
and bucketize, with their index conventions, NaN handling, empty and 0-dim inputs and errors."""

import math

import pytest
import torch
from conftest import assert_same

pytestmark = pytest.mark.usefixtures("no_fallback")

nan = math.nan


def both(f, x, *args, **kwargs):
    return f(x, *args, **kwargs), f(x.to("tpu"), *args, **kwargs)


def assert_pair(tpu, cpu):
    assert_same(tpu[0], cpu[0], equal_nan=True)
    assert_same(tpu[1], cpu[1])


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int64, torch.uint8])
@pytest.mark.parametrize("op", [torch.cummax, torch.cummin])
def test_cummax_cummin_ties(op, dtype):
    x = torch.tensor([[3, 1, 1, 2, 0, 0, 5, 5], [0, 0, 1, 1, 2, 2, 1, 0]]).to(dtype)
    for dim in (0, 1, -1):
        cpu, tpu = both(op, x, dim)
        assert_pair(tpu, cpu)


@pytest.mark.parametrize("op", [torch.cummax, torch.cummin])
def test_cummax_cummin_nan_and_edges(op):
    x = torch.tensor([1.0, nan, 3, nan, 0])
    values, indices = op(x.to("tpu"), 0)
    assert_same(values, torch.tensor([1.0, nan, nan, nan, nan]), equal_nan=True)
    assert_same(indices, torch.tensor([0, 1, 1, 3, 3]))
    assert_pair(op(torch.tensor(2.0).to("tpu"), 0), op(torch.tensor(2.0), 0))
    assert_pair(op(torch.zeros(0, 3).to("tpu"), 1), op(torch.zeros(0, 3), 1))
    b = torch.tensor([False, True, False, True])
    assert_pair(op(b.to("tpu"), 0), op(b, 0))


def test_cummax_backward():
    x = torch.tensor([[0.5, 2.0, 1.0, 3.0], [1.0, -1.0, 4.0, 0.0]], requires_grad=True)
    xt = x.detach().to("tpu").requires_grad_()
    torch.cummax(x, 1).values.sum().backward()
    torch.cummax(xt, 1).values.sum().backward()
    assert_same(xt.grad, x.grad)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16, torch.float16])
def test_logcumsumexp(dtype):
    x = torch.randn(3, 20, generator=torch.Generator().manual_seed(0)).to(dtype)
    for dim in (0, 1):
        cpu, tpu = both(torch.logcumsumexp, x, dim)
        assert_same(tpu, cpu)
    special = torch.tensor([-math.inf, -math.inf, 0.0, math.inf, 1.0, nan, 2.0])
    assert_same(
        torch.logcumsumexp(special.to("tpu"), 0),
        torch.tensor([-math.inf, -math.inf, 0.0, math.inf, math.inf, nan, nan]),
        equal_nan=True,
    )


def test_logcumsumexp_errors():
    with pytest.raises(NotImplementedError, match="not implemented for 'Long'"):
        torch.logcumsumexp(torch.arange(3).to("tpu"), 0)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_cumsum_half_accumulates_in_float32(dtype):
    x = torch.full((300,), 0.1, dtype=dtype)
    assert_same(torch.cumsum(x.to("tpu"), 0), torch.cumsum(x, 0))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int32, torch.uint8])
def test_median_nanmedian_ties(dtype):
    x = torch.tensor([[2, 1, 1, 3], [5, 5, 5, 0], [1, 2, 3, 4]]).to(dtype)
    for op in (torch.median, torch.nanmedian):
        assert_same(op(x.to("tpu")), op(x))
        for dim, keepdim in ((0, False), (1, True), (-1, False)):
            cpu, tpu = both(op, x, dim, keepdim)
            assert_pair(tpu, cpu)


def test_median_nan_conventions():
    x = torch.tensor([[1.0, nan, nan], [nan, nan, nan], [2.0, 1.0, 1.0]])
    values, indices = torch.median(x.to("tpu"), 1)
    assert_same(values, torch.tensor([nan, nan, 1.0]), equal_nan=True)
    assert_same(indices, torch.tensor([1, 0, 2]))
    values, indices = torch.nanmedian(x.to("tpu"), 1)
    assert_same(values, torch.tensor([1.0, nan, 1.0]), equal_nan=True)
    assert_same(indices, torch.tensor([0, 0, 2]))
    assert torch.isnan(torch.median(x.to("tpu")).cpu())
    assert_same(torch.nanmedian(x.to("tpu")), torch.tensor(1.0))
    assert torch.isnan(torch.median(torch.zeros(0).to("tpu")).cpu())


def test_median_edges_and_errors():
    s = torch.tensor(3.0)
    assert_pair(torch.median(s.to("tpu"), 0, True), torch.median(s, 0, True))
    assert_pair(torch.median(torch.zeros(3, 0).to("tpu"), 0), torch.median(torch.zeros(3, 0), 0))
    with pytest.raises(IndexError, match=r"median\(\): Expected reduction dim 0"):
        torch.median(torch.zeros(0, 3).to("tpu"), 0)
    with pytest.raises(NotImplementedError, match="\"median_cpu\" not implemented for 'Bool'"):
        torch.median(torch.tensor([True]).to("tpu"))


def test_median_backward():
    x = torch.tensor([[0.5, 2.0, 1.0], [1.0, -1.0, 4.0]], requires_grad=True)
    xt = x.detach().to("tpu").requires_grad_()
    torch.median(x, 1).values.sum().backward()
    torch.median(xt, 1).values.sum().backward()
    assert_same(xt.grad, x.grad)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16])
def test_kthvalue(dtype):
    x = torch.randn(4, 6, generator=torch.Generator().manual_seed(1)).to(dtype)
    for k, dim, keepdim in ((1, 1, False), (3, 1, True), (4, 0, False), (6, -1, False)):
        cpu, tpu = both(torch.kthvalue, x, k, dim, keepdim)
        assert_pair(tpu, cpu)
    values, indices = torch.kthvalue(torch.tensor([nan, 1.0, 3.0, 2.0]).to("tpu"), 3)
    assert_same(values, torch.tensor(3.0))
    assert_same(indices, torch.tensor(2))


def test_kthvalue_errors():
    with pytest.raises(RuntimeError, match="selected number k out of range for dimension 0"):
        torch.kthvalue(torch.zeros(3).to("tpu"), 4)
    with pytest.raises(IndexError, match=r"kthvalue\(\): Expected reduction dim 0"):
        torch.kthvalue(torch.zeros(0).to("tpu"), 1)


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64, torch.int8, torch.bool])
def test_mode(dtype):
    g = torch.Generator().manual_seed(2)
    x = torch.randint(0, 3, (4, 5, 6), generator=g).to(dtype)
    for dim, keepdim in ((-1, False), (0, True), (1, False)):
        cpu, tpu = both(torch.mode, x, dim, keepdim)
        assert_pair(tpu, cpu)
    assert_pair(torch.mode(torch.tensor(3.0).to("tpu")), torch.mode(torch.tensor(3.0)))
    with pytest.raises(IndexError, match=r"mode\(\): Expected reduction dim 1"):
        torch.mode(torch.zeros(3, 0).to("tpu"), 1)


@pytest.mark.parametrize("right", [False, True])
def test_searchsorted(right):
    bd = torch.tensor([1.0, 2.0, 2.0, 3.0, 5.0])
    v = torch.tensor([[0.0, 2.0, 2.5], [5.0, 6.0, nan]])
    cpu, tpu = both(lambda b: torch.searchsorted(b, v.to(b.device), right=right), bd)
    assert_same(tpu, cpu)
    side = "right" if right else "left"
    cpu, tpu = both(lambda b: torch.searchsorted(b, 2, side=side, out_int32=True), bd)
    assert tpu.dtype == torch.int32
    assert_same(tpu, cpu)
    # N-d boundaries with a sorter, int values promoted against float boundaries.
    bd2 = torch.tensor([[3.0, 1.0, 2.0], [0.0, 9.0, 4.0]])
    sorter = torch.argsort(bd2, -1)
    vi = torch.tensor([[2, 0], [4, 10]])

    def f(b):
        return torch.searchsorted(b, vi.to(b.device), sorter=sorter.to(b.device), right=right)

    cpu, tpu = both(f, bd2)
    assert_same(tpu, cpu)


def test_searchsorted_is_the_cpus_binary_search():
    # Boundaries that are not sorted have no defined answer, but PyTorch's tests expect the CPU's
    # binary search (upstream test_bucketization): the device takes the same steps.
    g = torch.Generator().manual_seed(0)
    for n in (0, 1, 2, 5, 16, 33):
        b = torch.randn(n, generator=g)
        v = torch.randn(4, 7, generator=g)
        v[0, 0] = nan
        for bd in (b, b.sort().values):
            for right in (False, True):
                assert_same(torch.searchsorted(bd.to("tpu"), v.to("tpu"), right=right),
                            torch.searchsorted(bd, v, right=right))  # fmt: skip
        rows = torch.randn(4, n, generator=g)
        assert_same(torch.searchsorted(rows.to("tpu"), v.to("tpu")), torch.searchsorted(rows, v))
    values = torch.tensor([[[1, 3, 5], [2, 4, 6]], [[1, 2, 3], [4, 5, 6]]]).permute(2, 1, 0)
    with pytest.warns(UserWarning, match="non-contiguous"):
        got = torch.searchsorted(values.double().to("tpu"), values.int().to("tpu"))
    assert got.cpu().tolist() == [[[0, 0], [0, 1]], [[2, 0], [0, 1]], [[2, 0], [0, 0]]]


def test_bucketize_and_errors():
    bd = torch.tensor([1, 3, 5, 7])
    x = torch.tensor([[0, 3, 6], [7, 8, 1]])
    for right in (False, True):
        cpu = torch.bucketize(x, bd, right=right)
        assert_same(torch.bucketize(x.to("tpu"), bd.to("tpu"), right=right), cpu)
    assert_same(torch.bucketize(4, bd.to("tpu")), torch.bucketize(4, bd))
    with pytest.raises(RuntimeError, match="boundaries tensor must be 1 dimension"):
        torch.bucketize(x.to("tpu"), x.to("tpu"))
    with pytest.raises(RuntimeError, match="side and right can't be set to opposites"):
        torch.searchsorted(bd.to("tpu"), x.to("tpu"), right=True, side="left")


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_half_reductions_round_once(dtype):
    x = torch.randn(5, 5, 5, generator=torch.Generator().manual_seed(3)).mul(8).to(dtype)
    for op in (torch.var, torch.std):
        assert_same(op(x.to("tpu")), op(x))
        assert_same(op(x.to("tpu"), 1), op(x, 1))
    cpu, tpu = both(torch.var_mean, x, 2)
    assert_same(tpu[0], cpu[0])
    assert_same(tpu[1], cpu[1])
    # x^4 overflows float16: the norm accumulates in float32.
    assert_same(torch.linalg.vector_norm(x.to("tpu"), 4), torch.linalg.vector_norm(x, 4))
    y = torch.randn(5, 5, generator=torch.Generator().manual_seed(4)).to(dtype)
    assert_same(torch.lerp(x[0].to("tpu"), y.to("tpu"), 0.4), torch.lerp(x[0], y, 0.4))
