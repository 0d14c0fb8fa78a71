"""vLLM 0.29 on "tpu" through the torch_pjrt.vllm platform plugin, with tiny models made in code
(seeded weights, the examples' tokenizer, no downloads):
- offline `LLM.generate` (tests/python/vllm_generate.py, in a process of its own): greedy tokens
  equal Transformers' greedy `generate` on the CPU for a Llama and a Qwen3, for prompts of
  different lengths in one batch, again with prefix caching hits, with no CPU fallback and no
  compile after the start-up walk (also for a round with one request fewer, one of which stops
  early), under vLLM's default asynchronous scheduling, and a restart that loads the walk's
  programs from the disk cache; seeded sampling repeats itself per seed; a
  Mistral with a sliding window and a Gemma 2 with sliding windows and soft-capped logits; the same
  greedy tokens with tensor parallel 2 (two worker processes on tpu:0 and tpu:1, `tpu_dist`);
- vLLM's own errors for what users get wrong: an unsupported architecture, a KV cache too small
  for one sequence of the model's length;
- `vllm serve <dir>` on 127.0.0.1 (CPU fallbacks made errors in the server): completions, a
  streamed completion, a chat completion and 8 concurrent requests give the CPU's greedy text; a
  bad request gets vLLM's error and the server keeps serving.
"""

import concurrent.futures
import json
import os
import shutil
import subprocess
import sys
import urllib.error

import pytest
import torch

pytest.importorskip("vllm")
from test_serve import chat, chat_reference, cpu_greedy, post, server, streamed_completion
from transformers import (
    Gemma2Config,
    Gemma2ForCausalLM,
    Gemma3ForCausalLM,
    Gemma3TextConfig,
    GptOssConfig,
    GptOssForCausalLM,
    LlamaConfig,
    LlamaForCausalLM,
    MistralConfig,
    MistralForCausalLM,
    Qwen3Config,
    Qwen3ForCausalLM,
)

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples"))
import qwen

HERE = os.path.dirname(os.path.abspath(__file__))
NEW_TOKENS = 6
PROMPTS = [
    "The lighthouse stood on a rock above the sea.",
    "Every evening he climbed",
    "The cat",
    "The keeper wrote in his book every night",
]
ARCHS = {
    "llama": (LlamaConfig, LlamaForCausalLM, {}),
    "qwen3": (Qwen3Config, Qwen3ForCausalLM, {"head_dim": 16}),
}
TINY = {  # grouped-query attention: 4 heads, 2 KV heads
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "max_position_embeddings": 256,
}
SMALL_ENGINE = {"max_model_len": 128, "max_num_batched_tokens": 64, "max_num_seqs": 4}
SERVE_FLAGS = ["--dtype", "float32", "--max-model-len", "256", "--max-num-batched-tokens", "256",
               "--max-num-seqs", "8"]  # fmt: skip


def make_model(arch, path):
    config_class, model_class, extra = ARCHS[arch]
    return qwen.save_tiny_model(path, config_class, model_class, **TINY, **extra)


@pytest.fixture(scope="module", params=sorted(ARCHS))
def model_dir(request, tmp_path_factory):
    path = tmp_path_factory.mktemp(request.param)
    model, tokenizer = make_model(request.param, path)
    return path, model, tokenizer


def greedy_ids(model, tokenizer, prompt):
    ids = tokenizer(prompt, return_tensors="pt").input_ids
    out = model.generate(ids, max_new_tokens=NEW_TOKENS, do_sample=False)
    return out[0, ids.shape[1] :].tolist()


def test_llm_generate_equals_cpu_greedy(model_dir, tmp_path):
    path, model, tokenizer = model_dir
    expected = [greedy_ids(model, tokenizer, p) for p in PROMPTS]
    result = generate(path, tmp_path)
    assert result["startup"]["compiles"] > 0  # the start-up walk, with an empty compile cache
    rounds = result["rounds"]
    for r in rounds:  # the first computes every prompt; the later ones hit the prefix cache
        assert r["tokens"] == expected
        assert r["cpu_fallbacks"] == {}
        assert r["compiles"] == 0  # the start-up walk compiled every step shape
    assert result["async_scheduling"]  # vLLM's default: each step's inputs prepared on the
    # device from the last step's tokens (model_runner.py)
    fewer = result["fewer"]
    kept = [t for p, t in zip(PROMPTS, expected) if p != min(PROMPTS, key=len)]
    assert fewer["tokens"] == [kept[0][:2], *kept[1:]]  # the first stops after 2 tokens
    assert fewer["compiles"] == 0
    same_seed, same_again, other_seed = result["sampled"]
    assert same_seed == same_again
    assert same_seed != other_seed
    assert all(0 <= t < len(tokenizer) for t in same_seed + other_seed)
    if path.name.startswith("llama"):
        # A restart with the same compile cache compiles nothing: it finds the walk on record
        # and its programs in the cache, runs the first step only, and loads the others from
        # disk when a step first needs them.
        again = generate(path, tmp_path, "--rounds", "1", "--no-sampling")
        assert again["startup"]["compiles"] == 0
        assert 0 < again["startup"]["disk_hits"] < result["startup"]["compiles"]
        assert again["rounds"][0]["tokens"] == expected
        assert again["rounds"][0]["compiles"] == 0


def generate(path, tmp_path, *args, prompts=PROMPTS, **env_vars):
    """Runs tests/python/vllm_generate.py on `path` and `prompts` with the compile cache in
    tmp_path (empty on the first call) and `env_vars` in its environment; its JSON result."""
    return generate_with_logs(path, tmp_path, *args, prompts=prompts, **env_vars)[0]


def generate_with_logs(path, tmp_path, *args, prompts=PROMPTS, **env_vars):
    """generate(), and the process's stdout and stderr together."""
    env = dict(os.environ, HF_HUB_OFFLINE="1", TORCH_PJRT_CACHE_DIR=str(tmp_path / "cache"))
    env.update(env_vars)
    command = [sys.executable, os.path.join(HERE, "vllm_generate.py"), str(path),
               json.dumps(prompts), "--new-tokens", str(NEW_TOKENS), *args]  # fmt: skip
    run = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600, check=False)
    assert run.returncode == 0, run.stderr[-3000:]
    # The last line of the result; worker processes (tensor parallel) print log lines after it.
    lines = [line for line in run.stdout.splitlines() if line.startswith('{"startup"')]
    assert lines, run.stdout[-3000:] + run.stderr[-3000:]
    return json.loads(lines[-1]), run.stdout + run.stderr


def generate_on_ray(path, tmp_path, *args, engine):
    """generate() through vLLM's Ray executor (`engine`: more LLM arguments), on a local Ray
    cluster that vllm_generate.py starts; checks the engine ended before Ray did: with Ray's
    auto-connect off, a call into Ray after its shutdown logs instead of starting a new cluster."""
    engine = {**engine, "distributed_executor_backend": "ray"}
    result, logs = generate_with_logs(path, tmp_path, *args, "--engine", json.dumps(engine),
                                      RAY_USAGE_STATS_ENABLED="0", RAY_ENABLE_AUTO_CONNECT="0")  # fmt: skip
    assert logs.count("Started a local Ray instance") == 1, logs[-3000:]
    assert "Ray has not been started" not in logs, logs[-3000:]
    return result


WINDOWED = {  # a sliding window shorter than the prompts; Gemma 2 adds logit soft-capping
    "mistral": (MistralConfig, MistralForCausalLM, {"sliding_window": 6}),
    "gemma2": (Gemma2Config, Gemma2ForCausalLM, {
        "head_dim": 16, "sliding_window": 6, "attn_logit_softcapping": 2.0,
        "final_logit_softcapping": 5.0, "query_pre_attn_scalar": 16}),
    # Gemma 3: local layers (a window, their own RoPE base) among global ones, q/k norms.
    "gemma3": (Gemma3TextConfig, Gemma3ForCausalLM, {
        "head_dim": 16, "sliding_window": 6, "query_pre_attn_scalar": 16,
        "layer_types": ["sliding_attention", "full_attention"]}),
    # gpt-oss: attention sinks, a window on every other layer, and MoE experts with biases and
    # the clamped SwiGLU on interleaved gate/up columns.
    "gpt_oss": (GptOssConfig, GptOssForCausalLM, {
        "head_dim": 16, "sliding_window": 6, "num_local_experts": 4, "num_experts_per_tok": 2,
        "rope_parameters": {"rope_type": "yarn", "rope_theta": 150000.0, "factor": 32.0,
                            "original_max_position_embeddings": 8, "beta_fast": 32.0,
                            "beta_slow": 1.0, "truncate": False}}),
}  # fmt: skip


@pytest.mark.parametrize("arch", sorted(WINDOWED))
def test_windowed_and_soft_capped_attention_equals_cpu_greedy(arch, tmp_path):
    config_class, model_class, extra = WINDOWED[arch]
    model, tokenizer = qwen.save_tiny_model(tmp_path / arch, config_class, model_class, **TINY,
                                            **extra)  # fmt: skip
    model.config._attn_implementation = "eager"  # Transformers' soft-capping path
    expected = [greedy_ids(model, tokenizer, p) for p in PROMPTS]
    # Small limits keep the start-up walk short.
    result = generate(tmp_path / arch, tmp_path, "--rounds", "1", "--no-sampling", "--engine",
                      json.dumps(SMALL_ENGINE))  # fmt: skip
    assert result["rounds"][0]["tokens"] == expected
    assert result["rounds"][0]["compiles"] == 0


# Run in a process of its own: each case is one LLM(...) that fails while the engine starts.
ERRORS = """
import json, sys
from vllm import LLM
errors = {}
for case, path, extra in [("architecture", sys.argv[1], {}),
                          ("kv_cache", sys.argv[2], {"kv_cache_memory_bytes": 32768})]:
    try:
        LLM(model=path, dtype="float32", max_model_len=256, **extra)
        errors[case] = None
    except Exception as e:
        errors[case] = [type(e).__name__, str(e)]
print(json.dumps(errors))
"""


def test_vllm_errors_for_user_mistakes(tmp_path):
    make_model("llama", tmp_path / "llama")
    unknown = tmp_path / "unknown"
    shutil.copytree(tmp_path / "llama", unknown)
    config = json.loads((unknown / "config.json").read_text())
    config["architectures"] = ["NoSuchModelForCausalLM"]
    (unknown / "config.json").write_text(json.dumps(config))
    env = dict(os.environ, HF_HUB_OFFLINE="1", VLLM_ENABLE_V1_MULTIPROCESSING="0",
               TORCH_PJRT_CACHE_DIR=str(tmp_path / "cache"))  # fmt: skip
    run = subprocess.run([sys.executable, "-c", ERRORS, str(unknown), str(tmp_path / "llama")],
                         env=env, capture_output=True, text=True, timeout=600, check=False)  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    errors = json.loads(run.stdout.strip().splitlines()[-1])
    kind, message = errors["architecture"]
    assert "NoSuchModelForCausalLM" in message and "not supported" in message, message
    kind, message = errors["kv_cache"]
    assert kind == "ValueError", message
    assert "larger than the available KV cache memory" in message, message


def text(s):
    """Text without a trailing incomplete UTF-8 character: Transformers decodes its bytes to
    U+FFFD, vLLM's incremental detokenizer holds them back until the character completes."""
    return s.rstrip("\ufffd")


def completion(port, path, prompt, **extra):
    body = {"model": str(path), "prompt": prompt, "max_tokens": NEW_TOKENS, "temperature": 0}
    with post(port, "/v1/completions", {**body, **extra}) as response:
        return text(json.load(response)["choices"][0]["text"])


def test_vllm_serve_equals_cpu_greedy(tmp_path):
    path = tmp_path / "llama"
    model, tokenizer = make_model("llama", path)
    expected = [text(cpu_greedy(model, tokenizer, tokenizer(p)["input_ids"])) for p in PROMPTS]
    command = [os.path.join(os.path.dirname(sys.executable), "vllm"), "serve", str(path),
               *SERVE_FLAGS]  # fmt: skip
    with server(command, tmp_path) as port:
        assert completion(port, path, PROMPTS[0]) == expected[0]
        assert text(streamed_completion(port, path, PROMPTS[1])) == expected[1]
        reference = text(chat_reference(model, tokenizer, PROMPTS[2]))
        assert text(chat(port, path, PROMPTS[2])) == reference
        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            answers = list(pool.map(lambda i: completion(port, path, PROMPTS[i % 4]), range(8)))
        assert answers == [expected[i % 4] for i in range(8)]
        # A request longer than the model allows: vLLM's own 400, and the server goes on.
        with pytest.raises(urllib.error.HTTPError) as error:
            completion(port, path, PROMPTS[0], max_tokens=10_000)
        assert error.value.code == 400
        assert "max_tokens" in error.value.read().decode()
        assert completion(port, path, PROMPTS[3]) == expected[3]


def fp8_kv_attention(module, query, key, value, *args, **kwargs):
    """Transformers' eager attention over keys and values rounded to float8_e4m3fn, as vLLM's
    fp8 KV cache stores them (scale 1)."""
    from transformers.models.llama.modeling_llama import eager_attention_forward

    key, value = (t.to(torch.float8_e4m3fn).to(t.dtype) for t in (key, value))
    return eager_attention_forward(module, query, key, value, *args, **kwargs)


def test_fp8_kv_cache_equals_cpu_with_fp8_keys_and_values(tmp_path):
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface, eager_mask

    model, tokenizer = make_model("llama", tmp_path / "llama")
    unrounded = [greedy_ids(model, tokenizer, p) for p in PROMPTS]
    AttentionInterface.register("fp8_kv", fp8_kv_attention)
    AttentionMaskInterface.register("fp8_kv", eager_mask)  # the causal mask eager attention takes
    model.config._attn_implementation = "fp8_kv"
    expected = [greedy_ids(model, tokenizer, p) for p in PROMPTS]
    assert expected != unrounded  # the check below can tell an fp8 cache from a float32 one
    engine = {**SMALL_ENGINE, "kv_cache_dtype": "fp8"}
    result = generate(tmp_path / "llama", tmp_path, "--rounds", "1", "--no-sampling", "--engine",
                      json.dumps(engine))  # fmt: skip
    assert result["rounds"][0]["tokens"] == expected
    assert result["rounds"][0]["compiles"] == 0
