"""Convolutions on tpu against CPU PyTorch: forward and input/weight/bias gradients."""

import pytest
import torch
import torch.nn.functional as F
from conftest import assert_same


def run_both(fn, tensors, dtype, seed=0):
    """Runs fn forward and backward on CPU and tpu copies of `tensors`; compares all results."""
    g = torch.Generator().manual_seed(seed)
    cpu = [None if t is None else t.to(dtype).clone().requires_grad_() for t in tensors]
    tpu = [None if t is None else t.to(dtype).to("tpu").requires_grad_() for t in tensors]
    out = fn(*cpu)
    grad = torch.randn(out.shape, generator=g).to(dtype)
    out.backward(grad)
    out_t = fn(*tpu)
    out_t.backward(grad.to("tpu"))
    tol = {"atol": 1e-4, "rtol": 1e-4} if dtype == torch.float32 else {}
    assert_same(out_t, out.detach(), **tol)
    for c, t in zip(cpu, tpu):
        if c is not None:
            assert_same(t.grad, c.grad, **tol)


def randn(*shape, seed=0):
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed))


CONV_CASES = [
    # (fn, input shape, weight shape, bias, kwargs)
    (F.conv1d, (2, 4, 9), (6, 4, 3), True, dict(stride=2, padding=1)),
    (F.conv1d, (1, 4, 8), (4, 2, 2), False, dict(dilation=3, groups=2, padding=3)),
    (F.conv2d, (2, 3, 6, 5), (4, 3, 3, 3), True, {}),
    (
        F.conv2d,
        (2, 4, 7, 6),
        (6, 2, 3, 2),
        True,
        dict(stride=(2, 1), padding=(1, 0), dilation=(1, 2), groups=2),
    ),
    (F.conv2d, (1, 4, 5, 5), (8, 1, 3, 3), False, dict(padding=1, groups=4)),
    (F.conv2d, (2, 3, 5, 5), (2, 3, 1, 1), True, dict(stride=3)),
    (F.conv2d, (1, 2, 6, 6), (3, 2, 3, 3), True, dict(padding="same")),
    (F.conv2d, (3, 5, 5), (2, 3, 3, 3), True, dict(stride=2)),
    (F.conv3d, (1, 2, 5, 4, 4), (3, 2, 2, 3, 2), True, dict(padding=1, stride=(1, 2, 1))),
    (F.conv_transpose1d, (2, 4, 5), (4, 3, 3), True, dict(stride=2, padding=1, output_padding=1)),
    (
        F.conv_transpose2d,
        (2, 4, 5, 4),
        (4, 3, 3, 3),
        True,
        dict(stride=2, padding=1, output_padding=1),
    ),
    (
        F.conv_transpose2d,
        (1, 4, 4, 4),
        (4, 2, 2, 3),
        False,
        dict(stride=(1, 2), groups=2, dilation=2),
    ),
    (
        F.conv_transpose2d,
        (1, 2, 3, 3),
        (2, 3, 3, 3),
        True,
        dict(stride=3, padding=2, output_padding=2, dilation=2),
    ),
    (F.conv_transpose3d, (1, 2, 3, 3, 2), (2, 2, 2, 2, 2), True, dict(stride=2)),
]


@pytest.mark.parametrize(
    "case,dtype",
    [(i, torch.float64) for i in range(len(CONV_CASES))] + [(i, torch.float32) for i in (3, 8, 11)],
)
def test_convolution_forward_and_grads(case, dtype, counters):
    fn, xs, ws, has_bias, kw = CONV_CASES[case]
    out_channels = ws[0] if "transpose" not in fn.__name__ else ws[1] * kw.get("groups", 1)
    bias = randn(out_channels, seed=2) if has_bias else None
    run_both(lambda x, w, b: fn(x, w, b, **kw), [randn(*xs), randn(*ws, seed=1), bias], dtype)
    assert counters()["cpu_fallbacks"] == {}


def test_conv_module_and_partial_grads(counters):
    torch.manual_seed(0)
    conv = torch.nn.Conv2d(3, 4, 3, padding=1)
    x = torch.randn(2, 3, 6, 6)
    conv_t = torch.nn.Conv2d(3, 4, 3, padding=1).to("tpu")
    conv_t.load_state_dict(conv.state_dict())
    # Only the weight needs a gradient: grad_input is not requested.
    conv.bias.requires_grad_(False)
    conv_t.bias.requires_grad_(False)
    conv(x).sum().backward()
    conv_t(x.to("tpu")).sum().backward()
    assert_same(conv_t.weight.grad, conv.weight.grad, atol=1e-4, rtol=1e-4)
    assert conv_t.bias.grad is None
    with torch.no_grad():
        assert_same(conv_t(x.to("tpu")), conv(x), atol=1e-5, rtol=1e-5)
    assert counters()["cpu_fallbacks"] == {}


def test_integer_convolution():
    x = torch.randint(-3, 4, (1, 2, 5, 5))
    w = torch.randint(-3, 4, (3, 2, 2, 2))
    assert_same(F.conv2d(x.to("tpu"), w.to("tpu"), stride=2), F.conv2d(x, w, stride=2))


ERROR_CASES = [
    (F.conv2d, (1, 3, 5, 5), (4, 3, 3), {}),
    (F.conv2d, (1, 3, 5, 5), (4, 2, 3, 3), {}),
    (F.conv2d, (1, 3, 2, 2), (4, 3, 3, 3), {}),
    (F.conv2d, (1, 4, 5, 5), (4, 2, 3, 3), dict(groups=3)),
    (F.conv2d, (1, 3, 5, 5), (4, 3, 3, 3), dict(stride=0)),
    (F.conv2d, (3, 5), (4, 3, 3, 3), {}),
    (F.conv_transpose2d, (1, 4, 5, 5), (4, 3, 3, 3), dict(stride=2, output_padding=2)),
]


@pytest.mark.parametrize("case", range(len(ERROR_CASES)))
def test_convolution_errors_match_cpu(case):
    fn, xs, ws, kw = ERROR_CASES[case]
    x, w = randn(*xs), randn(*ws)
    with pytest.raises(RuntimeError) as cpu_error:
        fn(x, w, **kw)
    with pytest.raises(RuntimeError) as tpu_error:
        fn(x.to("tpu"), w.to("tpu"), **kw)
    assert str(tpu_error.value) == str(cpu_error.value)


def test_mismatched_dtypes_raise():
    x, w = randn(1, 3, 5, 5), randn(4, 3, 3, 3)
    with pytest.raises(RuntimeError, match="expected scalar type Float but found Double"):
        F.conv2d(x.to("tpu"), w.double().to("tpu"))
    with pytest.raises(RuntimeError, match="bias type"):
        F.conv2d(x.to("tpu"), w.to("tpu"), torch.zeros(4, dtype=torch.float64, device="tpu"))
