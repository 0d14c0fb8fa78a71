"""torch.compile(backend="tpu") against the other ways to run a GPT training step (AdamW), in one
run after warm-up: compiled on "tpu", Fused eager on "tpu", native CPU eager, torch.compile with
Inductor on the CPU and, where torch has a GPU, native CUDA eager and Inductor on CUDA; for a small
model (2 layers, d_model 128, 4 heads, sequence 64, batch 8) and a larger one (6 layers, d_model
256). Then, for the larger model, the first step of a fresh process with an empty on-disk cache
(cold) and with the cache filled by that run (warm: AOTAutograd results and programs from disk),
and likewise the first call of its compiled forward under no_grad with torch's precompile cache on
(warm: Dynamo's results too, as a restarted server finds them).
Last line: JSON with compiled_s, fused_s, cpu_eager_s, inductor_s, cuda_eager_s, inductor_cuda_s,
compiled_vs_inductor, compiled_vs_inductor_cuda, cold_first_step_s, warm_first_step_s,
inference_cold_first_call_s and inference_warm_first_call_s (seconds; the larger model) and every
figure."""

import argparse
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import gpt  # the eager-modes benchmark's GPT step (tests/python/models.py's GPT)

CONFIGS = {"small": gpt.SMALL, "large": gpt.LARGE}


def make(config, device):
    model, x, y = gpt.make(CONFIGS[config])
    model = model.to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.1)
    x, y = x.to(device), y.to(device)
    return lambda: gpt.train_step(model, opt, x, y)


WAYS = ("compiled", "fused", "cpu_eager", "inductor", "cuda_eager", "inductor_cuda")
CUDA_WAYS = ("cuda_eager", "inductor_cuda")


def time_steps(step, sync, warmup, steps, repeats=5):
    """Best over `repeats` of the mean time of `steps` steps, after `warmup` steps. The best, not
    the median: on a shared 2-core machine another process holding a core for a few seconds slows
    a 2-thread OpenMP loop (Inductor, oneDNN) many times over, and the minimum is what the code
    itself costs."""
    for _ in range(warmup):
        loss = step()
    loss.item()
    sync()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(steps):
            loss = step()
        loss.item()
        sync()
        times.append((time.perf_counter() - start) / steps)
    return min(times)


def fused_mode():
    """A context manager for Fused eager, or None when this build has no eager modes yet."""
    import torch_pjrt

    mode = getattr(torch_pjrt, "eager_mode", None)
    return mode("fused") if mode is not None else None


def measure_child(way, config, args):
    """Runs in a fresh process: the XLA CPU client's worker threads would otherwise compete with
    the CPU measurements (Inductor's OpenMP loops are the most sensitive) on a 2-core machine."""
    if way == "compiled":
        import torch_pjrt.compile  # noqa: F401

        step, sync = torch.compile(make(config, "tpu"), backend="tpu"), torch.tpu.synchronize
    elif way == "fused":
        scope = fused_mode()
        if scope is None:
            print(json.dumps(None))
            return
        scope.__enter__()
        step, sync = make(config, "tpu"), torch.tpu.synchronize
    elif way == "cpu_eager":
        step, sync = make(config, "cpu"), lambda: None
    elif way == "cuda_eager":
        step, sync = make(config, "cuda"), torch.cuda.synchronize
    elif way == "inductor_cuda":
        step, sync = torch.compile(make(config, "cuda"), backend="inductor"), torch.cuda.synchronize
    else:
        step, sync = torch.compile(make(config, "cpu"), backend="inductor"), lambda: None
    print(json.dumps(time_steps(step, sync, args.warmup, args.steps)))


def child(*argv, script=__file__):
    """Runs `script` with `argv` in a fresh process; returns the JSON of its last line."""
    # A child imports torch_pjrt only for the "tpu" ways: with a PrivateUse1 backend registered,
    # torch's accelerator is PrivateUse1 and CUDA's backward fails (autograd finds no stream).
    env = dict(os.environ, TORCH_DEVICE_BACKEND_AUTOLOAD="0")
    root = str(pathlib.Path(__file__).resolve().parents[1])
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.run([sys.executable, script, *argv], env=env, capture_output=True,
                          text=True, check=False)  # fmt: skip
    if proc.returncode != 0:
        raise RuntimeError(f"{argv} failed:\n{proc.stderr[-4000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def measure(config, ways, args):
    out = {}
    for way in WAYS:
        if way not in ways:
            out[way + "_s"] = None
            continue
        out[way + "_s"] = child("--child", way, config, "--steps", str(args.steps),
                                "--warmup", str(args.warmup))  # fmt: skip
    return out


def first_step_child(config):
    """Runs in a fresh process: times the first compiled step (trace, compile or cache load, run)."""
    import torch_pjrt.compile as tpc

    step = torch.compile(make(config, "tpu"), backend="tpu")
    start = time.perf_counter()
    step().item()
    first = time.perf_counter() - start
    start = time.perf_counter()
    step().item()
    second = time.perf_counter() - start
    print(json.dumps({"first_step_s": first, "second_step_s": second,
                      "counters": tpc.counters()}))  # fmt: skip


def first_step(config, cache_dir):
    os.environ["TORCH_PJRT_CACHE_DIR"] = cache_dir
    return child("--first-step-child", config)


def cold_and_warm(first, config):
    """first(config, cache_dir) with an empty cache directory, then with what that run left."""
    with tempfile.TemporaryDirectory() as cache_dir:
        return first(config, cache_dir), first(config, cache_dir)


def first_call_child(config):
    """Runs in a fresh process: times the first call of the compiled forward (batch 8, no_grad),
    with torch's precompile cache on (TORCH_CACHING_PRECOMPILE=1, set by the parent)."""
    from torch._dynamo.utils import counters

    import torch_pjrt.compile as tpc

    model, x, _ = gpt.make(CONFIGS[config])
    forward = torch.compile(model.to("tpu").eval(), backend="tpu")
    x = x.to("tpu")
    with torch.no_grad():
        start = time.perf_counter()
        forward(x).sum().item()
        first = time.perf_counter() - start
    print(json.dumps({"first_step_s": first, "dynamo_cache": dict(counters["dynamo_cache"]),
                      "counters": tpc.counters()}))  # fmt: skip


def first_call(config, cache_dir):
    os.environ["TORCH_PJRT_CACHE_DIR"] = cache_dir
    os.environ["TORCH_CACHING_PRECOMPILE"] = "1"
    try:
        return child("--first-call-child", config)
    finally:
        del os.environ["TORCH_CACHING_PRECOMPILE"]


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--skip-inductor", action="store_true", help="leave out CPU Inductor")
    parser.add_argument(
        "--ways",
        default=",".join(WAYS),
        help="comma-separated subset of " + ", ".join(WAYS) + " (CUDA ones only with a GPU)",
    )
    parser.add_argument("--configs", default="small,large")
    parser.add_argument(
        "--skip-first-step", action="store_true", help="leave out the cold/warm first steps"
    )
    parser.add_argument("--first-step-child", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--first-call-child", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--child", nargs=2, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.first_step_child:
        first_step_child(args.first_step_child)
        return
    if args.first_call_child:
        first_call_child(args.first_call_child)
        return
    if args.child:
        measure_child(*args.child, args)
        return

    ways = [w for w in args.ways.split(",") if w in WAYS]
    if args.skip_inductor and "inductor" in ways:
        ways.remove("inductor")
    if not torch.cuda.is_available():
        ways = [w for w in ways if w not in CUDA_WAYS]
    results = {}
    print(f"load average before: {os.getloadavg()}", flush=True)
    for config in args.configs.split(","):
        r = measure(config, ways, args)
        results[config] = r
        cells = ", ".join(f"{k} {v * 1e3:.1f} ms" if v else f"{k} n/a" for k, v in r.items())
        print(f"{config}: {cells}", flush=True)
    last = args.configs.split(",")[-1]  # the larger model by default
    cold = warm = cold_inference = warm_inference = None
    if not args.skip_first_step:
        cold, warm = cold_and_warm(first_step, last)
        print(f"{last} first step: cold {cold['first_step_s']:.2f} s "
              f"(xla compiles {cold['counters']['xla_compiles']}), warm "
              f"{warm['first_step_s']:.2f} s (AOTAutograd hits {warm['counters']['aot_hits']}, "
              f"program disk hits {warm['counters']['disk_hits']}), warm/cold "
              f"{warm['first_step_s'] / cold['first_step_s']:.2f}")  # fmt: skip
        # Inference (a server's restart): Dynamo's own results cached too.
        cold_inference, warm_inference = cold_and_warm(first_call, last)
        print(f"{last} first forward (no_grad, precompile cache): cold "
              f"{cold_inference['first_step_s']:.2f} s, warm "
              f"{warm_inference['first_step_s']:.2f} s (Dynamo cache "
              f"{warm_inference['dynamo_cache']}, program disk hits "
              f"{warm_inference['counters']['disk_hits']}), warm/cold "
              f"{warm_inference['first_step_s'] / cold_inference['first_step_s']:.2f}")  # fmt: skip
    figures = results.get(last, {})

    def versus(baseline):
        if figures.get(baseline) and figures.get("compiled_s"):
            return figures[baseline] / figures["compiled_s"]
        return None

    summary = {
        "compiled_s": figures.get("compiled_s"),
        "fused_s": figures.get("fused_s"),
        "cpu_eager_s": figures.get("cpu_eager_s"),
        "inductor_s": figures.get("inductor_s"),
        "cuda_eager_s": figures.get("cuda_eager_s"),
        "inductor_cuda_s": figures.get("inductor_cuda_s"),
        "compiled_vs_inductor": versus("inductor_s"),
        "compiled_vs_inductor_cuda": versus("inductor_cuda_s"),
        "cold_first_step_s": cold and cold["first_step_s"],
        "warm_first_step_s": warm and warm["first_step_s"],
        "warm_vs_cold": cold and warm["first_step_s"] / cold["first_step_s"],
        "cold_counters": cold and cold["counters"],
        "warm_counters": warm and warm["counters"],
        "inference_cold_first_call_s": cold_inference and cold_inference["first_step_s"],
        "inference_warm_first_call_s": warm_inference and warm_inference["first_step_s"],
        "inference_warm_vs_cold": cold_inference
        and warm_inference["first_step_s"] / cold_inference["first_step_s"],
        "configs": results,
        "steps": args.steps,
        "load_average_after": os.getloadavg(),
        "warmup": args.warmup,
    }
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
