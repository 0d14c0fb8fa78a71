"""tril_indices and triu_indices made on "tpu" against CPU PyTorch: every offset sign, empty and
full triangles, int32 and int64, and the CPU's errors, in the strict and fused eager modes."""

import pytest
import torch

pytestmark = pytest.mark.usefixtures("no_fallback")


# (row, col, offset, dtype): offsets of each sign, a full triangle, and empty ones (no program).
CASES = [
    (3, 5, 1, torch.int32),
    (5, 3, -2, torch.int64),
    (3, 3, 10, torch.int32),
    (3, 3, -10, torch.int64),
    (0, 3, 0, torch.int32),
    (3, 0, 1, torch.int64),
]


@pytest.mark.parametrize("op", [torch.tril_indices, torch.triu_indices])
def test_matches_cpu(mode, op):
    for row, col, offset, dtype in CASES:
        expected = op(row, col, offset, dtype=dtype)
        got = op(row, col, offset, dtype=dtype, device="tpu")
        assert got.device.type == "tpu" and got.dtype == dtype
        assert torch.equal(got.cpu(), expected), (row, col, offset, dtype)
    assert torch.equal(op(3, 4, device="tpu").cpu(), op(3, 4))  # default offset and dtype


@pytest.mark.parametrize("op", [torch.tril_indices, torch.triu_indices])
def test_errors_match_cpu(mode, op):
    for args, kwargs in [((-1, 2), {}), ((2, -1), {}), ((2, 2), {"dtype": torch.float32})]:
        with pytest.raises(Exception) as cpu_error:
            op(*args, **kwargs)
        with pytest.raises(type(cpu_error.value)) as tpu_error:
            op(*args, **kwargs, device="tpu")
        assert str(tpu_error.value) == str(cpu_error.value)
    assert torch.equal(op(2, 3, 1, device="tpu").cpu(), op(2, 3, 1))  # a valid call after
