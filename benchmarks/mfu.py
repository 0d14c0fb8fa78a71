"""Model FLOPs utilization of a GPT training step in bfloat16: a ~350M-parameter GPT (GPT-2 medium's
shape: 24 layers, d_model 1024, 16 heads, vocabulary 50,304, sequence 1,024, batch 8; the test
suite's GPT of tests/python/models.py) trained with AdamW under bfloat16 autocast (float32 master
weights), compiled with torch.compile(backend="tpu") and, where torch has a GPU, beside native CUDA
eager and Inductor on the same GPU, each in its own process.

FLOPs per step count the matmuls only, as MFU figures usually do: 6 x (parameters without the
position table) x tokens, plus the attention's 12 x layers x d_model x sequence x tokens (scores and
weighted values, forward and backward; causal masking not discounted). MFU divides the achieved rate
by the card's dense bfloat16 peak (--peak-tflops, or looked up from the GPU's name); with no GPU it
is left out and only TFLOP/s are printed (use --config small there).
Last line: JSON with step seconds, TFLOP/s and MFU per way."""

import argparse
import json
import os
import pathlib
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import compile as compile_bench  # its child-process runner and step timer  # noqa: E402
import gpt  # noqa: E402

CONFIGS = {
    "350m": {"vocab": 50304, "d": 1024, "heads": 16, "layers": 24, "seq": 1024},
    "small": gpt.SMALL,
}
# Dense bfloat16 tensor-core peaks (TFLOP/s) from NVIDIA's data sheets, by a piece of the name
# torch.cuda.get_device_name() gives; first match wins.
PEAKS = (("H100 PCIe", 756.0), ("H100 NVL", 835.0), ("H100", 989.4), ("H200", 989.4),
         ("A100", 312.0), ("L4", 121.0))  # fmt: skip
WAYS = ("compiled", "cuda_eager", "inductor_cuda")


def flops_per_step(config, batch):
    """Matmul FLOPs of one training step (forward and backward) for `batch` sequences."""
    d, layers, seq, vocab = config["d"], config["layers"], config["seq"], config["vocab"]
    per_layer = 12 * d * d + 13 * d  # qkv, proj, MLP weights and biases, two LayerNorms
    params = layers * per_layer + vocab * d + 2 * d  # the tied embedding/head and the last norm
    tokens = batch * seq
    return 6 * params * tokens + 12 * layers * d * seq * tokens


def make(config, device):
    """One bfloat16-autocast AdamW step of the GPT on `device` (float32 weights)."""
    model, x, y = gpt.make(CONFIGS[config])
    model = model.to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.1, fused=False)
    x, y = x.to(device), y.to(device)

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast(device, dtype=torch.bfloat16):
            logits = model(x)
            loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), y.reshape(-1))
        loss.backward()
        opt.step()
        return loss

    return step


def measure_child(way, config, args):
    if way == "compiled":
        import torch_pjrt.compile  # noqa: F401

        step, sync = torch.compile(make(config, "tpu"), backend="tpu"), torch.tpu.synchronize
    elif way == "cuda_eager":
        step, sync = make(config, "cuda"), torch.cuda.synchronize
    else:
        step, sync = torch.compile(make(config, "cuda"), backend="inductor"), torch.cuda.synchronize
    print(json.dumps(compile_bench.time_steps(step, sync, args.warmup, args.steps, args.repeats)))


def peak_tflops(args):
    if args.peak_tflops:
        return args.peak_tflops, "given"
    if not torch.cuda.is_available():
        return None, None
    name = torch.cuda.get_device_name(0)
    return next((p for key, p in PEAKS if key in name), None), name


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--config", default="350m", choices=sorted(CONFIGS))
    parser.add_argument("--ways", default=",".join(WAYS), help="subset of " + ", ".join(WAYS))
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--peak-tflops", type=float, default=None)
    parser.add_argument("--child", nargs=2, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        measure_child(*args.child, args)
        return
    ways = [w for w in args.ways.split(",") if w in WAYS]
    if not torch.cuda.is_available():
        ways = [w for w in ways if w == "compiled"]
    peak, card = peak_tflops(args)
    flops = flops_per_step(CONFIGS[args.config], gpt.BATCH)
    print(f"{args.config}: {flops / 1e12:.2f} TFLOP per step; card {card}, peak {peak} TFLOP/s; "
          f"load average {os.getloadavg()}", flush=True)  # fmt: skip
    results = {}
    for way in ways:
        argv = ["--child", way, args.config, "--steps", str(args.steps), "--warmup",
                str(args.warmup), "--repeats", str(args.repeats)]  # fmt: skip
        seconds = compile_bench.child(*argv, script=__file__)
        tflops = flops / seconds / 1e12
        results[way] = {"step_s": seconds, "tflops": tflops, "mfu": peak and tflops / peak}
        mfu = f", MFU {tflops / peak:.1%}" if peak else ""
        print(f"{way}: {seconds * 1e3:.1f} ms per step, {tflops:.2f} TFLOP/s{mfu}", flush=True)
    print(json.dumps({"config": args.config, "card": card, "peak_tflops": peak,
                      "flops_per_step": flops, "ways": results}))  # fmt: skip


if __name__ == "__main__":
    main()
