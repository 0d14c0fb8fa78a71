"""Where one xla_floor.py way spends its main thread's CPU: which library asked for each sample
(PyTorch and the model's Python, torch_pjrt, the PJRT plugin). On the CPU plugin the host work
competes with XLA's compute threads for the cores, so it adds to the wall time; this tells how
much of it is PyTorch's own and how much is ours.

Needs `perf` (Debian: linux-perf). Runs the way in a loop in a child process, records its main
thread with DWARF call graphs for --seconds after --settle seconds, and charges each sample to the
first frame outside libc, libstdc++, libgcc, the dynamic loader and the kernel (so malloc counts
for its caller). Prints the shares and JSON last: {"way": ..., "samples": n, "shares": {dso: %}}.

    python benchmarks/host_split.py --case gpt_small --kind forward --way fused
"""

import argparse
import collections
import json
import os
import re
import subprocess
import sys
import tempfile
import time

SYSTEM = re.compile(
    r"libc\.so|libstdc\+\+|ld-linux|kallsyms|libgcc|unknown|vdso|libm\.so|^inlined$"
)


def owner_shares(script_text):
    """{dso: percent of samples} from `perf script` text."""
    counts, frames = collections.Counter(), []

    def flush():
        if frames:
            counts[next((dso for dso in frames if not SYSTEM.search(dso)), frames[0])] += 1

    for line in script_text.splitlines():
        if not line.strip():
            flush()
            frames.clear()
        elif line[:1] in "\t ":
            found = re.search(r"\(([^)]*)\)\s*$", line)
            if found:
                frames.append(found.group(1).split("/")[-1])
    flush()
    total = sum(counts.values())
    return total, {dso: round(100 * n / total, 1) for dso, n in counts.most_common(8)}


def child(case, kind, way, seconds):
    """The loop perf watches: the way's step and read, as xla_floor.py measures them."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import xla_floor

    data = xla_floor.CASES[case]()
    data["name"] = case
    train = kind == "train"
    if way == "jax":
        run = xla_floor.jax_way(data, train)
    else:
        run = xla_floor.torch_way(data, train, way)
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        xla_floor.read(run())


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--case", default="gpt_small")
    parser.add_argument("--kind", default="forward", choices=["forward", "train"])
    parser.add_argument("--way", default="fused", help="jax, compiled, fused or strict")
    parser.add_argument("--settle", type=float, default=15, help="seconds before recording")
    parser.add_argument("--seconds", type=float, default=6, help="seconds recorded")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.case, args.kind, args.way, args.settle + args.seconds + 5)
        return
    command = [sys.executable, __file__, "--child", "--case", args.case, "--kind", args.kind]
    command += ["--way", args.way, "--settle", str(args.settle), "--seconds", str(args.seconds)]
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(args.settle)
        with tempfile.TemporaryDirectory() as tmp:
            data = os.path.join(tmp, "perf.data")
            record = ["perf", "record", "-F", "1000", "--call-graph", "dwarf,16384", "-t"]
            record += [str(proc.pid), "-o", data, "--", "sleep", str(args.seconds)]
            subprocess.run(record, check=True, capture_output=True)
            script = ["perf", "script", "--no-inline", "-i", data]
            text = subprocess.run(script, check=True, capture_output=True, text=True).stdout
    finally:
        proc.wait()
    samples, shares = owner_shares(text)
    for dso, share in shares.items():
        print(f"{share:5.1f}%  {dso}")
    way = f"{args.case} {args.kind} {args.way}"
    print(json.dumps({"way": way, "samples": samples, "shares": shares}))


if __name__ == "__main__":
    main()
