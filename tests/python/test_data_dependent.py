"""Ops whose output size depends on the data (nonzero, masked_select, unique, unique_consecutive,
repeat_interleave with tensor repeats, bincount) and their static-size relatives (nonzero_static,
histc, masked_scatter_) against CPU PyTorch, with the number of host round trips each makes: one
read of the output size, or none when the size is known."""

import pytest
import torch
from conftest import assert_same

import torch_pjrt

DTYPES = [
    torch.float32,
    torch.float64,
    torch.float16,
    torch.bfloat16,
    torch.int64,
    torch.int32,
    torch.int8,
    torch.uint8,
    torch.bool,
]


def sample(shape, dtype, seed=0, low=-3, high=4):
    g = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=g).bool()
    if dtype == torch.uint8:
        low = 0
    return torch.randint(low, high, shape, generator=g).to(dtype)


def trips(counters):
    return counters()["host_round_trips"]


def check(fn, *cpu_args, syncs, counters):
    """fn on "tpu" copies of cpu_args equals fn on the CPU and makes `syncs` host round trips;
    no CPU fallback."""
    args = [a.to("tpu") if isinstance(a, torch.Tensor) else a for a in cpu_args]
    torch.tpu.synchronize()
    before = trips(counters)
    got = fn(*args)
    assert trips(counters) - before == syncs
    want = fn(*cpu_args)
    if isinstance(want, torch.Tensor):
        got, want = (got,), (want,)
    for g, w in zip(got, want):
        assert_same(g, w)
    assert counters()["cpu_fallbacks"] == {}


@pytest.mark.parametrize("dtype", DTYPES)
def test_nonzero_masked_select(dtype, counters):
    x = sample((3, 4, 5), dtype)
    check(torch.nonzero, x, syncs=1, counters=counters)
    check(torch.argwhere, x.transpose(0, 2), syncs=1, counters=counters)
    check(lambda t: torch.nonzero(t, as_tuple=True), x, syncs=1, counters=counters)
    check(lambda t: torch.nonzero_static(t, size=7, fill_value=-2), x, syncs=0, counters=counters)
    check(lambda t: torch.nonzero_static(t, size=100), x, syncs=0, counters=counters)
    mask = sample((4, 5), torch.bool, seed=1)
    check(torch.masked_select, x, mask, syncs=1, counters=counters)
    check(lambda t, m: t[:, m], x, mask, syncs=1, counters=counters)  # bool-mask indexing
    src = sample((60,), dtype, seed=2)

    def scatter(t, m, s):
        return t.clone().masked_scatter_(m, s)

    check(scatter, x, mask, src, syncs=0, counters=counters)


def test_empty_and_scalar(counters):
    for x in (torch.zeros(0, 3), torch.tensor(2.0), torch.tensor(0)):
        check(torch.nonzero, x, syncs=0 if x.numel() == 0 else 1, counters=counters)
    check(
        torch.masked_select,
        torch.ones(3),
        torch.zeros(3, dtype=torch.bool),
        syncs=1,
        counters=counters,
    )
    check(
        lambda t: torch.unique(t, return_inverse=True, return_counts=True),
        torch.zeros(0, 2),
        syncs=0,
        counters=counters,
    )


@pytest.mark.parametrize("dtype", DTYPES)
def test_unique(dtype, counters):
    x = sample((4, 6), dtype)
    for sorted_ in (True, False):
        check(
            lambda t, s=sorted_: torch.unique(t, sorted=s, return_inverse=True, return_counts=True),
            x,
            syncs=1,
            counters=counters,
        )
    check(torch.unique, x, syncs=1, counters=counters)
    rows = torch.cat([x, x[:2]]).t()  # repeated columns
    for dim in (0, 1, -1):
        check(
            lambda t, d=dim: torch.unique(t, dim=d, return_inverse=True, return_counts=True),
            rows,
            syncs=1,
            counters=counters,
        )
    y = sample((12,), dtype, low=0, high=2)
    check(
        lambda t: torch.unique_consecutive(t, return_inverse=True, return_counts=True),
        y,
        syncs=1,
        counters=counters,
    )
    check(
        lambda t: torch.unique_consecutive(t, dim=1, return_counts=True),
        torch.stack([y, y]),
        syncs=1,
        counters=counters,
    )


def test_unique_nan(counters):
    x = torch.tensor([1.0, float("nan"), 1.0, -0.0, 0.0, float("nan")])
    u, inv, cnt = torch.unique(x.to("tpu"), return_inverse=True, return_counts=True)
    # NaNs are not equal to each other, so each is its own value (as on the CPU).
    assert u.cpu().tolist()[:2] == [0.0, 1.0] and u.cpu()[2:].isnan().all() and len(u) == 4
    assert cnt.cpu().tolist() == [2, 2, 1, 1]
    assert inv.cpu().tolist()[:5] == [1, 2, 1, 0, 0]


@pytest.mark.parametrize(
    "rows",
    [
        [[float("nan")], [0.0], [0.0], [float("nan")], [float("nan")], [1.0]],
        [[float("nan"), 1.0], [0.0, 1.0], [float("nan"), 1.0], [0.0, float("nan")], [0.0, 1.0]],
        [[1.0], [float("nan")], [0.0], [float("nan")]] * 9,  # beyond std::sort's insertion sort
    ],
)
def test_unique_dim_nan(rows, counters):
    """Rows holding NaN order and count as on the CPU, whose row sort is no strict weak order
    then (issue 37: [nan, 0, nan, nan, 1] with counts [1, 2, 1, 1, 1])."""
    x = torch.tensor(rows)
    for dim in (0, -1 if x.shape[1] == 1 else 1):
        fn = lambda t, d=dim: torch.unique(t, dim=d, return_inverse=True, return_counts=True)  # noqa: E731
        got = fn(x.to("tpu"))
        want = fn(x)
        for g, w in zip(got, want):
            torch.testing.assert_close(g.cpu(), w, equal_nan=True, rtol=0, atol=0)
    assert counters()["cpu_fallbacks"] == {}


def test_unique_dim_issue_values():
    x = torch.tensor([float("nan"), 0, 0, float("nan"), float("nan"), 1], device="tpu")
    u, inv, cnt = torch.unique(x, dim=0, return_inverse=True, return_counts=True)
    assert str(u.cpu().tolist()) == "[nan, 0.0, nan, nan, 1.0]"
    assert inv.cpu().tolist() == [0, 1, 1, 2, 3, 4] and cnt.cpu().tolist() == [1, 2, 1, 1, 1]


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32])
def test_repeat_interleave(dtype, counters):
    repeats = torch.tensor([2, 0, 3, 1], dtype=dtype)
    check(torch.repeat_interleave, repeats, syncs=1, counters=counters)
    x = torch.arange(8.0).reshape(4, 2)
    check(lambda t, r: torch.repeat_interleave(t, r, dim=0), x, repeats, syncs=1, counters=counters)
    check(
        lambda t, r: torch.repeat_interleave(t, r, dim=0, output_size=6),
        x,
        repeats,
        syncs=0,
        counters=counters,
    )
    with pytest.raises(RuntimeError, match="repeats can not be negative"):
        torch.repeat_interleave(torch.tensor([1, -1], dtype=dtype, device="tpu"))


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.int8, torch.uint8])
def test_bincount(dtype, counters):
    x = sample((20,), dtype, low=0, high=6)
    check(torch.bincount, x, syncs=1, counters=counters)
    check(lambda t: torch.bincount(t, minlength=10), x, syncs=1, counters=counters)
    for w in (torch.rand(20), torch.rand(20, dtype=torch.float64), torch.arange(20)):
        check(lambda t, w: torch.bincount(t, w), x, w, syncs=1, counters=counters)
    check(lambda t: torch.bincount(t, minlength=3), x[:0], syncs=0, counters=counters)
    with pytest.raises(RuntimeError, match="non-negative"):
        torch.bincount(torch.tensor([1, -1], device="tpu"))
    with pytest.raises(NotImplementedError, match="\"bincount_cpu\" not implemented for 'Float'"):
        torch.bincount(torch.ones(2, 2, device="tpu"))  # the dtype is checked first, as on the CPU


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16])
def test_histc(dtype, counters):
    x = (torch.randn(50, generator=torch.Generator().manual_seed(0)) * 2).to(dtype)
    check(lambda t: torch.histc(t, bins=7), x, syncs=0, counters=counters)
    check(lambda t: torch.histc(t, bins=5, min=-1, max=1.5), x, syncs=0, counters=counters)
    check(
        lambda t: torch.histc(t, bins=4),
        torch.full((3,), 2.0, dtype=dtype),
        syncs=0,
        counters=counters,
    )
    with pytest.raises(RuntimeError, match="bins must be > 0"):
        torch.histc(x.to("tpu"), bins=0)


@pytest.mark.parametrize("mode", ["fused", "debug"])
def test_histc_refuses_a_data_range_that_is_not_finite(mode, counters):
    # As on the CPU, by a device-side check: no host read of the range (raised at the op in
    # Debug mode, at the next synchronization otherwise).
    with torch_pjrt.eager_mode(mode):
        for data in ([float("inf")], [float("-inf"), 1.0], [float("nan"), 1.0]):
            x = torch.tensor(data, device="tpu")
            with pytest.raises(
                RuntimeError, match=r"torch.histc: range of \[min, max\] is not finite"
            ):
                torch.histc(x).cpu()
        before = trips(counters)
        h = torch.histc(torch.tensor([1.0, 2.0, 5.0], device="tpu"), bins=4)
        assert trips(counters) == before
        assert h.cpu().tolist() == [1.0, 1.0, 0.0, 1.0]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_histogram_and_histogramdd(dtype, counters):
    g = torch.Generator().manual_seed(11)
    x = torch.randn(50, 2, generator=g).to(dtype)
    x[0] = x[1:].max(0).values  # an element on the last edge counts in the last bin
    w = torch.rand(50, generator=g).to(dtype)
    xt, wt = x.to("tpu"), w.to("tpu")
    for kw in [{}, {"range": (-1.0, 1.5)}, {"weight": True}, {"density": True}]:
        kw_cpu = {k: (w if k == "weight" else v) for k, v in kw.items()}
        kw_tpu = {k: (wt if k == "weight" else v) for k, v in kw.items()}
        for got, want in [
            (torch.histogram(xt[:, 0], 7, **kw_tpu), torch.histogram(x[:, 0], 7, **kw_cpu)),
            (torch.histogramdd(xt, [3, 4], **{k: (v * 2 if k == "range" else v) for k, v in kw_tpu.items()}),
             torch.histogramdd(x, [3, 4], **{k: (v * 2 if k == "range" else v) for k, v in kw_cpu.items()})),
        ]:  # fmt: skip
            torch.testing.assert_close(got[0].cpu(), want[0])
            torch.testing.assert_close(
                [e.cpu() for e in got[1]] if isinstance(got[1], (list, tuple)) else got[1].cpu(),
                want[1],
            )
    edges = torch.tensor([-1.0, 0.0, 0.5, 2.0], dtype=dtype)
    torch.testing.assert_close(
        torch.histogram(xt, edges.to("tpu"))[0].cpu(), torch.histogram(x, edges)[0]
    )
    same = torch.full((3,), 2.0, dtype=dtype)  # one value: the range widens by 0.5 either side
    torch.testing.assert_close(
        torch.histogram(same.to("tpu"), 2)[1].cpu(), torch.histogram(same, 2)[1]
    )
    assert counters()["cpu_fallbacks"] == {}
    with pytest.raises(RuntimeError, match="bins must be > 0"):
        torch.histogram(xt, 0)
    with pytest.raises(RuntimeError, match="min should not exceed max"):
        torch.histogram(xt, 3, range=(2.0, 1.0))
    with pytest.raises(RuntimeError, match="weight with shape \\[3\\]"):
        torch.histogramdd(xt, [2, 2], weight=wt[:3])
