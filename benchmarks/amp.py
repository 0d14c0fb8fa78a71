"""The benchmark GPT's training step (2 layers, d_model 128, sequence 64, batch 8, AdamW) in float32
and under bfloat16 autocast, in Strict and Fused eager modes on "tpu", measured side by side: after
warm-up, rounds of steps run each configuration in turn and the median round is reported. Each
step ends with `loss.item()`. The peak of `torch.tpu.max_memory_allocated` is taken over each
configuration's timed steps (reset before them). With --cuda and an NVIDIA GPU, the same step in
native CUDA eager (float32 and bfloat16 autocast) runs afterwards, with the same rounds, in a child
process that never imports torch_pjrt: with a PrivateUse1 backend registered, torch's accelerator
is PrivateUse1 and CUDA's backward fails (autograd finds no stream for CUDA nodes).

Last line: JSON with f32_s and bf16_s (Fused seconds per step), bf16_vs_f32 (f32_s / bf16_s),
peak_mb_f32 and peak_mb_bf16 (Fused), the same per mode under "configs", and the CUDA figures
when measured."""

import argparse
import contextlib
import copy
import json
import os
import statistics
import time

import native_child
import torch
import torch.nn.functional as F
from gpt import SMALL, make


def step(model, opt, x, y, amp_device):
    opt.zero_grad(set_to_none=True)
    ctx = (
        torch.autocast(amp_device, dtype=torch.bfloat16) if amp_device else contextlib.nullcontext()
    )
    with ctx:
        logits = model(x)
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))
    loss.backward()
    opt.step()
    return loss.item()


class Config:
    """One (device, eager mode, precision) configuration with its own model copy."""

    def __init__(self, name, device, mode, amp, model, x, y):
        self.name, self.device, self.mode, self.amp = name, device, mode, amp
        self.model = copy.deepcopy(model).to(device)
        self.x, self.y = x.to(device), y.to(device)
        self.opt = torch.optim.AdamW(self.model.parameters(), lr=1e-3)
        self.losses, self.times, self.peak = [], [], 0

    def _memory(self):
        return torch.cuda if self.device == "cuda" else torch.tpu

    def run(self, n, timed=True):
        if self.mode:
            import torch_pjrt

            mode = torch_pjrt.eager_mode(self.mode)
        else:
            mode = contextlib.nullcontext()
        memory = self._memory()
        memory.synchronize()
        memory.reset_peak_memory_stats()
        with mode:
            start = time.perf_counter()
            for _ in range(n):
                self.losses.append(
                    step(self.model, self.opt, self.x, self.y, self.device if self.amp else None)
                )
            seconds = (time.perf_counter() - start) / n
        if timed:
            self.times.append(seconds)
            self.peak = max(self.peak, memory.max_memory_allocated())


def measure(configs, args):
    """{name: {"s": median seconds per step, "peak_mb": peak MB}}, printing each."""
    for c in configs:
        c.run(args.warmup, timed=False)
    for _ in range(args.rounds):
        for c in configs:
            c.run(args.steps)
    figures = {}
    for c in configs:
        seconds = statistics.median(c.times)
        figures[c.name] = {"s": round(seconds, 5), "peak_mb": round(c.peak / 2**20, 2)}
        print(
            f"{c.name:>12}: {seconds * 1e3:8.2f} ms/step  peak {c.peak / 2**20:8.2f} MB  "
            f"final loss {c.losses[-1]:.4f}",
            flush=True,
        )
    return figures


def cuda_figures(args):
    """The CUDA configurations' figures, measured in a child process without torch_pjrt."""
    out = native_child.run(__file__, args, "--cuda-child")
    print(out, end="")
    return json.loads(out.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--cuda", action="store_true", help="also time native CUDA eager")
    parser.add_argument("--cuda-child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()

    model, x, y = make(SMALL)
    if args.cuda_child:
        configs = [
            Config(f"cuda_{prec}", "cuda", None, prec == "bf16", model, x, y)
            for prec in ("f32", "bf16")
        ]
        print(json.dumps(measure(configs, args)))
        return
    import torch_pjrt  # noqa: F401  (device "tpu"; never in the CUDA child)

    configs = [
        Config(f"{mode}_{prec}", "tpu", mode, prec == "bf16", model, x, y)
        for mode in ("strict", "fused")
        for prec in ("f32", "bf16")
    ]
    figures = measure(configs, args)
    if args.cuda and torch.cuda.is_available():
        figures.update(cuda_figures(args))
    result = {
        "f32_s": figures["fused_f32"]["s"],
        "bf16_s": figures["fused_bf16"]["s"],
        "bf16_vs_f32": round(figures["fused_f32"]["s"] / figures["fused_bf16"]["s"], 2),
        "peak_mb_f32": figures["fused_f32"]["peak_mb"],
        "peak_mb_bf16": figures["fused_bf16"]["peak_mb"],
        "configs": figures,
        "load_average": os.getloadavg()[0],
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
