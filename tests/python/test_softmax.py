"""softmax, log_softmax (forward, backward, out=) and _safe_softmax against CPU PyTorch."""

import math

import pytest
import torch
import torch.nn.functional as F
from conftest import assert_same


pytestmark = pytest.mark.usefixtures("no_fallback")


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("fn", [torch.softmax, torch.log_softmax])
def test_forward(fn, dtype):
    a = torch.randn(3, 4, 5, dtype=dtype) * 20
    ta = a.to("tpu")
    for dim in (0, -1):
        assert_same(fn(ta, dim), fn(a, dim))
    assert_same(fn(ta, 1, dtype=torch.float64), fn(a, 1, dtype=torch.float64))
    s = torch.tensor(1.5, dtype=dtype)
    assert_same(fn(s.to("tpu"), 0), fn(s, 0))
    e = torch.empty(0, 3, dtype=dtype)
    assert_same(fn(e.to("tpu"), 1), fn(e, 1))


@pytest.mark.parametrize("log", [False, True])
def test_infinities_and_nan(log):
    # Fixed expectations (CPU kernels differ between machines on special values): a row that is
    # all -inf, holds +inf or holds nan is nan throughout (x - max is nan somewhere); a -inf entry
    # beside finite ones gets probability 0 (log-probability -inf).
    inf, nan = math.inf, math.nan
    a = torch.tensor([[-inf, -inf, -inf], [-inf, 0.0, 1.0], [inf, 0.0, 1.0], [nan, 0, 1]])
    z = math.log(1 + math.e)
    finite_row = [-inf, -z, 1 - z] if log else [0.0, 1 / (1 + math.e), math.e / (1 + math.e)]
    expected = torch.tensor([[nan] * 3, finite_row, [nan] * 3, [nan] * 3])
    fn = torch.log_softmax if log else torch.softmax
    torch.testing.assert_close(fn(a.to("tpu"), 1).cpu(), expected, equal_nan=True)


@pytest.mark.parametrize("fn", [F.softmax, F.log_softmax])
def test_backward(fn):
    x = torch.randn(3, 4, 5, dtype=torch.float64)
    w = torch.randn(3, 4, 5, dtype=torch.float64)
    for dim in (0, 2):
        cx = x.clone().requires_grad_()
        tx = x.to("tpu").requires_grad_()
        (fn(cx, dim=dim) * w).sum().backward()
        (fn(tx, dim=dim) * w.to("tpu")).sum().backward()
        assert_same(tx.grad, cx.grad)


def test_out_variants_and_backward_data():
    a = torch.randn(3, 4)
    y = torch.softmax(a, 1)
    g = torch.randn(3, 4)
    out = torch.empty(0, device="tpu")
    torch._softmax(a.to("tpu"), 1, False, out=out)
    assert_same(out, y)
    torch._log_softmax(a.to("tpu"), 0, False, out=out)
    assert_same(out, torch.log_softmax(a, 0))
    grad = torch._softmax_backward_data(g.to("tpu"), y.to("tpu"), 1, torch.float32)
    assert_same(grad, torch._softmax_backward_data(g, y, 1, torch.float32))
    ly = torch.log_softmax(a, 1)
    torch._log_softmax_backward_data(g.to("tpu"), ly.to("tpu"), 1, torch.float32, out=out)
    assert_same(out, torch._log_softmax_backward_data(g, ly, 1, torch.float32))


def test_errors():
    with pytest.raises(NotImplementedError, match='"softmax_lastdim_kernel_impl" not implemented'):
        torch.softmax(torch.arange(3).to("tpu"), 0)
    with pytest.raises(
        RuntimeError, match="softmax with half to float conversion is not supported"
    ):
        torch._softmax(torch.ones(3, device="tpu"), 0, True)
    with pytest.raises(IndexError, match="Dimension out of range"):
        torch.softmax(torch.ones(3, device="tpu"), 1)


def test_safe_softmax():
    # scaled_dot_product_attention's softmax: a row that is all -inf (a query that masks out every
    # key) is 0 rather than nan; rows holding nan or +inf stay nan, as in softmax. Fixed
    # expectations, as above.
    inf, nan = math.inf, math.nan
    a = torch.tensor([[-inf, -inf, -inf], [-inf, 0.0, 1.0], [nan, -inf, -inf], [inf, 0.0, 1.0]])
    p = 1 / (1 + math.e)
    expected = torch.tensor([[0.0] * 3, [0.0, p, 1 - p], [nan] * 3, [nan] * 3])
    out = torch.ops.aten._safe_softmax(a.to("tpu"), 1)
    torch.testing.assert_close(out.cpu(), expected, equal_nan=True)
    assert_same(torch.ops.aten._safe_softmax(a.t().to("tpu"), 0), expected.t(), equal_nan=True)
    x = torch.randn(3, 4, 5) * 20
    x[1, :, 2] = -inf
    assert_same(torch.ops.aten._safe_softmax(x.to("tpu"), 1), torch.ops.aten._safe_softmax(x, 1))
    # A widening dtype keeps the -inf elements; a narrowing one makes new ones (-7e4 in float16),
    # whose rows are not masked rows of the input: nan, as on the CPU.
    h = x.half()
    assert_same(
        torch.ops.aten._safe_softmax(h.to("tpu"), -1, torch.float32),
        torch.ops.aten._safe_softmax(h, -1, torch.float32),
    )
    big = torch.tensor([[-7e4, -7e4], [-inf, -inf], [0.0, 1.0]])
    expected = torch.ops.aten._safe_softmax(big, 1, torch.float16)
    assert expected[0].isnan().all() and (expected[1] == 0).all()
    out = torch.ops.aten._safe_softmax(big.to("tpu"), 1, torch.float16)
    assert_same(out, expected, equal_nan=True)
    # Its gradient (autograd's formula over the result).
    w = torch.randn(3, 4, 5)
    cx, tx = x.clone().requires_grad_(), x.to("tpu").requires_grad_()
    (torch.ops.aten._safe_softmax(cx, 2) * w).sum().backward()
    (torch.ops.aten._safe_softmax(tx, 2) * w.to("tpu")).sum().backward()
    assert_same(tx.grad, cx.grad)
    with pytest.raises(NotImplementedError, match='"softmax_lastdim_kernel_impl" not implemented'):
        torch.ops.aten._safe_softmax(torch.arange(3).to("tpu"), 0)
