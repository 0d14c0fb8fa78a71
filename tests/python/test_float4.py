"""torch.float4_e2m1fn_x2 on "tpu" against CPU PyTorch: each element is one byte holding two packed
e2m1 values, stored on the device as that byte. What the CPU does with it works bit for bit
(storage, copies, views, view(dtype) to and from other dtypes, clone, the data-movement ops and
the bytewise ==/!=); everything the CPU has no kernel for raises its NotImplementedError."""

import io

import pytest
import torch

import torch_pjrt  # noqa: F401

pytestmark = pytest.mark.usefixtures("no_fallback")

F4 = torch.float4_e2m1fn_x2


def every_byte():
    """All 256 bit patterns (every pair of e2m1 values), as a CPU tensor."""
    return torch.arange(256, dtype=torch.int32).to(torch.uint8).view(F4)


def assert_bytes(tpu, cpu):
    assert tpu.device.type == "tpu" and tpu.dtype == cpu.dtype and tpu.shape == cpu.shape
    assert torch.equal(tpu.cpu().view(torch.uint8), cpu.view(torch.uint8))


def test_storage_copies_and_byte_views_are_exact():
    c = every_byte()
    x = c.to("tpu")
    assert x.dtype == F4 and x.element_size() == 1 and x.untyped_storage().nbytes() == 256
    assert_bytes(x, c)
    assert_bytes(x[5::9], c[5::9])
    assert torch.equal(x.view(torch.uint8).cpu(), c.view(torch.uint8))
    assert torch.equal(x.view(torch.int8).cpu(), c.view(torch.int8))
    assert torch.equal(x.view(torch.int16).cpu(), c.view(torch.int16))  # two bytes per element
    assert_bytes(x.view(torch.uint8).view(F4), c)
    words = torch.arange(64, dtype=torch.int32)
    assert_bytes(words.to("tpu").view(F4), words.view(F4))
    assert_bytes(x.clone(), c)
    y = torch.empty(256, dtype=F4, device="tpu")
    y.copy_(x)
    assert_bytes(y, c)
    y[::2].copy_(c[1::2])  # host to a strided device view
    expected = c.clone()
    expected[::2] = c[1::2]
    assert_bytes(y, expected)
    out = torch.empty(128, dtype=F4)
    out.copy_(x[::2])  # device view to the host
    assert torch.equal(out.view(torch.uint8), c[::2].view(torch.uint8))
    assert x.to("cpu").dtype == F4 and torch.equal(x.cpu().view(torch.uint8), c.view(torch.uint8))


def test_views_and_data_movement_match_the_cpu():
    c = every_byte().reshape(16, 16)
    x = c.to("tpu")
    cases = [
        lambda t: t.t().contiguous(),
        lambda t: t[3:9, ::3],
        lambda t: t.permute(1, 0)[2],
        lambda t: t.reshape(4, 64).select(0, 2),
        lambda t: t.flatten(),
        lambda t: t.unsqueeze(0).expand(3, 16, 16).contiguous(),
        lambda t: t.unfold(1, 4, 3),
        lambda t: t.diagonal(),
        lambda t: t.narrow_copy(1, 2, 5),
        lambda t: torch.cat([t, t[:2]]),
        lambda t: torch.stack([t[0], t[1]]),
        lambda t: t.repeat(2, 1),
        lambda t: t.roll(3, 1),
        lambda t: torch.where(torch.arange(16, device=t.device) % 3 == 0, t, t.t()),
        lambda t: t.clone().zero_(),
        lambda t: torch.zeros_like(t),
        lambda t: t.new_zeros(3, 2),
        lambda t: t[0].diag(),
        lambda t: t.chunk(3, 1)[2].contiguous(),
    ]
    for i, fn in enumerate(cases):
        assert_bytes(fn(x), fn(c)), i
    assert_bytes(torch.zeros(5, dtype=F4, device="tpu"), torch.zeros(5, dtype=F4))
    e = torch.empty(2, 3, dtype=F4, device="tpu")
    assert e.dtype == F4 and e.shape == (2, 3)
    r = x.flatten().clone()
    r.resize_(300)
    assert torch.equal(r[:256].cpu().view(torch.uint8), c.flatten().view(torch.uint8))


def test_equality_compares_bytes_as_the_cpu_does():
    a = torch.tensor([1, 2, 0x80, 0, 0xFF, 0x08], dtype=torch.uint8).view(F4)
    b = torch.tensor([1, 3, 0, 0, 0xFF, 0x80], dtype=torch.uint8).view(F4)
    for op in (torch.eq, torch.ne):
        got = op(a.to("tpu"), b.to("tpu"))
        assert got.dtype == torch.bool
        assert torch.equal(got.cpu(), op(a, b))


def test_save_and_load():
    c = every_byte()
    buf = io.BytesIO()
    torch.save(c.to("tpu"), buf)
    buf.seek(0)
    loaded = torch.load(buf, map_location="tpu")
    assert_bytes(loaded, c)


@pytest.mark.parametrize(
    "name",
    [
        "add", "abs", "neg", "to_float", "from_float", "to_uint8", "fill", "full", "sum", "max",
        "lt", "index", "index_select", "flip", "masked_fill", "sort", "item", "mm", "equal",
        "nonzero", "gather", "from_float8",
    ],
)  # fmt: skip
def test_ops_without_a_cpu_kernel_raise_as_on_the_cpu(name):
    fn = {
        "add": lambda t: t + t,
        "abs": lambda t: t.abs(),
        "neg": lambda t: -t,
        "to_float": lambda t: t.to(torch.float32),
        "from_float": lambda t: torch.ones(4, device=t.device).to(F4),
        "to_uint8": lambda t: t.to(torch.uint8),
        "fill": lambda t: t.clone().fill_(1),
        "full": lambda t: torch.full((2,), 1.0, dtype=F4, device=t.device),
        "sum": lambda t: t.sum(),
        "max": lambda t: t.max(),
        "lt": lambda t: t < t.flatten(),
        "index": lambda t: t[torch.tensor([0, 2], device=t.device)],
        "index_select": lambda t: t.index_select(0, torch.tensor([1, 0], device=t.device)),
        "flip": lambda t: t.flip(0),
        "masked_fill": lambda t: t.masked_fill(torch.ones(4, dtype=torch.bool, device=t.device), 0),
        "sort": lambda t: t.sort(),
        "item": lambda t: t[0].item(),
        "mm": lambda t: t.reshape(2, 2) @ t.reshape(2, 2),
        "equal": lambda t: torch.equal(t, t),
        "nonzero": lambda t: t.nonzero(),
        "gather": lambda t: t.gather(0, torch.tensor([1, 0], device=t.device)),
        "from_float8": lambda t: t.clone().copy_(
            torch.ones(4, device=t.device).to(torch.float8_e4m3fn)
        ),
    }[name]
    c = torch.tensor([0x12, 0x34, 0xFF, 0x07], dtype=torch.uint8).view(F4)
    with pytest.raises(Exception) as cpu_error:
        fn(c)
    with pytest.raises(Exception) as tpu_error:
        fn(c.to("tpu"))
    assert tpu_error.type is cpu_error.type, (tpu_error.value, cpu_error.value)
    if cpu_error.type is NotImplementedError:
        assert "not implemented for 'Float4_e2m1fn_x2'" in str(tpu_error.value)
