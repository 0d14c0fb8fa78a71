"""torch.nn.functional ops lowered for issue 14 against CPU PyTorch, forward and gradients, with no
CPU fallback: reflection/replication padding, unfold/fold, max_unpool, channel_shuffle, pdist."""

import pytest
import torch
import torch.nn.functional as F
from conftest import assert_same

import torch_pjrt

DTYPES = [torch.float32, torch.float64, torch.bfloat16, torch.float16]


@pytest.fixture(autouse=True)
def no_fallback():
    torch_pjrt.metrics.reset()
    yield
    assert torch_pjrt.metrics.counters()["cpu_fallbacks"] == {}


def randn(*shape, seed=0):
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


def tolerance(dtype):
    return {} if dtype in (torch.float32, torch.float64) else {"rtol": 2e-2, "atol": 2e-2}


def run_both(fn, x, dtype, grad=True):
    """fn on CPU and on tpu; with grad, also the gradient of x for a fixed output gradient."""
    xc = x.to(dtype).clone().requires_grad_(grad)
    xt = x.to(dtype).to("tpu").requires_grad_(grad)
    yc, yt = fn(xc), fn(xt)
    assert_same(yt, yc.detach(), **tolerance(dtype))
    if grad:
        g = randn(*yc.shape, seed=1).to(dtype)
        yc.backward(g)
        yt.backward(g.to("tpu"))
        assert_same(xt.grad, xc.grad, **tolerance(dtype))


PADS = [
    ((2, 3, 5), (2, 3), "reflect"),
    ((3, 5), (0, 4), "reflect"),
    ((2, 2, 4, 5), (1, 2, 3, 0), "reflect"),
    ((1, 2, 3, 4, 3), (1, 1, 2, 0, 2, 1), "reflect"),
    ((2, 3, 5), (2, 3), "replicate"),
    ((2, 2, 4, 5), (3, 1, 0, 2), "replicate"),
    ((1, 2, 3, 4, 3), (1, 2, 0, 1, 3, 1), "replicate"),
    ((2, 2, 4, 5), (-1, 2, 1, -2), "replicate"),
    ((2, 3, 5), (-2, -1), "reflect"),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", range(len(PADS)))
def test_pad(case, dtype):
    shape, pad, mode = PADS[case]
    run_both(lambda x: F.pad(x, pad, mode=mode), randn(*shape), dtype)


def test_pad_integers_out_and_errors():
    x = torch.arange(40).reshape(2, 4, 5)
    for mode in ("reflect", "replicate"):
        assert_same(F.pad(x.to("tpu"), (3, 2), mode=mode), F.pad(x, (3, 2), mode=mode))
    out = torch.empty(0, device="tpu")
    torch._C._nn.reflection_pad1d(x.float().to("tpu"), [1, 2], out=out)
    assert_same(out, torch._C._nn.reflection_pad1d(x.float(), [1, 2]))
    with pytest.raises(RuntimeError, match="Padding size should be less than the corresponding"):
        F.pad(x.float().to("tpu"), (5, 0), mode="reflect")
    with pytest.raises(RuntimeError, match="padding size is expected to be 4"):
        torch._C._nn.replication_pad2d(x.float().to("tpu"), [1, 2])
    with pytest.raises(RuntimeError, match=r"input \(W: 5\) is too small"):
        torch._C._nn.replication_pad1d(x.float().to("tpu"), [-3, -3])


UNFOLDS = [
    ((2, 3, 6, 5), dict(kernel_size=2)),
    ((2, 3, 6, 5), dict(kernel_size=(2, 3), dilation=(2, 1), padding=1, stride=(2, 1))),
    ((3, 7, 7), dict(kernel_size=3, stride=2, padding=(0, 2))),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", range(len(UNFOLDS)))
def test_unfold_and_fold(case, dtype):
    shape, kw = UNFOLDS[case]
    run_both(lambda x: F.unfold(x, **kw), randn(*shape), dtype)
    cols = F.unfold(randn(*shape), **kw)
    run_both(lambda c: F.fold(c, output_size=shape[-2:], **kw), cols, dtype)


def test_unfold_fold_errors():
    x = torch.ones(1, 2, 3, 3, device="tpu")
    with pytest.raises(RuntimeError, match="but its components must be at least one"):
        F.unfold(x, kernel_size=4)
    with pytest.raises(RuntimeError, match="kernel size should be greater than zero"):
        F.unfold(x, kernel_size=0)
    with pytest.raises(RuntimeError, match="divisible by the product of kernel_size"):
        F.fold(torch.ones(1, 5, 4, device="tpu"), output_size=(3, 3), kernel_size=2)
    with pytest.raises(RuntimeError, match="match the calculated number of sliding blocks"):
        F.fold(torch.ones(1, 8, 5, device="tpu"), output_size=(3, 3), kernel_size=2)


UNPOOLS = [  # (nd, input shape, pooling arguments)
    (1, (2, 3, 9), dict(kernel_size=2)),
    (2, (2, 3, 6, 5), dict(kernel_size=2)),
    (2, (3, 7, 7), dict(kernel_size=3, stride=2, padding=1)),
    (3, (1, 2, 4, 5, 4), dict(kernel_size=2)),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", range(len(UNPOOLS)))
def test_max_unpool(case, dtype):
    nd, shape, kw = UNPOOLS[case]
    pool, unpool = getattr(F, f"max_pool{nd}d"), getattr(F, f"max_unpool{nd}d")
    x = randn(*shape)
    pooled, indices = pool(x, return_indices=True, **kw)
    size = x.shape[-nd:]
    run_both(
        lambda p: unpool(p, indices.to(p.device), output_size=size, **kw), pooled.detach(), dtype
    )


def test_max_unpool_errors():
    x = torch.ones(1, 2, 2, 2, device="tpu")
    with pytest.raises(RuntimeError, match="elements in indices should be type int64"):
        torch._C._nn.max_unpool2d(x, x.int(), [4, 4])
    with pytest.raises(RuntimeError, match="Expected shape of indices to be same"):
        torch._C._nn.max_unpool2d(x, torch.zeros(1, 2, 2, dtype=torch.long, device="tpu"), [4, 4])


@pytest.mark.parametrize("dtype", DTYPES + [torch.int64])
def test_channel_shuffle(dtype):
    x = torch.arange(2 * 6 * 3 * 2).reshape(2, 6, 3, 2).to(dtype)
    assert_same(F.channel_shuffle(x.to("tpu"), 3), F.channel_shuffle(x, 3))
    with pytest.raises(RuntimeError, match="Number of channels must be divisible by groups"):
        F.channel_shuffle(x.to("tpu"), 4)


@pytest.mark.parametrize("p", [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, float("inf")])
def test_pdist(p):
    x = randn(5, 3)
    x[3] = x[1]  # a zero distance
    run_both(lambda a: F.pdist(a, p), x, torch.float64)
    run_both(lambda a: F.pdist(a, p), x, torch.float32)


def test_max_unpool_alerts_under_deterministic_algorithms():
    # Duplicate indices race: the CPU refuses max_unpool under use_deterministic_algorithms(True),
    # with the same message naming the op.
    def unpool(nd, device):
        x = torch.ones((1, 1) + (2,) * nd, device=device)
        fn = getattr(F, f"max_unpool{nd}d")
        return fn(x, torch.zeros_like(x, dtype=torch.long), 1)

    torch.use_deterministic_algorithms(True)
    try:
        for nd, name in ((1, "max_unpooling2d"), (2, "max_unpooling2d"), (3, "max_unpooling3d")):
            for device in ("cpu", "tpu"):
                with pytest.raises(
                    RuntimeError, match=f"^{name}_forward_out does not have a deterministic"
                ):
                    unpool(nd, device)
    finally:
        torch.use_deterministic_algorithms(False)
    assert_same(unpool(2, "tpu"), unpool(2, "cpu"))  # and runs again once it is off
