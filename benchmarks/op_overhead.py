"""Time per op in Strict eager for a small cached op (add of two 16x16 float32 tensors) next to
native CPU eager and, where torch has a GPU, native CUDA eager, in one run. Last line: JSON with
tpu_us_per_op, cpu_us_per_op, ratio (tpu / cpu), cuda_us_per_op and ratio_vs_cuda (None without
a GPU)."""

import argparse
import json
import time

import torch

import torch_pjrt


def per_op_us(a, b, iters, sync):
    for _ in range(100):  # warm-up: compile and cache
        a + b
    sync()
    start = time.perf_counter()
    for _ in range(iters):
        a + b
    sync()
    return (time.perf_counter() - start) / iters * 1e6


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--iters", type=int, default=10_000)
    args = parser.parse_args()
    a, b = torch.randn(16, 16), torch.randn(16, 16)
    ta, tb = a.to("tpu"), b.to("tpu")
    torch_pjrt.metrics.reset()
    tpu = per_op_us(ta, tb, args.iters, torch.tpu.synchronize)
    compiles = torch_pjrt.metrics.counters()["compiles"]
    cpu = per_op_us(a, b, args.iters, lambda: None)
    cuda = None
    if torch.cuda.is_available():
        cuda = per_op_us(a.cuda(), b.cuda(), args.iters, torch.cuda.synchronize)
    print(f"tpu strict eager: {tpu:.2f} us/op ({compiles} compile(s) in total)")
    print(f"cpu eager:        {cpu:.2f} us/op")
    if cuda is not None:
        print(f"cuda eager:       {cuda:.2f} us/op")
    result = {
        "tpu_us_per_op": round(tpu, 2),
        "cpu_us_per_op": round(cpu, 2),
        "ratio": round(tpu / cpu, 2),
        "cuda_us_per_op": cuda and round(cuda, 2),
        "ratio_vs_cuda": cuda and round(tpu / cuda, 2),
        "iters": args.iters,
        "plugin": torch.tpu.get_device_name(),
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
