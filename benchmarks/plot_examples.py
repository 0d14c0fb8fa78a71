"""Draws docs/examples_benchmark.png from the JSON line of benchmarks/examples.py (a file holding
it, or several files whose "examples" objects are combined): milliseconds per training step of each
example, one bar per way. Needs matplotlib (`pip install matplotlib` into .venv to redraw).

    python benchmarks/plot_examples.py RESULT.json [MORE.json ...] [--out docs/examples_benchmark.png]
"""

import argparse
import json

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

WAYS = {
    "tpu_fused_s": "tpu Fused",
    "tpu_compiled_s": "tpu compiled",
    "cpu_eager_s": "CPU eager",
    "inductor_s": "CPU Inductor",
}


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("results", nargs="+")
    parser.add_argument("--out", default="docs/examples_benchmark.png")
    args = parser.parse_args()
    examples = {}
    for path in args.results:
        with open(path) as f:
            examples.update(json.loads(f.read().strip().splitlines()[-1])["examples"])
    names = list(examples)
    fig, ax = plt.subplots(figsize=(8, 3.6), dpi=100)
    width = 0.8 / len(WAYS)
    for i, (key, label) in enumerate(WAYS.items()):
        xs = [n + (i - (len(WAYS) - 1) / 2) * width for n in range(len(names))]
        ax.bar(xs, [examples[name][key] * 1e3 for name in names], width, label=label)
    ax.set_xticks(range(len(names)), names)
    ax.set_yscale("log")
    ax.set_ylabel("ms per training step (log)")
    ax.set_title("Examples at a small size, XLA CPU plugin vs CPU PyTorch (lower is better)")
    ax.legend(fontsize=8, ncols=4)
    ax.spines[["top", "right"]].set_visible(False)
    fig.tight_layout()
    fig.savefig(args.out)


if __name__ == "__main__":
    main()
