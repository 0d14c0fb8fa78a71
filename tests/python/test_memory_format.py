"""Memory formats on "tpu" as on the CPU: channels_last (and channels_last_3d) inputs give results
with the CPU's strides through elementwise ops (TensorIterator's rule), cat, interpolate, padding,
pooling, convolution and batch/group norm, forward and backward; values equal the CPU's."""

import pytest
import torch
import torch.nn.functional as F

pytestmark = pytest.mark.usefixtures("no_fallback")

CL, CL3 = torch.channels_last, torch.channels_last_3d

OPS = {
    "x + 3": lambda t, u: t + 3,
    "x * 2.0": lambda t, u: t * 2.0,
    "relu": lambda t, u: t.relu(),
    "x + contiguous": lambda t, u: t + u,
    "contiguous + x": lambda t, u: u + t,
    "exp": lambda t, u: t.exp(),
    "where": lambda t, u: torch.where(t > 0, t, 0.0),
    "silu": lambda t, u: F.silu(t),
    "cat dim 0": lambda t, u: torch.cat([t, t], 0),
    "cat dim 1": lambda t, u: torch.cat([t, t * 2], 1),
    "cat mixed formats": lambda t, u: torch.cat([t, u], 1),
    "interpolate nearest": lambda t, u: F.interpolate(t, scale_factor=2),
    "interpolate bilinear": lambda t, u: F.interpolate(t, scale_factor=2, mode="bilinear"),
    "interpolate bicubic": lambda t, u: F.interpolate(t, size=(7, 9), mode="bicubic"),
    "pad": lambda t, u: F.pad(t, (1, 2, 0, 1)),
    "max_pool2d": lambda t, u: F.max_pool2d(t, 2),
    "avg_pool2d": lambda t, u: F.avg_pool2d(t, 2),
    "adaptive_avg_pool2d": lambda t, u: F.adaptive_avg_pool2d(t, 3),
    "adaptive_max_pool2d": lambda t, u: F.adaptive_max_pool2d(t, 3),
    "conv2d": lambda t, u: F.conv2d(t, torch.ones(4, 3, 3, 3, device=t.device) * 0.1),
    "batch_norm": lambda t, u: F.batch_norm(t, None, None, training=True),
    "batch_norm eval": lambda t, u: F.batch_norm(
        t, torch.zeros(3, device=t.device), torch.ones(3, device=t.device)
    ),
    "group_norm": lambda t, u: F.group_norm(t, 3),
    "layer_norm (contiguous on the CPU)": lambda t, u: F.layer_norm(t, (6,)),
    "transpose + 1": lambda t, u: t.transpose(2, 3) + 1,
}


def _inputs(fmt=CL):
    g = torch.Generator().manual_seed(0)
    shape = (2, 3, 5, 6) if fmt == CL else (2, 3, 4, 5, 6)
    x = torch.randn(shape, generator=g).to(memory_format=fmt)
    y = torch.randn(shape, generator=g)
    return x, y


@pytest.mark.parametrize("op", list(OPS))
def test_forward_layout_and_values(op):
    x, y = _inputs()
    fn = OPS[op]
    expected = fn(x, y)
    got = fn(x.to("tpu"), y.to("tpu"))
    assert got.stride() == expected.stride()
    assert got.is_contiguous(memory_format=CL) == expected.is_contiguous(memory_format=CL)
    torch.testing.assert_close(got.cpu(), expected, rtol=1e-4, atol=1e-5)


def test_issue_cases_are_channels_last():
    x = torch.randn(2, 3, 4, 5, device="tpu").to(memory_format=CL)
    for r in (x + 3, torch.cat([x, x], 1), F.interpolate(x, scale_factor=2)):
        assert r.is_contiguous(memory_format=CL) and not r.is_contiguous()


@pytest.mark.parametrize(
    "op", ["conv2d", "max_pool2d", "avg_pool2d", "interpolate bilinear", "batch_norm", "group_norm"]
)
def test_backward_layout_and_values(op):
    x, y = _inputs()
    results = []
    for device in ("cpu", "tpu"):
        leaf = x.to(device).detach().requires_grad_()
        xi = leaf * 1  # not a leaf: its gradient keeps the layout the backward kernel gave it
        out = OPS[op](xi, y.to(device))
        grad_out = torch.linspace(-1, 1, out.numel()).reshape(out.shape).to(device)
        results.append(torch.autograd.grad(out, xi, grad_out)[0])
    expected, got = results
    if op == "group_norm":
        # autograd's formula makes the input and gradient contiguous for every device but the CPU
        # (CUDA's gradient is contiguous too)
        assert got.is_contiguous() and expected.is_contiguous(memory_format=CL)
    else:
        assert got.stride() == expected.stride()
    torch.testing.assert_close(got.cpu(), expected, rtol=1e-4, atol=1e-4)


OPS_3D = {
    "x + 1": lambda t: t + 1,
    "cat": lambda t: torch.cat([t, t], 1),
    "trilinear": lambda t: F.interpolate(t, scale_factor=2, mode="trilinear"),
    "max_pool3d": lambda t: F.max_pool3d(t, 2),
    "avg_pool3d (contiguous on the CPU)": lambda t: F.avg_pool3d(t, 2),
    "adaptive_avg_pool3d (contiguous on the CPU)": lambda t: F.adaptive_avg_pool3d(t, 2),
    "adaptive_max_pool3d (contiguous on the CPU)": lambda t: F.adaptive_max_pool3d(t, 2),
    "conv3d": lambda t: F.conv3d(t, torch.ones(2, 3, 1, 1, 1, device=t.device)),
}


@pytest.mark.parametrize("op", list(OPS_3D))
def test_channels_last_3d(op):
    x, _ = _inputs(CL3)
    results = []
    for device in ("cpu", "tpu"):
        xi = x.to(device).detach().requires_grad_() * 1
        out = OPS_3D[op](xi)
        results.append((out, torch.autograd.grad(out, xi, torch.ones_like(out))[0]))
    for got, expected in zip(results[1], results[0]):
        assert got.stride() == expected.stride()
        torch.testing.assert_close(got.cpu(), expected, rtol=1e-4, atol=1e-5)
