"""Quantized vLLM models on "tpu" (torch_pjrt/vllm/quant.py), with the start-up walk on: a tiny
bfloat16 Llama served with `quantization="fp8"` (weights quantized per tensor at load, activations
per token at each step) gives the greedy tokens of the same quantized math in Transformers on the
CPU, tokens that differ from the unquantized model's, and nothing compiles after the walk."""

import json

import pytest
import torch

pytest.importorskip("vllm")
from test_vllm import PROMPTS, generate, greedy_ids, make_model

FP8 = torch.float8_e4m3fn
FP8_MAX = torch.finfo(FP8).max


def fp8_linear(linear, weight_scale):
    """`linear` computing as vLLM's fp8 layers: its weight / weight_scale and each input row /
    its own scale (the row's largest magnitude over fp8's, at least 1 / (448 * 512)) rounded to
    fp8, multiplied in float32, scaled back, rounded to the input's dtype."""
    weight = (linear.weight.float() / weight_scale).clamp(-FP8_MAX, FP8_MAX).to(FP8).float()

    def forward(x):
        rows = x.reshape(-1, x.shape[-1])
        scale = rows.abs().amax(-1, keepdim=True).float() / FP8_MAX
        scale = scale.clamp(min=1 / (FP8_MAX * 512))
        q = (rows.float() * scale.reciprocal()).clamp(-FP8_MAX, FP8_MAX).to(FP8).float()
        y = (q @ weight.t()) * scale * weight_scale
        return y.to(x.dtype).view(*x.shape[:-1], -1)

    linear.forward = forward


def quantize_like_vllm_fp8(model):
    """Each decoder layer's linears as vLLM's online fp8 quantizes them: one weight scale per
    vLLM layer (q, k and v are one; gate and up are one), its largest magnitude over fp8's."""
    for layer in model.model.layers:
        attn, mlp = layer.self_attn, layer.mlp
        for fused in ((attn.q_proj, attn.k_proj, attn.v_proj), (attn.o_proj,),
                      (mlp.gate_proj, mlp.up_proj), (mlp.down_proj,)):  # fmt: skip
            scale = max(linear.weight.abs().max() for linear in fused).float() / FP8_MAX
            for linear in fused:
                fp8_linear(linear, scale)


def test_fp8_equals_cpu_fp8_greedy(tmp_path):
    model, tokenizer = make_model("llama", tmp_path / "llama")
    model = model.to(torch.bfloat16)  # vLLM loads the checkpoint in bfloat16, then quantizes
    unquantized = [greedy_ids(model, tokenizer, p) for p in PROMPTS]
    quantize_like_vllm_fp8(model)
    expected = [greedy_ids(model, tokenizer, p) for p in PROMPTS]
    assert expected != unquantized  # the check below can tell quantized from not
    engine = {"dtype": "bfloat16", "quantization": "fp8"}
    result = generate(tmp_path / "llama", tmp_path, "--rounds", "1", "--no-sampling",
                      "--engine", json.dumps(engine))  # fmt: skip
    assert result["rounds"][0]["tokens"] == expected
    assert result["rounds"][0]["compiles"] == 0
    assert result["rounds"][0]["cpu_fallbacks"] == {}
