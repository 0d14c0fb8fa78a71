"""Mixture-of-experts models in vLLM on "tpu" (torch_pjrt/vllm/moe.py: the out-of-tree
unquantized MoE method and the router's top-k in torch ops), with the start-up walk on: tiny
Qwen3-MoEs (top-2 of 4 experts, weights as routed or renormalized) and a tiny Mixtral give
Transformers' greedy tokens on the CPU, and nothing compiles after the walk."""

import json

import pytest

pytest.importorskip("vllm")
from test_vllm import PROMPTS, SMALL_ENGINE, TINY, generate, greedy_ids, qwen
from transformers import MixtralConfig, MixtralForCausalLM, Qwen3MoeConfig, Qwen3MoeForCausalLM

QWEN3_MOE = {
    "head_dim": 16,
    "moe_intermediate_size": 32,
    "num_experts": 4,
    "num_experts_per_tok": 2,
}
MOE = {
    "qwen3_moe": (Qwen3MoeConfig, Qwen3MoeForCausalLM, {**QWEN3_MOE, "norm_topk_prob": False}),
    "qwen3_moe_renormalized": (
        Qwen3MoeConfig,
        Qwen3MoeForCausalLM,
        {**QWEN3_MOE, "norm_topk_prob": True},
    ),
    "mixtral": (
        MixtralConfig,
        MixtralForCausalLM,
        {"num_local_experts": 4, "num_experts_per_tok": 2},
    ),
}


@pytest.mark.parametrize("arch", sorted(MOE))
def test_moe_equals_cpu_greedy(arch, tmp_path):
    config_class, model_class, extra = MOE[arch]
    model, tokenizer = qwen.save_tiny_model(tmp_path / arch, config_class, model_class, **TINY,
                                            **extra)  # fmt: skip
    expected = [greedy_ids(model, tokenizer, p) for p in PROMPTS]
    result = generate(tmp_path / arch, tmp_path, "--rounds", "1", "--no-sampling")
    assert result["rounds"][0]["tokens"] == expected
    assert result["rounds"][0]["compiles"] == 0


def test_expert_parallel_with_tensor_parallel_2_on_ray_equals_cpu_greedy(tmp_path):
    """Tensor parallel 2 with expert parallelism through vLLM's Ray executor, the walk on: layer 0
    dense (its MLP split across the ranks), layer 1 MoE with two experts per rank."""
    pytest.importorskip("ray")  # requirements-vllm.txt
    model, tokenizer = qwen.save_tiny_model(tmp_path / "moe", Qwen3MoeConfig, Qwen3MoeForCausalLM,
                                            **TINY, **QWEN3_MOE, mlp_only_layers=[0])  # fmt: skip
    expected = [greedy_ids(model, tokenizer, p) for p in PROMPTS]
    engine = {**SMALL_ENGINE, "enable_expert_parallel": True, "distributed_executor_backend": "ray"}
    result = generate(tmp_path / "moe", tmp_path, "--tensor-parallel-size", "2", "--rounds", "1",
                      "--no-sampling", "--engine", json.dumps(engine),
                      RAY_USAGE_STATS_ENABLED="0")  # fmt: skip
    assert result["rounds"][0]["tokens"] == expected
    assert result["rounds"][0]["compiles"] == 0
