"""F.grid_sample on "tpu" (grid_sampler_2d/3d and their backwards) runs natively: values and
gradients match CPU PyTorch for every interpolation/padding/align_corners, special grid values
match fixed expectations, and bad arguments raise the CPU's errors."""

import pytest
import torch
import torch.nn.functional as F

import torch_pjrt

pytestmark = pytest.mark.usefixtures("no_fallback")

PADDINGS = ["zeros", "border", "reflection"]


def _case(nd, dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    spatial = (3, 4, 5)[-nd:]
    x = torch.randn(2, 3, *spatial, generator=g, dtype=dtype)
    # Coordinates reach past [-1, 1] so that padding matters.
    grid = torch.rand(2, *(3, 2, 2)[-nd:], nd, generator=g, dtype=dtype) * 2.6 - 1.3
    return x, grid


def _run(x, grid, device, **kw):
    x = x.to(device).requires_grad_()
    grid = grid.to(device).requires_grad_()
    out = F.grid_sample(x, grid, **kw)
    go = torch.linspace(-1, 1, out.numel(), dtype=out.dtype).reshape(out.shape).to(device)
    gx, gg = torch.autograd.grad(out, (x, grid), go)
    return out.cpu(), gx.cpu(), gg.cpu()


def _check(x, grid, tol=None, **kw):
    tol = tol or {}
    got = _run(x, grid, "tpu", **kw)
    expected = _run(x, grid, "cpu", **kw)
    for g, e, what in zip(got, expected, ["output", "grad input", "grad grid"], strict=True):
        torch.testing.assert_close(g, e, msg=lambda m, w=what: f"{w} {kw}: {m}", **tol)


@pytest.mark.parametrize("mode", ["bilinear", "nearest", "bicubic"])
@pytest.mark.parametrize("padding", PADDINGS)
def test_2d_matches_the_cpu(mode, padding):
    x, grid = _case(2)
    for align_corners in (False, True):
        _check(x, grid, mode=mode, padding_mode=padding, align_corners=align_corners)


@pytest.mark.parametrize(
    "mode,padding,align_corners",
    [
        ("bilinear", "zeros", False),
        ("bilinear", "border", True),
        ("bilinear", "reflection", False),
        ("nearest", "reflection", True),
    ],
)
def test_3d_matches_the_cpu(mode, padding, align_corners):
    x, grid = _case(3)
    _check(x, grid, mode=mode, padding_mode=padding, align_corners=align_corners)


@pytest.mark.parametrize(
    "dtype,tol",
    [
        (torch.float64, {}),
        (torch.bfloat16, {"atol": 0.05, "rtol": 0.02}),
        (torch.float16, {"atol": 5e-3, "rtol": 5e-3}),
    ],
)
def test_dtypes(dtype, tol):
    # float16/bfloat16 compute in float32 here, while the CPU rounds its intermediate results to
    # the dtype (off by up to 0.2 in bfloat16 bicubic grid gradients): the reference is the CPU's
    # float64 result on the same values.
    x, grid = _case(2, dtype)
    kw = {"mode": "bicubic", "padding_mode": "reflection", "align_corners": False}
    got = _run(x, grid, "tpu", **kw)
    expected = _run(x.double(), grid.double(), "cpu", **kw)
    for g, e in zip(got, expected, strict=True):
        assert g.dtype == dtype
        torch.testing.assert_close(g.double(), e, **tol)


@pytest.mark.parametrize("mode", ["fused", "debug"])
def test_eager_modes(mode):
    x, grid = _case(2, seed=1)
    with torch_pjrt.eager_mode(mode):
        _check(x, grid, mode="bicubic", padding_mode="reflection", align_corners=True)


def test_compiled_forward_and_backward():
    x, grid = _case(2, seed=2)

    def step(x, grid):
        out = F.grid_sample(x, grid, mode="bilinear", padding_mode="zeros", align_corners=False)
        return torch.autograd.grad(out.square().sum(), (x, grid))

    fn = torch.compile(step, backend="tpu")
    got = fn(x.to("tpu").requires_grad_(), grid.to("tpu").requires_grad_())
    expected = step(x.requires_grad_(), grid.requires_grad_())
    for g, e in zip(got, expected, strict=True):
        torch.testing.assert_close(g.cpu(), e)


def test_nearest_rounds_half_to_even():
    x = torch.arange(8.0, dtype=torch.float64).reshape(1, 1, 1, 8)
    source = torch.tensor([0.5, 1.5, 2.5, 3.5], dtype=torch.float64)  # align_corners: x * 7 / 2
    gx = source * 2 / 7 - 1
    grid = torch.stack([gx, torch.zeros_like(gx)], -1).reshape(1, 1, 4, 2)
    got = F.grid_sample(x.to("tpu"), grid.to("tpu"), mode="nearest", align_corners=True)
    assert got.cpu().flatten().tolist() == [0.0, 2.0, 2.0, 4.0]


NAN, INF = float("nan"), float("inf")


@pytest.mark.parametrize(
    "mode,padding,point,expected",
    [
        # Fixed values: on the CPU NaN/inf coordinates with border/reflection bilinear padding are
        # undefined (some crash); here NaN clips to 0 as in the CPU's nearest mode.
        ("bilinear", "zeros", (NAN, 0.0), NAN),
        ("bilinear", "zeros", (INF, 0.0), NAN),
        ("bilinear", "zeros", (1e20, 0.0), 0.0),
        ("bilinear", "border", (INF, 0.0), 8.0),
        ("bilinear", "border", (-INF, 0.0), 5.0),
        ("bilinear", "border", (NAN, 0.0), 5.0),
        ("bilinear", "reflection", (INF, 0.0), 5.0),
        ("nearest", "zeros", (NAN, 0.0), 0.0),
        ("nearest", "border", (NAN, NAN), 1.0),
        ("nearest", "border", (1e20, 0.0), 8.0),
        ("nearest", "reflection", (INF, 0.0), 5.0),
        ("bicubic", "zeros", (NAN, 0.0), NAN),
        ("bicubic", "border", (1e20, 0.0), 8.0),
        ("bicubic", "reflection", (-1e20, 0.0), 5.0),
    ],
)
def test_special_grid_values(mode, padding, point, expected):
    x = torch.arange(1.0, 13.0).reshape(1, 1, 3, 4)
    grid = torch.tensor([[[point]]])
    got = F.grid_sample(
        x.to("tpu"), grid.to("tpu"), mode=mode, padding_mode=padding, align_corners=False
    )
    torch.testing.assert_close(got.cpu().reshape(()), torch.tensor(expected), equal_nan=True)


def test_special_grid_value_gradients():
    # Bilinear zeros, x NaN: the NaN weights of the x taps reach y's gradient only (the CPU's).
    x = torch.arange(1.0, 13.0).reshape(1, 1, 3, 4).to("tpu").requires_grad_()
    grid = torch.tensor([[[[NAN, 0.0]]]]).to("tpu").requires_grad_()
    F.grid_sample(x, grid, align_corners=False).sum().backward()
    assert x.grad.cpu().eq(0).all()
    assert grid.grad.cpu()[0, 0, 0, 0] == 0 and grid.grad.cpu()[0, 0, 0, 1].isnan()


def test_backward_output_mask():
    x, grid = _case(2)
    go = torch.randn(2, 3, 2, 2)
    args = (0, 1, True)
    expected = torch.ops.aten.grid_sampler_2d_backward(go, x, grid, *args, [False, True])
    got = torch.ops.aten.grid_sampler_2d_backward(
        go.to("tpu"), x.to("tpu"), grid.to("tpu"), *args, [False, True]
    )
    assert expected[0] is None and got[0] is None
    torch.testing.assert_close(got[1].cpu(), expected[1])


def test_empty_shapes_match_the_cpu():
    for x, grid in [
        (torch.rand(0, 1, 3, 4), torch.rand(0, 2, 2, 2)),
        (torch.rand(1, 1, 3, 4), torch.rand(1, 0, 2, 2)),
        (torch.rand(1, 0, 3, 4), torch.rand(1, 2, 2, 2)),
    ]:
        got = torch.grid_sampler_2d(x.to("tpu"), grid.to("tpu"), 0, 0, False)
        assert (
            got.device.type == "tpu"
            and got.shape == torch.grid_sampler_2d(x, grid, 0, 0, False).shape
        )


def _error(fn, *args):
    with pytest.raises(Exception) as info:
        fn(*args)
    return type(info.value), str(info.value).split("\n")[0]


@pytest.mark.parametrize(
    "input_shape,grid_shape,dtypes,mode",
    [
        ((1, 1, 3, 4), (1, 2, 2, 2), (torch.float32, torch.float64), 0),
        ((1, 1, 3, 4), (1, 2, 2, 2), (torch.int64, torch.int64), 0),
        ((2, 1, 3, 4), (1, 2, 2, 2), (torch.float32, torch.float32), 0),
        ((1, 1, 3, 4), (1, 2, 2, 1), (torch.float32, torch.float32), 0),
        ((1, 1, 0, 4), (1, 2, 2, 2), (torch.float32, torch.float32), 0),
        ((1, 3, 4), (1, 2, 2, 2), (torch.float32, torch.float32), 0),
        ((1, 1, 2, 3, 4), (1, 2, 2, 2, 3), (torch.float32, torch.float32), 2),
    ],
)
def test_errors_match_the_cpu(input_shape, grid_shape, dtypes, mode):
    x = torch.zeros(input_shape, dtype=dtypes[0])
    grid = torch.zeros(grid_shape, dtype=dtypes[1])
    op = torch.grid_sampler_3d if len(input_shape) == 5 else torch.grid_sampler_2d
    expected = _error(op, x, grid, mode, 0, False)
    assert _error(op, x.to("tpu"), grid.to("tpu"), mode, 0, False) == (
        expected[0],
        expected[1]
        .replace("_cpu_kernel_impl", "")
        .replace("grid_sampler_2d_cpu", "grid_sampler_2d"),
    )


def test_other_errors():
    x, grid = torch.zeros(1, 1, 3, 4), torch.zeros(1, 2, 2, 2)
    with pytest.raises(RuntimeError, match="expected input and grid to be on same device"):
        torch.grid_sampler_2d(x.to("tpu"), grid, 0, 0, False)
    # Out of range modes: the CPU reads them as garbage; refused here.
    with pytest.raises(RuntimeError, match=r"grid_sampler_2d\(\): interpolation_mode must be"):
        torch.grid_sampler_2d(x.to("tpu"), grid.to("tpu"), 5, 0, False)
    with pytest.raises(RuntimeError, match=r"grid_sampler_2d\(\): padding_mode must be"):
        torch.grid_sampler_2d(x.to("tpu"), grid.to("tpu"), 0, 7, False)
