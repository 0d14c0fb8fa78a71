"""vLLM's MoE experts on "tpu" (torch_pjrt/vllm/moe.py): the dense way (every expert on every
token) against the grouped way (the routed pairs sorted by expert through grouped matmuls), with
the grouped matmul portable (`ragged_dot`) or megablox (Pallas's interpret mode off TPUs), in
Fused eager, top-2 of 8 and of 32 experts (hidden 512, intermediate 256, SiLU gate, 64 tokens);
timed as the median of --rounds calls after a warm-up call (compiles excluded).

Prints per case the three times, then JSON last: {case: {"dense_ms": ..., "grouped_portable_ms":
..., "grouped_megablox_ms": ...}}. On libtpu the megablox row is the real kernel.

    python benchmarks/moe_ways.py [--rounds N]
"""

import argparse
import json
import os
from functools import partial

import torch
from timing import median_ms
from vllm.model_executor.layers.fused_moe.activation import MoEActivation

import torch_pjrt
from torch_pjrt.vllm import moe

TOKENS, HIDDEN, INTER, TOP_K = 64, 512, 256, 2


def inputs(experts):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(TOKENS, HIDDEN, generator=g)
    w13 = torch.randn(experts, 2 * INTER, HIDDEN, generator=g) / HIDDEN**0.5
    w2 = torch.randn(experts, HIDDEN, INTER, generator=g) / INTER**0.5
    weights, ids = torch.randn(TOKENS, experts, generator=g).softmax(-1).topk(TOP_K, dim=-1)
    tensors = [t.to("tpu") for t in (x, weights, ids.int(), w13, w2)]
    return tensors + [moe._ACTIVATIONS[MoEActivation.SILU]]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    torch_pjrt.set_eager_mode("fused")
    results = {}
    for experts in (8, 32):
        case = f"top-{TOP_K} of {experts}"
        tensors = inputs(experts)
        row = {"dense_ms": median_ms(partial(moe.dense_experts, *tensors), args.rounds)}
        for kernel in ("portable", "megablox"):
            os.environ["TORCH_PJRT_GROUPED_MATMUL"] = kernel
            ms = median_ms(partial(moe.grouped_experts, *tensors), args.rounds)
            row[f"grouped_{kernel}_ms"] = ms
        results[case] = {k: round(v, 2) for k, v in row.items()}
        print(case, "  ".join(f"{k} {v:8.2f}" for k, v in row.items()), flush=True)
    print(json.dumps(results))


if __name__ == "__main__":
    main()
