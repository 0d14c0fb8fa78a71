"""nn.MultiheadAttention, nn.TransformerEncoderLayer and nn.TransformerEncoder in inference take
PyTorch's fast paths (torch._native_multi_head_attention, torch._transformer_encoder_layer_fwd;
with a key padding mask the encoder runs the latter over nested tensors): on "tpu" they run
natively, with the CPU's results, padding positions included."""

import pytest
import torch

import torch_pjrt

pytestmark = pytest.mark.usefixtures("no_fallback")


def _layer(**kw):
    torch.manual_seed(0)
    return torch.nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0, batch_first=True, **kw).eval()


def _run(module, x, **masks):
    with torch.no_grad():
        expected = module(x, **masks)
        got = module.to("tpu")(x.to("tpu"), **{k: v.to("tpu") for k, v in masks.items()})
    module.cpu()
    return got, expected


PADDING = torch.tensor([[False] * 5, [False] * 3 + [True] * 2, [False] * 4 + [True]])


@pytest.mark.parametrize("mode", ["strict", "fused"])
@pytest.mark.parametrize(
    "kw", [{}, {"activation": "gelu"}, {"norm_first": True}], ids=["relu", "gelu", "norm_first"]
)
def test_layer_matches_the_cpu(mode, kw):
    x = torch.randn(3, 5, 16)
    causal = torch.nn.Transformer.generate_square_subsequent_mask(5)
    with torch_pjrt.eager_mode(mode):
        for masks in [{}, {"src_key_padding_mask": PADDING}, {"src_mask": causal}]:
            got, expected = _run(_layer(**kw), x, **masks)
            torch.testing.assert_close(got.cpu(), expected, atol=2e-6, rtol=1e-5)


def test_a_fully_masked_row_is_nan_as_on_the_cpu():
    # The fast path's softmax over keys that are all masked: NaN on the CPU (fixed values, not
    # only the CPU's answer on this machine).
    x = torch.randn(2, 4, 16)
    mask = torch.tensor([[True] * 4, [False] * 2 + [True] * 2])
    got, expected = _run(_layer(), x, src_key_padding_mask=mask)
    got = got.cpu()
    assert got[0].isnan().all() and not got[1].isnan().any()
    torch.testing.assert_close(got, expected, atol=2e-6, rtol=1e-5, equal_nan=True)


@pytest.mark.parametrize("mode", ["strict", "fused"])
def test_encoder_with_padding_runs_over_nested_tensors(mode):
    torch.manual_seed(1)
    encoder = torch.nn.TransformerEncoder(_layer(), 2).eval()
    x = torch.randn(3, 5, 16)
    with torch_pjrt.eager_mode(mode):
        got, expected = _run(encoder, x, src_key_padding_mask=PADDING)
    torch.testing.assert_close(got.cpu(), expected, atol=2e-6, rtol=1e-5)
    assert (expected[1, 3:] == 0).all() and (got.cpu()[1, 3:] == 0).all()  # padding: zeros


def test_nested_tensor_ops_match_the_cpu():
    x = torch.randn(3, 5, 4)
    tokens = ~PADDING
    nested = torch._nested_tensor_from_mask(x.to("tpu"), tokens.to("tpu"))
    expected = torch._nested_tensor_from_mask(x, tokens)
    assert nested.is_nested and nested.device.type == "tpu"
    assert torch.equal(nested._nested_tensor_size(), expected._nested_tensor_size())
    assert torch.equal(nested.to_padded_tensor(-1.0).cpu(), expected.to_padded_tensor(-1.0))
    assert torch.equal(
        nested.to_padded_tensor(2.0, (3, 7, 4)).cpu(), expected.to_padded_tensor(2.0, (3, 7, 4))
    )
    ragged = torch.tensor([[True, False, True, False, False]] + [[True] * 5] * 2)
    for mask in [tokens, ragged]:
        assert torch._nested_tensor_from_mask_left_aligned(
            x.to("tpu"), mask.to("tpu")
        ) == torch._nested_tensor_from_mask_left_aligned(x, mask)
    with pytest.raises(RuntimeError, match="left-aligned"):
        torch._nested_tensor_from_mask(x.to("tpu"), ragged.to("tpu"))


def test_layer_over_an_empty_nested_tensor():
    # Upstream test_nn's test_TransformerEncoderLayer_empty: no tokens in, none out.
    layer = _layer()
    with torch.no_grad():
        expected = layer(torch.nested.nested_tensor([torch.rand(0, 16)]))
        got = layer.to("tpu")(torch.nested.nested_tensor([torch.rand(0, 16)], device="tpu"))
    assert got.is_nested and got.device.type == "tpu"
    assert torch.equal(got._nested_tensor_size(), expected._nested_tensor_size())


@pytest.mark.parametrize("mode", ["strict", "fused"])
def test_multihead_attention_fast_path_matches_the_cpu(mode):
    torch.manual_seed(2)
    mha = torch.nn.MultiheadAttention(16, 2, batch_first=True).eval()
    x, other = torch.randn(3, 5, 16), torch.randn(3, 5, 16)
    causal = torch.nn.Transformer.generate_square_subsequent_mask(5)
    # The fast path takes self-attention (query is key is value) without weights.
    calls = [
        ((x, x, x), {"need_weights": False}),
        ((x, other, other), {"key_padding_mask": PADDING, "need_weights": False}),
        ((x, x, x), {"attn_mask": causal, "need_weights": False}),
    ]
    with torch_pjrt.eager_mode(mode), torch.no_grad():
        for args, kw in calls:
            out, weights = mha(*args, **kw)
            on = {id(a): a.to("tpu") for a in args}  # the same tensor stays the same: q is k
            got, got_weights = mha.to("tpu")(
                *(on[id(a)] for a in args),
                **{k: v.to("tpu") if torch.is_tensor(v) else v for k, v in kw.items()},
            )
            mha.cpu()
            assert weights is None and got_weights is None
            torch.testing.assert_close(got.cpu(), out, atol=2e-6, rtol=1e-5)


def test_native_multi_head_attention_weights_and_errors_match_the_cpu():
    torch.manual_seed(3)
    q, k = torch.randn(2, 4, 8), torch.randn(2, 4, 8)
    w, b, pw, pb = torch.randn(24, 8), torch.randn(24), torch.randn(8, 8), torch.randn(8)
    padding = torch.tensor([[False, False, True, True], [False] * 4])

    def both(*args):
        cpu = torch._native_multi_head_attention(q, k, k, 8, 2, w, b, pw, pb, *args)
        tpu_args = [a.to("tpu") if torch.is_tensor(a) else a for a in args]
        on = [t.to("tpu") for t in (q, k, k, w, b, pw, pb)]
        tpu = torch._native_multi_head_attention(*on[:3], 8, 2, *on[3:], *tpu_args)
        return cpu, tpu

    for args in [(None, True), (None, True, False), (padding, True, True, 1)]:
        cpu, tpu = both(*args)
        for c, t in zip(cpu, tpu):
            torch.testing.assert_close(t.cpu(), c, atol=2e-6, rtol=1e-5)
    with pytest.raises(RuntimeError, match="must divide evenly"):
        torch._native_multi_head_attention(
            *(t.to("tpu") for t in (q, k, k)), 8, 3, *(t.to("tpu") for t in (w, b, pw, pb))
        )
    with pytest.raises(RuntimeError, match="shapes to match"):
        torch._native_multi_head_attention(
            *(t.to("tpu") for t in (q, k[:, :3], k[:, :3])),
            8,
            2,
            *(t.to("tpu") for t in (w, b, pw, pb)),
        )
