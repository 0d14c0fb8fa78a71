"""torch.fft on "tpu" (the _fft_c2c/_fft_r2c/_fft_c2r lowerings to StableHLO fft) against CPU
PyTorch, with n/dim/norm arguments, out=, autograd, Fused mode and torch.compile."""

import pytest
import torch
from conftest import assert_same

import torch_pjrt


@pytest.fixture(autouse=True)
def no_fallback(monkeypatch):
    monkeypatch.setenv("TORCH_PJRT_FALLBACK", "error")


def rsample(shape, dtype=torch.float32, seed=0):
    return torch.randn(shape, dtype=dtype, generator=torch.Generator().manual_seed(seed))


def csample(shape, dtype=torch.complex64, seed=0):
    return torch.randn(shape, dtype=dtype, generator=torch.Generator().manual_seed(seed))


TOL = dict(rtol=1e-4, atol=1e-4)

CASES = [
    # (function, input kind, kwargs)
    ("fft", "c", {}),
    ("fft", "r", {"n": 10}),
    ("fft", "c", {"n": 5, "dim": 0, "norm": "ortho"}),
    ("ifft", "c", {}),
    ("ifft", "c", {"norm": "forward", "dim": 0}),
    ("rfft", "r", {}),
    ("rfft", "r", {"n": 7, "norm": "ortho"}),
    ("irfft", "c", {}),
    ("irfft", "c", {"n": 9, "norm": "forward"}),
    ("hfft", "c", {}),
    ("hfft", "c", {"n": 6}),
    ("ihfft", "r", {}),
    ("fft2", "c", {}),
    ("ifft2", "c", {"norm": "ortho"}),
    ("rfft2", "r", {}),
    ("irfft2", "c", {"s": (6, 8)}),
    ("fftn", "c", {"dim": (0, 2)}),
    ("ifftn", "c", {}),
    ("rfftn", "r", {"norm": "forward"}),
    ("irfftn", "c", {"dim": (1, 2)}),
    ("fftn", "c4", {}),
    ("rfftn", "r4", {}),
    ("irfftn", "c4", {}),
]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("name,kind,kwargs", CASES)
def test_fft_functions(name, kind, kwargs, dtype):
    shape = (3, 4, 5, 6) if kind.endswith("4") else (4, 6, 8)
    cdtype = torch.complex64 if dtype == torch.float32 else torch.complex128
    x = csample(shape, cdtype) if kind.startswith("c") else rsample(shape, dtype)
    fn = getattr(torch.fft, name)
    got, want = fn(x.to("tpu"), **kwargs), fn(x, **kwargs)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert_same(got, want, **TOL)


def test_fft_out_and_strided_input():
    x = csample((6, 8))
    out = torch.empty(0, dtype=torch.complex64, device="tpu")
    torch.fft.fft(x.to("tpu"), out=out)
    assert_same(out, torch.fft.fft(x), **TOL)
    r = rsample((8, 6))
    assert_same(torch.fft.rfft(r.to("tpu").t(), dim=0), torch.fft.rfft(r.t(), dim=0), **TOL)
    assert_same(torch.fft.fft(x.to("tpu")[:, ::2]), torch.fft.fft(x[:, ::2]), **TOL)


def test_fft_autograd():
    x = rsample((4, 8), torch.float64)
    w = csample((4, 8), torch.complex128, seed=1)
    grads = []
    for dev in ("cpu", "tpu"):
        xi = x.to(dev).detach().requires_grad_()
        loss = (torch.fft.fft(xi) * w.to(dev)).abs().sum() + torch.fft.irfft(
            torch.fft.rfft(xi) * 2j
        ).pow(2).sum()
        loss.backward()
        grads.append(xi.grad.cpu())
    torch.testing.assert_close(grads[1], grads[0])
    z = csample((5, 6), torch.complex128).requires_grad_()
    zt = z.detach().to("tpu").requires_grad_()
    torch.fft.ifft2(z).real.sum().backward()
    torch.fft.ifft2(zt).real.sum().backward()
    torch.testing.assert_close(zt.grad.cpu(), z.grad)


def spectral_filter(x, w):
    return torch.fft.irfft(torch.fft.rfft(x) * w, n=x.shape[-1])


def test_fft_fused_mode():
    x, w = rsample((4, 16)), csample((9,))
    with torch_pjrt.eager_mode("fused"):
        got = spectral_filter(x.to("tpu"), w.to("tpu")).cpu()
    torch.testing.assert_close(got, spectral_filter(x, w), **TOL)


def test_fft_compiled():
    x, w = rsample((4, 16)), csample((9,))
    compiled = torch.compile(spectral_filter, backend="tpu")
    got = compiled(x.to("tpu"), w.to("tpu"))
    assert_same(got, spectral_filter(x, w), **TOL)


def test_fft_errors():
    with pytest.raises(RuntimeError, match="Invalid number of data points"):
        torch.fft.fft(csample((4,)).to("tpu"), n=0)
    with pytest.raises(RuntimeError, match="_fft_c2c"):
        torch.ops.aten._fft_c2c(rsample((4,)).to("tpu"), [0], 0, True)
