"""vLLM on "tpu" across devices, with the start-up walk on:
- pipeline parallel 2 through vLLM's Ray executor, on a local Ray cluster the engine's process
  starts (two worker processes on tpu:0 and tpu:1, each a stage of the tiny Llama's layers,
  activations passed by `tpu_dist`): Transformers' greedy tokens on the CPU, and neither worker
  compiles a program after the walk (their counters read through vLLM's collective_rpc);
- prefill/decode disaggregation through vLLM's ExampleConnector;
- data parallel 2 through `vllm serve` (two engines, tpu:0 and tpu:1, each walking): every
  answer is the CPU's greedy text and both engines finish requests."""

import concurrent.futures
import json
import os
import re
import sys
import urllib.request

import pytest

pytest.importorskip("vllm")
from test_serve import cpu_greedy, server
from test_vllm import PROMPTS, completion, generate, generate_on_ray, greedy_ids, make_model, text


def test_pipeline_parallel_2_on_ray_equals_cpu_greedy(tmp_path):
    pytest.importorskip("ray")  # requirements-vllm.txt
    model, tokenizer = make_model("llama", tmp_path / "llama")
    expected = [greedy_ids(model, tokenizer, p) for p in PROMPTS]
    result = generate_on_ray(tmp_path / "llama", tmp_path, "--rounds", "1", "--no-sampling",
                             engine={"pipeline_parallel_size": 2})  # fmt: skip
    assert result["rounds"][0]["tokens"] == expected
    assert result["rounds"][0]["compiles"] == 0
    assert result["fewer"]["compiles"] == 0


def test_prefill_decode_disaggregation_equals_cpu_greedy(tmp_path):
    """vLLM's ExampleConnector: a producer engine stores each prompt's whole blocks of KV in a
    folder, a consumer engine loads them instead of computing them (its requests report them as
    cached tokens) and gives the CPU's greedy tokens."""
    model, tokenizer = make_model("llama", tmp_path / "llama")
    prompts = [" ".join(PROMPTS + PROMPTS[:1]), *PROMPTS]  # the first one spans 4 blocks
    expected = [greedy_ids(model, tokenizer, p) for p in prompts]
    results = {}
    for role in ("kv_producer", "kv_consumer"):
        connector = {"kv_connector": "ExampleConnector", "kv_role": role,
                     "kv_connector_extra_config": {"shared_storage_path": str(tmp_path / "kv")}}  # fmt: skip
        engine = {"kv_transfer_config": connector, "enable_prefix_caching": False}
        results[role] = generate(tmp_path / "llama", tmp_path, "--rounds", "1", "--no-sampling",
                                 "--engine", json.dumps(engine), prompts=prompts)  # fmt: skip
    assert results["kv_producer"]["rounds"][0]["cached_tokens"] == [0] * len(prompts)
    consumer = results["kv_consumer"]["rounds"][0]
    # The connector stores the whole blocks of a prompt without its last token and loads those
    # without its last two (it expects the prompt and one sampled token); none of these prompts
    # is at a length where the two differ.
    loaded = [(len(tokenizer(p).input_ids) - 2) // 16 * 16 for p in prompts]
    assert consumer["cached_tokens"] == loaded and loaded[0] == 64
    assert consumer["tokens"] == expected


def test_data_parallel_2_serve_equals_cpu_greedy(tmp_path):
    path = tmp_path / "llama"
    model, tokenizer = make_model("llama", path)
    expected = [text(cpu_greedy(model, tokenizer, tokenizer(p)["input_ids"])) for p in PROMPTS]
    # Small limits keep the two walks (run at once on this machine's cores) short.
    command = [os.path.join(os.path.dirname(sys.executable), "vllm"), "serve", str(path),
               "--dtype", "float32", "--max-model-len", "128", "--max-num-batched-tokens", "64",
               "--max-num-seqs", "4", "--data-parallel-size", "2"]  # fmt: skip
    with server(command, tmp_path) as port:
        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            answers = list(pool.map(lambda i: completion(port, path, PROMPTS[i % 4]), range(8)))
        assert answers == [expected[i % 4] for i in range(8)]
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics") as response:
            metrics = response.read().decode()
    finished = {}
    for engine, count in re.findall(r'vllm:request_success_total\{[^}]*engine="(\d+)"[^}]*\} (\S+)',
                                    metrics):  # fmt: skip
        finished[engine] = finished.get(engine, 0) + float(count)
    assert sorted(finished) == ["0", "1"] and all(finished.values()), finished
