"""CTC loss on "tpu" beside the CPU: one step of F.ctc_loss (mean reduction) and its gradient with
respect to the log probabilities, [T, batch, classes] inputs, in Strict and Fused eager mode.
Timed as the median of --rounds steps after a warm-up step (compiles excluded), each step
synchronized (the gradient read back).

Prints a line per length and JSON last: {"T=<length>": {"cpu_ms": ..., "strict_ms": ...,
"fused_ms": ..., "strict_over_cpu": ..., "fused_over_cpu": ...}}.

    python benchmarks/ctc_loss.py [--lengths 200,1000] [--batch 8] [--classes 32] [--targets 40]
"""

import argparse
import json

import torch
import torch.nn.functional as F
from timing import median_ms

import torch_pjrt


def step_fn(log_probs, targets, input_lengths, target_lengths, device):
    targets = targets.to(device)

    def step():
        x = log_probs.to(device).requires_grad_()
        loss = F.ctc_loss(x, targets, input_lengths, target_lengths)
        (grad,) = torch.autograd.grad(loss, x)
        return grad

    return step


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lengths", default="200,1000")
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--classes", type=int, default=32)
    parser.add_argument("--targets", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    results = {}
    for length in [int(n) for n in args.lengths.split(",")]:
        torch.manual_seed(0)
        log_probs = torch.randn(length, args.batch, args.classes).log_softmax(2)
        targets = torch.randint(1, args.classes, (args.batch, args.targets))
        lengths = (torch.full((args.batch,), length), torch.full((args.batch,), args.targets))
        row = {"cpu_ms": median_ms(step_fn(log_probs, targets, *lengths, "cpu"), args.rounds)}
        for mode in ["strict", "fused"]:
            with torch_pjrt.eager_mode(mode):
                step = step_fn(log_probs, targets, *lengths, "tpu")
                row[f"{mode}_ms"] = median_ms(step, args.rounds)
            row[f"{mode}_over_cpu"] = round(row[f"{mode}_ms"] / row["cpu_ms"], 3)
        row = {k: round(v, 3) for k, v in row.items()}
        print(f"T={length}: {row}", flush=True)
        results[f"T={length}"] = row
    print(json.dumps(results))


if __name__ == "__main__":
    main()
