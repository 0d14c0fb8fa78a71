"""Where a Fused eager step's host time goes (issue 36), on the benchmark GPT: ops dispatched per
step; (a) PyTorch's own cost of the step, measured as the same model code run on the CPU at the
tests' tiny size (same layers, so the same op sequence; dispatch, autograd and Python, kernels of
near-zero work); (b) recording: from the step's start until its last op returns (no program runs
yet); (c) the flush: torch_pjrt.launch_pending() (subgraph walk, cache key and lookup, argument
packing, launch, graph teardown); (d) the wait for the device and the read of the value.

Last line: JSON {kind: {...}} in microseconds per step (medians), with the load average."""

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

import torch
from torch.utils._python_dispatch import TorchDispatchMode

sys.path.insert(0, str(Path(__file__).resolve().parent))
import gpt

LR, BETAS, EPS, WEIGHT_DECAY = 1e-3, (0.9, 0.999), 1e-8, 0.1


def make_step(config, device, train):
    model, x, y = gpt.make(config)
    model, x, y = model.to(device), x.to(device), y.to(device)
    if not train:
        model.eval()

        def forward():
            with torch.no_grad():
                return model(x).reshape(-1)[0]  # the value a logging loop reads

        return forward
    opt = torch.optim.AdamW(model.parameters(), lr=LR, betas=BETAS, eps=EPS,
                            weight_decay=WEIGHT_DECAY)  # fmt: skip

    def step():
        return gpt.train_step(model, opt, x, y)

    return step


class CountOps(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.n = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.n += 1
        return func(*args, **(kwargs or {}))


def ops_of(step):
    with CountOps() as c:
        step()
    return c.n


def median_us(values):
    return round(statistics.median(values) * 1e6, 1)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--case", default="SMALL", help="a gpt.py configuration: SMALL, LARGE")
    parser.add_argument("--steps", type=int, default=40)
    args = parser.parse_args()
    import torch_pjrt

    config = getattr(gpt, args.case)
    tiny = dict(gpt.TINY, layers=config["layers"])  # same layers: the same op sequence
    result = {"case": args.case, "load_average_start": os.getloadavg()[0]}
    for kind in ("forward", "train"):
        train = kind == "train"
        cpu = make_step(tiny, "cpu", train)
        for _ in range(3):
            cpu()
        floor = []
        for _ in range(args.steps):
            start = time.perf_counter()
            cpu().item()
            floor.append(time.perf_counter() - start)
        step = make_step(config, "tpu", train)
        record, flush, wait, total = [], [], [], []
        with torch_pjrt.eager_mode("fused"):
            for _ in range(3):
                step().item()
            ops = ops_of(step)
            step().item()
            torch_pjrt.metrics.reset()
            for _ in range(args.steps):
                t0 = time.perf_counter()
                value = step()
                t1 = time.perf_counter()
                torch_pjrt.launch_pending()
                t2 = time.perf_counter()
                value.item()
                t3 = time.perf_counter()
                record.append(t1 - t0)
                flush.append(t2 - t1)
                wait.append(t3 - t2)
                total.append(t3 - t0)
            counters = torch_pjrt.metrics.counters()
        entry = {
            "ops": ops,
            "cpu_tiny_ops": ops_of(cpu),
            "a_cpu_tiny_step_us": median_us(floor),
            "b_record_us": median_us(record),
            "c_flush_us": median_us(flush),
            "d_wait_us": median_us(wait),
            "total_us": median_us(total),
            "programs_per_step": counters["executions"] / args.steps,
            "compiles": counters["compiles"],
        }
        entry["a_us_per_op"] = round(entry["a_cpu_tiny_step_us"] / entry["cpu_tiny_ops"], 2)
        entry["b_us_per_op"] = round(entry["b_record_us"] / ops, 2)
        print(kind, entry, flush=True)
        result[kind] = entry
    result["load_average_end"] = os.getloadavg()[0]
    print(json.dumps(result))


if __name__ == "__main__":
    main()
