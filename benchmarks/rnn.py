"""nn.LSTM and nn.GRU on "tpu" beside the CPU: one training step (forward, backward of the summed
output) and one inference forward of a 2-layer model over a [batch, seq, features] input
(batch_first), in eager (the default eager mode) and under torch.compile(backend="tpu") on "tpu".
Timed as the median of --rounds calls after --warmup calls (compiles excluded), each call
synchronized (the "tpu" result read back).

Prints a line per (cell, mode) and JSON last: {cell: {"cpu_ms": ..., "tpu_eager_ms": ...,
"tpu_compiled_ms": ..., "eager_over_cpu": ..., "compiled_over_cpu": ...}} for "train" and
"infer".

    python benchmarks/rnn.py [--batch 16] [--seq 32] [--hidden 128] [--rounds 5]
"""

import argparse
import json

import torch
from timing import median_ms

import torch_pjrt  # noqa: F401  (registers "tpu")


def step_fn(model, x, train):
    def step():
        if train:
            model.zero_grad(set_to_none=True)
            out, _ = model(x)
            out.sum().backward()
            return next(model.parameters()).grad
        with torch.no_grad():
            return model(x)[0]

    return step


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--seq", type=int, default=32)
    parser.add_argument("--hidden", type=int, default=128)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=2)
    args = parser.parse_args()
    x = torch.randn(args.batch, args.seq, args.hidden, generator=torch.Generator().manual_seed(0))
    results = {}
    for cell in ("LSTM", "GRU"):
        torch.manual_seed(0)
        cpu_model = getattr(torch.nn, cell)(args.hidden, args.hidden, 2, batch_first=True)
        tpu_model = getattr(torch.nn, cell)(args.hidden, args.hidden, 2, batch_first=True)
        tpu_model.load_state_dict(cpu_model.state_dict())
        tpu_model.to("tpu")
        compiled = torch.compile(tpu_model, backend="tpu")
        xt = x.to("tpu")
        for mode in ("train", "infer"):
            train = mode == "train"
            cpu_ms = median_ms(step_fn(cpu_model, x, train), args.rounds, args.warmup)
            eager_ms = median_ms(step_fn(tpu_model, xt, train), args.rounds, args.warmup)
            compiled_ms = median_ms(step_fn(compiled, xt, train), args.rounds, args.warmup)
            results[f"{cell} {mode}"] = {
                "cpu_ms": round(cpu_ms, 2), "tpu_eager_ms": round(eager_ms, 2),
                "tpu_compiled_ms": round(compiled_ms, 2),
                "eager_over_cpu": round(eager_ms / cpu_ms, 2),
                "compiled_over_cpu": round(compiled_ms / cpu_ms, 2),
            }  # fmt: skip
            print(f"{cell:<4} {mode:<5} cpu {cpu_ms:8.2f} ms  tpu eager {eager_ms:8.2f} ms"
                  f"  tpu compiled {compiled_ms:8.2f} ms  eager/cpu {eager_ms / cpu_ms:6.2f}"
                  f"  compiled/cpu {compiled_ms / cpu_ms:6.2f}", flush=True)  # fmt: skip
    print(json.dumps(results))


if __name__ == "__main__":
    main()
