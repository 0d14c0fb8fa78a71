"""The six examples (examples/*.py) at a small but real size: seconds per training step on "tpu"
(Fused eager, and torch.compile backend "tpu") against CPU PyTorch (eager, and torch.compile with
Inductor), each way in its own process; plus Qwen3 greedy generation with a static cache
(compiled by Transformers: backend "tpu" on "tpu", eager on the CPU) in tokens/s.
Last line: JSON {"examples": {name: {tpu_fused_s, tpu_compiled_s, cpu_eager_s, inductor_s}},
"qwen_generate_tok_s_tpu", "qwen_generate_tok_s_cpu"}.

    python benchmarks/examples.py [--only llama dlrm] [--steps 20] [--warmup 10]
"""

import argparse
import json
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
LM = "--hidden 128 --layers 2 --heads 4 --kv-heads 2 --seq 64 --batch-size 4 --no-amp"
SIZES = {
    "llama": LM + " --vocab 512 --new-tokens 0",
    "qwen": LM + " --new-tokens 0",
    "resnet": "--arch resnet18 --width 16 --image-size 32 --batch-size 8",
    "dlrm": "--tables 8 --rows 10000 --dim 32 --batch-size 256",
    "mingpt": "--dim 128 --layers 2 --heads 4 --block-size 64 --batch-size 16 --sample-chars 0",
    "unet": "--image-size 32 --channels 32 64 --batch-size 8 --samples 0",
}
WAYS = {
    "tpu_fused_s": ["--device", "tpu", "--mode", "fused"],
    "tpu_compiled_s": ["--device", "tpu", "--compile"],
    "cpu_eager_s": ["--device", "cpu"],
    "inductor_s": ["--device", "cpu", "--compile"],
}
GENERATE = LM + " --steps 1 --new-tokens 32"
RUNNER = """
import json, sys
sys.path.insert(0, {examples!r})
import {name}
r = {name}.main({argv!r})
print(json.dumps({{"steps_per_s": r["steps_per_s"], "generate_tok_s": r.get("generate_tok_s")}}))
"""


def run(name, argv):
    """One example in a fresh process; its figures."""
    code = RUNNER.format(examples=str(ROOT / "examples"), name=name, argv=argv)
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, cwd=ROOT
    )
    if out.returncode != 0:
        raise RuntimeError(f"{name} {' '.join(argv)} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--only", nargs="+", choices=sorted(SIZES), default=list(SIZES))
    # Fused eager finds a training loop's period within its first steps (then one cached program
    # per step); the warm-up steps cover that and every way's compiles.
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=10)
    args = parser.parse_args()
    results = {}
    for name in args.only:
        results[name] = {}
        for way, flags in WAYS.items():
            argv = [*SIZES[name].split(), *flags, "--quiet", "--steps", str(args.steps),
                    "--warmup", str(args.warmup)]  # fmt: skip
            results[name][way] = 1.0 / run(name, argv)["steps_per_s"]
            print(f"{name:7s} {way:15s} {results[name][way] * 1e3:9.1f} ms/step", flush=True)
    tok_s = {}
    for device in ("tpu", "cpu"):
        argv = [*GENERATE.split(), "--device", device, "--quiet"]
        tok_s[device] = run("qwen", argv)["generate_tok_s"]
        print(f"qwen3 generate {device}: {tok_s[device]:.1f} tokens/s", flush=True)
    print(
        json.dumps(
            {
                "examples": results,
                "qwen_generate_tok_s_tpu": tok_s["tpu"],
                "qwen_generate_tok_s_cpu": tok_s["cpu"],
            }
        )
    )


if __name__ == "__main__":
    main()
