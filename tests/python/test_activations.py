"""Activations and their backward ops against CPU PyTorch: forward, autograd gradients, in-place
and out= forms, NaN/Inf, 0-dim and empty inputs, and no CPU fallback."""

import pytest
import torch
import torch.nn.functional as F
from conftest import assert_same


NAN, INF = float("nan"), float("inf")

ACTIVATIONS = {
    "gelu": F.gelu,
    "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"),
    "silu": F.silu,
    "sigmoid": torch.sigmoid,
    "tanh": torch.tanh,
    "softplus": F.softplus,
    "softplus_beta": lambda x: F.softplus(x, beta=2.0, threshold=5.0),
    "elu": F.elu,
    "celu": lambda x: F.celu(x, alpha=0.7),
    "selu": F.selu,
    "leaky_relu": lambda x: F.leaky_relu(x, 0.2),
    "hardswish": F.hardswish,
    "hardsigmoid": F.hardsigmoid,
    "hardtanh": lambda x: F.hardtanh(x, -0.5, 1.5),
    "relu6": F.relu6,
    "logsigmoid": F.logsigmoid,
    "mish": F.mish,
    "threshold": lambda x: F.threshold(x, 0.3, -2.0),
    "softshrink": lambda x: F.softshrink(x, 0.7),
    "hardshrink": F.hardshrink,
    "tanhshrink": F.tanhshrink,
}


pytestmark = pytest.mark.usefixtures("no_fallback")


def inputs(dtype=torch.float32):
    x = torch.cat([torch.linspace(-6, 6, 49), torch.tensor([-3.0, 3.0, 0.0, 30.0, -30.0])])
    return x.to(dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16, torch.float16])
@pytest.mark.parametrize("name", ACTIVATIONS)
def test_forward(name, dtype):
    fn = ACTIVATIONS[name]
    x = inputs(dtype)
    tol = {} if dtype in (torch.float32, torch.float64) else {"rtol": 1e-2, "atol": 1e-2}
    assert_same(fn(x.to("tpu")), fn(x), **tol)


@pytest.mark.parametrize("name", ACTIVATIONS)
def test_backward(name):
    fn = ACTIVATIONS[name]
    x = inputs(torch.float64).reshape(-1)[:-2]
    g = torch.randn(x.shape, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    xc = x.clone().requires_grad_()
    xt = x.to("tpu").requires_grad_()
    fn(xc).backward(g)
    fn(xt).backward(g.to("tpu"))
    assert_same(xt.grad, xc.grad)


LN2 = 0.6931471805599453

# Each activation at [nan, inf, -inf, -0.0], fixed rather than taken from this machine's CPU
# kernels (whose vectorized paths differ between CPUs on inf: e.g. gelu(inf) is nan on some). The
# values are what CUDA gives, evaluating the op's formula in IEEE arithmetic: the mathematical
# value, except that formulas of the form x * f(x) with f(-inf) = 0 (gelu, gelu_tanh, silu,
# hardswish, mish) give -inf * 0 = nan at -inf. Zeros compare by value, not sign.
SPECIAL_EXPECTED = {
    "gelu": [NAN, INF, NAN, 0.0],
    "gelu_tanh": [NAN, INF, NAN, 0.0],
    "silu": [NAN, INF, NAN, 0.0],
    "sigmoid": [NAN, 1.0, 0.0, 0.5],
    "tanh": [NAN, 1.0, -1.0, 0.0],
    "softplus": [NAN, INF, 0.0, LN2],
    "softplus_beta": [NAN, INF, 0.0, LN2 / 2],
    "elu": [NAN, INF, -1.0, 0.0],
    "celu": [NAN, INF, -0.7, 0.0],
    "selu": [NAN, INF, -1.0507009873554805 * 1.6732632423543772, 0.0],
    "leaky_relu": [NAN, INF, -INF, 0.0],
    "hardswish": [NAN, INF, NAN, 0.0],
    "hardsigmoid": [NAN, 1.0, 0.0, 0.5],
    "hardtanh": [NAN, 1.5, -0.5, 0.0],
    "relu6": [NAN, 6.0, 0.0, 0.0],
    "logsigmoid": [NAN, 0.0, -INF, -LN2],
    "mish": [NAN, INF, NAN, 0.0],
    "threshold": [NAN, INF, -2.0, -2.0],  # -2 where x <= 0.3, else x (nan <= 0.3 is false)
    "softshrink": [NAN, INF, -INF, 0.0],
    "hardshrink": [NAN, INF, -INF, 0.0],
    "tanhshrink": [NAN, INF, -INF, 0.0],
}


@pytest.mark.parametrize("name", ACTIVATIONS)
def test_special_values_zero_dim_and_empty(name):
    fn = ACTIVATIONS[name]
    x = torch.tensor([NAN, INF, -INF, -0.0])
    expected = torch.tensor(SPECIAL_EXPECTED[name])
    torch.testing.assert_close(fn(x.to("tpu")).cpu(), expected, equal_nan=True)
    assert_same(fn(torch.tensor(0.7).to("tpu")), fn(torch.tensor(0.7)))
    assert fn(torch.empty(0, 2, device="tpu")).shape == (0, 2)


def test_in_place_and_out_forms():
    x = inputs().reshape(6, 9)
    for name, kw in [
        ("silu", {}),
        ("elu", {"alpha": 0.5}),
        ("leaky_relu", {"negative_slope": 0.1}),
        ("hardswish", {}),
        ("hardsigmoid", {}),
        ("hardtanh", {"min_val": -2.0, "max_val": 2.0}),
        ("mish", {}),
        ("threshold", {"threshold": 0.5, "value": 9.0}),
    ]:
        t = x.to("tpu")
        getattr(F, name)(t, inplace=True, **kw)
        assert_same(t, getattr(F, name)(x, **kw))
    out = torch.empty(0, device="tpu")
    torch._C._nn.gelu(x.to("tpu"), approximate="tanh", out=out)
    assert_same(out, F.gelu(x, approximate="tanh"))
    torch._C._nn.softplus(x.to("tpu"), 1.0, 20.0, out=out)
    assert_same(out, F.softplus(x))
    t = x.to("tpu").requires_grad_()
    F.leaky_relu(t.clone(), 0.1, inplace=True).sum().backward()
    xc = x.clone().requires_grad_()
    F.leaky_relu(xc.clone(), 0.1, inplace=True).sum().backward()
    assert_same(t.grad, xc.grad)


def test_errors():
    with pytest.raises(RuntimeError, match="approximate argument must be either none or tanh"):
        torch._C._nn.gelu(torch.ones(2, device="tpu"), approximate="fast")
    with pytest.raises(NotImplementedError, match="not implemented for 'Long'"):
        F.elu(torch.ones(2, dtype=torch.long, device="tpu"))
    with pytest.raises(RuntimeError, match="lambda must be greater or equal to 0"):
        F.softshrink(torch.ones(2, device="tpu"), -1.0)
    with pytest.raises(NotImplementedError, match="\"hardshrink_cpu\" not implemented for 'Long'"):
        F.hardshrink(torch.ones(2, dtype=torch.long, device="tpu"))
    with pytest.raises(
        RuntimeError, match="Halving dimension must be even, but dimension 1 is size 3"
    ):
        F.glu(torch.ones(2, 3, device="tpu"))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16, torch.float16])
def test_glu_and_prelu(dtype):
    x = inputs(torch.float64)[:48].reshape(4, 6, 2)
    w = torch.tensor([0.25, -0.5, 2.0, 0.1, 0.0, 1.5], dtype=torch.float64)
    tol = {} if dtype in (torch.float32, torch.float64) else {"rtol": 1e-2, "atol": 1e-2}
    for fn, args in [
        (F.glu, {"dim": 1}),
        (F.glu, {"dim": -1}),
        (F.prelu, {"weight": w}),
        (F.prelu, {"weight": w[:1]}),
    ]:
        kw = {k: v.to(dtype) for k, v in args.items() if isinstance(v, torch.Tensor)}
        other = {k: v for k, v in args.items() if not isinstance(v, torch.Tensor)}
        xc = x.to(dtype).clone().requires_grad_()
        xt = x.to(dtype).to("tpu").requires_grad_()
        kc = {k: v.clone().requires_grad_() for k, v in kw.items()}
        kt = {k: v.to("tpu").requires_grad_() for k, v in kw.items()}
        yc, yt = fn(xc, **kc, **other), fn(xt, **kt, **other)
        assert_same(yt, yc.detach(), **tol)
        g = torch.linspace(-1, 1, yc.numel(), dtype=torch.float64).reshape(yc.shape).to(dtype)
        yc.backward(g)
        yt.backward(g.to("tpu"))
        assert_same(xt.grad, xc.grad, **tol)
        for k in kw:
            assert_same(kt[k].grad, kc[k].grad, **tol)
    out = torch.empty(0, device="tpu")
    torch._C._nn.glu(x.float().to("tpu"), 1, out=out)
    assert_same(out, F.glu(x.float(), 1))
    torch._C._nn.softshrink(x.float().to("tpu"), 0.3, out=out)
    assert_same(out, F.softshrink(x.float(), 0.3))


def test_integer_threshold_and_hardtanh():
    x = torch.arange(-5, 6)
    assert_same(F.threshold(x.to("tpu"), 1, 7), F.threshold(x, 1, 7))
    assert_same(F.hardtanh(x.to("tpu"), -2, 3), F.hardtanh(x, -2, 3))
    # Float bounds on integers are truncated, not promoting.
    assert_same(F.hardtanh(x.to("tpu"), -2.5, 3.7), F.hardtanh(x, -2.5, 3.7))


def test_threshold_in_place_on_a_self_overlapping_tensor():
    # The CPU's threshold skips TensorIterator's overlap checks (writing an element twice writes
    # the same value), so an expanded tensor may be thresholded in place; other in-place ops refuse.
    results = {}
    for device in ("cpu", "tpu"):
        x = torch.tensor([[-1.0, 2.0, 0.5, 0.6]], device=device).expand(3, 4)
        F.threshold(x, 0.55, 7.0, inplace=True)
        results[device] = F.threshold_(x, 1.0, -3.0)
        out = torch.tensor([1.0, 2.0, 3.0], device=device).expand(2, 3)
        torch.threshold(torch.ones(2, 3, device=device), 0.5, 0.0, out=out)
        assert out.cpu().tolist() == [[1.0, 1.0, 1.0]] * 2
        with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
            x.relu_()
    assert_same(results["tpu"], results["cpu"])


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128])
def test_complex_tanh_and_sigmoid_backward(dtype, counters):
    # The CPU multiplies the gradient by the derivative's conjugate; these raised "not implemented".
    z = torch.tensor([0.3 + 0.2j, -1 + 0.5j, 2 - 3j], dtype=dtype)
    g = torch.tensor([1 + 1j, 2 - 1j, -0.5 + 0.25j], dtype=dtype)
    for fn, backward in ((torch.tanh, torch.ops.aten.tanh_backward),
                         (torch.sigmoid, torch.ops.aten.sigmoid_backward)):  # fmt: skip
        y = fn(z)
        assert_same(backward(g.to("tpu"), y.to("tpu")), backward(g, y), rtol=1e-5, atol=1e-6)
        out = torch.empty(0, dtype=dtype, device="tpu")
        backward(g.to("tpu"), y.to("tpu"), grad_input=out)
        assert_same(out, backward(g, y), rtol=1e-5, atol=1e-6)
        leaf = z.clone().requires_grad_()
        fn(leaf).abs().sum().backward()
        on_tpu = z.to("tpu").requires_grad_()
        fn(on_tpu).abs().sum().backward()
        assert_same(on_tpu.grad, leaf.grad, rtol=1e-5, atol=1e-6)
    assert counters()["cpu_fallbacks"] == {}
