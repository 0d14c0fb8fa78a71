"""vLLM's pooling runner on "tpu" (`LLM(..., runner="pooling", convert="embed")`) with the
start-up walk on: the walk makes pooling requests (it made sampling ones, which the runner
refuses), and the embeddings equal Transformers' on the CPU (last token's hidden state after the
final norm, L2-normalized: vLLM's default pooling for a decoder converted to embeddings)."""

import json
import os
import subprocess
import sys

import pytest

pytest.importorskip("vllm")
import torch
from test_vllm import PROMPTS, make_model

EMBED = """
import json, sys
from vllm import LLM
llm = LLM(model=sys.argv[1], dtype="float32", max_model_len=256, runner="pooling",
          convert="embed", max_num_seqs=4, max_num_batched_tokens=64)
outputs = llm.embed(json.loads(sys.argv[2]))
print(json.dumps([o.outputs.embedding for o in outputs]))
"""


def test_embeddings_equal_cpu_with_the_walk(tmp_path):
    model, tokenizer = make_model("llama", tmp_path / "llama")
    expected = []
    with torch.no_grad():
        for prompt in PROMPTS:
            ids = tokenizer(prompt, return_tensors="pt").input_ids
            last = model.model(input_ids=ids).last_hidden_state[0, -1]
            expected.append(torch.nn.functional.normalize(last, dim=0))
    env = dict(os.environ, HF_HUB_OFFLINE="1", VLLM_ENABLE_V1_MULTIPROCESSING="0",
               TORCH_PJRT_CACHE_DIR=str(tmp_path / "cache"))  # fmt: skip
    command = [sys.executable, "-c", EMBED, str(tmp_path / "llama"), json.dumps(PROMPTS)]
    run = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600, check=False)
    assert run.returncode == 0, run.stderr[-3000:]
    got = torch.tensor(json.loads(run.stdout.strip().splitlines()[-1]))
    assert "tpu warm-up" in run.stdout + run.stderr  # the walk ran
    torch.testing.assert_close(got, torch.stack(expected), rtol=1e-4, atol=1e-5)
