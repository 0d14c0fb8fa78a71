"""Grouped matmul on "tpu" (torch_pjrt.kernels.grouped_matmul): the portable form (ragged_dot) and
JAX's megablox Pallas kernel, run here in Pallas's interpret mode (its arguments and tiling as on
TPUs, lowered to plain HLO), against a per-group reference on the CPU: empty groups, rows past the
groups, rows not a multiple of the tile, several tiles, transposed weights, bfloat16; one
program whatever the group sizes; the kernel choice and the errors."""

import pytest
import torch

import torch_pjrt
from torch_pjrt import kernels


def reference(lhs, rhs, sizes, transpose_rhs=False):
    """Each group's rows times its matrix, in float64; zeros past the groups."""
    out = torch.zeros(lhs.shape[0], rhs.shape[1 if transpose_rhs else 2], dtype=torch.float64)
    start = 0
    for g, n in enumerate(sizes.tolist()):
        w = rhs[g].double()
        out[start : start + n] = lhs[start : start + n].double() @ (w.T if transpose_rhs else w)
        start += n
    return out


def inputs(m, k, n, sizes, transpose_rhs=False, dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    lhs = torch.randn(m, k, generator=g).to(dtype)
    shape = (len(sizes), n, k) if transpose_rhs else (len(sizes), k, n)
    return lhs, torch.randn(shape, generator=g).to(dtype), torch.tensor(sizes, dtype=torch.int32)


CASES = [  # (m, k, n, group sizes, transpose_rhs)
    (40, 24, 20, [10, 0, 20, 5], True),  # an empty group, 5 rows past the groups
    (37, 16, 48, [0, 37, 0], False),  # rows not a multiple of 16, one group
    (300, 160, 136, [100, 3, 0, 190, 7], True),  # several row tiles, k and n past one tile
]


@pytest.mark.parametrize("kernel", ["portable", "megablox"])
@pytest.mark.parametrize("m,k,n,sizes,transpose_rhs", CASES)
def test_equals_per_group_reference(kernel, m, k, n, sizes, transpose_rhs, monkeypatch):
    monkeypatch.setenv("TORCH_PJRT_GROUPED_MATMUL", kernel)
    lhs, rhs, gs = inputs(m, k, n, sizes, transpose_rhs)
    got = kernels.grouped_matmul(lhs.to("tpu"), rhs.to("tpu"), gs.to("tpu"),
                                 transpose_rhs=transpose_rhs).cpu()  # fmt: skip
    assert got.shape == (m, n) and got.dtype == torch.float32
    torch.testing.assert_close(got.double(), reference(lhs, rhs, gs, transpose_rhs),
                               atol=1e-4, rtol=1e-5)  # fmt: skip


@pytest.mark.parametrize("kernel", ["portable", "megablox"])
def test_bfloat16(kernel, monkeypatch):
    monkeypatch.setenv("TORCH_PJRT_GROUPED_MATMUL", kernel)
    lhs, rhs, gs = inputs(64, 32, 48, [20, 0, 30, 14], True, torch.bfloat16)
    got = kernels.grouped_matmul(lhs.to("tpu"), rhs.to("tpu"), gs.to("tpu"), transpose_rhs=True)
    assert got.dtype == torch.bfloat16
    torch.testing.assert_close(got.cpu().double(), reference(lhs, rhs, gs, True), atol=0.1,
                               rtol=2e-2)  # fmt: skip


def test_one_program_whatever_the_group_sizes():
    compiles = []
    for seed, sizes in enumerate([[24, 0, 0, 0], [1, 2, 3, 4], [0, 0, 0, 0], [6, 6, 6, 6]]):
        lhs, rhs, gs = inputs(24, 16, 8, sizes, seed=seed)
        before = torch_pjrt.metrics.counters()["compiles"]
        got = kernels.grouped_matmul(lhs.to("tpu"), rhs.to("tpu"), gs.to("tpu")).cpu()
        compiles.append(torch_pjrt.metrics.counters()["compiles"] - before)
        torch.testing.assert_close(got.double(), reference(lhs, rhs, gs), atol=1e-5, rtol=1e-5)
    assert compiles[0] >= 1 and compiles[1:] == [0, 0, 0], compiles


def test_kernel_choice_and_errors(monkeypatch):
    assert kernels.grouped_matmul_kernel(torch.float32) == "portable"  # the CPU plugin
    monkeypatch.setenv("TORCH_PJRT_GROUPED_MATMUL", "fast")
    with pytest.raises(ValueError, match="must be one of auto, portable, megablox"):
        kernels.grouped_matmul_kernel(torch.float32)
    monkeypatch.delenv("TORCH_PJRT_GROUPED_MATMUL")
    lhs, rhs, gs = (t.to("tpu") for t in inputs(8, 4, 6, [4, 4]))
    with pytest.raises(ValueError, match="grouped_matmul: expected lhs"):
        kernels.grouped_matmul(lhs[0], rhs, gs)
    with pytest.raises(ValueError, match="do not fit together"):
        kernels.grouped_matmul(lhs, rhs, gs, transpose_rhs=True)
    with pytest.raises(TypeError, match="int32 group sizes"):
        kernels.grouped_matmul(lhs, rhs, gs.long())
