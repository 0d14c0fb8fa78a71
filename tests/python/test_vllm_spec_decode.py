"""Speculative decoding in vLLM on "tpu" (torch_pjrt/vllm/spec_decode.py): the rejection sampler
in torch ops against a per-request loop of upstream's rule, and `LLM(...,
speculative_config={"method": "ngram", ...})` with the start-up walk on gives Transformers' greedy
tokens on the CPU, with drafts proposed and accepted; so does a draft model (the target as its own
draft: every draft accepted; the walk off, for time); "ngram_gpu" is refused at start-up with a
clear error."""

import json
import os
import subprocess
import sys

import pytest

pytest.importorskip("vllm")
import torch
from test_vllm import PROMPTS, make_model

NEW_TOKENS = 24  # long enough for the tiny model to repeat itself, which ngram drafts predict
SPEC_PROMPTS = [*PROMPTS, "the cat sat. the cat sat. the cat sat. the cat sat."]

NGRAM = """
import json, sys
from vllm import LLM, SamplingParams
try:  # a Triton-only proposer: refused before the engine starts
    LLM(model=sys.argv[1], dtype="float32", max_model_len=256, speculative_config={
        "method": "ngram_gpu", "num_speculative_tokens": 2})
    refused = None
except Exception as e:
    refused = [type(e).__name__, str(e)]
llm = LLM(model=sys.argv[1], dtype="float32", max_model_len=256, max_num_seqs=4,
          max_num_batched_tokens=64, disable_log_stats=False,
          speculative_config={"method": "ngram", "num_speculative_tokens": 3,
                              "prompt_lookup_max": 3, "prompt_lookup_min": 1})
outs = llm.generate(json.loads(sys.argv[2]), SamplingParams(temperature=0, max_tokens=int(sys.argv[3])),
                    use_tqdm=False)
# Random rows with penalties beside greedy ones: upstream's sampler, the torch ops' random path.
sampled = llm.generate(json.loads(sys.argv[2])[:2], [
    SamplingParams(temperature=0.8, seed=1, presence_penalty=0.5, max_tokens=8),
    SamplingParams(temperature=0, max_tokens=8)], use_tqdm=False)
metrics = {m.name: m.value for m in llm.get_metrics() if m.name.startswith("vllm:spec_decode_num")
           and hasattr(m, "value")}
print(json.dumps({"tokens": [list(o.outputs[0].token_ids) for o in outs], "metrics": metrics,
                  "refused": refused, "sampled": [list(o.outputs[0].token_ids) for o in sampled]}))
"""


def reference(drafts, counts, target_argmax, bonus, max_spec_len):
    """Upstream's greedy rule, request by request: the target's tokens up to and including the
    first draft it disagrees with, the bonus token when it agrees with all."""
    out, start = [], 0
    for i, n in enumerate(counts):
        row = []
        for j in range(n):
            row.append(target_argmax[start + j])
            if drafts[start + j] != target_argmax[start + j]:
                break
        else:
            row.append(bonus[i])
        out.append(row + [-1] * (max_spec_len + 1 - len(row)))
        start += n
    return out


def test_rejection_sampler_in_torch_ops():
    from vllm.v1.sample.metadata import SamplingMetadata

    from torch_pjrt.vllm.spec_decode import rejection_sample

    vocab, counts, max_spec_len = 11, [3, 0, 2, 3, 1], 3
    cu = torch.tensor(counts).cumsum(0)
    drafts = [4, 5, 6, 7, 8, 1, 2, 3, 9]
    target = torch.full((len(drafts), vocab), -50.0)
    agree = [True, True, False, True, True, True, False, True, False]
    for t, (d, a) in enumerate(zip(drafts, agree)):
        target[t, d if a else (d + 1) % vocab] = 50.0
    bonus = [10, 9, 8, 7, 6]

    def run(temperature, all_greedy):
        metadata = SamplingMetadata(
            temperature=temperature, all_greedy=all_greedy, all_random=False, top_p=None,
            top_k=None, generators={}, max_num_logprobs=None, no_penalties=True,
            prompt_token_ids=None, frequency_penalties=None, presence_penalties=None,
            repetition_penalties=None, output_token_ids=[], allowed_token_ids_mask=None,
            bad_words_token_ids={}, logitsprocs=None)  # fmt: skip
        out = rejection_sample(
            torch.tensor(drafts, dtype=torch.int32, device="tpu"), counts, max_spec_len,
            cu.to("tpu", torch.int32), None, target.to("tpu"),
            torch.tensor(bonus, dtype=torch.int32, device="tpu").view(-1, 1), metadata)  # fmt: skip
        return out.cpu().tolist()

    expected = reference(drafts, counts, target.argmax(-1).tolist(), bonus, max_spec_len)
    assert run(None, True) == expected
    # Random rows (temperature 1) beside greedy ones: a draft the target gives ~all its mass is
    # accepted, one it gives ~none is replaced by the residual's only token: the same tokens.
    temperature = torch.tensor([0.0, 1.0, 1.0, 0.0, 1.0], device="tpu")
    assert run(temperature, False) == expected


def test_ngram_speculation_equals_cpu_greedy(tmp_path):
    model, tokenizer = make_model("llama", tmp_path / "llama")
    expected = []
    for prompt in SPEC_PROMPTS:
        ids = tokenizer(prompt, return_tensors="pt").input_ids
        out = model.generate(ids, max_new_tokens=NEW_TOKENS, do_sample=False)
        expected.append(out[0, ids.shape[1] :].tolist())
    env = dict(os.environ, HF_HUB_OFFLINE="1", VLLM_ENABLE_V1_MULTIPROCESSING="0",
               TORCH_PJRT_CACHE_DIR=str(tmp_path / "cache"))  # fmt: skip
    command = [sys.executable, "-c", NGRAM, str(tmp_path / "llama"), json.dumps(SPEC_PROMPTS),
               str(NEW_TOKENS)]  # fmt: skip
    run = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600, check=False)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "tpu warm-up" in run.stdout + run.stderr  # the walk ran
    result = json.loads(run.stdout.strip().splitlines()[-1])
    assert result["tokens"] == expected
    metrics = result["metrics"]
    assert metrics["vllm:spec_decode_num_draft_tokens"] > 0
    assert metrics["vllm:spec_decode_num_accepted_tokens"] > 0  # the drafts were used
    random, greedy = result["sampled"]
    assert len(random) == 8 and all(0 <= t < len(tokenizer) for t in random)
    assert greedy == expected[1][:8]
    kind, message = result["refused"]
    assert kind == "NotImplementedError" and "'ngram_gpu' is not supported" in message, message


DRAFT = """
import json, sys
from vllm import LLM, SamplingParams
llm = LLM(model=sys.argv[1], dtype="float32", max_model_len=64, max_num_seqs=2,
          max_num_batched_tokens=32, disable_log_stats=False,
          speculative_config={"method": "draft_model", "model": sys.argv[1],
                              "num_speculative_tokens": 2})
outs = llm.generate(json.loads(sys.argv[2]), SamplingParams(temperature=0, max_tokens=8),
                    use_tqdm=False)
metrics = {m.name: m.value for m in llm.get_metrics() if m.name.startswith("vllm:spec_decode_num")
           and hasattr(m, "value")}
print(json.dumps({"tokens": [list(o.outputs[0].token_ids) for o in outs], "metrics": metrics}))
"""


def test_draft_model_speculation_equals_cpu_greedy(tmp_path):
    """The target model as its own draft model: Transformers' greedy tokens, and every draft
    accepted (the drafter's KV cache, positions and slots right at each of its steps), with the
    start-up walk on (the draft steps' programs still compile when first met)."""
    model, tokenizer = make_model("llama", tmp_path / "llama")
    prompts = PROMPTS[:3]
    expected = []
    for prompt in prompts:
        ids = tokenizer(prompt, return_tensors="pt").input_ids
        expected.append(model.generate(ids, max_new_tokens=8, do_sample=False)[0, ids.shape[1] :])
    env = dict(os.environ, HF_HUB_OFFLINE="1", VLLM_ENABLE_V1_MULTIPROCESSING="0",
               TORCH_PJRT_CACHE_DIR=str(tmp_path / "cache"))  # fmt: skip
    command = [sys.executable, "-c", DRAFT, str(tmp_path / "llama"), json.dumps(prompts)]
    run = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600, check=False)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "tpu warm-up" in run.stdout + run.stderr  # the walk ran
    result = json.loads(run.stdout.strip().splitlines()[-1])
    assert result["tokens"] == [e.tolist() for e in expected]
    metrics = result["metrics"]
    assert metrics["vllm:spec_decode_num_draft_tokens"] > 0
    assert (
        metrics["vllm:spec_decode_num_accepted_tokens"]
        == metrics["vllm:spec_decode_num_draft_tokens"]
    )


def test_proposer_kernels_in_torch_ops():
    """The draft proposer's Triton kernels as torch ops (spec_decode.py), on rejected drafts,
    a discarded request, rejected input slots and a position past the model's length, against
    values worked out by hand from upstream's kernels."""
    from torch_pjrt.vllm import spec_decode as sd

    def tpu(values, dtype=torch.int32):
        return torch.tensor(values, dtype=dtype, device="tpu")

    # Next token: the last valid sampled one (-1 rejected, past the vocabulary invalid), the
    # backup one for a discarded request or one with none.
    sampled = tpu([[5, 7, -1], [-1, -1, -1], [3, 4, 9], [8, -1, -1]])
    next_ids, counts = tpu([0] * 4), tpu([0] * 4)
    discard = tpu([False, False, False, True], torch.bool)
    sd.prepare_next_token_padded((4,), sampled, discard, tpu([11, 12, 13, 14]), next_ids,
                                 counts, 10, 3, 4, 3, BLOCK_SIZE_TOKENS=4)  # fmt: skip
    assert next_ids.cpu().tolist() == [7, 12, 9, 14]
    assert counts.cpu().tolist() == [2, 0, 3, 0]

    # Padded verification inputs: drafts [2, 0, 2], valid counts [1, 1, 3].
    to_sample, rejected = tpu([0] * 3), tpu([0] * 3)
    sd.prepare_inputs_padded((3,), tpu([2, 2, 4]), tpu([1, 1, 3]), tpu([0, 3, 4, 7]),
                             to_sample, rejected, 3)  # fmt: skip
    assert rejected.cpu().tolist() == [2, 0, 0]
    assert to_sample.cpu().tolist() == [0, 3, 6]

    # First pass of a draft model (no shift, one slot per request): request 0 has 3 tokens of
    # which the last was rejected, request 1 has 2; then each one's bonus token.
    ids, positions = tpu([-5] * 8), tpu([-5] * 8, torch.int64)
    is_rejected, is_masked = tpu([False] * 8, torch.bool), tpu([True] * 8, torch.bool)
    new_indices = tpu([-5] * 2)
    sd.copy_and_expand_inputs(
        (2, 1), target_token_ids_ptr=tpu([10, 11, 12, 20, 21]),
        target_positions_ptr=tpu([5, 6, 7, 0, 1], torch.int64), next_token_ids_ptr=tpu([99, 98]),
        out_input_ids_ptr=ids, out_positions_ptr=positions,
        out_is_rejected_token_mask_ptr=is_rejected, out_is_masked_token_mask_ptr=is_masked,
        out_new_token_indices_ptr=new_indices, out_hidden_state_mapping_ptr=tpu([0] * 5),
        query_start_loc_ptr=tpu([0, 3, 5]), query_end_loc_ptr=tpu([1, 4]), padding_token_id=0,
        parallel_drafting_token_id=-7, total_input_tokens=5, num_padding_slots_per_request=1,
        shift_input_ids=False, BLOCK_SIZE_TOKENS=4)  # fmt: skip
    assert ids.cpu().tolist() == [10, 11, 99, 0, 20, 21, 98, -5]
    assert positions.cpu().tolist() == [5, 6, 7, 0, 0, 1, 2, -5]
    assert is_rejected.cpu().tolist() == [False, False, False, True] + [False] * 4
    assert is_masked.cpu().tolist() == [False] * 7 + [True]
    assert new_indices.cpu().tolist() == [2, 6]

    # A draft step: positions + 1 and their slots (blocks of 16), one past the model's length
    # of 64 (slot -1, position 0, sequence length 1), and a padded row (slot -1).
    seq_lens, clamped, slots = tpu([6, 64]), tpu([0, 0], torch.int64), tpu([9] * 4, torch.int64)
    sd.step_update_slot_mapping_and_metadata(tpu([5, 63], torch.int64),
                                             tpu([[1, 2, 3], [4, 5, 6]]), seq_lens, 16, 64,
                                             clamped, slots, input_batch_size=3)  # fmt: skip
    assert clamped.cpu().tolist() == [6, 0]
    assert slots.cpu().tolist() == [22, -1, -1, 9]
    assert seq_lens.cpu().tolist() == [7, 1]
