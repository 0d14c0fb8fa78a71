"""Mixture-of-experts models in vLLM on "tpu" (torch_pjrt/vllm/moe.py: the out-of-tree
unquantized MoE method and the router's top-k in torch ops), with the start-up walk on: tiny
Qwen3-MoEs (top-2 of 4 experts, weights as routed or renormalized, the experts run densely) and
a tiny Mixtral (top-2 of 8, the routed pairs through grouped matmuls) give Transformers' greedy
tokens on the CPU, and nothing compiles after the walk; the grouped experts' math against the
dense one."""

import pytest
import torch

pytest.importorskip("vllm")
from test_vllm import PROMPTS, SMALL_ENGINE, TINY, generate, generate_on_ray, greedy_ids, qwen
from transformers import MixtralConfig, MixtralForCausalLM, Qwen3MoeConfig, Qwen3MoeForCausalLM
from vllm.model_executor.layers.fused_moe.activation import MoEActivation

from torch_pjrt.vllm import moe

QWEN3_MOE = {
    "head_dim": 16,
    "moe_intermediate_size": 32,
    "num_experts": 4,
    "num_experts_per_tok": 2,
}
MOE = {  # config class, model class, its settings, the MoE way (TORCH_PJRT_MOE)
    "qwen3_moe": (
        Qwen3MoeConfig,
        Qwen3MoeForCausalLM,
        {**QWEN3_MOE, "norm_topk_prob": False},
        "dense",
    ),
    "qwen3_moe_renormalized": (
        Qwen3MoeConfig,
        Qwen3MoeForCausalLM,
        {**QWEN3_MOE, "norm_topk_prob": True},
        "dense",
    ),
    "mixtral_grouped": (
        MixtralConfig,
        MixtralForCausalLM,
        {"num_local_experts": 8, "num_experts_per_tok": 2},
        "grouped",
    ),
}


@pytest.mark.parametrize("activation,bias,parallel", [
    (MoEActivation.SILU, False, False),
    (MoEActivation.SWIGLUOAI, True, True),  # gpt-oss's: interleaved gate/up, biases
])  # fmt: skip
def test_grouped_experts_equal_dense_on_cpu(activation, bias, parallel, monkeypatch):
    """The routed pairs through grouped matmuls on "tpu" (both kernels: ragged_dot, megablox in
    interpret mode) equal every expert on every token on the CPU; with expert parallelism (this
    rank holding experts 1, 4, 6 of 8) only the held experts' shares."""
    g = torch.Generator().manual_seed(0)
    tokens, hidden, inter, experts, k = 24, 32, 16, 8, 2
    x = torch.randn(tokens, hidden, generator=g)
    w13 = torch.randn(experts, 2 * inter, hidden, generator=g) / hidden**0.5
    w2 = torch.randn(experts, hidden, inter, generator=g) / inter**0.5
    scores = torch.randn(tokens, experts, generator=g).softmax(-1)
    weights, ids = scores.topk(k, dim=-1)
    ids[:4] = 3  # a crowded expert; expert 0 or others may get none
    args = [x, weights, ids.int(), w13, w2, moe._ACTIVATIONS[activation]]
    if bias:
        args += [
            torch.randn(experts, 2 * inter, generator=g),
            torch.randn(experts, hidden, generator=g),
        ]
    else:
        args += [None, None]
    if parallel:
        held = torch.full((experts,), -1, dtype=torch.int32)
        held[torch.tensor([1, 4, 6])] = torch.arange(3, dtype=torch.int32)
        args[3], args[4] = w13[[1, 4, 6]], w2[[1, 4, 6]]
        args[6:] = [b[[1, 4, 6]] if b is not None else None for b in args[6:]] + [held]
    expected = moe.dense_experts(*args)
    for kernel in ("portable", "megablox"):
        monkeypatch.setenv("TORCH_PJRT_GROUPED_MATMUL", kernel)
        on_tpu = [a.to("tpu") if isinstance(a, torch.Tensor) else a for a in args]
        got = moe.grouped_experts(*on_tpu).cpu()
        torch.testing.assert_close(got, expected, atol=1e-4, rtol=1e-4)
    assert expected.abs().max() > 0.1


def test_moe_way(monkeypatch):
    assert moe.moe_way(torch.float32) == "dense"  # the CPU plugin: ragged_dot does dense work
    monkeypatch.setenv("TORCH_PJRT_MOE", "grouped")
    assert moe.moe_way(torch.float32) == "grouped"
    monkeypatch.setenv("TORCH_PJRT_GROUPED_MATMUL", "megablox")
    monkeypatch.setenv("TORCH_PJRT_MOE", "auto")
    assert moe.moe_way(torch.float32) == "grouped"
    monkeypatch.setenv("TORCH_PJRT_MOE", "sparse")
    with pytest.raises(ValueError, match="must be one of auto, dense, grouped"):
        moe.moe_way(torch.float32)


@pytest.mark.parametrize("arch", sorted(MOE))
def test_moe_equals_cpu_greedy(arch, tmp_path):
    config_class, model_class, extra, way = MOE[arch]
    model, tokenizer = qwen.save_tiny_model(tmp_path / arch, config_class, model_class, **TINY,
                                            **extra)  # fmt: skip
    expected = [greedy_ids(model, tokenizer, p) for p in PROMPTS]
    result = generate(tmp_path / arch, tmp_path, "--rounds", "1", "--no-sampling",
                      TORCH_PJRT_MOE=way)  # fmt: skip
    assert result["rounds"][0]["tokens"] == expected
    assert result["rounds"][0]["compiles"] == 0


def test_expert_parallel_with_tensor_parallel_2_on_ray_equals_cpu_greedy(tmp_path):
    """Tensor parallel 2 with expert parallelism through vLLM's Ray executor, the walk on: layer
    0 dense (its MLP split across the ranks), layer 1 MoE with two experts per rank."""
    pytest.importorskip("ray")  # requirements-vllm.txt
    model, tokenizer = qwen.save_tiny_model(tmp_path / "moe", Qwen3MoeConfig, Qwen3MoeForCausalLM,
                                            **TINY, **QWEN3_MOE, mlp_only_layers=[0])  # fmt: skip
    expected = [greedy_ids(model, tokenizer, p) for p in PROMPTS]
    result = generate_on_ray(tmp_path / "moe", tmp_path, "--tensor-parallel-size", "2",
                             "--rounds", "1", "--no-sampling",
                             engine={**SMALL_ENGINE, "enable_expert_parallel": True})  # fmt: skip
    assert result["rounds"][0]["tokens"] == expected
    assert result["rounds"][0]["compiles"] == 0
