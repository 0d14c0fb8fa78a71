"""Draws a benchmark's figures as a PNG bar chart for docs/benchmarks.md (needs matplotlib, which
the project does not install: `pip install matplotlib` into .venv to redraw).

    python benchmarks/plot.py OUT.png "title" "unit" label=value [label=value ...]
"""

import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    out, title, unit, *pairs = sys.argv[1:]
    labels = [p.split("=", 1)[0] for p in pairs]
    values = [float(p.split("=", 1)[1]) for p in pairs]
    fig, ax = plt.subplots(figsize=(6, 3.2), dpi=100)
    bars = ax.bar(labels, values, color=["#4c72b0", "#dd8452", "#55a868", "#8172b3", "#937860"])
    ax.bar_label(bars, fmt="%.3g")
    ax.set_ylabel(unit)
    ax.set_title(title)
    ax.spines[["top", "right"]].set_visible(False)
    fig.tight_layout()
    fig.savefig(out)


if __name__ == "__main__":
    main()
