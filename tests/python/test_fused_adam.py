"""torch.optim.Adam/AdamW(fused=True) on "tpu" (aten::_fused_adam_/_fused_adamw_) against the
fused CPU optimizer: several steps, AMSGrad, maximize, weight decay, a tensor lr, and the
grad_scale / found_inf arguments GradScaler passes; no CPU fallback."""

import pytest
import torch


def run(device, opt_class, steps=3, **kwargs):
    torch.manual_seed(0)
    params = [torch.randn(5, 3), torch.randn(7)]
    params = [p.to(device).requires_grad_() for p in params]
    opt = opt_class(params, fused=True, **kwargs)
    g = torch.Generator().manual_seed(1)
    for _ in range(steps):
        for p in params:
            p.grad = torch.randn(p.shape, generator=g).to(device)
        opt.step()
    return [p.detach().cpu() for p in params] + [
        s[k].cpu() for s in opt.state.values() for k in sorted(s) if k != "step"
    ]


@pytest.mark.parametrize("opt_class", [torch.optim.Adam, torch.optim.AdamW])
@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"weight_decay": 0.1, "amsgrad": True},
        {"maximize": True, "betas": (0.8, 0.9), "eps": 1e-6},
        {"lr": torch.tensor(0.01)},
    ],
)
def test_fused_adam_matches_cpu(opt_class, kwargs, counters):
    got = run("tpu", opt_class, **kwargs)
    expected = run("cpu", opt_class, **kwargs)
    for a, b in zip(got, expected):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)
    assert counters()["cpu_fallbacks"] == {}


def test_fused_adamw_grad_scale_and_found_inf(counters):
    for device in ("cpu", "tpu"):
        p = torch.ones(4, device=device)
        grad = torch.full((4,), 8.0, device=device)
        m, v, step = (
            torch.zeros(4, device=device),
            torch.zeros(4, device=device),
            torch.ones((), device=device),
        )
        scale = torch.tensor(4.0, device=device)
        skip = torch.tensor(1.0, device=device)
        torch._fused_adamw_(
            [p], [grad], [m], [v], [], [step], lr=0.1, beta1=0.9, beta2=0.999, weight_decay=0.0,
            eps=1e-8, amsgrad=False, maximize=False, grad_scale=scale, found_inf=skip,
        )  # fmt: skip
        assert p.cpu().tolist() == [1.0] * 4 and m.cpu().tolist() == [0.0] * 4
        torch._fused_adamw_(
            [p], [grad], [m], [v], [], [step], lr=0.1, beta1=0.9, beta2=0.999, weight_decay=0.0,
            eps=1e-8, amsgrad=False, maximize=False, grad_scale=scale, found_inf=skip * 0,
        )  # fmt: skip
        if device == "cpu":
            expected = (p.clone(), grad.clone(), m.clone())
        else:
            for a, b in zip((p, grad, m), expected):
                torch.testing.assert_close(a.cpu(), b)
    assert counters()["cpu_fallbacks"] == {}
