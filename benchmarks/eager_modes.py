"""One GPT training step (2 layers, d_model 128, 4 heads, sequence 64, batch 8, AdamW) in the three
eager modes on "tpu" (Strict, Fused, Debug), in native CPU eager and, where torch has a GPU, in
native CUDA eager, measured side by side: after warm-up, rounds of steps run each mode in turn and
the median round is reported per mode. Each step ends with `loss.item()`, as a training loop that
logs its loss does. CPU and CUDA eager run in child processes that never import torch_pjrt: on 2
cores the plugin's idle worker threads slow PyTorch's OpenMP loops several-fold, which would not be
a fair CPU figure, and in a process with a PrivateUse1 backend CUDA's backward fails (torch's
accelerator is then PrivateUse1, and autograd finds no stream for CUDA nodes).

Last line: JSON with strict_s, fused_s, debug_s, cpu_eager_s, cuda_eager_s (seconds per step; None
for a mode not run), fused_speedup_vs_strict, steady_state_compiles_fused (compiles per step
after warm-up), fused_programs_per_step and fused_host_round_trips_per_step (executions and
device-to-host reads made by ops per Fused step, the user's loss.item() aside), and the Strict and
Fused figures of the tests' tiny GPT (d_model 32) and of batch-1 greedy decoding with the small
GPT (decode_*), the tiny GPT (tiny_decode_*) and a small Transformers Llama with a static KV cache
(llama_decode_*), where launches rather than compute dominate a step."""

import argparse
import contextlib
import copy
import json
import os
import statistics
import time

import native_child
import torch
from gpt import SMALL, TINY, make, train_step

TPU_MODES = ("strict", "fused", "debug")
NATIVE = ("cpu", "cuda")  # native PyTorch eager on that device, in a child process


class Runner:
    """A model, its optimizer and data on one device, stepping in one mode."""

    def __init__(self, mode, model, x, y):
        self.mode = mode
        if mode not in NATIVE:
            import torch_pjrt  # noqa: F401  (device "tpu"; never in a native child)
        device = mode if mode in NATIVE else "tpu"
        self.model = copy.deepcopy(model).to(device)
        self.x, self.y = x.to(device), y.to(device)
        self.opt = torch.optim.AdamW(self.model.parameters(), lr=1e-3, weight_decay=0.1)
        self.losses = []
        self.per_step = {}  # counters per step in the last steps() call

    def steps(self, n):
        """Runs n steps; returns (seconds per step, compiles per step)."""
        keys = ("compiles", "executions", "host_round_trips")
        if self.mode in NATIVE:
            ctx, counters = contextlib.nullcontext(), lambda: dict.fromkeys(keys, 0)
        else:
            import torch_pjrt

            ctx, counters = torch_pjrt.eager_mode(self.mode), torch_pjrt.metrics.counters
        with ctx:
            before = counters()
            start = time.perf_counter()
            for _ in range(n):
                self.losses.append(train_step(self.model, self.opt, self.x, self.y).item())
            seconds = (time.perf_counter() - start) / n
            after = counters()
        self.per_step = {k: (after[k] - before[k]) / n for k in keys}
        return seconds, self.per_step["compiles"]


def measure(modes, args, config=SMALL):
    """{mode: (median seconds per step, warm-up seconds, losses, compiles per step by round,
    counters per step of the last round)}."""
    model, x, y = make(config)
    runners = {mode: Runner(mode, model, x, y) for mode in modes}
    warmup_s = {}
    for mode, r in runners.items():
        start = time.perf_counter()
        r.steps(args.warmup)
        warmup_s[mode] = time.perf_counter() - start
    times = {mode: [] for mode in modes}
    compiles = {mode: [] for mode in modes}
    for _ in range(args.rounds):
        for mode, r in runners.items():
            seconds, per_step = r.steps(args.steps)
            times[mode].append(seconds)
            compiles[mode].append(per_step)
    return {
        mode: (statistics.median(times[mode]), warmup_s[mode], r.losses, compiles[mode], r.per_step)
        for mode, r in runners.items()
    }


def gpt_decoder(config):
    """Batch-1 greedy decoding with the benchmark GPT: each step runs the model on the last `seq`
    tokens (no KV cache, so every step has the same shapes) and reads the next token back, as a
    serving loop does. Returns decode(n) -> the n tokens picked."""
    model, x, _ = make(config)
    model = model.to("tpu").eval()
    prompt = x[:1].to("tpu")

    def decode(n):
        window, picked = prompt, []
        for _ in range(n):
            token = model(window)[0, -1].argmax()
            picked.append(token.item())
            window = torch.cat([window[:, 1:], token.view(1, 1)], dim=1)
        return picked

    return decode


def llama_decoder():
    """Batch-1 greedy decoding with a small Transformers Llama (hidden 64, 2 layers, 4 heads over
    2 key/value heads, vocab 512; seeded random weights) and a static KV cache: the 8-token
    prompt's forward, then one token per forward, whose shapes stay fixed (the cache is written in
    place at cache_position)."""
    from transformers import LlamaConfig, LlamaForCausalLM, StaticCache

    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=512,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=256,
    )
    model = LlamaForCausalLM(config).eval().to("tpu")
    prompt = torch.randint(0, config.vocab_size, (1, 8), generator=torch.Generator().manual_seed(1))
    prompt = prompt.to("tpu")

    def decode(n):
        cache = StaticCache(config=config, max_cache_len=prompt.shape[1] + n)
        position = torch.arange(prompt.shape[1], device="tpu")
        ids, picked = prompt, []
        for _ in range(n):
            logits = model(input_ids=ids, cache=cache, cache_position=position).logits
            ids = logits[:, -1].argmax(-1, keepdim=True)
            picked.append(ids.item())
            position = position[-1:] + 1
        return picked

    return decode


def measure_decode(args, decode):
    """`decode` (gpt_decoder, llama_decoder) in Strict and Fused mode, the modes in turn per round,
    under no_grad. A step is ~100-150 small ops and one host read: launches, not compute, set its
    time. {mode: median seconds per token}; both modes must pick the same tokens."""
    import torch_pjrt

    modes = ("strict", "fused")
    times = {mode: [] for mode in modes}
    tokens = {}
    for round_ in range(args.rounds + 1):  # round 0 warms up
        for mode in modes:
            with torch_pjrt.eager_mode(mode), torch.no_grad():
                n = args.warmup if round_ == 0 else args.decode_steps
                start = time.perf_counter()
                tokens[mode] = decode(n)
                if round_:
                    times[mode].append((time.perf_counter() - start) / n)
    assert tokens["strict"] == tokens["fused"], "Strict and Fused decoded different tokens"
    return {mode: statistics.median(t) for mode, t in times.items()}


def measure_native(mode, args):
    """Measures native `mode` ("cpu" or "cuda") eager in a child process without the plugin."""
    out = native_child.run(__file__, args, "--child", mode)
    return tuple(json.loads(out.strip().splitlines()[-1]))


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--warmup", type=int, default=3, help="steps before timing, per mode")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=5, help="steps per mode and round")
    parser.add_argument(
        "--modes",
        default="strict,fused,debug,cpu,cuda",
        help="comma-separated subset of strict, fused, debug, cpu, cuda (cuda only where torch "
        "has a GPU)",
    )
    parser.add_argument("--skip-tiny", action="store_true", help="leave out the tiny GPT")
    parser.add_argument(
        "--decode-steps", type=int, default=20, help="decode steps per mode and round (0: none)"
    )
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure([args.child], args)[args.child]))
        return

    modes = args.modes.split(",")
    if "cuda" in modes and not torch.cuda.is_available():
        modes.remove("cuda")
    results = {mode: measure_native(mode, args) for mode in modes if mode in NATIVE}
    results.update(measure([m for m in modes if m in TPU_MODES], args))
    step_s = {mode: r[0] for mode, r in results.items()}
    warmup_s = {mode: r[1] for mode, r in results.items()}

    reference = torch.tensor(results["cpu"][2]) if "cpu" in results else None
    for mode in modes:
        line = f"{mode:>6}: {step_s[mode] * 1e3:8.2f} ms/step  (warm-up {warmup_s[mode]:6.1f} s"
        if reference is not None:
            rel = ((torch.tensor(results[mode][2]) - reference).abs() / reference.abs()).max()
            line += f", max loss rel. diff vs CPU {rel.item():.1e}"
        print(line + ")")

    fused = results["fused"][4] if "fused" in results else None
    if fused:
        print(
            f" fused: {fused['executions']:g} programs and "
            f"{fused['host_round_trips']:g} host round trips per step"
        )

    def seconds(mode):
        return round(step_s[mode], 5) if mode in step_s else None

    def ratio(a, b):
        return round(step_s[a] / step_s[b], 2) if a in step_s and b in step_s else None

    result = {
        "strict_s": seconds("strict"),
        "fused_s": seconds("fused"),
        "debug_s": seconds("debug"),
        "cpu_eager_s": seconds("cpu"),
        "cuda_eager_s": seconds("cuda"),
        "fused_speedup_vs_strict": ratio("strict", "fused"),
        "fused_vs_cuda_eager": ratio("cuda", "fused"),
        "steady_state_compiles_fused": max(results["fused"][3]) if "fused" in results else None,
        "fused_programs_per_step": fused["executions"] if fused else None,
        "fused_host_round_trips_per_step": fused["host_round_trips"] if fused else None,
        "device": torch.tpu.get_device_name() if any(m in TPU_MODES for m in modes) else None,
        "load_average": os.getloadavg()[0],
        "rounds": args.rounds,
        "steps_per_round": args.steps,
    }
    if not args.skip_tiny and {"strict", "fused"} <= set(modes):
        # The tests' tiny GPT (d_model 32, sequence 16, batch 8): launch-bound rather than
        # compute-bound, it shows what fusion saves per op.
        tiny = measure(["strict", "fused"], args, TINY)
        for mode in ("strict", "fused"):
            print(f"{mode:>6}: {tiny[mode][0] * 1e3:8.2f} ms/step on the tiny GPT")
        result.update(
            tiny_strict_s=round(tiny["strict"][0], 5),
            tiny_fused_s=round(tiny["fused"][0], 5),
            tiny_fused_speedup_vs_strict=round(tiny["strict"][0] / tiny["fused"][0], 2),
        )
    if args.decode_steps and {"strict", "fused"} <= set(modes):
        cases = {  # JSON key prefix: (what, decoder)
            "decode": ("the small GPT", lambda: gpt_decoder(SMALL)),
            "tiny_decode": ("the tiny GPT", lambda: gpt_decoder(TINY)),
            "llama_decode": ("a small Llama, static cache", llama_decoder),
        }
        for key, (what, decoder) in cases.items():
            decode = measure_decode(args, decoder())
            for mode in ("strict", "fused"):
                print(f"{mode:>6}: {decode[mode] * 1e3:8.2f} ms/token, batch-1 decode of {what}")
            result.update(
                {
                    f"{key}_strict_s": round(decode["strict"], 5),
                    f"{key}_fused_s": round(decode["fused"], 5),
                    f"{key}_fused_speedup_vs_strict": round(decode["strict"] / decode["fused"], 2),
                }
            )
    print(json.dumps(result))


if __name__ == "__main__":
    main()
