"""vLLM's sampling features on "tpu" (the padded sampler, torch_pjrt/vllm/sampler.py), all in one
`LLM.generate` call so that requests with different parameters share batches, against
Transformers' greedy `generate` on the CPU with the same rule as a logits processor: repetition,
presence and frequency penalties, logit bias, bad words, allowed token ids, min_tokens with a
stop token, logprobs (values and ranks of the raw logits); seeded sampling repeats itself per
seed, top-k 1 and min-p 1 sample greedily, structured output follows its grammar; and nothing
compiles after the start-up walk."""

import json
import math
import os
import subprocess
import sys

import pytest
import torch

pytest.importorskip("vllm")
from test_vllm import HERE, PROMPTS, make_model
from transformers import LogitsProcessor, LogitsProcessorList
from vllm import SamplingParams
from vllm.tokenizers.registry import get_tokenizer

NEW = 8


class OpenAIPenalties(LogitsProcessor):
    """Presence and frequency penalties as the OpenAI API defines them (over the output)."""

    def __init__(self, prompt_len, presence, frequency):
        self.prompt_len, self.presence, self.frequency = prompt_len, presence, frequency

    def __call__(self, input_ids, scores):
        out = input_ids[:, self.prompt_len :]
        counts = torch.zeros_like(scores).scatter_add_(
            1, out, torch.ones_like(out, dtype=scores.dtype)
        )
        return scores - self.frequency * counts - self.presence * (counts > 0)


class Bias(LogitsProcessor):
    def __init__(self, bias):
        self.bias = bias

    def __call__(self, input_ids, scores):
        scores = scores.clone()
        for token, value in self.bias.items():
            scores[:, token] += value
        return scores


def hf(model, tokenizer, prompt, **kwargs):
    ids = tokenizer(prompt, return_tensors="pt").input_ids
    out = model.generate(ids, max_new_tokens=NEW, do_sample=False, **kwargs)
    return out[0, ids.shape[1] :].tolist(), ids.shape[1]


def test_sampling_features_equal_cpu(tmp_path):
    path = tmp_path / "llama"
    model, tokenizer = make_model("llama", path)
    greedy = {p: hf(model, tokenizer, p)[0] for p in PROMPTS}
    vocab = len(tokenizer)
    # A token the third prompt's greedy output starts with, banned as a word; its first token
    # as a stop token that min_tokens holds back.
    word = tokenizer.decode([greedy[PROMPTS[2]][0]]).strip() or "the"
    bad = SamplingParams(bad_words=[word])
    bad.update_from_tokenizer(get_tokenizer(str(path)))
    stop = greedy[PROMPTS[3]][0]
    allowed = list(range(40, 80))
    bias = {greedy[PROMPTS[1]][0]: -100.0, 50: 6.0}
    g = {"temperature": 0, "max_tokens": NEW}
    requests = [
        (PROMPTS[0], dict(g, repetition_penalty=1.5)),
        (PROMPTS[1], dict(g, presence_penalty=1.5, frequency_penalty=1.0)),
        (PROMPTS[1], dict(g, logit_bias=bias)),
        (PROMPTS[2], dict(g, bad_words=[word])),
        (PROMPTS[0], dict(g, allowed_token_ids=allowed)),
        (PROMPTS[3], dict(g, min_tokens=4, stop_token_ids=[stop])),
        (PROMPTS[2], dict(g, logprobs=5)),
        (PROMPTS[0], {"temperature": 0.9, "top_p": 0.95, "seed": 7, "max_tokens": NEW}),
        (PROMPTS[0], {"temperature": 0.9, "top_p": 0.95, "seed": 7, "max_tokens": NEW}),
        (PROMPTS[0], {"temperature": 0.9, "top_p": 0.95, "seed": 8, "max_tokens": NEW}),
        (PROMPTS[1], {"temperature": 1.5, "top_k": 1, "max_tokens": NEW}),
        (PROMPTS[3], {"temperature": 1.0, "min_p": 1.0, "max_tokens": NEW}),
        (PROMPTS[2], dict(g, structured_outputs={"choice": ["lighthouse keeper", "sea"]})),
        (PROMPTS[3], dict(g)),
    ]
    env = dict(os.environ, HF_HUB_OFFLINE="1", TORCH_PJRT_CACHE_DIR=str(tmp_path / "cache"))
    run = subprocess.run([sys.executable, os.path.join(HERE, "vllm_sampling.py"), str(path),
                          json.dumps(requests)], env=env, capture_output=True, text=True,
                         timeout=900, check=False)  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    lines = [line for line in run.stdout.splitlines() if line.startswith('{"startup_compiles"')]
    assert lines, run.stdout[-3000:] + run.stderr[-3000:]
    result = json.loads(lines[-1])
    assert result["startup_compiles"] > 0
    assert result["compiles"] == 0  # every batch's programs came from the start-up walk
    assert result["cpu_fallbacks"] == {}
    out = [r["tokens"] for r in result["results"]]

    assert out[0] == hf(model, tokenizer, PROMPTS[0], repetition_penalty=1.5)[0]
    prompt_len = hf(model, tokenizer, PROMPTS[1])[1]
    penalties = LogitsProcessorList([OpenAIPenalties(prompt_len, 1.5, 1.0)])
    assert out[1] == hf(model, tokenizer, PROMPTS[1], logits_processor=penalties)[0]
    assert (
        out[2]
        == hf(model, tokenizer, PROMPTS[1], logits_processor=LogitsProcessorList([Bias(bias)]))[0]
    )
    assert out[3] == hf(model, tokenizer, PROMPTS[2], bad_words_ids=bad.bad_words_token_ids)[0]
    assert out[3] != greedy[PROMPTS[2]]
    only = LogitsProcessorList([Bias({t: -math.inf for t in range(vocab) if t not in allowed})])
    assert out[4] == hf(model, tokenizer, PROMPTS[0], logits_processor=only)[0]
    assert set(out[4]) <= set(allowed)
    held, _ = hf(model, tokenizer, PROMPTS[3], min_new_tokens=4, eos_token_id=stop)
    assert out[5] == held and stop not in out[5][:4]

    # Logprobs: the raw logits' log-softmax at each step of the greedy output.
    ids = tokenizer(PROMPTS[2], return_tensors="pt").input_ids
    with torch.no_grad():
        logits = model(torch.cat((ids, torch.tensor([out[6]])), dim=1)).logits[0]
    steps = result["results"][6]["logprobs"]
    assert out[6] == greedy[PROMPTS[2]] and len(steps) == NEW
    for i, step in enumerate(steps):
        expected = logits[ids.shape[1] - 1 + i].log_softmax(-1)
        top = expected.topk(5)
        assert {int(t) for t in top.indices} <= {int(t) for t in step}
        for token, (logprob, rank) in step.items():
            assert logprob == pytest.approx(float(expected[int(token)]), abs=1e-4)
            assert rank == int((expected >= expected[int(token)]).sum())

    assert out[7] == out[8] and out[7] != out[9]  # seeded: repeats itself per seed
    assert out[10] == greedy[PROMPTS[1]]  # top-k 1
    assert out[11] == greedy[PROMPTS[3]]  # min-p 1: only the most likely token is left
    assert result["results"][12]["text"] in ("lighthouse keeper", "sea")
    assert out[13] == greedy[PROMPTS[3]]
