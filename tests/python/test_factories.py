"""Creation ops on "tpu": arange, linspace, eye and the constant factories, compared with CPU."""

import pytest
import torch
from conftest import assert_same


pytestmark = pytest.mark.usefixtures("no_fallback")


ARANGE_CASES = [
    ((10,), {}),
    ((2, 11, 3), {}),
    ((10, -3, -2), {}),
    ((0.0, 1.0, 0.125), {}),
    ((1.5, -2.25, -0.25), {"dtype": torch.float64}),
    ((-5, 5), {"dtype": torch.int32}),
    ((0, 256, 8), {"dtype": torch.uint8}),
    ((0, 10, 0.5), {"dtype": torch.bfloat16}),
    ((0, 5, 0.25), {"dtype": torch.float16}),
    ((0, 1, 0.1), {}),
    ((2**40, 2**40 + 5), {}),
    ((3, 3), {}),
]


@pytest.mark.parametrize("args,kw", ARANGE_CASES)
def test_arange(args, kw):
    expected = torch.arange(*args, **kw)
    actual = torch.arange(*args, device="tpu", **kw)
    assert actual.dtype == expected.dtype
    assert_same(actual, expected)


def test_arange_out_resizes_and_warns():
    out = torch.empty(0, dtype=torch.int64, device="tpu")
    torch.arange(4, 20, 4, out=out)
    assert_same(out, torch.arange(4, 20, 4))
    out = torch.empty(3, device="tpu")
    with pytest.warns(UserWarning, match="does not match the computed number of elements"):
        torch.arange(0, 5, out=out)
    assert_same(out, torch.arange(0.0, 5.0))
    nc = torch.zeros(5, 2, device="tpu")
    torch.arange(5.0, out=nc[:, 1])
    assert_same(nc, torch.stack([torch.zeros(5), torch.arange(5.0)], 1))


@pytest.mark.parametrize(
    "args,message",
    [
        ((0, 10, 0), "step must be nonzero"),
        ((0, 10, -1), "upper bound and lower bound inconsistent with step sign"),
        ((0, float("inf")), "unsupported range"),
    ],
)
def test_arange_errors(args, message):
    with pytest.raises(RuntimeError) as cpu_error:
        torch.arange(*args)
    with pytest.raises(type(cpu_error.value), match=message):
        torch.arange(*args, device="tpu")


@pytest.mark.parametrize(
    "args,kw",
    [
        ((0, 4), {}),
        ((1.0, 2.0, 0.25), {}),
        ((5, -5, -2), {"dtype": torch.int64}),
        ((0, 1, 0.1), {}),
    ],
)
def test_range(args, kw):
    with pytest.warns(UserWarning):
        expected = torch.range(*args, **kw)
    with pytest.warns(UserWarning):
        actual = torch.range(*args, device="tpu", **kw)
    assert_same(actual, expected)


@pytest.mark.parametrize(
    "args,dtype",
    [
        ((0, 1, 5), torch.float32),
        ((-3.5, 7.25, 11), torch.float64),
        ((10, -10, 7), torch.float32),
        ((0, 100, 9), torch.int64),
        ((-7, 8, 4), torch.int32),
        ((0, 1, 6), torch.bfloat16),
        ((2, 2, 1), torch.float32),
        ((0, 1, 0), torch.float32),
    ],
)
def test_linspace(args, dtype):
    expected = torch.linspace(*args, dtype=dtype)
    assert_same(torch.linspace(*args, dtype=dtype, device="tpu"), expected)


def test_linspace_out_and_errors():
    out = torch.empty(2, device="tpu")
    torch.linspace(0, 3, 4, out=out)
    assert_same(out, torch.linspace(0, 3, 4))
    with pytest.raises(RuntimeError, match="number of steps must be non-negative"):
        torch.linspace(0, 1, -1, device="tpu")


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64, torch.bool, torch.bfloat16])
def test_eye(dtype):
    assert_same(torch.eye(4, dtype=dtype, device="tpu"), torch.eye(4, dtype=dtype))
    assert_same(torch.eye(3, 5, dtype=dtype, device="tpu"), torch.eye(3, 5, dtype=dtype))
    assert_same(torch.eye(5, 2, dtype=dtype, device="tpu"), torch.eye(5, 2, dtype=dtype))
    assert torch.eye(0, device="tpu").shape == (0, 0)


def test_eye_out_and_errors():
    out = torch.empty(1, device="tpu")
    torch.eye(3, out=out)
    assert_same(out, torch.eye(3))
    with pytest.raises(RuntimeError, match="n must be greater or equal to 0, got -1"):
        torch.eye(-1, device="tpu")
    with pytest.raises(RuntimeError, match="m must be greater or equal to 0, got -2"):
        torch.eye(2, -2, device="tpu")


def test_constant_factories():
    assert_same(torch.zeros(2, 3, device="tpu"), torch.zeros(2, 3))
    assert_same(torch.ones(4, dtype=torch.int32, device="tpu"), torch.ones(4, dtype=torch.int32))
    assert_same(torch.full((2, 2), 7.5, device="tpu"), torch.full((2, 2), 7.5))
    assert_same(torch.full((3,), True, device="tpu"), torch.full((3,), True))
    x = torch.empty(3, 4, dtype=torch.float64, device="tpu")
    assert x.shape == (3, 4) and x.dtype == torch.float64
    assert_same(torch.zeros_like(x), torch.zeros(3, 4, dtype=torch.float64))
    assert_same(torch.ones_like(x), torch.ones(3, 4, dtype=torch.float64))
    assert_same(torch.full_like(x, -2), torch.full((3, 4), -2.0, dtype=torch.float64))
    assert_same(x.new_zeros(2), torch.zeros(2, dtype=torch.float64))
    assert_same(x.new_full((2,), 3), torch.full((2,), 3.0, dtype=torch.float64))
    assert torch.empty_like(x).shape == (3, 4)
    assert_same(torch.scalar_tensor(2.5, device="tpu"), torch.scalar_tensor(2.5))


@pytest.mark.parametrize(
    "dtype, value",
    [
        (torch.int8, 1000),
        (torch.int32, float("inf")),
        (torch.uint32, 2**33),
        (torch.float16, 1e6),
        (torch.bfloat16, 1e300),
    ],
)
def test_fill_value_overflow_is_refused(dtype, value):
    # The CPU converts a fill value with an overflow check; so does the device, before any program.
    name = {torch.int8: "int8_t", torch.int32: "int", torch.uint32: "uint32_t"}.get(dtype, "c10::")
    with pytest.raises(
        RuntimeError, match=f"value cannot be converted to type {name}.* without overflow"
    ):
        torch.full((2,), value, dtype=dtype)
    with pytest.raises(
        RuntimeError, match=f"value cannot be converted to type {name}.* without overflow"
    ):
        torch.full((2,), value, dtype=dtype, device="tpu")
    with pytest.raises(RuntimeError, match="without overflow"):
        torch.zeros(2, dtype=dtype, device="tpu").fill_(value)


@pytest.mark.parametrize("value", [5, -3, 2.5, 0.0, 1j, 0])
def test_bool_fill_values_are_truth_values(value):
    assert_same(torch.full((3,), value, dtype=torch.bool, device="tpu"),
                torch.full((3,), value, dtype=torch.bool))  # fmt: skip
    mask = torch.tensor([True, False, True])
    assert_same(
        torch.zeros(3, dtype=torch.bool, device="tpu").masked_fill(mask.to("tpu"), value),
        torch.zeros(3, dtype=torch.bool).masked_fill(mask, value),
    )


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.complex64, torch.int64])
def test_deterministic_mode_fills_new_memory(dtype):
    # torch.use_deterministic_algorithms(True): empty, empty_strided and a resize_ that grows the
    # storage fill the new memory with NaN (integers: their maximum), as on the CPU.
    def made(device):
        grown = torch.zeros(2, dtype=dtype, device=device).resize_(5)
        strided = torch.empty_strided((2, 3), (1, 2), dtype=dtype, device=device)
        return [torch.empty(2, 3, dtype=dtype, device=device), strided, grown]

    torch.use_deterministic_algorithms(True)
    try:
        expected, actual = made("cpu"), made("tpu")
    finally:
        torch.use_deterministic_algorithms(False)
    for e, a in zip(expected, actual):
        assert_same(a, e, equal_nan=True)
    assert expected[2][:2].eq(0).all() and not expected[2][2:].eq(0).any()
