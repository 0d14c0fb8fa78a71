"""Random ops on "tpu": reproducibility under the device generator, statistics, dtypes, dropout."""

import math

import pytest
import torch
import torch.nn.functional as F

import torch_pjrt  # noqa: F401

N = 100_000


pytestmark = pytest.mark.usefixtures("no_fallback")


def test_manual_seed_makes_runs_reproducible():
    torch.manual_seed(5)
    a = torch.rand(1000, device="tpu")
    b = torch.randn(1000, device="tpu")
    torch.tpu.manual_seed(5)
    assert torch.equal(torch.rand(1000, device="tpu").cpu(), a.cpu())
    assert torch.equal(torch.randn(1000, device="tpu").cpu(), b.cpu())
    assert not torch.equal(a.cpu(), torch.rand(1000, device="tpu").cpu())


def test_consecutive_calls_differ_and_compile_once(counters):
    torch.manual_seed(0)
    torch.rand(64, 3, device="tpu").cpu()
    compiles = counters()["compiles"]
    a = torch.rand(64, 3, device="tpu").cpu()
    b = torch.rand(64, 3, device="tpu").cpu()
    assert counters()["compiles"] == compiles
    assert not torch.equal(a, b)


def test_rng_state_round_trip():
    torch.manual_seed(11)
    torch.rand(7, device="tpu")
    state = torch.tpu.get_rng_state()
    a = torch.randn(333, device="tpu").cpu()
    b = torch.rand(5, dtype=torch.float64, device="tpu").cpu()
    torch.tpu.set_rng_state(state)
    assert torch.equal(torch.randn(333, device="tpu").cpu(), a)
    assert torch.equal(torch.rand(5, dtype=torch.float64, device="tpu").cpu(), b)


def test_offset_advances_by_whole_blocks():
    torch.manual_seed(3)
    torch.rand(5, device="tpu")  # 5 words: 2 Philox blocks
    seed, offset = torch.tpu.get_rng_state().view(torch.int64).tolist()
    assert (seed, offset) == (3, 8)


def test_philox_known_answer():
    # Random123's philox4x32-10 test vector for counter 0, key 0.
    torch.tpu.manual_seed(0)
    words = torch.empty(4, dtype=torch.int64, device="tpu").random_(0, 2**32)
    assert words.cpu().tolist() == [0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8]


def test_generator_objects():
    g = torch.Generator(device="tpu")
    g.manual_seed(42)
    torch.manual_seed(0)
    a = torch.rand(100, device="tpu", generator=g).cpu()
    default_state = torch.tpu.get_rng_state()
    g.manual_seed(42)
    assert torch.equal(torch.rand(100, device="tpu", generator=g).cpu(), a)
    assert torch.equal(torch.tpu.get_rng_state(), default_state)  # default untouched
    state = g.get_state()
    c = torch.randn(10, device="tpu", generator=g).cpu()
    g.set_state(state)
    assert torch.equal(torch.randn(10, device="tpu", generator=g).cpu(), c)


def test_cpu_generator_is_rejected():
    with pytest.raises(RuntimeError, match="device type for generator"):
        torch.rand(3, device="tpu", generator=torch.Generator())


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16, torch.float16])
def test_uniform_statistics(dtype):
    x = torch.empty(N, dtype=dtype, device="tpu").uniform_(-2, 3).cpu().double()
    assert x.min() >= -2 and x.max() < 3
    assert abs(x.mean() - 0.5) < 0.05
    assert abs(x.var() - 25 / 12) < 0.1
    u = torch.rand(N, dtype=dtype, device="tpu").cpu()
    assert u.dtype == dtype and u.min() >= 0 and u.max() < 1


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
def test_normal_statistics(dtype):
    x = torch.empty(N + 1, dtype=dtype, device="tpu").normal_(1.5, 2.0).cpu().double()
    assert abs(x.mean() - 1.5) < 0.05
    assert abs(x.std() - 2.0) < 0.05
    assert torch.isfinite(x).all()
    z = torch.randn(N, device="tpu").cpu()
    assert abs((z.abs() < 1).double().mean() - 0.6827) < 0.01


def test_normal_tensor_overloads():
    mean = torch.full((N,), 3.0, device="tpu")
    std = torch.full((N,), 0.5, device="tpu")
    for x in (torch.normal(mean, std), torch.normal(mean, 0.5), torch.normal(3.0, std)):
        x = x.cpu()
        assert x.shape == (N,)
        assert abs(x.mean() - 3.0) < 0.02 and abs(x.std() - 0.5) < 0.02
    out = torch.empty(0, device="tpu")
    torch.normal(mean, std, out=out)
    assert out.shape == (N,)
    with pytest.raises(RuntimeError, match="normal expects std >= 0.0"):
        torch.empty(3, device="tpu").normal_(0, -1)
    with pytest.raises(RuntimeError, match="normal expects all elements of std >= 0.0"):
        torch.normal(mean, -std)


def test_uniform_errors():
    x = torch.empty(3, device="tpu")
    with pytest.raises(RuntimeError, match=r"uniform_ expects to return a \[from, to\) range"):
        x.uniform_(2, 1)
    with pytest.raises(RuntimeError, match="check_uniform_bounds"):
        torch.empty(3, dtype=torch.int64, device="tpu").uniform_()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bool, torch.int64])
def test_bernoulli_scalar_p(dtype):
    x = torch.empty(N, dtype=dtype, device="tpu").bernoulli_(0.3).cpu()
    assert x.dtype == dtype
    assert set(x.double().unique().tolist()) <= {0.0, 1.0}
    assert abs(x.double().mean() - 0.3) < 0.01
    with pytest.raises(RuntimeError, match=r"bernoulli_ expects p to be in \[0, 1\]"):
        torch.empty(3, device="tpu").bernoulli_(1.5)


def test_bernoulli_tensor_p_and_functional():
    p = torch.tensor([0.0, 1.0, 0.25]).repeat(N // 3).to("tpu")
    x = torch.bernoulli(p).cpu()
    assert (x[0::3] == 0).all() and (x[1::3] == 1).all()
    assert abs(x[2::3].mean() - 0.25) < 0.02
    y = torch.empty(N // 3, 3, device="tpu").bernoulli_(torch.tensor([0.0, 1.0, 0.5], device="tpu"))
    y = y.cpu()
    assert (y[:, 0] == 0).all() and (y[:, 1] == 1).all() and abs(y[:, 2].mean() - 0.5) < 0.02
    z = torch.bernoulli(torch.empty(N, device="tpu"), 0.7).cpu()
    assert abs(z.mean() - 0.7) < 0.01
    out = torch.empty(0, device="tpu")
    torch.bernoulli(p, out=out)
    assert out.shape == p.shape


def test_randint_and_random_bounds():
    x = torch.randint(-3, 4, (N,), device="tpu").cpu()
    assert x.dtype == torch.int64 and x.min() == -3 and x.max() == 3
    assert set(x.unique().tolist()) == set(range(-3, 4))
    assert abs(x.double().mean()) < 0.05
    y = torch.empty(N, dtype=torch.int8, device="tpu").random_().cpu()
    assert y.min() >= 0 and y.max() == 127
    f = torch.empty(N, device="tpu").random_(5).cpu()
    assert f.min() == 0 and f.max() == 4 and (f == f.round()).all()
    b = torch.empty(N, dtype=torch.bool, device="tpu").random_().cpu()
    assert abs(b.double().mean() - 0.5) < 0.01
    big = torch.empty(N, dtype=torch.int64, device="tpu").random_(-(2**40), 2**40).cpu()
    assert big.min() >= -(2**40) and big.max() < 2**40 and big.double().std() > 2**39
    full = torch.empty(N, dtype=torch.int64, device="tpu").random_(-(2**63), None).cpu()
    assert (full < 0).any() and (full > 0).any()
    with pytest.raises(RuntimeError, match="random_ expects 'from' to be less than 'to'"):
        torch.empty(3, device="tpu").random_(5, 2)
    with pytest.raises(RuntimeError, match="to - 1 is out of bounds"):
        torch.empty(3, dtype=torch.int8, device="tpu").random_(0, 1000)


def test_randperm():
    for n in (1, 7, 1000):
        p = torch.randperm(n, device="tpu").cpu()
        assert p.dtype == torch.int64
        assert torch.equal(p.sort().values, torch.arange(n))
    assert not torch.equal(torch.randperm(1000, device="tpu").cpu(), torch.arange(1000))
    f = torch.randperm(50, dtype=torch.float32, device="tpu").cpu()
    assert torch.equal(f.sort().values, torch.arange(50, dtype=torch.float32))
    out = torch.empty(0, dtype=torch.int64, device="tpu")
    torch.randperm(10, out=out)
    assert torch.equal(out.cpu().sort().values, torch.arange(10))
    assert torch.randperm(0, device="tpu").shape == (0,)
    with pytest.raises(RuntimeError, match="n must be non-negative"):
        torch.randperm(-1, out=out)


def test_exponential():
    x = torch.empty(N, device="tpu").exponential_(2.0).cpu().double()
    assert x.min() >= 0 and abs(x.mean() - 0.5) < 0.01
    with pytest.raises(RuntimeError, match="exponential_ expects lambda > 0.0"):
        torch.empty(3, device="tpu").exponential_(-1)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
def test_dropout_train_scales_and_backward_uses_mask(dtype):
    x = (torch.rand(400, 250, dtype=dtype) + 0.5).to("tpu").requires_grad_()
    y = F.dropout(x, p=0.25, training=True)
    kept = y.detach().cpu() != 0
    assert abs(kept.double().mean() - 0.75) < 0.01
    expected = (x.detach().cpu().double() / 0.75).to(dtype)
    torch.testing.assert_close(y.detach().cpu()[kept], expected[kept])
    y.sum().backward()
    g = torch.where(kept, torch.tensor(1 / 0.75, dtype=torch.float64), 0.0).to(dtype)
    torch.testing.assert_close(x.grad.cpu(), g)


def test_native_dropout_eval_and_edges():
    x = torch.randn(10, 10, device="tpu")
    assert torch.equal(F.dropout(x, 0.5, training=False).cpu(), x.cpu())
    out, mask = torch.native_dropout(x, 0.5, False)
    assert torch.equal(out.cpu(), x.cpu()) and mask.cpu().all()
    assert (F.dropout(x, 1.0).cpu() == 0).all()
    assert torch.equal(F.dropout(x, 0.0).cpu(), x.cpu())
    grad = torch.ops.aten.native_dropout_backward(torch.ones(10, 10, device="tpu"), mask, 2.0)
    assert torch.equal(grad.cpu(), torch.full((10, 10), 2.0))


def test_dropout_reproducible():
    x = torch.ones(1000, device="tpu")
    torch.manual_seed(9)
    a = F.dropout(x, 0.5).cpu()
    torch.manual_seed(9)
    assert torch.equal(F.dropout(x, 0.5).cpu(), a)


def test_empty_and_noncontiguous():
    assert torch.rand(0, 3, device="tpu").shape == (0, 3)
    base = torch.zeros(8, 6, device="tpu")
    base.t()[::2].uniform_(1, 2)
    b = base.cpu()
    assert ((b[:, ::2] >= 1) & (b[:, ::2] < 2)).all() and (b[:, 1::2] == 0).all()


def test_nn_init():
    w = torch.empty(256, 128, device="tpu")
    torch.nn.init.kaiming_uniform_(w, a=math.sqrt(5))
    bound = 1 / math.sqrt(128)
    assert w.cpu().abs().max() <= bound
    torch.nn.init.normal_(w, std=0.02)
    assert abs(w.cpu().std() - 0.02) < 0.002


def test_log_normal_cauchy_geometric():
    x = torch.empty(N, device="tpu").log_normal_(0.5, 0.25).cpu().double()
    assert x.min() > 0 and abs(x.log().mean() - 0.5) < 0.01 and abs(x.log().std() - 0.25) < 0.01
    c = torch.empty(N, dtype=torch.float64, device="tpu").cauchy_(1.0, 2.0).cpu()
    assert abs(c.median() - 1.0) < 0.05
    assert abs(((c - 1).abs() < 2).double().mean() - 0.5) < 0.01  # quartiles at median -+ scale
    g = torch.empty(N, dtype=torch.int64, device="tpu").geometric_(0.25).cpu()
    assert g.min() >= 1 and abs(g.double().mean() - 4.0) < 0.1
    with pytest.raises(RuntimeError, match=r"geometric_ expects p to be in \(0, 1\)"):
        torch.empty(3, device="tpu").geometric_(1.5)
    with pytest.raises(RuntimeError, match="log_normal_ expects std > 0.0"):
        torch.empty(3, device="tpu").log_normal_(0, 0)


def test_multinomial(counters):
    probs = torch.tensor([[0.1, 0.2, 0.7, 0.0], [0.5, 0.5, 0.0, 0.0]], device="tpu")
    torch.manual_seed(0)
    draws = torch.multinomial(probs, 4000, replacement=True)
    assert draws.shape == (2, 4000) and draws.dtype == torch.int64
    freq = torch.stack([torch.bincount(r, minlength=4) for r in draws.cpu()]) / 4000.0
    torch.testing.assert_close(freq, probs.cpu(), rtol=0, atol=0.04)
    torch.manual_seed(1)
    first = torch.multinomial(probs, 2)  # without replacement: distinct, never a zero category
    torch.manual_seed(1)
    assert first.tolist() == torch.multinomial(probs, 2).tolist()
    assert first[1].sort().values.tolist() == [0, 1]
    assert first[0, 0] != first[0, 1] and 3 not in first[0].tolist()
    one = torch.multinomial(probs[0], 1)
    assert one.shape == (1,) and one.item() in (0, 1, 2)
    out = torch.empty(0, dtype=torch.long, device="tpu")
    torch.multinomial(probs, 3, replacement=True, out=out)
    assert out.shape == (2, 3) and (out.cpu()[1] < 2).all()
    assert counters()["cpu_fallbacks"] == {}
    with pytest.raises(RuntimeError, match="probability tensor contains"):
        torch.multinomial(torch.tensor([-1.0, 1.0], device="tpu"), 1)
    with pytest.raises(RuntimeError, match="cannot sample n_sample > prob_dist.size"):
        torch.multinomial(probs, 5)
