"""aten::_embedding_bag (forward, weight and per_sample_weights gradients) and aten::isin against
CPU PyTorch, with no CPU fallback; errors as PyTorch raises them."""

import pytest
import torch
import torch.nn.functional as F
from conftest import assert_same

INDICES = torch.tensor([3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 0, 8])
OFFSETS = torch.tensor([0, 2, 2, 7, 9])  # the third bag is empty
# include_last_offset=True: one more offset, the number of indices (as documented).
OFFSETS_LAST = torch.tensor([0, 2, 2, 7, 9, 12])


def bag_case(
    mode, padding_idx=None, include_last_offset=False, per_sample=False, dtype=torch.float32
):
    g = torch.Generator().manual_seed(0)
    weight = torch.randn(10, 6, generator=g).to(dtype)
    psw = torch.rand(INDICES.numel(), generator=g).to(dtype) if per_sample else None
    kwargs = dict(mode=mode, padding_idx=padding_idx, include_last_offset=include_last_offset)
    return weight, psw, kwargs


@pytest.mark.parametrize(
    "mode,padding_idx,include_last_offset,per_sample",
    [
        ("sum", None, False, False),
        ("sum", 1, False, True),
        ("mean", None, True, False),
        ("mean", 5, False, False),
        ("max", None, False, False),
        ("max", 3, True, False),
    ],
)
def test_embedding_bag_forward_and_backward(
    mode, padding_idx, include_last_offset, per_sample, counters
):
    weight, psw, kwargs = bag_case(mode, padding_idx, include_last_offset, per_sample)
    grad_out = None
    results = {}
    for device in ("cpu", "tpu"):
        w = weight.to(device).detach().requires_grad_()
        p = psw.to(device).detach().requires_grad_() if psw is not None else None
        offsets = OFFSETS_LAST if include_last_offset else OFFSETS
        out = F.embedding_bag(
            INDICES.to(device), w, offsets.to(device), per_sample_weights=p, **kwargs
        )
        if grad_out is None:
            grad_out = torch.randn(out.shape, generator=torch.Generator().manual_seed(1))
        out.backward(grad_out.to(device))
        results[device] = (out, w.grad, p.grad if p is not None else None)
    for got, expected in zip(results["tpu"], results["cpu"]):
        if expected is not None:
            assert_same(got, expected, rtol=1e-5, atol=1e-5)
    assert counters()["cpu_fallbacks"] == {}


def test_embedding_bag_auxiliary_outputs_follow_the_meta_layout(counters):
    """offset2bag, bag_size and max_indices have the shapes PyTorch's meta kernel gives non-CPU
    devices (the CPU leaves offset2bag empty in sum mode), with values computed by hand; the
    per_sample_weights gradient accepts an empty offset2bag (as the CPU's returns) and derives the
    bags from the offsets."""
    weight = torch.randn(10, 3, generator=torch.Generator().manual_seed(3))
    idx, off = torch.tensor([1, 2, 4, 5, 4, 3, 2, 9]), torch.tensor([0, 4, 4])
    bags = [0, 0, 0, 0, 2, 2, 2, 2]
    for mode in (0, 1, 2):
        args = (weight, idx, off, False, mode, False, None, False)
        meta = torch.ops.aten._embedding_bag(
            *(a.to("meta") if torch.is_tensor(a) else a for a in args)
        )
        out = torch.ops.aten._embedding_bag(
            *(a.to("tpu") if torch.is_tensor(a) else a for a in args)
        )
        assert [t.shape for t in out] == [t.shape for t in meta]
        assert out[1].cpu().tolist() == bags
        assert out[2].cpu().tolist() == [4, 0, 4]
        if mode == 2:
            rows = idx.view(2, 4)
            picked = weight[rows].max(1).indices  # position of each maximum within its bag
            expected = torch.stack([rows[b][picked[b]] for b in range(2)])
            assert out[3].cpu().tolist() == [
                expected[0].tolist(),
                [-1, -1, -1],
                expected[1].tolist(),
            ]
    grad = torch.randn(3, 3, generator=torch.Generator().manual_seed(4))
    expected = (weight[idx] * grad[torch.tensor(bags)]).sum(1)
    for offset2bag in (torch.tensor(bags), torch.empty(0, dtype=torch.long)):
        got = torch.ops.aten._embedding_bag_per_sample_weights_backward(
            grad.to("tpu"), weight.to("tpu"), idx.to("tpu"), off.to("tpu"), offset2bag.to("tpu"), 0
        )
        assert_same(got, expected, rtol=1e-5, atol=1e-5)
    assert counters()["cpu_fallbacks"] == {}


def test_embedding_bag_2d_input_bfloat16_and_int32_indices(counters):
    g = torch.Generator().manual_seed(2)
    weight = torch.randn(20, 8, generator=g).to(torch.bfloat16)
    idx = torch.randint(0, 20, (4, 5), generator=g, dtype=torch.int32)
    for mode in ("sum", "mean"):
        expected = F.embedding_bag(idx, weight, mode=mode)
        assert_same(F.embedding_bag(idx.to("tpu"), weight.to("tpu"), mode=mode), expected)
    bag = torch.nn.EmbeddingBag(20, 8, mode="sum")
    expected = bag(idx.long(), offsets=None)
    assert_same(bag.to("tpu")(idx.long().to("tpu")), expected, rtol=1e-5, atol=1e-5)
    assert counters()["cpu_fallbacks"] == {}


def test_embedding_bag_errors():
    weight = torch.randn(10, 4, device="tpu")
    idx, off = INDICES.to("tpu"), OFFSETS.to("tpu")
    with pytest.raises(RuntimeError, match="per_sample_weights"):
        F.embedding_bag(
            idx, weight, off, mode="mean", per_sample_weights=torch.ones(12, device="tpu")
        )
    with pytest.raises(RuntimeError, match="indices"):
        F.embedding_bag(idx.float(), weight, off)
    with pytest.raises(RuntimeError, match="scale_grad_by_freq not supported with sparse"):
        w = weight.clone().requires_grad_()
        F.embedding_bag(idx, w, off, sparse=True, scale_grad_by_freq=True).sum().backward()


@pytest.mark.parametrize(
    "kwargs",
    [{"mode": "sum"}, {"mode": "mean"}, {"mode": "mean", "padding_idx": 4},
     {"mode": "sum", "per_sample_weights": True}, {"mode": "sum", "include_last_offset": True}],
)  # fmt: skip
def test_embedding_bag_sparse_gradient(kwargs, counters):
    # sparse=True: the weight's gradient is a sparse COO tensor, as on the CPU (it raised).
    weight = torch.randn(10, 4, generator=torch.Generator().manual_seed(0))
    idx = torch.tensor([1, 2, 4, 5, 4, 3, 0, 9])
    off = torch.tensor([0, 3, 5, 8] if kwargs.get("include_last_offset") else [0, 3, 5])
    grads = []
    for device in ("cpu", "tpu"):
        w = weight.clone().to(device).requires_grad_()
        extra = dict(kwargs)
        if extra.pop("per_sample_weights", False):
            extra["per_sample_weights"] = torch.linspace(0.5, 2, 8, device=device)
        out = F.embedding_bag(idx.to(device), w, off.to(device), sparse=True, **extra)
        (out * torch.arange(out.numel(), device=device).view(out.shape)).sum().backward()
        grads.append(w.grad)
    cpu, tpu = grads
    assert tpu.layout == torch.sparse_coo and tpu.device.type == "tpu"
    assert torch.equal(tpu.coalesce().indices().cpu(), cpu.coalesce().indices())
    assert_same(tpu.to_dense(), cpu.to_dense(), rtol=1e-5, atol=1e-6)
    assert counters()["cpu_fallbacks"] == {}


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.float32, torch.bfloat16])
def test_isin(dtype, counters):
    elements = torch.tensor([[1, 5, 2], [7, 2, 0]]).to(dtype)
    test = torch.tensor([2, 7, 9]).to(dtype)
    for invert in (False, True):
        expected = torch.isin(elements, test, invert=invert)
        assert_same(torch.isin(elements.to("tpu"), test.to("tpu"), invert=invert), expected)
        assert_same(
            torch.isin(elements.to("tpu"), 2, invert=invert), torch.isin(elements, 2, invert=invert)
        )
    assert_same(torch.isin(7, test.to("tpu")), torch.isin(7, test))
    out = torch.empty(0, dtype=torch.bool, device="tpu")
    torch.isin(elements.to("tpu"), test.to("tpu"), out=out)
    assert_same(out, torch.isin(elements, test))
    assert counters()["cpu_fallbacks"] == {}


def test_isin_mixed_dtypes_empty_and_errors(counters):
    elements = torch.tensor([1.0, 2.5, 3.0])
    test = torch.tensor([3, 1])
    assert_same(torch.isin(elements.to("tpu"), test.to("tpu")), torch.isin(elements, test))
    empty = torch.empty(0, 3, dtype=torch.long)
    assert_same(torch.isin(empty.to("tpu"), test.to("tpu")), torch.isin(empty, test))
    assert counters()["cpu_fallbacks"] == {}
    with pytest.raises(RuntimeError, match="Unsupported input type encountered for isin"):
        torch.isin(torch.tensor([True], device="tpu"), torch.tensor([True], device="tpu"))
