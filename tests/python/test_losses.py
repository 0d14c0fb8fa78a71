"""Losses and embedding's gradient on "tpu" against CPU PyTorch: every reduction, class weights,
ignore_index, autograd gradients, out= variants and errors."""

import pytest
import torch
import torch.nn.functional as F
from conftest import assert_same
from test_normalization import compare, randn

DTYPES = [torch.float32, torch.float64]
REDUCTIONS = ["none", "mean", "sum"]
# Lowered by other families; allowed as fallbacks here.
SOFTMAX_FALLBACKS = {"aten::_log_softmax.out", "aten::_log_softmax_backward_data.out"}
INDEX_SELECT_FALLBACKS = {"aten::index_select", "aten::index_select.out"}


def fallbacks(counters):
    return set(counters()["cpu_fallbacks"])


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weighted", [False, True])
def test_nll_loss(reduction, weighted, counters):
    dtype = torch.float64 if weighted else torch.float32
    x = randn(6, 4, dtype=dtype)
    target = torch.tensor([0, 3, 1, -100, 3, 2])
    w = randn(4, dtype=dtype, seed=1).abs() if weighted else None
    compare(lambda x, t, w: F.nll_loss(x, t, w, reduction=reduction), [x, target, w], no_grad=(2,))
    compare(
        lambda x, t, w: F.nll_loss(x, t, w, ignore_index=3, reduction=reduction),
        [x, target.clamp(min=0), w],
        no_grad=(2,),
    )
    assert fallbacks(counters) == set()


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_nll_loss_unbatched_and_spatial(reduction, counters):
    x1, t1 = randn(5, dtype=torch.float64), torch.tensor(2)
    compare(lambda x, t: F.nll_loss(x, t, reduction=reduction), [x1, t1])
    x = randn(2, 3, 4, 5)
    t = torch.randint(0, 3, (2, 4, 5), generator=torch.Generator().manual_seed(0))
    t[0, 0, :2] = 1
    w = randn(3, seed=1).abs()
    compare(
        lambda x, t, w: F.nll_loss(x, t, w, ignore_index=1, reduction=reduction),
        [x, t, w],
        no_grad=(2,),
    )
    assert fallbacks(counters) == set()


def test_nll_loss_all_ignored_mean_is_nan_and_total_weight():
    x, t = randn(3, 4), torch.full((3,), -100)
    assert_same(F.nll_loss(x.to("tpu"), t.to("tpu")), F.nll_loss(x, t), equal_nan=True)
    for reduction in (0, 1, 2):
        out, tw = torch.ops.aten.nll_loss_forward(x.to("tpu"), t.to("tpu"), None, reduction, -100)
        ref = torch.ops.aten.nll_loss_forward(x, t, None, reduction, -100)
        assert_same(out, ref[0], equal_nan=True)
        assert_same(tw, ref[1])


def test_nll_loss_errors():
    x = torch.randn(3, 4, device="tpu")
    with pytest.raises(RuntimeError, match="expected target dtype to be Long or Byte"):
        F.nll_loss(x, torch.zeros(3, dtype=torch.int32, device="tpu"))
    with pytest.raises(RuntimeError, match="weight tensor should be defined either for all 4"):
        F.nll_loss(x, torch.zeros(3, dtype=torch.long, device="tpu"), torch.ones(3, device="tpu"))
    with pytest.raises(ValueError, match="Expected input batch_size"):
        F.nll_loss(x, torch.zeros(2, dtype=torch.long, device="tpu"))


@pytest.mark.parametrize("dtype", DTYPES)
def test_cross_entropy(dtype, counters):
    x, t = randn(5, 4, dtype=dtype), torch.tensor([0, 3, 1, 1, 2])
    compare(lambda x, t: F.cross_entropy(x, t, ignore_index=1), [x, t])
    w = randn(4, dtype=dtype, seed=1).abs()
    compare(lambda x, t, w: F.cross_entropy(x, t, w), [x, t, w], no_grad=(2,))
    assert fallbacks(counters) <= SOFTMAX_FALLBACKS


LOSSES = {
    "mse": lambda x, t, r: F.mse_loss(x, t, reduction=r),
    "smooth_l1": lambda x, t, r: F.smooth_l1_loss(x, t, reduction=r, beta=0.7),
    # F.smooth_l1_loss turns beta=0 into l1_loss; the ATen op itself handles it.
    "smooth_l1_beta0": lambda x, t, r: torch._C._nn.smooth_l1_loss(x, t, REDUCTIONS.index(r), 0.0),
    "huber": lambda x, t, r: F.huber_loss(x, t, reduction=r, delta=0.8),
}


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("loss", list(LOSSES))
def test_pointwise_losses(loss, reduction, counters):
    dtype = torch.float64 if reduction == "sum" else torch.float32
    x, t = randn(4, 5, dtype=dtype), randn(4, 5, dtype=dtype, seed=1)
    compare(lambda x, t: LOSSES[loss](x, t, reduction), [x, t])
    assert fallbacks(counters) == set()


@pytest.mark.parametrize(
    "reduction, dtype", [("none", torch.float32), ("mean", torch.float64), ("sum", torch.float32)]
)
def test_binary_cross_entropy(reduction, dtype, counters):
    x = torch.rand(3, 5, generator=torch.Generator().manual_seed(0)).to(dtype) * 0.98 + 0.01
    t = torch.rand(3, 5, generator=torch.Generator().manual_seed(1)).to(dtype)
    w = torch.rand(3, 5, generator=torch.Generator().manual_seed(2)).to(dtype)
    # The target's gradient (logit) belongs to another family: only the input's is checked.
    compare(lambda x, t: F.binary_cross_entropy(x, t, reduction=reduction), [x, t], no_grad=(1,))
    compare(
        lambda x, t, w: F.binary_cross_entropy(x, t, w, reduction=reduction),
        [x, t, w],
        no_grad=(1, 2),
    )
    edge = torch.tensor([0.0, 1.0, 0.5], dtype=dtype)
    target = torch.tensor([1.0, 0.0, 1.0], dtype=dtype)
    assert_same(
        F.binary_cross_entropy(edge.to("tpu"), target.to("tpu"), reduction=reduction),
        F.binary_cross_entropy(edge, target, reduction=reduction),
    )
    assert fallbacks(counters) == set()


def test_loss_out_variants_and_errors(counters):
    x, t = randn(3, 4), randn(3, 4, seed=1)
    for op, args in [(torch._C._nn.mse_loss, (1,)), (torch._C._nn.huber_loss, (0, 0.5))]:
        out, ref = torch.empty(0, device="tpu"), torch.empty(0)
        op(x.to("tpu"), t.to("tpu"), *args, out=out)
        assert_same(out, op(x, t, *args, out=ref))
    assert fallbacks(counters) == set()
    with pytest.raises(RuntimeError, match="smooth_l1_loss does not support negative values"):
        torch._C._nn.smooth_l1_loss(x.to("tpu"), t.to("tpu"), 1, -1.0)


@pytest.mark.parametrize("padding_idx", [None, 2])
@pytest.mark.parametrize("scale", [False, True])
def test_embedding_backward(padding_idx, scale, counters):
    dtype = torch.float64 if scale else torch.float32
    weight = randn(6, 3, dtype=dtype)
    idx = torch.tensor([[1, 2, 1], [5, 2, 0]])
    compare(
        lambda w, i: F.embedding(i, w, padding_idx=padding_idx, scale_grad_by_freq=scale),
        [weight, idx],
    )
    assert fallbacks(counters) <= INDEX_SELECT_FALLBACKS


def test_embedding_dense_backward_direct(counters):
    g, idx = randn(4, 3), torch.tensor([0, 3, 3, 1])
    out = torch.ops.aten.embedding_dense_backward(g.to("tpu"), idx.to("tpu"), 5, -1, True)
    assert_same(out, torch.ops.aten.embedding_dense_backward(g, idx, 5, -1, True))
    assert fallbacks(counters) == set()
    with pytest.raises(RuntimeError, match="'indices' to have one of the following scalar types"):
        torch.ops.aten.embedding_dense_backward(g.to("tpu"), idx.float().to("tpu"), 5, -1, False)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_margin_losses(reduction, dtype, counters):
    x = randn(4, 5, dtype=dtype)
    y = torch.tensor([0, 3, 4, 3])
    w = randn(5, dtype=dtype, seed=2).abs()
    labels = torch.tensor([[3, 0, -1, 1, 1], [0, 1, 2, 3, 4], [-1, 2, 0, 0, 0], [4, 4, -1, 0, 0]])
    for args in [{}, {"p": 2, "margin": 0.7}, {"weight": w}]:
        for a, t in [(x, y), (x[1], y[1])]:

            def multi_margin(a, t=t, args=args):
                return F.multi_margin_loss(a, t.to(a.device), reduction=reduction, **dev(args, a))

            compare(multi_margin, [a])
    compare(lambda a: F.multilabel_margin_loss(a, labels.to(a.device), reduction=reduction), [x])
    compare(
        lambda a: F.multilabel_margin_loss(a, labels[0].to(a.device), reduction=reduction), [x[0]]
    )
    assert fallbacks(counters) == set()


def dev(kwargs, like):
    return {k: v.to(like.device) if isinstance(v, torch.Tensor) else v for k, v in kwargs.items()}


def test_margin_loss_errors():
    x = torch.ones(2, 3, device="tpu")
    with pytest.raises(RuntimeError, match="only p == 1 and p == 2 supported"):
        torch._C._nn.multi_margin_loss(x, torch.zeros(2, dtype=torch.long, device="tpu"), 3)
    with pytest.raises(RuntimeError, match="inconsistent target size"):
        F.multi_margin_loss(x, torch.zeros(3, dtype=torch.long, device="tpu"))
    with pytest.raises(RuntimeError, match="target out of range"):
        F.multi_margin_loss(x, torch.tensor([0, 3], device="tpu")).cpu()
    with pytest.raises(RuntimeError, match="is out of range"):
        F.multilabel_margin_loss(x, torch.tensor([[0, 3, -1], [1, -1, 0]], device="tpu")).cpu()
