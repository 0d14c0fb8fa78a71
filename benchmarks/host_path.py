"""Host-path cost per eager op of a cached 16x16 float32 add, from the C++ driver host_path_bench
(benchmarks/host_path.cpp, built with the C++ tests): instructions per op counted by callgrind as
the difference between a run of fewer and one of more ops (start-up, compiles and warm-up cancel),
in the calling thread (the host path) and in all threads, and wall time per op from normal runs.
Modes: strict (each op launched), fused (ops ending at op boundaries, one cached program per 64
ops), record (recording only). --profile also prints the functions with the most instructions per
op in the calling thread (self and inclusive). Last line: JSON."""

import argparse
import json
import os
import re
import subprocess
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Ops per run: fused needs multiples of 64; record's chain is freed recursively, so it stays short.
SIZES = {"strict": (200, 1200), "fused": (640, 3200), "record": (500, 4500)}
WALL_OPS = {"strict": 20000, "fused": 64000, "record": 4500}


def callgrind(driver, mode, n, out_file):
    """Instructions of the calling thread (the host path; its profile is out_file-01) and of all
    threads (with the plugin's workers, whose idle spinning varies from run to run)."""
    subprocess.run(
        [
            "valgrind",
            "--tool=callgrind",
            "--separate-threads=yes",
            f"--callgrind-out-file={out_file}",
            driver,
            mode,
            str(n),
        ],
        check=True,
        capture_output=True,
    )
    totals = {}
    for name in os.listdir(os.path.dirname(out_file)):
        if name.startswith(os.path.basename(out_file) + "-"):
            with open(os.path.join(os.path.dirname(out_file), name)) as f:
                totals[name] = next(
                    int(line.split()[1]) for line in f if line.startswith("totals:")
                )
    return totals[os.path.basename(out_file) + "-01"], sum(totals.values())


def functions(out_file, inclusive):
    """Instructions per function from callgrind_annotate. Callgrind splits a function by the files
    its (inlined) lines come from: self costs add up, and the largest inclusive one is kept."""
    text = subprocess.run(
        [
            "callgrind_annotate",
            "--auto=no",
            f"--inclusive={'yes' if inclusive else 'no'}",
            "--threshold=100",
            out_file,
        ],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    costs = {}
    for line in text.splitlines():
        m = re.match(r"\s*([\d,]+) \([ \d.]+%\)\s+[^:\s]*:(.*?)(?: \[.*\])?$", line)
        if m:
            cost = int(m.group(1).replace(",", ""))
            previous = costs.get(m.group(2), 0)
            costs[m.group(2)] = max(previous, cost) if inclusive else previous + cost
    return costs


def print_profile(mode, small_file, large_file, ops, top):
    for inclusive in (False, True):
        small = functions(small_file, inclusive)
        large = functions(large_file, inclusive)
        diff = {k: (v - small.get(k, 0)) / ops for k, v in large.items()}
        print(f"--- {mode}: instructions per op, {'inclusive' if inclusive else 'self'}")
        for name, cost in sorted(diff.items(), key=lambda kv: -kv[1])[:top]:
            print(f"{cost:10.0f}  {name[:160]}")


def wall_ns(driver, mode, n):
    out = subprocess.run([driver, mode, str(n)], check=True, capture_output=True, text=True)
    return float(re.search(r"([\d.]+) ns/op", out.stdout).group(1))


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--build-dir", default=os.path.join(ROOT, "build"))
    parser.add_argument("--modes", default="strict,fused,record")
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--top", type=int, default=30)
    args = parser.parse_args()
    driver = os.path.join(args.build_dir, "host_path_bench")
    result = {}
    with tempfile.TemporaryDirectory() as tmp:
        for mode in args.modes.split(","):
            small_n, large_n = SIZES[mode]
            files = [os.path.join(tmp, f"{mode}.{n}.out") for n in (small_n, large_n)]
            small, large = (
                callgrind(driver, mode, n, f) for n, f in zip((small_n, large_n), files)
            )
            host, total = ((b - a) / (large_n - small_n) for a, b in zip(small, large))
            ns = min(wall_ns(driver, mode, WALL_OPS[mode]) for _ in range(3))
            print(
                f"{mode}: {host:.0f} instructions/op ({total:.0f} in all threads), {ns:.0f} ns/op"
            )
            if args.profile:
                print_profile(mode, files[0] + "-01", files[1] + "-01", large_n - small_n, args.top)
            result[mode] = {
                "instructions_per_op": round(host),
                "instructions_per_op_all_threads": round(total),
                "ns_per_op": round(ns),
            }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
