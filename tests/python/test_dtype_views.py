"""Tensor.view(dtype) on "tpu": every dtype pair PyTorch allows, read and written through the view,
bit-exact against CPU PyTorch, in every eager mode and in torch.compile; PyTorch's errors for views
it refuses."""

import pytest
import torch

import torch_pjrt

DTYPES = (torch.bool, torch.int8, torch.uint8, torch.int16, torch.int32, torch.int64,
          torch.float16, torch.bfloat16, torch.float32, torch.float64)  # fmt: skip
PAIRS = [(a, b) for a in DTYPES for b in DTYPES]
# Strict and Debug run a program per op (the same programs in both modes), so they take a cover of
# the pairs: every dtype as source and as target, every width relation, bool both ways.
COVER = [
    (torch.bool, torch.int8), (torch.uint8, torch.bool), (torch.int8, torch.float64),
    (torch.float64, torch.bool), (torch.int16, torch.bfloat16), (torch.bfloat16, torch.float16),
    (torch.float16, torch.int32), (torch.int32, torch.int16), (torch.float32, torch.int64),
    (torch.int64, torch.float32), (torch.bool, torch.float32), (torch.float64, torch.uint8),
]  # fmt: skip


def bits(t):
    """t's elements as raw bits (an integer tensor of the same width) for exact comparison; bool
    as nonzero bytes, since the device stores a bool as 0/1 and CPU PyTorch keeps any byte."""
    t = t.cpu()
    if t.dtype == torch.bool:
        return t.view(torch.uint8) != 0
    width = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[t.element_size()]
    return t.view(width)


def assert_bits(tpu, cpu):
    assert tpu.device.type == "tpu" and tpu.dtype == cpu.dtype and tpu.shape == cpu.shape
    assert torch.equal(bits(tpu), bits(cpu)), (tpu.dtype, bits(tpu), bits(cpu))


def source(dtype, rows=3, cols=16, seed=0):
    """A CPU tensor of random bit patterns (NaNs with payloads, -0.0, subnormals, infs included
    for floats); bool holds 0/1."""
    g = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        return torch.randint(0, 2, (rows, cols), generator=g).bool()
    nbytes = rows * cols * torch.empty((), dtype=dtype).element_size()
    raw = torch.randint(0, 256, (nbytes,), dtype=torch.uint8, generator=g)
    return raw.view(dtype).reshape(rows, cols)


@pytest.fixture(params=torch_pjrt.eager.MODES)
def mode(request):
    with torch_pjrt.eager_mode(request.param):
        yield request.param


def pairs(mode):
    """Every pair in Fused mode, each read or written once, as one program; the cover in Strict
    and Debug, in more ways."""
    return PAIRS if mode == "fused" else COVER


def check_all(results):
    """Compares (tpu, cpu) pairs once every tpu result is recorded: one program in Fused mode."""
    for got, want in results:
        assert_bits(got, want)


def test_read_every_pair(mode):
    # Read through the view by a device op, so the bitcast runs in a program rather than on the
    # host copy of the storage.
    results = []
    for a, b in pairs(mode):
        c = source(a)
        x = c.to("tpu")
        results.append((x.view(b).clone(), c.view(b)))
        if mode != "fused":  # offset and row-strided (what PyTorch allows for different widths)
            results.append((x[::2, 8:].view(b).clone(), c[::2, 8:].view(b)))
    check_all(results)


def test_write_every_pair(mode):
    results = []
    for a, b in pairs(mode):
        c = source(a)
        x = c.to("tpu")
        vc, vx = c.view(b), x.view(b)
        w = source(b, rows=1, cols=vc.shape[1], seed=1)[0]
        vc[1] = w  # a contiguous range of the storage
        vx[1] = w.to("tpu")
        if mode != "fused":
            vc[::2, ::2] = w[::2]  # a strided write
            vx[::2, ::2] = w[::2].to("tpu")
        results.append((x, c))
    check_all(results)


def test_in_place_ops_through_views_and_reads_of_the_base():
    for mode in torch_pjrt.eager.MODES:
        with torch_pjrt.eager_mode(mode):
            c = torch.tensor([1.0, -2.0, 0.5, -0.0])
            x = c.to("tpu")
            # Clearing the sign bit through an int32 view: abs() by bits.
            x.view(torch.int32).bitwise_and_(0x7FFFFFFF)
            c.view(torch.int32).bitwise_and_(0x7FFFFFFF)
            assert_bits(x, c)
            assert_bits(x * 2, c * 2)
            # The low byte of each float through a uint8 view, then arithmetic on the base.
            x.view(torch.uint8)[::4] = 0xFF
            c.view(torch.uint8)[::4] = 0xFF
            assert_bits(x + 1, c + 1)


def test_transposed_same_width_view():
    c = source(torch.float32, rows=4, cols=6)
    x = c.to("tpu")
    assert_bits(x.t().view(torch.int32).clone(), c.t().view(torch.int32))
    x.t().view(torch.int32)[1] = 7
    c.t().view(torch.int32)[1] = 7
    assert_bits(x, c)


def test_fixed_bit_patterns():
    # Expectations written out (IEEE 754 encodings), not taken from this machine's CPU kernels.
    f = torch.tensor([-0.0, 1.0, float("inf")], device="tpu")
    assert f.view(torch.int32).cpu().tolist() == [-(2**31), 0x3F800000, 0x7F800000]
    # NaNs with payloads, one negative (0xFFC01234), one signalling (0x7F800001).
    nans = [0x7FC00123, 0xFFC01234 - 2**32, 0x7F800001]
    as_float = torch.tensor(nans, dtype=torch.int32, device="tpu").view(torch.float32).clone()
    assert as_float.view(torch.int32).cpu().tolist() == nans
    assert torch.isnan(as_float.cpu()).all()
    one = torch.tensor([1.0], dtype=torch.bfloat16, device="tpu")
    assert one.view(torch.int16).cpu().tolist() == [0x3F80]
    assert one.view(torch.float16).cpu().view(torch.int16).tolist() == [0x3F80]
    assert one.float().view(torch.uint8).clone().cpu().tolist() == [0, 0, 0x80, 0x3F]
    d = torch.tensor([-0.0], dtype=torch.float64, device="tpu")
    assert d.view(torch.int32).clone().cpu().tolist() == [0, -(2**31)]
    b = torch.tensor([[1, 0, 0, 0], [0, 1, 1, 1]], dtype=torch.bool, device="tpu")
    assert b.view(torch.int32).clone().cpu().tolist() == [[1], [0x01010100]]
    u = torch.tensor([0, 2, 255, 1], dtype=torch.uint8, device="tpu")
    assert u.view(torch.bool).clone().cpu().tolist() == [False, True, True, True]


def test_storage_size_not_a_multiple_of_the_wider_dtype():
    # 6 bytes viewed as one float32 (the first 4 bytes): the storage cannot be read as float32
    # whole, so the view's bytes are read and written on their own.
    c = torch.arange(6, dtype=torch.uint8) * 40
    x = c.to("tpu")
    assert_bits(x[:4].view(torch.float32).clone(), c[:4].view(torch.float32))
    x[:4].view(torch.int32).fill_(-5)
    c[:4].view(torch.int32).fill_(-5)
    assert_bits(x, c)


def test_compile():
    def f(x, y):
        as_int = x.view(torch.int32) & 0x7FFFFFFF
        return (
            as_int.view(torch.float32) + 1,  # a program result viewed as another dtype ...
            (x.abs() + 1).view(torch.uint8),
            y.view(torch.uint8),  # ... and graph inputs
            x.view(torch.int16)[:, 1:],
        )

    compiled = torch.compile(f, backend="tpu")
    torch_pjrt.metrics.reset()
    for seed in (0, 1):
        cx, cy = source(torch.float32, seed=seed), source(torch.bfloat16, rows=2, seed=seed)
        got = compiled(cx.to("tpu"), cy.to("tpu"))
        for g, e in zip(got, f(cx, cy)):
            assert_bits(g, e)
    c = torch_pjrt.metrics.counters()["compile"]
    assert c["replays"] >= 1 and c["eager_graphs"] == 0


def test_compile_mutation_through_view():
    def f(x):
        x.view(torch.int32).add_(1)
        return x * 1

    compiled = torch.compile(f, backend="tpu")
    torch_pjrt.metrics.reset()
    c = torch.tensor([1.0, 2.0, -3.0])
    x = c.to("tpu")
    for _ in range(2):
        got = compiled(x)
        want = f(c)
        assert_bits(got, want)
        assert_bits(x, c)
    assert torch_pjrt.metrics.counters()["compile"]["eager_graphs"] == 0


VIEW_ERRORS = [
    (lambda: torch.zeros(3, 5), torch.float64),  # last dim not divisible
    (lambda: torch.zeros(3, 8)[:, 1:5], torch.float64),  # storage offset not divisible
    (lambda: torch.zeros(4, 4).t(), torch.int8),  # stride(-1) != 1 to a narrower dtype
    (lambda: torch.zeros(4, 4).t(), torch.float64),  # and to a wider one
    (lambda: torch.zeros(3, 6, dtype=torch.int16)[:, :4], torch.float64),  # stride(0) = 6
    (lambda: torch.zeros((), dtype=torch.float32), torch.int16),  # 0-dim, different widths
]


@pytest.mark.parametrize("make,dtype", VIEW_ERRORS)
def test_view_errors_match_cpu(make, dtype):
    with pytest.raises(RuntimeError) as cpu_error:
        make().view(dtype)
    t = make()
    x = make_tpu(t)
    with pytest.raises(RuntimeError) as tpu_error:
        x.view(dtype)
    assert str(tpu_error.value) == str(cpu_error.value)
    assert torch.equal((x + 1).cpu(), t + 1)  # the process and the tensor remain usable


def make_tpu(t):
    """A "tpu" tensor with t's dtype, sizes, strides, offset and storage size."""
    base = torch.as_strided(t, (t.untyped_storage().nbytes() // t.element_size(),), (1,), 0)
    return base.to("tpu").as_strided(t.shape, t.stride(), t.storage_offset())
