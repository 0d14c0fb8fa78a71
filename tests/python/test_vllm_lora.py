"""LoRA in vLLM on "tpu" (torch_pjrt/vllm/lora.py: the Punica wrapper in torch ops over padded
mappings) with the start-up walk on: two PEFT adapters made in code and requests without one, in
one batch, give Transformers' greedy tokens on the CPU of the base model with each adapter merged
into its weights (W + alpha / r * B @ A), and nothing compiles after the walk, for a second batch
with the adapters swapped between requests either."""

import copy
import json
import os
import subprocess
import sys

import pytest

pytest.importorskip("vllm")
import torch
from safetensors.torch import save_file
from test_vllm import PROMPTS, greedy_ids, make_model

RANK, ALPHA = 8, 16
TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")

GENERATE = """
import json, sys
from vllm import LLM, SamplingParams
from vllm.lora.request import LoRARequest
import torch_pjrt
model, adapters, prompts, new_tokens = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3]), int(sys.argv[4])
llm = LLM(model=model, dtype="float32", max_model_len=256, max_num_seqs=4,
          max_num_batched_tokens=64, enable_lora=True, max_lora_rank=8, max_loras=2)
loras = [None] + [LoRARequest(f"adapter{i}", i, path) for i, path in enumerate(adapters, 1)]
greedy = SamplingParams(temperature=0, max_tokens=new_tokens)
rounds = []
for choice in json.loads(sys.argv[5]):
    before = torch_pjrt.metrics.counters()["compiles"]
    outs = llm.generate(prompts, greedy, lora_request=[loras[c] for c in choice], use_tqdm=False)
    rounds.append({"tokens": [list(o.outputs[0].token_ids) for o in outs],
                   "compiles": torch_pjrt.metrics.counters()["compiles"] - before})
print(json.dumps(rounds))
"""


def save_adapter(model, path, seed):
    """A PEFT LoRA adapter of `model` (random A and B, every attention and MLP projection) at
    `path`; returns the model with it merged."""
    generator = torch.Generator().manual_seed(seed)
    merged = copy.deepcopy(model)
    tensors = {}
    for name, module in merged.named_modules():
        if not name.endswith(TARGETS):
            continue
        out_features, in_features = module.weight.shape
        a = torch.randn(RANK, in_features, generator=generator) / in_features**0.5
        b = torch.randn(out_features, RANK, generator=generator) * 0.5
        tensors[f"base_model.model.{name}.lora_A.weight"] = a
        tensors[f"base_model.model.{name}.lora_B.weight"] = b
        with torch.no_grad():
            module.weight += ALPHA / RANK * b @ a
    os.makedirs(path)
    save_file(tensors, os.path.join(path, "adapter_model.safetensors"))
    config = {"peft_type": "LORA", "r": RANK, "lora_alpha": ALPHA, "lora_dropout": 0.0,
              "target_modules": list(TARGETS), "bias": "none", "task_type": "CAUSAL_LM"}  # fmt: skip
    with open(os.path.join(path, "adapter_config.json"), "w") as f:
        json.dump(config, f)
    return merged


def test_two_adapters_and_none_in_one_batch_equal_cpu_merged(tmp_path):
    model, tokenizer = make_model("llama", tmp_path / "llama")
    adapters = [str(tmp_path / f"adapter{i}") for i in (1, 2)]
    models = [model] + [save_adapter(model, p, seed) for seed, p in enumerate(adapters, 1)]
    expected = [[greedy_ids(m, tokenizer, p) for p in PROMPTS] for m in models]
    assert expected[0] != expected[1] != expected[2]  # the adapters change the tokens
    # Adapter per prompt (0: none) in two batches, the second with the adapters swapped.
    choices = [[1, 2, 0, 1], [2, 0, 1, 2]]
    env = dict(os.environ, HF_HUB_OFFLINE="1", VLLM_ENABLE_V1_MULTIPROCESSING="0",
               TORCH_PJRT_CACHE_DIR=str(tmp_path / "cache"))  # fmt: skip
    command = [sys.executable, "-c", GENERATE, str(tmp_path / "llama"), json.dumps(adapters),
               json.dumps(PROMPTS), str(len(expected[0][0])), json.dumps(choices)]  # fmt: skip
    run = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600, check=False)
    assert run.returncode == 0, run.stderr[-3000:]
    log = run.stdout + run.stderr
    assert "tpu warm-up" in log and "Using TpuPunicaWrapper" in log  # the walk ran, on lora.py
    rounds = json.loads(run.stdout.strip().splitlines()[-1])
    for choice, result in zip(choices, rounds):
        assert result["tokens"] == [expected[c][i] for i, c in enumerate(choice)]
        assert result["compiles"] == 0
