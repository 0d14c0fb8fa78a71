"""Serving a tiny Llama (made in code: hidden 64, 2 layers, the examples' tokenizer, seeded weights;
saved to a temp dir) over the OpenAI API, each server in its own process on 127.0.0.1:
- `vllm serve` on "tpu" (the torch_pjrt.vllm platform plugin), float32, 32 sequences at most;
- `transformers serve --continuous-batching` on "tpu", and the same on "cpu".

For N concurrent requests (1, 8, 32; --quick: 1, 8) it sends N streamed greedy /v1/completions
(max_tokens 16, prompts from a fixed list) at once from threads, after one warm-up round per
server and N, and measures output tokens/s (all completion tokens / wall time of the round) and
the mean time to first token (the first SSE chunk with text). Completion tokens are the `usage`
of the stream's last chunk (asked for with stream_options.include_usage) where the server sends
it, else the number of streamed chunks with text.

Cold/warm start of vLLM: seconds from starting `vllm serve` to the first streamed token of one
request, with empty caches (TORCH_PJRT_CACHE_DIR and VLLM_CACHE_ROOT, as on a new machine), then
again with the same (now filled) directories. Each start is split into: until /health answers
(`up_s`), of which the engine's own initialization (`engine_init_s`: model load, KV cache,
profile run, as vLLM logs it), and from /health to the first token (`first_request_s`).

Prints a table, then as the last line JSON: vllm_tok_s, hf_serve_tok_s_tpu, hf_serve_tok_s_cpu
({N: tok/s}, null where a server failed), ttft_ms ({server: {N: ms}}), cold_start_s, warm_start_s,
start_parts ({cold, warm: {up_s, engine_init_s, first_request_s}}), errors ({server: reason}).
The temp dir (model, caches, servers' logs) is deleted unless a server failed.

    python benchmarks/serving.py [--quick]
"""

import argparse
import concurrent.futures
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

from transformers import LlamaConfig, LlamaForCausalLM

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "examples"))
import qwen

TIMEOUT = 600  # seconds for a server to come up, and for each request
NEW_TOKENS = 16
PROMPTS = [
    "The lighthouse stood on a rock above the sea.",
    "Every evening he climbed",
    "The cat",
    "The keeper wrote in his book every night",
    "Ships passed far out on the water",
    "In the morning the fog",
]
BIN = pathlib.Path(sys.executable).parent
VLLM = ["--dtype", "float32", "--max-model-len", "256", "--max-num-batched-tokens", "256",
        "--max-num-seqs", "32"]  # fmt: skip
CONTINUOUS = ["--continuous-batching", "--cb-num-blocks", "64", "--cb-block-size", "16",
              "--cb-max-batch-tokens", "256"]  # fmt: skip


def make_model(path):
    qwen.save_tiny_model(path, LlamaConfig, LlamaForCausalLM, hidden_size=64,
                         intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                         num_key_value_heads=2, max_position_embeddings=256)  # fmt: skip


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


def stream(port, model, prompt):
    """One streamed greedy completion: (seconds to the first text chunk from now, tokens)."""
    body = {"model": model, "prompt": prompt, "max_tokens": NEW_TOKENS, "temperature": 0,
            "stream": True, "stream_options": {"include_usage": True}}  # fmt: skip
    request = urllib.request.Request(f"http://127.0.0.1:{port}/v1/completions",
                                     data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})  # fmt: skip
    t0, first, chunks, usage = time.monotonic(), None, 0, None
    with urllib.request.urlopen(request, timeout=TIMEOUT) as response:
        for line in response:
            line = line.decode().strip()
            if not line.startswith("data:") or line == "data: [DONE]":
                continue
            data = json.loads(line[len("data:") :])
            if any(c.get("text") for c in data.get("choices") or []):
                chunks += 1
                first = first or time.monotonic() - t0
            usage = (data.get("usage") or {}).get("completion_tokens") or usage
    if first is None:
        raise RuntimeError("no text streamed")
    return first, usage or chunks


def engine_init_seconds(log_path):
    """The engine's initialization time as vLLM logs it, or None."""
    found = re.search(r"init engine \(.*?\) took ([0-9.]+) s", pathlib.Path(log_path).read_text())
    return float(found.group(1)) if found else None


def rounds(port, model, counts):
    """{N: (tokens/s, mean TTFT ms)}, after a warm-up round for each N."""
    result = {}
    for n in counts:
        prompts = [PROMPTS[i % len(PROMPTS)] for i in range(n)]
        with concurrent.futures.ThreadPoolExecutor(n) as pool:
            list(pool.map(lambda p: stream(port, model, p), prompts))  # warm-up
            t0 = time.monotonic()
            answers = list(pool.map(lambda p: stream(port, model, p), prompts))
            wall = time.monotonic() - t0
        tokens = sum(a[1] for a in answers)
        result[n] = (round(tokens / wall, 1), round(1000 * sum(a[0] for a in answers) / n, 1))
        print(f"  N={n}: {tokens} tokens in {wall:.2f}s", flush=True)
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="N=1 and 8 only")
    args = parser.parse_args()
    counts = [1, 8] if args.quick else [1, 8, 32]
    work = pathlib.Path(tempfile.mkdtemp(prefix="serving_bench_"))
    model = str(work / "llama")
    make_model(model)
    (work / "hub").mkdir()
    (work / "pjrt_cache").mkdir()
    env = dict(os.environ, HF_HUB_OFFLINE="1", HF_HUB_CACHE=str(work / "hub"),
               TORCH_PJRT_CACHE_DIR=str(work / "pjrt_cache"),
               VLLM_CACHE_ROOT=str(work / "vllm_cache"))  # fmt: skip
    results, errors, starts, parts = {}, {}, {}, {}
    vllm = [str(BIN / "vllm"), "serve", model, *VLLM]
    hf = [str(BIN / "transformers"), "serve", model, *CONTINUOUS, "--device"]
    runs = [("vllm_cold", vllm), ("vllm", vllm), ("hf_serve_tpu", [*hf, "tpu"]),
            ("hf_serve_cpu", [*hf, "cpu"])]  # fmt: skip
    for name, command in runs:
        print(f"{name}: {' '.join(command)}", flush=True)
        try:
            with server(command, work / f"{name}.log", env) as (port, start):
                if name.startswith("vllm"):  # start to first token: the first request's TTFT
                    up = time.monotonic() - start
                    first = stream(port, model, PROMPTS[0])[0]
                    starts[name] = round(up + first, 1)
                    parts["cold" if name == "vllm_cold" else "warm"] = {
                        "up_s": round(up, 1),
                        "engine_init_s": engine_init_seconds(work / f"{name}.log"),
                        "first_request_s": round(first, 2),
                    }
                    print(f"  start to first token: {starts[name]}s", flush=True)
                if name != "vllm_cold":
                    results[name] = rounds(port, model, counts)
        # A failed server is reported; the others still run.
        except (OSError, RuntimeError, ValueError) as e:
            errors[name] = f"{type(e).__name__}: {e}"[-600:]
            print(f"  FAILED: {errors[name]}", flush=True)

    print(f"\n{'server':<14}" + "".join(f"{f'N={n} tok/s':>12}{'TTFT ms':>10}" for n in counts))
    for name in ("vllm", "hf_serve_tpu", "hf_serve_cpu"):
        r = results.get(name)
        cells = [f"{r[n][0]:>12}{r[n][1]:>10}" if r else f"{'failed':>12}{'':>10}" for n in counts]
        print(f"{name:<14}" + "".join(cells))
    print(f"vLLM start to first token: cold {starts.get('vllm_cold')}s, "
          f"warm {starts.get('vllm')}s (same caches); parts: {parts}")  # fmt: skip
    for name, reason in errors.items():
        print(f"{name} failed: {reason}")

    def tok_s(name):
        return {n: v[0] for n, v in results[name].items()} if name in results else None

    summary = {
        "vllm_tok_s": tok_s("vllm"),
        "hf_serve_tok_s_tpu": tok_s("hf_serve_tpu"),
        "hf_serve_tok_s_cpu": tok_s("hf_serve_cpu"),
        "ttft_ms": {k: {n: v[1] for n, v in r.items()} for k, r in results.items()},
        "cold_start_s": starts.get("vllm_cold"),
        "warm_start_s": starts.get("vllm"),
        "start_parts": parts,
        "cache_files": sum(1 for p in (work / "pjrt_cache").rglob("*") if p.is_file()),
        "errors": errors,
    }
    print(json.dumps(summary))
    if not errors:  # the servers' logs are kept when one failed
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
