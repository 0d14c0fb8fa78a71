"""Per-call cost of a custom kernel: RMSNorm of a 16x64 float32 tensor as a `jax_op` (one kernel
op) and as native torch ops (pow, mean, add, rsqrt, mul, mul), in Strict and in Fused eager mode
on "tpu". Calls run in chains of `--chain` (each call on the previous result, so every call's work
is needed), each chain ended by `torch.tpu.synchronize()`: in Fused mode a chain is one program
(the kernel called inside it), cached after the first. After a warm-up round (lowering and
compiling), `--iters` calls are timed per round; the median of `--rounds` rounds is reported.

Last line: JSON with jax_op_us, native_us and ratio (jax_op / native) in Strict mode, and the same
for Fused under "fused"."""

import argparse
import json
import statistics
import time

import jax
import torch
from torch.tpu.pallas import jax_op

import torch_pjrt


@jax_op("bench::rmsnorm")
def rmsnorm_kernel(x: jax.Array, w: jax.Array) -> jax.Array:
    return x * jax.lax.rsqrt(jax.numpy.mean(x * x, axis=-1, keepdims=True) + 1e-6) * w


def rmsnorm_native(x, w):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w


def per_call_us(fn, x, w, iters, chain, rounds):
    times = []
    for r in range(rounds + 1):  # round 0 warms up
        torch.tpu.synchronize()
        start = time.perf_counter()
        for _ in range(iters // chain if r else 2):
            y = x
            for _ in range(chain):
                y = fn(y, w)
            torch.tpu.synchronize()
        if r:
            times.append((time.perf_counter() - start) / (iters // chain * chain) * 1e6)
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iters", type=int, default=2000)
    parser.add_argument("--chain", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    torch.manual_seed(0)
    x = torch.randn(16, 64, device="tpu")
    w = torch.rand(64, device="tpu") + 0.5
    torch.testing.assert_close(rmsnorm_kernel(x, w).cpu(), rmsnorm_native(x, w).cpu())
    result = {}
    for mode in ("strict", "fused"):
        with torch_pjrt.eager_mode(mode):
            k = per_call_us(rmsnorm_kernel, x, w, args.iters, args.chain, args.rounds)
            n = per_call_us(rmsnorm_native, x, w, args.iters, args.chain, args.rounds)
        result[mode] = {
            "jax_op_us": round(k, 2),
            "native_us": round(n, 2),
            "ratio": round(k / n, 3),
        }
        print(f"{mode:6s}  jax_op {k:8.2f} us/call   native torch ops {n:8.2f} us/call")
    print(json.dumps({**result["strict"], "fused": result["fused"]}))


if __name__ == "__main__":
    main()
