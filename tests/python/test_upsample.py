"""Nearest, nearest-exact, linear and bicubic interpolation on tpu against CPU PyTorch, with
gradients."""

import pytest
import torch
import torch.nn.functional as F
from conftest import assert_same


def randn(*shape, seed=0):
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed))


def run_both(fn, x, dtype):
    xc = x.to(dtype).clone().requires_grad_()
    xt = x.to(dtype).to("tpu").requires_grad_()
    out, out_t = fn(xc), fn(xt)
    tol = {"atol": 1e-5, "rtol": 1e-5} if dtype == torch.float32 else {}
    assert_same(out_t, out.detach(), **tol)
    grad = randn(*out.shape, seed=1).to(dtype)
    out.backward(grad)
    out_t.backward(grad.to("tpu"))
    assert_same(xt.grad, xc.grad, **tol)


CASES = [
    ((2, 3, 4, 5), dict(scale_factor=2, mode="nearest")),
    ((1, 2, 5, 4), dict(size=(7, 9), mode="nearest")),
    ((1, 2, 6, 6), dict(size=(4, 3), mode="nearest")),
    ((1, 2, 5, 4), dict(scale_factor=1.5, mode="nearest")),
    ((2, 3, 4, 5), dict(scale_factor=2, mode="bilinear", align_corners=False)),
    ((2, 3, 4, 5), dict(scale_factor=2, mode="bilinear", align_corners=True)),
    ((1, 2, 5, 4), dict(size=(7, 9), mode="bilinear", align_corners=False)),
    ((1, 2, 7, 9), dict(size=(3, 4), mode="bilinear", align_corners=True)),
    ((1, 2, 6, 6), dict(size=(4, 6), mode="bilinear", align_corners=False)),
    ((1, 2, 5, 4), dict(scale_factor=(1.7, 0.6), mode="bilinear")),
    ((1, 2, 1, 4), dict(size=(3, 1), mode="bilinear", align_corners=True)),
    ((2, 3, 7), dict(scale_factor=2.5, mode="nearest")),
    ((2, 3, 7), dict(size=11, mode="linear", align_corners=False)),
    ((2, 3, 7), dict(size=4, mode="linear", align_corners=True)),
    ((1, 2, 3, 4, 3), dict(scale_factor=2, mode="nearest")),
    ((1, 2, 3, 4, 3), dict(size=(5, 3, 4), mode="trilinear", align_corners=False)),
    ((2, 3, 7), dict(size=11, mode="nearest-exact")),
    ((1, 2, 5, 4), dict(size=(7, 3), mode="nearest-exact")),
    ((1, 2, 5, 4), dict(scale_factor=1.7, mode="nearest-exact")),
    ((1, 2, 3, 4, 3), dict(size=(5, 2, 7), mode="nearest-exact")),
    ((1, 2, 5, 4), dict(size=(7, 9), mode="bicubic", align_corners=False)),
    ((2, 3, 6, 5), dict(scale_factor=0.6, mode="bicubic", align_corners=True)),
    ((1, 2, 4, 6), dict(scale_factor=(1.5, 0.7), mode="bicubic")),
]


@pytest.mark.parametrize(
    "case,dtype",
    [(i, torch.float32) for i in range(len(CASES))]
    + [(i, torch.float64) for i in (1, 6, 9, 19, 21)],
)
def test_interpolate(case, dtype, counters):
    shape, kw = CASES[case]
    run_both(lambda x: F.interpolate(x, **kw), randn(*shape), dtype)
    assert counters()["cpu_fallbacks"] == {}


def test_nearest_uint8_and_bfloat16():
    x = torch.randint(0, 255, (1, 3, 4, 5), dtype=torch.uint8)
    assert_same(F.interpolate(x.to("tpu"), scale_factor=2), F.interpolate(x, scale_factor=2))
    kw = dict(size=(7, 3), mode="nearest-exact")
    assert_same(F.interpolate(x.to("tpu"), **kw), F.interpolate(x, **kw))
    y = randn(1, 2, 4, 4).bfloat16()
    assert_same(
        F.interpolate(y.to("tpu"), size=(6, 7), mode="bilinear"),
        F.interpolate(y, size=(6, 7), mode="bilinear"),
        atol=1e-2,
        rtol=1e-2,
    )


def test_errors():
    x = randn(1, 2, 3, 3)
    # Antialiasing: float32/float64 and uint8 on the CPU, its kernels' names in the messages.
    for dtype, mode in ((torch.float16, "bilinear"), (torch.int64, "bicubic")):
        kw = dict(size=(2, 2), mode=mode, antialias=True)
        for device in ("cpu", "tpu"):
            with pytest.raises(NotImplementedError, match="compute_index_ranges_weights"):
                F.interpolate(x.to(dtype).to(device), **kw)
    g = x.to(torch.bfloat16).to("tpu")
    with pytest.raises(NotImplementedError, match="upsample_bicubic2d_aa_backward_cpu"):
        torch.ops.aten._upsample_bicubic2d_aa_backward(g, [3, 3], [1, 2, 6, 6], False)
    with pytest.raises(NotImplementedError, match="not implemented for 'Long'"):
        torch._C._nn.upsample_nearest2d(x.long().to("tpu"), [4, 4])
    with pytest.raises(RuntimeError, match="It is expected output_size equals to 2"):
        torch._C._nn.upsample_bilinear2d(x.to("tpu"), [4], False)
    with pytest.raises(RuntimeError, match="Input and output sizes should be greater than 0"):
        torch._C._nn.upsample_nearest2d(x.to("tpu"), [0, 4])


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
@pytest.mark.parametrize("antialias", [False, True])
def test_uint8_bilinear_bicubic(mode, antialias, counters):
    # The CPU's integer kernels: int16 weights, each axis rounded and clamped to uint8 in turn (3
    # channels take its AVX2 path on machines without AVX-512, 5 channels its generic one). Values
    # of only 0 and 255 make bicubic overshoot, so the clamping shows.
    g = torch.Generator().manual_seed(0)
    cases = [
        ((1, 3, 9, 11), dict(size=(13, 5))),
        ((2, 5, 8, 7), dict(scale_factor=(0.4, 2.3))),
        ((1, 3, 6, 6), dict(size=(6, 17))),
    ]
    for shape, kw in cases:
        x = torch.randint(0, 256, shape, dtype=torch.uint8, generator=g)
        x[..., ::3, :] = 255 * (x[..., ::3, :] > 127)
        for align in (False, True):
            kw = dict(kw, mode=mode, align_corners=align, antialias=antialias)
            assert_same(F.interpolate(x.to("tpu"), **kw), F.interpolate(x, **kw), atol=0, rtol=0)
    y = x.contiguous(memory_format=torch.channels_last)
    kw = dict(size=(4, 9), mode=mode, antialias=antialias)
    out = F.interpolate(y.to("tpu"), **kw)
    assert_same(out, F.interpolate(y, **kw), atol=0, rtol=0)
    assert out.is_contiguous(memory_format=torch.channels_last)
    assert counters()["cpu_fallbacks"] == {}


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
def test_antialias_float(mode, counters):
    # Forward and gradient (float32 and float64) against the CPU, with no CPU fallback.
    x = randn(2, 3, 11, 9)
    for kw in (
        dict(size=(4, 13)),
        dict(scale_factor=(0.3, 0.5)),
        dict(size=(7, 3), align_corners=True),
    ):
        kw = dict(kw, mode=mode, antialias=True)
        run_both(lambda t: F.interpolate(t, **kw), x, torch.float32)
        run_both(lambda t: F.interpolate(t, **kw), x, torch.float64)
    assert counters()["cpu_fallbacks"] == {}
