"""Max, average and adaptive average pooling on tpu against CPU PyTorch, with gradients."""

import pytest
import torch
import torch.nn.functional as F
from conftest import assert_same


def randn(*shape, seed=0):
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed))


def run_both(fn, x, dtype=torch.float64, seed=1):
    """Forward (every output) and the input gradient of fn on CPU and tpu."""
    xc = x.to(dtype).clone().requires_grad_()
    xt = x.to(dtype).to("tpu").requires_grad_()
    out, out_t = fn(xc), fn(xt)
    if isinstance(out, tuple):
        for a, b in zip(out_t, out):
            assert_same(a, b.detach(), equal_nan=True)
        out, out_t = out[0], out_t[0]
    else:
        tol = {"atol": 1e-5, "rtol": 1e-5} if dtype == torch.float32 else {}
        assert_same(out_t, out.detach(), equal_nan=True, **tol)
    grad = randn(*out.shape, seed=seed).to(dtype)
    out.backward(grad)
    out_t.backward(grad.to("tpu"))
    tol = {"atol": 1e-5, "rtol": 1e-5} if dtype == torch.float32 else {}
    assert_same(xt.grad, xc.grad, **tol)


MAX_POOL_CASES = [
    ((2, 3, 7, 6), dict(kernel_size=2)),
    ((2, 3, 7, 6), dict(kernel_size=3, stride=2, padding=1)),
    ((1, 2, 8, 7), dict(kernel_size=(3, 2), stride=(2, 3), padding=(1, 1), dilation=(2, 1))),
    ((1, 2, 7, 7), dict(kernel_size=3, stride=2, ceil_mode=True)),
    ((2, 5, 5), dict(kernel_size=2, stride=1, padding=1, ceil_mode=True)),
]


@pytest.mark.parametrize(
    "case,dtype",
    [(i, torch.float64) for i in range(len(MAX_POOL_CASES))] + [(2, torch.float32)],
)
def test_max_pool2d(case, dtype, counters):
    shape, kw = MAX_POOL_CASES[case]
    run_both(lambda x: F.max_pool2d(x, return_indices=True, **kw), randn(*shape), dtype)
    assert counters()["cpu_fallbacks"] == {}


def test_max_pool_ties_infinities_and_nans(counters):
    # Ties pick the first maximum; NaN wins; all -inf windows report their first position.
    x = torch.randint(0, 3, (1, 2, 6, 6)).double()
    x[0, 0, :2, :2] = -float("inf")
    x[0, 1, 2, 3] = float("nan")
    run_both(lambda x: F.max_pool2d(x, 2, return_indices=True), x)
    run_both(lambda x: F.max_pool2d(x, 3, 1, 1, return_indices=True), x)
    assert counters()["cpu_fallbacks"] == {}


def test_max_pool_1d_3d_and_integers(counters):
    run_both(lambda x: F.max_pool1d(x, 3, 2, 1, return_indices=True), randn(2, 3, 9))
    run_both(lambda x: F.max_pool3d(x, 2, return_indices=True), randn(1, 2, 4, 5, 4))
    run_both(lambda x: F.max_pool3d(x, (2, 3, 2), (1, 2, 2), 1, ceil_mode=True), randn(2, 3, 5, 4))
    x = torch.randint(-50, 50, (2, 3, 6, 5))
    assert_same(F.max_pool2d(x.to("tpu"), 2), F.max_pool2d(x, 2))
    assert counters()["cpu_fallbacks"] == {}


AVG_POOL_CASES = [
    ((2, 3, 7, 6), dict(kernel_size=2)),
    ((2, 3, 7, 6), dict(kernel_size=3, stride=2, padding=1)),
    ((2, 3, 7, 6), dict(kernel_size=3, stride=2, padding=1, count_include_pad=False)),
    ((1, 2, 7, 7), dict(kernel_size=(3, 2), stride=2, padding=(1, 1), ceil_mode=True)),
    (
        (1, 2, 8, 6),
        dict(kernel_size=3, stride=2, padding=1, ceil_mode=True, count_include_pad=False),
    ),
    ((2, 5, 5), dict(kernel_size=2, stride=1, divisor_override=3)),
]


@pytest.mark.parametrize(
    "case,dtype",
    [(i, torch.float64) for i in range(len(AVG_POOL_CASES))] + [(4, torch.float32)],
)
def test_avg_pool2d(case, dtype, counters):
    shape, kw = AVG_POOL_CASES[case]
    run_both(lambda x: F.avg_pool2d(x, **kw), randn(*shape), dtype)
    assert counters()["cpu_fallbacks"] == {}


def test_avg_pool_1d_3d_and_integers(counters):
    run_both(lambda x: F.avg_pool1d(x, 3, 2, 1), randn(2, 3, 9))
    run_both(lambda x: F.avg_pool3d(x, 2, ceil_mode=True, padding=1), randn(1, 2, 4, 5, 4))
    x = torch.randint(-50, 50, (2, 3, 6, 5))
    assert_same(F.avg_pool2d(x.to("tpu"), 2), F.avg_pool2d(x, 2))
    assert counters()["cpu_fallbacks"] == {}


@pytest.mark.parametrize(
    "shape,size,dtype",
    [
        ((2, 3, 8, 6), (4, 3), torch.float64),
        ((2, 3, 7, 5), (3, 2), torch.float64),
        ((3, 5, 6), (4, 4), torch.float32),
        ((1, 2, 5, 5), (7, 6), torch.float64),
    ],
)
def test_adaptive_avg_pool2d(shape, size, dtype, counters):
    run_both(lambda x: F.adaptive_avg_pool2d(x, size), randn(*shape), dtype)
    assert counters()["cpu_fallbacks"] == {}


def test_adaptive_avg_pool_1d_3d(counters):
    run_both(lambda x: F.adaptive_avg_pool1d(x, 4), randn(2, 3, 9))
    run_both(lambda x: F.adaptive_avg_pool3d(x, (2, 3, 2)), randn(1, 2, 5, 4, 3))
    assert counters()["cpu_fallbacks"] == {}


def test_out_variants():
    x = randn(1, 2, 6, 6)
    out = torch.empty(0, device="tpu")
    torch._C._nn.avg_pool2d(x.to("tpu"), 2, out=out)
    assert_same(out, F.avg_pool2d(x, 2))
    values, indices = torch.empty(0, device="tpu"), torch.empty(0, dtype=torch.long, device="tpu")
    torch._C._nn.max_pool2d_with_indices(x.to("tpu"), 3, 2, 1, out=(values, indices))
    expected = F.max_pool2d(x, 3, 2, 1, return_indices=True)
    assert_same(values, expected[0])
    assert_same(indices, expected[1])


ERROR_CASES = [
    lambda x: F.max_pool2d(x, 4),
    lambda x: F.max_pool2d(x, 3, padding=2),
    lambda x: F.max_pool2d(x, (1, 2, 3)),
    lambda x: F.avg_pool2d(x, 2, divisor_override=0),
    lambda x: F.avg_pool2d(x, 3, padding=2),
    lambda x: F.max_pool2d(x[0, 0, 0], 2),
]


@pytest.mark.parametrize("case", range(len(ERROR_CASES)))
def test_errors_match_cpu(case):
    x = randn(1, 2, 3, 3)
    with pytest.raises(RuntimeError) as cpu_error:
        ERROR_CASES[case](x)
    with pytest.raises(RuntimeError) as tpu_error:
        ERROR_CASES[case](x.to("tpu"))
    assert str(tpu_error.value) == str(cpu_error.value)


@pytest.mark.parametrize(
    "shape,size", [((2, 3, 7, 5), (3, 2)), ((3, 6, 6), (4, 4)), ((1, 2, 5, 4, 3), (2, 3, 2))]
)
def test_adaptive_max_pool(shape, size, counters):
    fn = F.adaptive_max_pool2d if len(size) == 2 else F.adaptive_max_pool3d
    run_both(lambda x: fn(x, size, return_indices=True), randn(*shape))
    x = torch.randint(0, 3, (1, 2, 5, 5)).double()
    x[0, 1, 1, 1] = float("nan")
    run_both(lambda x: F.adaptive_max_pool2d(x, 3, return_indices=True), x)
    assert counters()["cpu_fallbacks"] == {}
