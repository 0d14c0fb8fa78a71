"""Collectives of the tpu_dist backend: all_reduce bus bandwidth on "tpu" tensors for float32 sizes
4 KiB to 64 MiB, next to Gloo on CPU tensors in the same run (one process group
"cpu:gloo,tpu:tpu_dist"), and DDP training steps per second of the benchmark GPT (SMALL, batch 8
per rank) at world size 1 and 2.

    python benchmarks/collectives.py          # launches the two torchrun jobs below, then reports
    torchrun --nproc-per-node 2 benchmarks/collectives.py --worker

Bus bandwidth as nccl-tests defines it: bytes * 2 (n - 1) / n / seconds per all_reduce (median of
rounds; each round ends with a read of the result on the host, which waits for the device).
Last line: JSON {"allreduce_busbw_gbps_tpu", "allreduce_busbw_gbps_gloo_cpu", "tpu_vs_gloo",
"ddp_scaling_2"} (busbw at 64 MiB; ddp_scaling_2 = samples/s at 2 ranks / (2 x samples/s at 1
rank), which with the per-rank batch fixed is steps/s at 2 ranks / steps/s at 1), plus every size
under "sizes".
"""

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import time
from datetime import timedelta

SIZES = [4 << 10, 64 << 10, 1 << 20, 16 << 20, 64 << 20]
ROUNDS = 3


def busbw(device, nbytes, size):
    import torch
    import torch.distributed as dist

    t = torch.ones(nbytes // 4, device=device)
    dist.all_reduce(t)
    t[0].item()
    # Enough all_reduces per round for ~0.2 s at the first round's speed, at least 2.
    began = time.perf_counter()
    dist.all_reduce(t)
    t[0].item()
    # Rank 0's count, so that every rank issues the same all_reduces.
    count = torch.tensor([max(2, int(0.2 / max(time.perf_counter() - began, 1e-6)))])
    dist.broadcast(count, src=0)
    per_round = int(count.item())
    times = []
    for _ in range(ROUNDS):
        began = time.perf_counter()
        for _ in range(per_round):
            dist.all_reduce(t)
        t[0].item()
        times.append((time.perf_counter() - began) / per_round)
    seconds = statistics.median(times)
    return nbytes * 2 * (size - 1) / size / seconds / 1e9 if size > 1 else 0.0


def ddp_steps_per_s(steps=10, warmup=3):
    import torch
    import torch.distributed as dist
    from gpt import SMALL, make, train_step

    model, x, y = make(SMALL, seed=dist.get_rank())
    ddp = torch.nn.parallel.DistributedDataParallel(model.to("tpu"))
    opt = torch.optim.AdamW(ddp.parameters(), lr=1e-3)
    x, y = x.to("tpu"), y.to("tpu")
    for _ in range(warmup):
        train_step(ddp, opt, x, y).item()
    dist.barrier()
    began = time.perf_counter()
    for _ in range(steps):
        train_step(ddp, opt, x, y).item()
    dist.barrier()
    return steps / (time.perf_counter() - began)


def worker(ddp_only):
    import torch  # loads torch_pjrt
    import torch.distributed as dist

    torch.tpu.set_device(int(os.environ["LOCAL_RANK"]))
    dist.init_process_group("cpu:gloo,tpu:tpu_dist", timeout=timedelta(minutes=5))
    size = dist.get_world_size()
    result = {"world_size": size}
    if not ddp_only:
        result["sizes"] = {
            str(n): {"tpu": busbw("tpu", n, size), "gloo_cpu": busbw("cpu", n, size)} for n in SIZES
        }
    result["ddp_steps_per_s"] = ddp_steps_per_s()
    if dist.get_rank() == 0:
        print("RESULT " + json.dumps(result), flush=True)
    dist.destroy_process_group()


def torchrun(nproc, *args):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = dict(os.environ, GLOO_SOCKET_IFNAME=os.environ.get("GLOO_SOCKET_IFNAME", "lo"))
    cmd = [sys.executable, "-m", "torch.distributed.run", f"--nproc-per-node={nproc}",
           "--rdzv-backend=c10d", f"--rdzv-endpoint=127.0.0.1:{port}", __file__, "--worker", *args]  # fmt: skip
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    lines = [line for line in out.stdout.splitlines() if line.startswith("RESULT ")]
    if out.returncode != 0 or not lines:
        sys.exit(f"torchrun with {nproc} ranks failed:\n{out.stdout[-3000:]}{out.stderr[-3000:]}")
    return json.loads(lines[-1][len("RESULT ") :])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--worker", action="store_true", help="run as one rank (under torchrun)")
    parser.add_argument("--ddp-only", action="store_true")
    args = parser.parse_args()
    if args.worker:
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # gpt.py
        worker(args.ddp_only)
        return
    two = torchrun(2)
    one = torchrun(1, "--ddp-only")
    print("all_reduce bus bandwidth, 2 ranks (GB/s):")
    print(f"{'bytes':>10} {'tpu':>8} {'gloo cpu':>9}")
    for n, figures in two["sizes"].items():
        print(f"{int(n):>10} {figures['tpu']:>8.3f} {figures['gloo_cpu']:>9.3f}")
    print(f"DDP steps/s: 1 rank {one['ddp_steps_per_s']:.2f}, 2 ranks {two['ddp_steps_per_s']:.2f}")
    largest = two["sizes"][str(SIZES[-1])]
    summary = {
        "allreduce_busbw_gbps_tpu": round(largest["tpu"], 4),
        "allreduce_busbw_gbps_gloo_cpu": round(largest["gloo_cpu"], 4),
        "tpu_vs_gloo": round(largest["tpu"] / largest["gloo_cpu"], 3),
        "ddp_scaling_2": round(two["ddp_steps_per_s"] / one["ddp_steps_per_s"], 3),
        "ddp_steps_per_s_1": round(one["ddp_steps_per_s"], 3),
        "ddp_steps_per_s_2": round(two["ddp_steps_per_s"], 3),
        "sizes": two["sizes"],
    }
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
