"""Serving measured with vLLM's own load client: `vllm bench serve` against `vllm serve` on "tpu"
(the torch_pjrt.vllm platform plugin) and against `transformers serve --continuous-batching` on
the CPU, for two Llamas made in code (seeded weights, the examples' tokenizer, saved to a temp
dir): "tiny" (hidden 64, 2 layers, 256-token context) and "realistic" (hidden 768, 12 layers, 12
heads over 4 KV heads, a 32,000-token vocabulary, 2,048-token context: 125M parameters).

Each `vllm serve` runs at vLLM's default limits (no --max-num-seqs, --max-num-batched-tokens or
--max-model-len: 256 sequences, 2,048 batched tokens, the model's context); `transformers serve`
with 2,048 batched tokens and a 32,768-token KV cache. Per model:
- cold start: seconds from starting `vllm serve` with empty caches (TORCH_PJRT_CACHE_DIR,
  VLLM_CACHE_ROOT) to the first streamed token of one request, split into until /health answers
  (`up_s`, which includes the start-up walk; `engine_init_s` as vLLM logs it) and the first
  request; `walk_programs`: the programs the walk compiled;
- warm start: the same with the caches the cold start filled;
- then on the warm server, and on the CPU server: `vllm bench serve` (through
  benchmarks/bench_client.py, which counts output tokens alike for both servers) with the
  random dataset (input 128 and output 64 tokens for the realistic model, 96 and 48 for the
  tiny one, each +-50%; greedy; every requested token generated), all requests at once (rate
  inf) and at 4 requests/s: output tokens/s, TTFT, TPOT and ITL medians and P99s, and the
  programs the server compiled during the run (the files it wrote to TORCH_PJRT_DUMP_DIR, one
  per compile; programs loaded from the disk cache are not compiles; must be 0).
Prints a table, then as the last line JSON: {model: {"start": {...}, "runs": {server: {rate:
metrics}}}, "errors": {...}}. The temp dir (models, caches, logs) is deleted unless a run failed.

    python benchmarks/serving.py [--models tiny,realistic] [--prompts N]
"""

import argparse
import contextlib
import json
import os
import pathlib
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

import torch
from transformers import LlamaConfig, LlamaForCausalLM

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "examples"))
import qwen

TIMEOUT = 1800  # seconds for a server to come up, and for a benchmark run
BIN = pathlib.Path(sys.executable).parent
MODELS = {
    "tiny": {"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
             "num_attention_heads": 4, "num_key_value_heads": 2, "max_position_embeddings": 256},
    "realistic": {"hidden_size": 768, "intermediate_size": 2048, "num_hidden_layers": 12,
                  "num_attention_heads": 12, "num_key_value_heads": 4,
                  "max_position_embeddings": 2048, "vocab_size": 32000},
}  # fmt: skip
# Input and output tokens of the random dataset per model (each +-50%; the tiny model's
# context holds 256 tokens).
LENGTHS = {"tiny": (96, 48), "realistic": (128, 64)}
# transformers serve's continuous batching with vLLM's batch limit and a KV cache of 32,768
# tokens (its defaults served the tiny model at a fifth of the rate on this machine).
HF_LIMITS = ["--cb-block-size", "16", "--cb-num-blocks", "2048", "--cb-max-batch-tokens", "2048"]
RATES = ("inf", "4")
METRICS = ("output_throughput", "median_ttft_ms", "p99_ttft_ms", "median_tpot_ms",
           "p99_tpot_ms", "median_itl_ms", "p99_itl_ms")  # fmt: skip


def make_model(path, config):
    """A Llama with seeded weights and the examples' tokenizer, saved to `path`, and a copy with
    no EOS token at `path`-noeos (for `transformers serve`, which has no ignore_eos: it then
    generates every requested token, as vLLM does when told to ignore EOS); its parameters."""
    tokenizer = qwen.build_tokenizer()
    # A larger vocabulary: added tokens "<t{id}>", so every id decodes to text (the servers
    # stream text, and the client's random prompts are decoded ids).
    config = dict(config)
    vocab = config.pop("vocab_size", len(tokenizer))
    tokenizer.add_tokens([f"<t{i}>" for i in range(len(tokenizer), vocab)])
    config = {"vocab_size": len(tokenizer), **config}
    torch.manual_seed(0)
    model = LlamaForCausalLM(LlamaConfig(eos_token_id=tokenizer.eos_token_id,
                                         pad_token_id=tokenizer.pad_token_id, **config))  # fmt: skip
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    model.config.eos_token_id = model.generation_config.eos_token_id = None
    model.save_pretrained(f"{path}-noeos")
    tokenizer.save_pretrained(f"{path}-noeos")
    return sum(p.numel() for p in model.parameters())


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def server(command, log_path, env):
    """Runs `command --host 127.0.0.1 --port P` until /health answers; yields (P, start time)."""
    port = free_port()
    with open(log_path, "w") as log:
        start = time.monotonic()
        proc = subprocess.Popen([*command, "--host", "127.0.0.1", "--port", str(port)], env=env,
                                stdout=log, stderr=subprocess.STDOUT)  # fmt: skip
        try:
            while True:
                if proc.poll() is not None:
                    tail = pathlib.Path(log_path).read_text()[-1500:]
                    raise RuntimeError(f"server exited {proc.returncode}: {tail}")
                try:
                    urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5)
                    break
                except OSError:
                    if time.monotonic() - start > TIMEOUT:
                        raise RuntimeError("server did not come up") from None
                    time.sleep(0.5)
            yield port, start
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def first_token_seconds(port, model):
    """Seconds from now to the first token of one streamed completion (its first chunk with a
    choice: the text may be empty, as for ids past the tokenizer's vocabulary)."""
    body = {"model": model, "prompt": "The lighthouse", "max_tokens": 4, "temperature": 0,
            "stream": True}  # fmt: skip
    request = urllib.request.Request(f"http://127.0.0.1:{port}/v1/completions",
                                     data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})  # fmt: skip
    t0 = time.monotonic()
    with urllib.request.urlopen(request, timeout=TIMEOUT) as response:
        for line in response:
            line = line.decode().strip()
            data = line.startswith("data:") and line != "data: [DONE]"
            if data and json.loads(line[5:]).get("choices"):
                return time.monotonic() - t0
    raise RuntimeError("no token streamed")


def engine_init_seconds(log_path):
    found = re.search(r"init engine \(.*?\) took ([0-9.]+) s", pathlib.Path(log_path).read_text())
    return float(found.group(1)) if found else None


def programs(dump):
    return len(os.listdir(dump)) if dump else 0


def bench(port, model, server_name, rate, lengths, prompts, out_dir, env, dump):
    """One run of vLLM's client (benchmarks/bench_client.py): its metrics, and the programs the
    server compiled meanwhile."""
    before = programs(dump)
    name = f"{pathlib.Path(model).name}-{server_name}-{rate}.json"
    mode = ["--transformers"] if server_name.startswith("hf") else []
    command = [sys.executable, str(ROOT / "benchmarks" / "bench_client.py"), *mode, "bench",
               "serve", "--backend", "openai", "--endpoint", "/v1/completions", "--model", model,
               "--host", "127.0.0.1", "--port", str(port), "--dataset-name", "random",
               "--random-input-len", str(lengths[0]), "--random-output-len", str(lengths[1]),
               "--random-range-ratio", "0.5", "--temperature", "0", "--num-prompts",
               str(prompts), "--request-rate", rate, "--seed", "0",
               "--percentile-metrics", "ttft,tpot,itl", "--metric-percentiles", "50,99",
               "--save-result", "--result-dir", str(out_dir), "--result-filename", name,
               "--disable-tqdm"]  # fmt: skip
    run = subprocess.run(command, env=env, capture_output=True, text=True, timeout=TIMEOUT,
                         check=False)  # fmt: skip
    if run.returncode != 0:
        raise RuntimeError(f"vllm bench serve failed: {(run.stdout + run.stderr)[-1500:]}")
    result = json.loads((out_dir / name).read_text())
    metrics = {k: round(result[k], 2) for k in METRICS}
    metrics["completed"] = result["completed"]
    metrics["compiles"] = programs(dump) - before
    return metrics


def measure(name, config, prompts, work, errors):
    path = work / name
    params = make_model(path, config)
    print(f"== {name}: {params / 1e6:.1f}M parameters", flush=True)
    caches = work / f"{name}-caches"
    env = dict(os.environ, HF_HUB_OFFLINE="1", TORCH_PJRT_CACHE_DIR=str(caches / "pjrt"),
               VLLM_CACHE_ROOT=str(caches / "vllm"))  # fmt: skip
    out = {"params_m": round(params / 1e6, 1), "start": {}, "runs": {}}
    vllm = [str(BIN / "vllm"), "serve", str(path), "--dtype", "float32"]
    hf = [str(BIN / "transformers"), "serve", f"{path}-noeos", "--continuous-batching",
          *HF_LIMITS, "--device", "cpu"]  # fmt: skip
    runs = [("vllm_cold", vllm, False), ("vllm", vllm, True), ("hf_serve_cpu", hf, True)]
    for run_name, command, measured in runs:
        print(f"{run_name}: {' '.join(command)}", flush=True)
        dump = work / f"{name}-{run_name}-programs" if run_name.startswith("vllm") else None
        run_env = dict(env, TORCH_PJRT_DUMP_DIR=str(dump)) if dump else env
        if dump:
            dump.mkdir()
        log = work / f"{name}-{run_name}.log"
        try:
            with server(command, log, run_env) as (port, start):
                if dump:  # start to first token
                    up = time.monotonic() - start
                    walk = programs(dump)
                    first = first_token_seconds(port, str(path))
                    out["start"]["cold" if run_name == "vllm_cold" else "warm"] = {
                        "start_to_first_token_s": round(up + first, 1), "up_s": round(up, 1),
                        "engine_init_s": engine_init_seconds(log),
                        "first_request_s": round(first, 2), "walk_programs": walk,
                    }  # fmt: skip
                    print(f"  start: {out['start']}", flush=True)
                if measured:
                    results = out["runs"][run_name] = {}
                    model = command[2]
                    for rate in RATES:
                        results[rate] = bench(port, model, run_name, rate, LENGTHS[name],
                                              prompts, work, run_env, dump)  # fmt: skip
                        print(f"  rate {rate}: {results[rate]}", flush=True)
        except (OSError, RuntimeError, ValueError, KeyError) as e:
            errors[f"{name}/{run_name}"] = f"{type(e).__name__}: {e}"[-800:]
            print(f"  FAILED: {errors[f'{name}/{run_name}']}", flush=True)
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default="tiny,realistic")
    parser.add_argument("--prompts", type=int, default=64, help="requests per benchmark run")
    args = parser.parse_args()
    work = pathlib.Path(tempfile.mkdtemp(prefix="serving_bench_"))
    errors, summary = {}, {}
    for name in args.models.split(","):
        summary[name] = measure(name, MODELS[name], args.prompts, work, errors)

    header = f"{'model':<10}{'server':<14}{'rate':>5}" + "".join(f"{m:>18}" for m in METRICS)
    print("\n" + header + f"{'compiles':>10}")
    for name, result in summary.items():
        for server_name, runs in result["runs"].items():
            for rate, m in runs.items():
                cells = "".join(f"{m[k]:>18}" for k in METRICS)
                print(f"{name:<10}{server_name:<14}{rate:>5}{cells}{m['compiles']:>10}")
        print(f"{name}: start {result['start']}")
    for key, reason in errors.items():
        print(f"{key} failed: {reason}")
    print(json.dumps({**summary, "errors": errors}))
    if not errors:  # the logs are kept when a run failed
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
