"""The float8 dtypes on "tpu" against CPU PyTorch: stored in their own one-byte formats bit for bit,
rounded from other dtypes exactly as the CPU's casts round (saturation, NaN bits), moved by the
data-movement ops, viewed as bytes, saved, compiled; ops the CPU has no float8 kernel for compute in
float32 and round once. No CPU fallback is allowed."""

import io

import pytest
import torch

import torch_pjrt

pytestmark = pytest.mark.usefixtures("no_fallback")

FLOAT8 = [torch.float8_e5m2, torch.float8_e4m3fn, torch.float8_e5m2fnuz, torch.float8_e4m3fnuz]
# Each format's edges: NaN of either sign, infinities, overflow (e4m3fn saturates at 448, the fnuz
# formats give NaN, e5m2 rounds to inf past 61440), ties, subnormals and underflow.
SPECIAL = [
    float("nan"), -float("nan"), float("inf"), -float("inf"), 1e6, -1e6, 449.0, 465.0, 500.0,
    57344.0, 61000.0, 62000.0, 1e-10, 240.0, 250.0, 0.3, -1e-3, 2.0**-17, 2.0**-10, -0.0, 0.0,
]  # fmt: skip


def every_byte(dtype):
    """All 256 bit patterns of a float8 dtype (NaN payloads included), as a CPU tensor."""
    return torch.arange(256, dtype=torch.int32).to(torch.uint8).view(dtype)


def assert_bytes(tpu, cpu):
    assert tpu.device.type == "tpu" and tpu.dtype == cpu.dtype and tpu.shape == cpu.shape
    assert torch.equal(tpu.cpu().view(torch.uint8), cpu.view(torch.uint8)), (
        tpu.cpu().view(torch.uint8),
        cpu.view(torch.uint8),
    )


@pytest.mark.parametrize("dtype", FLOAT8)
def test_storage_and_widening_are_exact(dtype):
    c = every_byte(dtype)
    x = c.to("tpu")
    assert x.element_size() == 1
    assert_bytes(x, c)
    assert_bytes(x[3::7], c[3::7])
    assert torch.equal(x.view(torch.uint8).cpu(), c.view(torch.uint8))
    assert torch.equal(x.view(torch.int8).cpu(), c.view(torch.int8))
    for wide in (torch.float32, torch.float64, torch.float16, torch.bfloat16):
        torch.testing.assert_close(x.to(wide).cpu(), c.to(wide), rtol=0, atol=0, equal_nan=True)
    # Out-of-range and negative to unsigned conversions are undefined in C++ (the CPU's differ).
    in_range = c.float().isfinite() & (c.float().abs() < 100)
    for integral in (torch.int32, torch.uint8, torch.bool):
        if integral == torch.uint8:
            in_range &= c.float() >= 0
        assert torch.equal(x.to(integral).cpu()[in_range], c.to(integral)[in_range]), integral


@pytest.mark.parametrize("dtype", FLOAT8)
@pytest.mark.parametrize(
    "source", [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int32, torch.bool]
)
def test_rounding_matches_the_cpu(dtype, source):
    values = torch.tensor(SPECIAL, dtype=torch.float64)
    if not source.is_floating_point:
        values = values.nan_to_num(0, 0, 0).clamp(-1e6, 1e6)
    c = values.to(source)
    assert_bytes(c.to("tpu").to(dtype), c.to(dtype))
    dst = torch.empty(len(SPECIAL), dtype=dtype, device="tpu")
    dst.copy_(c.to("tpu"))
    assert_bytes(dst, c.to(dtype))


@pytest.mark.parametrize("dtype", [torch.float8_e5m2, torch.float8_e4m3fn])
def test_data_movement(dtype):
    c = torch.tensor(SPECIAL).to(dtype)
    x = c.to("tpu")
    index = torch.tensor([3, 0, 2, 2])
    assert_bytes(torch.index_select(x, 0, index.to("tpu")), torch.index_select(c, 0, index))
    assert_bytes(torch.cat([x, x[:4]]), torch.cat([c, c[:4]]))
    assert_bytes(torch.stack([x, x]).t().contiguous(), torch.stack([c, c]).t().contiguous())
    assert_bytes(x[x.float() > 1], c[c.float() > 1])
    y, cy = x.clone(), c.clone()
    y[2] = 1.7
    cy[2] = 1.7
    y[5:9] = x[:4]
    cy[5:9] = c[:4]
    assert_bytes(y, cy)
    y.fill_(0.3)
    cy.fill_(0.3)
    assert_bytes(y, cy)
    for factory in (torch.zeros, torch.ones):
        assert_bytes(factory(5, dtype=dtype, device="tpu"), factory(5, dtype=dtype))
    full = torch.full((3,), 300.0, dtype=dtype)
    assert_bytes(torch.full((3,), 300.0, dtype=dtype, device="tpu"), full)
    if dtype == torch.float8_e4m3fn:  # a Python scalar past the range is refused, as on the CPU
        with pytest.raises(RuntimeError, match="cannot be converted to type c10::Float8_e4m3fn"):
            torch.full((3,), 1000.0, dtype=dtype, device="tpu")
    assert x[2].item() == c[2].item() and x.tolist()[2:] == c.tolist()[2:]


def test_uninitialized_storage_and_byte_views():
    bytes_ = torch.arange(0, 140, 20, dtype=torch.uint8, device="tpu")
    c = bytes_.cpu().view(torch.float8_e4m3fn)
    assert_bytes(bytes_.view(torch.float8_e4m3fn), c)
    assert torch.equal(bytes_.view(torch.float8_e4m3fn).float().cpu(), c.float())
    e = torch.empty(6, dtype=torch.float8_e5m2, device="tpu")
    e[1:3] = 2.0
    assert e[1:3].float().cpu().tolist() == [2.0, 2.0]


@pytest.mark.parametrize("dtype", [torch.float8_e5m2, torch.float8_e4m3fn])
def test_math_computes_in_float32_and_rounds_once(dtype):
    # The CPU has no float8 kernels for these ("add_stub" not implemented); the device computes in
    # float32 and rounds the result, as the float32 round trip does on the CPU.
    a = torch.tensor([0.5, -1.25, 3.0, 0.0, 2.0, -0.125]).to(dtype)
    b = torch.tensor([0.75, 0.3, -3.0, 5.0, 100.0, 0.01]).to(dtype)
    x, y = a.to("tpu"), b.to("tpu")

    def via_float(f, *ts):
        return f(*(t.float() for t in ts)).to(dtype)

    assert_bytes(x + y, via_float(torch.add, a, b))
    assert_bytes(x * 3, via_float(lambda t: t * 3, a))
    assert_bytes(x.exp(), via_float(torch.exp, a))
    assert_bytes(x.sum(), via_float(torch.sum, a))
    assert torch.equal((x < y).cpu(), a.float() < b.float())
    with pytest.raises(RuntimeError, match="Promotion for Float8 Types is not supported"):
        x + torch.ones(6, device="tpu")


@pytest.mark.parametrize("dtype", [torch.float8_e5m2, torch.float8_e4m3fn])
def test_save_load_and_compile(dtype):
    c = torch.tensor(SPECIAL).to(dtype)
    buffer = io.BytesIO()
    torch.save(c.to("tpu"), buffer)
    buffer.seek(0)
    assert_bytes(torch.load(buffer), c)

    @torch.compile(backend="tpu")
    def scale(t):
        return (t.float() * 3).to(dtype)

    assert_bytes(scale(c.to("tpu")), (c.float() * 3).to(dtype))


@pytest.mark.parametrize("mode", ["strict", "debug"])
def test_eager_modes(mode):
    c = torch.tensor(SPECIAL)
    with torch_pjrt.eager_mode(mode):
        x = c.to("tpu").to(torch.float8_e4m3fn)
        assert_bytes(x, c.to(torch.float8_e4m3fn))
        assert_bytes(x.to(torch.float8_e5m2), c.to(torch.float8_e4m3fn).to(torch.float8_e5m2))


@pytest.mark.parametrize("fmt", [torch.float8_e4m3fn, torch.float8_e5m2])
def test_conv2d_backward_after_weights_cast_to_float8(fmt):
    """Diffusers' layerwise casting in training: a bf16 Conv2d whose weight and bias storage is set
    to float8 after the forward; the backward uses the float8 weight as bf16 and gives bf16
    gradients, as the CPU does."""
    results = []
    for device in ("cpu", "tpu"):
        torch.manual_seed(0)
        conv = torch.nn.Conv2d(3, 4, 3).to(dtype=torch.bfloat16, device=device)
        x = torch.randn(2, 3, 8, 8, dtype=torch.bfloat16).to(device).requires_grad_()
        y = conv(x)
        conv.weight.data = conv.weight.data.to(fmt)
        conv.bias.data = conv.bias.data.to(fmt)
        y.backward(torch.randn(y.shape, generator=torch.Generator().manual_seed(1)).to(y))
        results.append((x.grad, conv.weight.grad, conv.bias.grad))
    for t, c in zip(*reversed(results)):
        assert t.dtype == c.dtype == torch.bfloat16
        torch.testing.assert_close(t.cpu().float(), c.float(), rtol=2e-2, atol=2e-2)
