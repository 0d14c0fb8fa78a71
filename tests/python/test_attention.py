"""scaled_dot_product_attention on "tpu" (PyTorch's math path) against CPU PyTorch: masks, causal,
scale, and gradients of query, key and value."""

import pytest
import torch
import torch.nn.functional as F
from test_normalization import compare, randn

# The math path's softmax (_safe_softmax, lowered whole; its composite: softmax, isneginf, all)
# and the causal mask (tril) are lowered by other families; only these may fall back here.
ALLOWED_FALLBACKS = {
    "aten::_softmax.out",
    "aten::_softmax_backward_data.out",
    "aten::isneginf.out",
    "aten::all.out",
    "aten::tril.out",
}


def masks(dtype):
    bool_mask = torch.rand(5, 7, generator=torch.Generator().manual_seed(3)) > 0.3
    bool_mask[:, 0] = True
    return {
        "none": {},
        "float": {"attn_mask": randn(5, 7, dtype=dtype, seed=4)},
        "bool": {"attn_mask": bool_mask},
        "scale": {"scale": 0.3},
        "dropout0": {"dropout_p": 0.0},
    }


@pytest.mark.parametrize("case", list(masks(torch.float32)))
def test_sdpa(case, counters):
    dtype = torch.float64 if case == "float" else torch.float32
    q = randn(2, 3, 5, 8, dtype=dtype)
    k, v = randn(2, 3, 7, 8, dtype=dtype, seed=1), randn(2, 3, 7, 6, dtype=dtype, seed=2)
    kw = masks(dtype)[case]

    def fn(q, k, v):
        kw_dev = {n: (m.to(q.device) if torch.is_tensor(m) else m) for n, m in kw.items()}
        return F.scaled_dot_product_attention(q, k, v, **kw_dev)

    compare(fn, [q, k, v], atol=1e-5, rtol=1e-4)
    assert set(counters()["cpu_fallbacks"]) <= ALLOWED_FALLBACKS


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_sdpa_causal_and_unbatched_heads(dtype, counters):
    q, k, v = (randn(3, 6, 4, dtype=dtype, seed=s) for s in range(3))
    compare(
        lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
        [q, k, v],
        atol=1e-5,
        rtol=1e-4,
    )
    assert set(counters()["cpu_fallbacks"]) <= ALLOWED_FALLBACKS
