"""Draws docs/compile_benchmark.png from the JSON line of benchmarks/compile.py (read from a file or
stdin): time per training step for each way of running, per model, and cold versus warm first
step. Needs matplotlib, which is not a project dependency (e.g. `pip install --target DIR
matplotlib` and PYTHONPATH=DIR)."""

import argparse
import json
import pathlib
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

WAYS = [
    ("compiled_s", 'torch.compile "tpu"'),
    ("fused_s", 'Fused eager "tpu"'),
    ("cpu_eager_s", "CPU eager"),
    ("inductor_s", "torch.compile Inductor (CPU)"),
]


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("json", nargs="?", help="file with the benchmark output (default: stdin)")
    parser.add_argument("--out", default="docs/compile_benchmark.png")
    args = parser.parse_args()
    text = pathlib.Path(args.json).read_text() if args.json else sys.stdin.read()
    data = json.loads(text.strip().splitlines()[-1])
    configs = data["configs"]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4.2), width_ratios=[2.2, 1])
    width = 0.8 / len(WAYS)
    names = list(configs)
    for k, (key, label) in enumerate(WAYS):
        xs, ys = [], []
        for i, name in enumerate(names):
            v = configs[name].get(key)
            if v is not None:
                xs.append(i + (k - (len(WAYS) - 1) / 2) * width)
                ys.append(v * 1e3)
        bars = ax1.bar(xs, ys, width, label=label)
        ax1.bar_label(bars, fmt="%.0f", fontsize=7)
    ax1.set_xticks(range(len(names)))
    ax1.set_xticklabels(
        ["small GPT (2 layers, d 128)" if n == "small" else "larger GPT (6 layers, d 256)"
         for n in names]
    )  # fmt: skip
    ax1.set_ylabel("ms per AdamW training step (lower is better)")
    ax1.set_title("Steady state, batch 8 x 64 tokens, XLA CPU plugin, 2 cores")
    ax1.legend(fontsize=8)
    cold, warm = data["cold_first_step_s"], data["warm_first_step_s"]
    cold_b = data["cold_counters"]["compile_seconds"] + data["cold_counters"]["trace_seconds"]
    warm_b = data["warm_counters"]["compile_seconds"] + data["warm_counters"]["trace_seconds"]
    bars = ax2.bar(
        [0, 1], [cold, warm], 0.6, color=["#c44e52", "#55a868"], label="whole first step"
    )
    ax2.bar_label(bars, fmt="%.1f s", fontsize=8)
    ax2.bar([0, 1], [cold_b, warm_b], 0.3, color="#333333", label="of which torch_pjrt (trace+XLA)")
    ax2.set_xticks([0, 1])
    ax2.set_xticklabels(["cold (empty cache)", "warm (disk cache)"])
    ax2.set_ylabel("seconds")
    ax2.set_title("First step, larger GPT, fresh process")
    ax2.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(args.out, dpi=110)
    print(args.out)


if __name__ == "__main__":
    main()
