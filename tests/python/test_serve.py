"""`transformers serve <model dir> --device tpu` (plain and with --continuous-batching) on
127.0.0.1, with a tiny Llama and a tokenizer made in code: chat completions, a streamed
completion and concurrent requests (3, each bounded by a timeout) must return the text of CPU
greedy decoding, with CPU fallbacks made errors in the server. The servers run as subprocesses
of the `transformers` command, as a user starts them; nothing leaves the loopback interface."""

import concurrent.futures
import contextlib
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request

import pytest
import torch

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")
from transformers import LlamaConfig, LlamaForCausalLM

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples"))
import qwen

TIMEOUT = 300  # seconds for the server to come up, and for each request
NEW_TOKENS = 6
CHATS = [
    "The lighthouse stood on a rock.",
    "Every evening he climbed the steps.",
    "The cat slept beside the stove.",
]


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    """(dir, CPU model, tokenizer): a tiny Llama with seeded weights and the examples' tokenizer."""
    path = tmp_path_factory.mktemp("served")
    model, tokenizer = qwen.save_tiny_model(
        path, LlamaConfig, LlamaForCausalLM, hidden_size=32, intermediate_size=64,
        num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=1,
        max_position_embeddings=256,
    )  # fmt: skip
    return path, model, tokenizer


def cpu_greedy(model, tokenizer, ids):
    out = model.generate(torch.tensor([ids]), max_new_tokens=NEW_TOKENS, do_sample=False)
    return tokenizer.decode(out[0, len(ids) :], skip_special_tokens=True)


def chat_reference(model, tokenizer, content):
    ids = tokenizer.apply_chat_template(
        [{"role": "user", "content": content}], add_generation_prompt=True, return_dict=False
    )
    return cpu_greedy(model, tokenizer, ids)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def post(port, route, body):
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}{route}",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    return urllib.request.urlopen(request, timeout=TIMEOUT)


@contextlib.contextmanager
def serve(path, tmp_path, *flags):
    command = [os.path.join(os.path.dirname(sys.executable), "transformers"), "serve", str(path),
               "--device", "tpu", *flags]  # fmt: skip
    with server(command, tmp_path) as port:
        yield port


@contextlib.contextmanager
def server(command, tmp_path):
    """Runs `command --host 127.0.0.1 --port P` until /health answers; yields P."""
    port = free_port()
    cache = tmp_path / "hub"
    cache.mkdir(exist_ok=True)
    # A CPU fallback inside the server raises, so the requests fail: serving has none.
    env = dict(os.environ, HF_HUB_OFFLINE="1", HF_HUB_CACHE=str(cache), TORCH_PJRT_FALLBACK="error")
    command = [*command, "--host", "127.0.0.1", "--port", str(port)]
    log = open(tmp_path / "server.log", "w")
    proc = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + TIMEOUT
        while True:
            assert proc.poll() is None, (tmp_path / "server.log").read_text()[-3000:]
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5)
                break
            except OSError:
                assert time.monotonic() < deadline, "server did not come up"
                time.sleep(0.5)
        yield port
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def chat(port, path, content):
    body = {
        "model": str(path),
        "messages": [{"role": "user", "content": content}],
        "max_tokens": NEW_TOKENS,
        "temperature": 0,
    }
    with post(port, "/v1/chat/completions", body) as response:
        return json.load(response)["choices"][0]["message"]["content"]


def streamed_completion(port, path, prompt):
    body = {
        "model": str(path),
        "prompt": prompt,
        "max_tokens": NEW_TOKENS,
        "temperature": 0,
        "stream": True,
    }
    text = []
    with post(port, "/v1/completions", body) as response:
        for line in response:
            line = line.decode().strip()
            if not line.startswith("data:"):
                continue
            data = line[len("data:") :].strip()
            if data == "[DONE]":
                break
            text += [choice.get("text") or "" for choice in json.loads(data)["choices"]]
    return "".join(text)


# A small paged cache: sized from memory, it would take most of the host's (the CPU plugin's).
CONTINUOUS = ["--continuous-batching", "--cb-num-blocks", "8", "--cb-block-size", "16",
              "--cb-max-batch-tokens", "64"]  # fmt: skip


@pytest.mark.parametrize("flags", [[], CONTINUOUS], ids=["generate", "continuous"])
def test_serve_on_tpu_equals_cpu_greedy(model_dir, tmp_path, flags):
    path, model, tokenizer = model_dir
    expected = [chat_reference(model, tokenizer, c) for c in CHATS]
    prompt = "The keeper"
    expected_completion = cpu_greedy(model, tokenizer, tokenizer(prompt)["input_ids"])
    with serve(path, tmp_path, *flags) as port:
        assert chat(port, path, CHATS[0]) == expected[0]
        assert streamed_completion(port, path, prompt) == expected_completion
        with concurrent.futures.ThreadPoolExecutor(len(CHATS)) as pool:
            answers = list(pool.map(lambda c: chat(port, path, c), CHATS))
        assert answers == expected
