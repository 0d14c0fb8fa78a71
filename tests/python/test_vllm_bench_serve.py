"""`vllm serve` on "tpu" under vLLM's own load client: three `vllm bench serve` runs at once
(random prompts of mixed lengths; greedy with logprobs, random sampling with temperature, top-k,
top-p and min-p, and greedy with the three penalties), so batches mix every kind, and the server
compiles no program after its start-up walk (counted as the programs it writes to
TORCH_PJRT_DUMP_DIR, one file per compile)."""

import concurrent.futures
import os
import re
import subprocess
import sys

import pytest

pytest.importorskip("vllm")
from test_serve import server
from test_vllm import SERVE_FLAGS, make_model

VLLM = os.path.join(os.path.dirname(sys.executable), "vllm")
CLIENTS = [
    ["--temperature", "0", "--logprobs", "3"],
    ["--temperature", "0.8", "--top-k", "20", "--top-p", "0.9", "--min-p", "0.05"],
    ["--temperature", "0", "--presence-penalty", "0.5", "--frequency-penalty", "0.5",
     "--repetition-penalty", "1.1"],
]  # fmt: skip


def bench(port, path, seed, sampling):
    command = [VLLM, "bench", "serve", "--backend", "vllm", "--model", str(path),
               "--host", "127.0.0.1", "--port", str(port), "--dataset-name", "random",
               "--random-input-len", "96", "--random-output-len", "24",
               "--random-range-ratio", "0.5", "--num-prompts", "24", "--request-rate", "inf",
               "--seed", str(seed), "--disable-tqdm", *sampling]  # fmt: skip
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    run = subprocess.run(command, env=env, capture_output=True, text=True, timeout=900, check=False)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    return run.stdout


def test_bench_serve_with_mixed_sampling_compiles_nothing(tmp_path, monkeypatch):
    path = tmp_path / "llama"
    make_model("llama", path)
    dump = tmp_path / "programs"
    dump.mkdir()
    monkeypatch.setenv("TORCH_PJRT_DUMP_DIR", str(dump))
    monkeypatch.setenv("TORCH_PJRT_CACHE_DIR", str(tmp_path / "cache"))
    with server([VLLM, "serve", str(path), *SERVE_FLAGS], tmp_path) as port:
        walked = len(os.listdir(dump))
        assert walked > 0
        with concurrent.futures.ThreadPoolExecutor(len(CLIENTS)) as pool:
            outputs = list(pool.map(lambda a: bench(port, path, *a), enumerate(CLIENTS)))
        after = sorted(os.listdir(dump))
    for out in outputs:
        assert re.search(r"Successful requests:\s+24\b", out), out[-2000:]
        assert re.search(r"Failed requests:\s+0\b", out) or "Failed requests" not in out
    new = [(dump / f).read_text().splitlines()[0] for f in after[walked:]]
    assert len(after) == walked, new  # the first line of each new program lists its ops
