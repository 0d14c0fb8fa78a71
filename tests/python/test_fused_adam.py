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


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_half_precision_parameters_match_cpu_exactly(dtype):
    # The update runs in float32 and each result is rounded once to the tensor's dtype, as the CPU
    # kernel does.
    def half_run(device):
        torch.manual_seed(0)
        params = [torch.randn(5, 3).to(dtype).to(device).requires_grad_() for _ in range(2)]
        opt = torch.optim.AdamW(params, lr=0.01, weight_decay=0.1, fused=True)
        g = torch.Generator().manual_seed(1)
        for _ in range(3):
            for p in params:
                p.grad = torch.randn(p.shape, generator=g).to(dtype).to(device)
            opt.step()
        return [p.detach().cpu() for p in params] + [
            s[k].cpu() for s in opt.state.values() for k in sorted(s) if k != "step"
        ]

    for a, b in zip(half_run("tpu"), half_run("cpu")):
        assert a.dtype == dtype
        torch.testing.assert_close(a, b, rtol=0, atol=0)


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


def test_amsgrad_with_grad_scale_and_found_inf_matches_cpu():
    results = {}
    for device in ("cpu", "tpu"):
        g = torch.Generator().manual_seed(2)
        p, grad, m, v, vmax = (torch.randn(3, 2, generator=g).to(device) for _ in range(5))
        v, vmax = v.abs(), vmax.abs()
        step = torch.full((), 3.0, device=device)
        for skip in (0.0, 1.0, 0.0):
            torch._fused_adam_(
                [p], [grad], [m], [v], [vmax], [step], lr=0.05, beta1=0.9, beta2=0.99,
                weight_decay=0.01, eps=1e-8, amsgrad=True, maximize=True,
                grad_scale=torch.tensor(2.0, device=device),
                found_inf=torch.tensor(skip, device=device),
            )  # fmt: skip
        results[device] = [t.cpu() for t in (p, grad, m, v, vmax)]
    for a, b in zip(results["tpu"], results["cpu"]):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)


def test_fused_step_records_one_operation_per_parameter():
    # Each parameter's update is one recorded operation (adam_step), not the two dozen
    # elementwise ops it was composed of (a Fused step's host time).
    import torch_pjrt

    params = [torch.randn(5, 3, device="tpu", requires_grad=True) for _ in range(3)]
    opt = torch.optim.AdamW(params, fused=True, weight_decay=0.1)
    grads = [torch.ones_like(p) for p in params]
    with torch_pjrt.eager_mode("fused"):
        for _ in range(2):
            for p, g in zip(params, grads):
                p.grad = g
            opt.step()
            torch_pjrt.launch_pending()
    _, ops = torch_pjrt.introspection.last_program_stablehlo(with_ops=True)
    assert sorted(ops.split(", ")) == ["adam_step", "add"]  # add: the step counters
