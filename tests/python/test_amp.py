"""Automatic mixed precision on "tpu": autocast's op policies (CUDA's lists), GradScaler's kernels,
and autocast training of the test GPT against CPU autocast in every eager mode and compiled."""

import warnings

import pytest
import torch
import torch.nn.functional as F
from conftest import assert_same
from models import GPT

import torch_pjrt

LOW = torch.bfloat16


def test_device_module_hooks():
    assert torch.amp.is_autocast_available("tpu")
    assert torch.get_autocast_dtype("tpu") == torch.bfloat16
    assert torch.tpu.get_amp_supported_dtype() == [torch.bfloat16, torch.float16]
    with torch.autocast("tpu"):
        assert torch.is_autocast_enabled("tpu")
        assert torch.get_autocast_dtype("tpu") == torch.bfloat16
    assert not torch.is_autocast_enabled("tpu")


def _inputs(*shapes, dtype=torch.float32):
    g = torch.Generator().manual_seed(0)
    return [torch.randn(s, generator=g, dtype=dtype) for s in shapes]


# (name, function, input shapes, dtype the function's float inputs are cast to under CUDA's
# policy, result dtype under autocast to bfloat16)
POLICIES = [
    ("mm", lambda a, b: a @ b, [(4, 8), (8, 3)], LOW, LOW),
    ("linear", F.linear, [(2, 5, 8), (6, 8), (6,)], LOW, LOW),
    ("bmm", torch.bmm, [(2, 3, 4), (2, 4, 5)], LOW, LOW),
    ("baddbmm", torch.baddbmm, [(2, 3, 5), (2, 3, 4), (2, 4, 5)], LOW, LOW),
    ("addmm", torch.addmm, [(3, 5), (3, 4), (4, 5)], LOW, LOW),
    ("conv2d", lambda x, w: F.conv2d(x, w, padding=1), [(1, 2, 5, 5), (3, 2, 3, 3)], LOW, LOW),
    ("softmax", lambda x: torch.softmax(x, -1), [(3, 7)], torch.float32, torch.float32),
    ("log_softmax", lambda x: F.log_softmax(x, -1), [(3, 7)], torch.float32, torch.float32),
    ("layer_norm", lambda x: F.layer_norm(x, (6,)), [(3, 6)], torch.float32, torch.float32),
    ("exp", torch.exp, [(5,)], torch.float32, torch.float32),
    ("log", lambda x: torch.log(x.abs() + 1), [(5,)], torch.float32, torch.float32),
    ("pow", lambda x: torch.pow(x, 2.0), [(5,)], torch.float32, torch.float32),
    ("sum", torch.sum, [(4, 5)], torch.float32, torch.float32),
    ("mse_loss", F.mse_loss, [(4, 3), (4, 3)], torch.float32, torch.float32),
    (
        "cross_entropy",
        lambda x: F.cross_entropy(x, torch.tensor([1, 0, 2], device=x.device)),
        [(3, 4)],
        torch.float32,
        torch.float32,
    ),
]


@pytest.mark.parametrize("name,fn,shapes,cast,result", POLICIES, ids=[p[0] for p in POLICIES])
def test_autocast_policy(name, fn, shapes, cast, result):
    # Inputs arrive in bfloat16 for the float32 policies (as they would from a low-precision op).
    src = _inputs(*shapes, dtype=torch.float32 if cast == LOW else LOW)
    with torch.autocast("tpu", dtype=LOW):
        out = fn(*[t.to("tpu") for t in src])
    assert out.dtype == result
    expected = fn(*[t.to(cast) for t in src])
    assert_same(out, expected.to(result), atol=1e-2, rtol=1e-2)


def test_autocast_float16_and_nesting():
    a, b = _inputs((4, 8), (8, 3))
    ta, tb = a.to("tpu"), b.to("tpu")
    with torch.autocast("tpu", dtype=torch.float16):
        half = ta @ tb
        with torch.autocast("tpu", enabled=False):
            full = ta @ tb
    assert half.dtype == torch.float16 and full.dtype == torch.float32
    assert_same(half, a.half() @ b.half(), atol=1e-2, rtol=1e-2)
    assert_same(full, a @ b)


def test_autocast_cache_reuses_weight_casts(counters):
    w = torch.nn.Parameter(torch.randn(8, 8).to("tpu"))
    x = torch.randn(2, 8).to("tpu")
    with torch.autocast("tpu"):
        y1 = x @ w
        y2 = x @ w
    torch.testing.assert_close(y1.cpu(), y2.cpu())


def test_unsupported_dtype_warns_and_disables_like_cpu():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with torch.autocast("tpu", dtype=torch.float64):
            out = torch.randn(2, 2).to("tpu") @ torch.randn(2, 2).to("tpu")
    assert out.dtype == torch.float32
    assert any("tpu Autocast only supports dtypes" in str(w.message) for w in caught)


def test_binary_cross_entropy_is_banned_as_on_cuda():
    p = torch.rand(4).to("tpu")
    with torch.autocast("tpu"), pytest.raises(RuntimeError, match="unsafe to autocast"):
        F.binary_cross_entropy(p, p)
    assert_same(F.binary_cross_entropy(p, p), F.binary_cross_entropy(p.cpu(), p.cpu()))


def test_autocast_backward_dtypes():
    lin = torch.nn.Linear(8, 4).to("tpu")
    x = torch.randn(3, 8).to("tpu")
    with torch.autocast("tpu"):
        loss = lin(x).float().pow(2).mean()
    loss.backward()
    assert lin.weight.grad.dtype == torch.float32
    ref = torch.nn.Linear(8, 4)
    ref.load_state_dict({k: v.cpu() for k, v in lin.state_dict().items()})
    with torch.autocast("cpu"):
        ref_loss = ref(x.cpu()).float().pow(2).mean()
    ref_loss.backward()
    assert_same(lin.weight.grad, ref.weight.grad, atol=2e-2, rtol=2e-2)


# --- GradScaler kernels against PyTorch's CPU kernels -----------------------------------------


def _grads():
    return [
        torch.tensor([1.0, -2.0, 4.0]),
        torch.tensor([[0.5, 8.0], [1e-3, -3.0]], dtype=torch.float16),
        torch.tensor([2.0, 6.0], dtype=torch.bfloat16),
    ]


@pytest.mark.parametrize("poison", [None, float("inf"), float("nan"), float("-inf")])
def test_non_finite_check_and_unscale(poison):
    cpu = _grads()
    if poison is not None:
        cpu[1][0, 1] = poison
    tpu = [g.to("tpu") for g in cpu]
    found_cpu, inv_cpu = torch.zeros(()), torch.full((), 0.25)
    found_tpu, inv_tpu = found_cpu.to("tpu"), inv_cpu.to("tpu")
    torch._amp_foreach_non_finite_check_and_unscale_(cpu, found_cpu, inv_cpu)
    torch._amp_foreach_non_finite_check_and_unscale_(tpu, found_tpu, inv_tpu)
    # Fixed expectation: 1 exactly when a gradient holds inf or nan.
    assert found_tpu.item() == (0.0 if poison is None else 1.0) == found_cpu.item()
    for t, c in zip(tpu, cpu):
        assert t.dtype == c.dtype
        torch.testing.assert_close(t.cpu(), c, equal_nan=True)


@pytest.mark.parametrize(
    "found,tracker,interval",
    [(0.0, 0, 3), (0.0, 2, 3), (1.0, 2, 3), (0.0, 0, 1)],
)
def test_update_scale(found, tracker, interval):
    results = []
    for device in ("cpu", "tpu"):
        scale = torch.full((), 1024.0, device=device)
        growth = torch.full((), tracker, dtype=torch.int32, device=device)
        found_inf = torch.full((), found, device=device)
        out = torch._amp_update_scale_(scale, growth, found_inf, 2.0, 0.5, interval)
        assert out is scale
        results.append((scale.item(), growth.item()))
    assert results[0] == results[1]


def test_update_scale_keeps_scale_when_growth_overflows():
    scale = torch.full((), 3e38).to("tpu")
    growth = torch.zeros((), dtype=torch.int32).to("tpu")
    torch._amp_update_scale_(scale, growth, torch.zeros(()).to("tpu"), 2.0, 0.5, 1)
    assert scale.item() == pytest.approx(3e38) and growth.item() == 0


def test_scaler_kernels_reject_bad_arguments():
    grads = [torch.ones(2).to("tpu")]
    with pytest.raises(RuntimeError, match="found_inf must be a float tensor"):
        torch._amp_foreach_non_finite_check_and_unscale_(
            grads, torch.zeros((), dtype=torch.float64).to("tpu"), torch.ones(()).to("tpu")
        )
    with pytest.raises(RuntimeError, match="inv_scale must be a 1-element tensor"):
        torch._amp_foreach_non_finite_check_and_unscale_(
            grads, torch.zeros(()).to("tpu"), torch.ones(2).to("tpu")
        )
    with pytest.raises(RuntimeError, match="growth_tracker must be an int tensor"):
        torch._amp_update_scale_(
            torch.ones(()).to("tpu"), torch.zeros(()).to("tpu"), torch.zeros(()).to("tpu"), 2.0,
            0.5, 1,
        )  # fmt: skip
    assert grads[0].cpu().tolist() == [1.0, 1.0]  # the process stays usable


# --- training ------------------------------------------------------------------------------


def _gpt_training(device, steps, dtype, scaler_device=None, compiled=False, lr=1e-2):
    torch.manual_seed(0)
    model = GPT().to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=lr)
    scaler = torch.amp.GradScaler(scaler_device, init_scale=2.0**10) if scaler_device else None
    g = torch.Generator().manual_seed(1)
    data = [torch.randint(0, 64, (4, 17), generator=g) for _ in range(steps)]

    def step(x, y):
        with torch.autocast(device.split(":")[0], dtype=dtype):
            logits = model(x)
            loss = F.cross_entropy(logits.reshape(-1, 64), y.reshape(-1))
        opt.zero_grad()
        if scaler is None:
            loss.backward()
            opt.step()
        else:
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
        return loss

    if compiled:
        import torch_pjrt.compile  # noqa: F401

        step = torch.compile(step, backend="tpu")
    losses = [step(b[:, :-1].to(device), b[:, 1:].to(device)) for b in data]
    return torch.stack([loss.detach().float().cpu() for loss in losses]), scaler


@pytest.fixture(scope="module")
def cpu_bf16_losses():
    return _gpt_training("cpu", 20, torch.bfloat16)[0]


@pytest.mark.parametrize("mode", ["strict", "fused", "debug", "compiled"])
def test_bf16_autocast_gpt_training_matches_cpu(mode, cpu_bf16_losses, counters):
    if mode == "compiled":
        losses, _ = _gpt_training("tpu", 20, torch.bfloat16, compiled=True)
    else:
        with torch_pjrt.eager_mode(mode):
            losses, _ = _gpt_training("tpu", 20, torch.bfloat16)
    assert counters()["cpu_fallbacks"] == {}
    # bfloat16 tolerance: the two sides round different ops to bfloat16 (CUDA's op lists here,
    # the CPU's lists there), so losses agree to bfloat16's precision, not bit for bit.
    torch.testing.assert_close(losses, cpu_bf16_losses, atol=3e-2, rtol=1e-2)
    assert losses[-1] < losses[0] - 0.3  # it trains


def test_float16_grad_scaler_training_matches_cpu(counters):
    cpu_losses, cpu_scaler = _gpt_training("cpu", 8, torch.float16, scaler_device="cpu")
    losses, scaler = _gpt_training("tpu", 8, torch.float16, scaler_device="tpu")
    assert counters()["cpu_fallbacks"] == {}
    torch.testing.assert_close(losses, cpu_losses, atol=3e-2, rtol=1e-2)
    assert scaler.get_scale() == cpu_scaler.get_scale()


def test_grad_scaler_skips_steps_with_inf_and_backs_off():
    lin = torch.nn.Linear(4, 1).to("tpu")
    opt = torch.optim.SGD(lin.parameters(), lr=0.1)
    scaler = torch.amp.GradScaler("tpu", init_scale=8.0)
    before = lin.weight.detach().cpu().clone()
    with torch.autocast("tpu", dtype=torch.float16):
        loss = lin(torch.full((2, 4), float("inf")).to("tpu")).sum()
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
    assert scaler.get_scale() == 4.0
    torch.testing.assert_close(lin.weight.detach().cpu(), before)


def test_fused_scaler_step_reads_only_found_inf(counters):
    """In Fused mode GradScaler adds one 4-byte read per step (found_inf), as CUDA's scaler does:
    the bytes read per step with the scaler, minus those without it (and minus the results of the
    device-side index checks, which the sync at found_inf.item() reads too)."""

    def bytes_per_step(use_scaler):
        torch.manual_seed(0)
        model = GPT().to("tpu")
        opt = torch.optim.SGD(model.parameters(), lr=1e-2)
        scaler = torch.amp.GradScaler("tpu", enabled=use_scaler)
        x = torch.randint(0, 64, (2, 16)).to("tpu")
        readbacks = []
        for _ in range(3):
            c = counters()
            before = c["device_to_host_bytes"] - c["check_read_bytes"]
            with torch.autocast("tpu", dtype=torch.float16):
                loss = model(x).float().logsumexp(-1).mean()
            opt.zero_grad()
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
            c = counters()
            readbacks.append(c["device_to_host_bytes"] - c["check_read_bytes"] - before)
        return readbacks

    with torch_pjrt.eager_mode("fused"):
        plain, scaled = bytes_per_step(False), bytes_per_step(True)
    assert [s - p for s, p in zip(scaled, plain)] == [4, 4, 4]
