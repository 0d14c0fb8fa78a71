"""OpInfo coverage of device "tpu": runs the samples of PyTorch's OpInfo database (`op_db`) on "tpu"
and on the CPU, forward and (for float32) backward, and writes a table to docs/op_coverage.md.

A sample *passes* when "tpu" matches the CPU with no CPU fallback, *falls back* when it matches
but some op ran through the CPU fallback, and *fails* otherwise (mismatch or error). Samples on
which the CPU itself raises are not counted. Ops run in a worker process; if it dies, the op it was
running is recorded as crashed and a new worker resumes after it.

  python tools/op_coverage.py --ops '^(add|mm)$'   # a subset (regex on the OpInfo name)

The full all-dtype sweep runs in parts (ops dealt round-robin, so each part gets a similar mix),
each writing its rows as JSON; --merge writes the one report (docs/op_coverage.md) from them:

  for k in 1 2 3 4; do python tools/op_coverage.py --max-samples 2 --part $k/4 \
      --json /tmp/op-coverage-$k.json; done
  python tools/op_coverage.py --merge /tmp/op-coverage-[1-4].json

An op's rows in a later --merge file replace its rows from the earlier ones (a rerun of the ops
a change touched: `--ops REGEX --json rerun.json`, merged last).
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

OUR_DTYPES = ["float32", "float64", "bfloat16", "float16", "int64", "int32", "int16", "int8",
              "uint8", "uint16", "uint32", "uint64", "bool", "complex64", "complex128"]  # fmt: skip


def op_key(op):
    return op.name + ("." + op.variant_test_name if op.variant_test_name else "")


def select_ops(pattern, part="1/1"):
    """The OpInfos whose name matches `pattern`; of those, part K of N takes every N-th from the
    K-th on."""
    from torch.testing._internal.common_methods_invocations import op_db

    k, n = (int(x) for x in part.split("/"))
    regex = re.compile(pattern)
    return [op for op in op_db if regex.search(op_key(op))][k - 1 :: n]


def _tolerances(dtype):
    import torch

    if dtype in (torch.float16, torch.bfloat16):
        return {"rtol": 1.6e-2, "atol": 1e-3}
    if dtype in (torch.float32, torch.complex64):
        return {"rtol": 1e-4, "atol": 1e-5}
    if dtype in (torch.float64, torch.complex128):
        return {"rtol": 1e-7, "atol": 1e-7}
    # Integer inputs: outputs may be float32 (e.g. cos of an int); integer outputs of moderate
    # size must still be equal under this tolerance.
    return {"rtol": 1.3e-6, "atol": 1e-5}


def _to_device(obj, device, stay=None):
    """`obj` with its tensors on `device`, except those at the leaf positions `stay` names (the
    tensors a sample generator creates on the host whatever the device, such as tensor_split's
    indices)."""
    import torch
    from torch.utils._pytree import tree_flatten, tree_map, tree_unflatten

    if stay:
        leaves, spec = tree_flatten(obj)
        moved = [x if i in stay else _to_device(x, device) for i, x in enumerate(leaves)]
        return tree_unflatten(moved, spec)

    def move(x):
        if isinstance(x, torch.Tensor):
            # A view keeps its place in its base's storage (not a conjugate or negative view:
            # the base does not carry their bit).
            if x._base is not None and x._base.dtype == x.dtype and not (x.is_conj() or x.is_neg()):
                base = x._base.detach().to(device)
                y = base.as_strided(x.size(), x.stride(), x.storage_offset())
            else:
                y = x.detach().to(device)
            return y.requires_grad_(x.requires_grad) if y.is_floating_point() else y
        return x

    return tree_map(move, obj)


def _tensors(obj):
    import torch
    from torch.utils._pytree import tree_leaves

    return [x for x in tree_leaves(obj) if isinstance(x, torch.Tensor)]


def _backward(out, inputs):
    import torch

    outs = [o for o in _tensors(out) if o.requires_grad and o.is_floating_point()]
    leaves = [t for t in _tensors(inputs) if t.requires_grad]
    if not outs or not leaves:
        return None
    # Fixed, varied output weights (made on the CPU so they add no device ops of their own).
    weights = [(torch.arange(o.numel()) % 7 - 3).reshape(o.shape).to(o.dtype).to(o.device)
               for o in outs]  # fmt: skip
    total = sum((o * w).sum() for o, w in zip(outs, weights))
    return torch.autograd.grad(total, leaves, allow_unused=True)


class _RandomnessProbe:
    """Tells whether code drew random numbers on the CPU: it changed the CPU generator's state, or
    it seeded it (OpInfo wraps random ops in manual_seed + a state restore)."""

    def __enter__(self):
        import torch

        self.random = False
        self._seed = torch.manual_seed
        self._state = torch.get_rng_state()

        def seeded(seed):
            self.random = True
            return self._seed(seed)

        torch.manual_seed = seeded
        return self

    def __exit__(self, *exc):
        import torch

        torch.manual_seed = self._seed
        self.random = self.random or not torch.equal(torch.get_rng_state(), self._state)
        return False


def host_leaves(op, dtype, count):
    """Per sample, the positions of the tensor leaves of (input, args, kwargs) that the sample
    generator leaves on the CPU when asked for another device (found on "meta"; empty sets when
    the generator cannot run there)."""
    import torch
    from torch.utils._pytree import tree_leaves

    try:
        samples = list(op.sample_inputs("meta", dtype))[:count]
    except Exception:
        return [set()] * count
    found = []
    for sample in samples:
        leaves = tree_leaves((sample.input, sample.args, sample.kwargs))
        found.append(
            {
                i
                for i, x in enumerate(leaves)
                if isinstance(x, torch.Tensor) and x.device.type == "cpu"
            }
        )
    return found + [set()] * (count - len(found))


# Ops whose index outputs PyTorch leaves unspecified among equal values (sort and argsort unless
# stable, topk, kthvalue, median, nanmedian, mode), with their parameters after the input: their
# indices are compared through the input values they select.
TIES_UNSPECIFIED = {
    "sort": ("dim", "descending"),
    "argsort": ("dim", "descending"),
    "topk": ("k", "dim", "largest", "sorted"),
    "kthvalue": ("k", "dim", "keepdim"),
    "median": ("dim", "keepdim"),
    "nanmedian": ("dim", "keepdim"),
    "mode": ("dim", "keepdim"),
}


def _without_tie_order(op, sample, out):
    """`out`, for the ops of TIES_UNSPECIFIED, with its indices replaced by the elements of the
    (CPU) input they select."""
    import torch

    params = TIES_UNSPECIFIED.get(op.name)
    x = sample.input
    if params is None or sample.kwargs.get("stable") or x.dim() == 0:
        return out
    if op.name != "argsort" and isinstance(out, torch.Tensor):
        return out  # median of all elements: no indices
    bound = {**dict(zip(params, sample.args)), **sample.kwargs}
    dim = bound.get("dim", -1)
    kept = bound.get("keepdim", op.name in ("sort", "argsort", "topk"))

    def pick(indices):
        indices = indices.cpu()
        picked = x.detach().gather(dim, indices if kept else indices.unsqueeze(dim))
        return picked if kept else picked.squeeze(dim)

    return pick(out) if op.name == "argsort" else (out[0], pick(out[1]))


def _phases(vectors):
    """Per column of `vectors` [..., n, k], the unit number (sign or phase) of its first entry of
    largest magnitude, as [..., 1, k]."""
    import torch

    pivot = vectors.gather(-2, vectors.abs().argmax(-2, keepdim=True))
    return pivot / pivot.abs().clamp_min(torch.finfo(pivot.abs().dtype).tiny)


def _canonical(op, out):
    """Eigenvectors and singular vectors are defined up to a sign (real) or phase (complex) per
    vector, which LAPACK and the device choose differently. For exactly these ops, both the CPU's
    and the device's outputs are compared (and differentiated) with each vector divided by the
    phase of its largest entry (a singular vector pair by that of its left vector, which keeps
    U S V^H). As OpInfo's own svd samples do, only the first k = min(m, n) singular vectors are
    kept: with full_matrices the rest are any orthonormal basis of the complement."""
    name = op_key(op)
    if name == "linalg.eigh" and out[1].numel():
        return (out[0], out[1] * _phases(out[1]).conj())
    if name in ("linalg.svd", "svd") and out[0].numel() and out[2].numel():
        k = out[1].shape[-1]
        u = out[0][..., :k]
        phase = _phases(u)
        if name == "svd":  # V's columns rather than Vh's rows
            return (u * phase.conj(), out[1], out[2][..., :k] * phase.conj())
        return (u * phase.conj(), out[1], out[2][..., :k, :] * phase.mT)
    return out


def run_sample(op, sample, dtype, with_grad, stay=frozenset()):
    """'passed', 'fell_back', 'failed: <why>', 'random', or None (the CPU raises too)."""
    import torch

    import torch_pjrt

    args = (sample.input, sample.args, sample.kwargs)
    with _RandomnessProbe() as probe:
        try:
            cpu_out = _canonical(op, op(sample.input, *sample.args, **sample.kwargs))
            cpu_grads = _backward(cpu_out, args) if with_grad else None
        except Exception:
            return None
    if probe.random:
        return "random"  # draws random numbers: the device generator's values differ
    torch_pjrt.metrics.reset()
    try:
        tpu_input, tpu_args, tpu_kwargs = _to_device(args, "tpu", stay)
        tpu_out = _canonical(op, op(tpu_input, *tpu_args, **tpu_kwargs))
        tpu_grads = _backward(tpu_out, (tpu_input, tpu_args, tpu_kwargs)) if with_grad else None
        tol = _tolerances(dtype)
        torch.testing.assert_close(
            _without_tie_order(op, sample, _to_device(tpu_out, "cpu")),
            _without_tie_order(op, sample, cpu_out),
            equal_nan=True,
            **tol,
        )
        if cpu_grads is not None:
            torch.testing.assert_close(
                _to_device(list(tpu_grads), "cpu"), list(cpu_grads), equal_nan=True, **tol
            )
    except Exception as e:
        return "failed: " + (str(e).strip().splitlines() or [type(e).__name__])[0][:200]
    return "fell_back" if torch_pjrt.metrics.counters()["cpu_fallbacks"] else "passed"


def run_op(op, dtypes, max_samples):
    import torch

    result = {"op": op_key(op), "samples": 0, "passed": 0, "failed": 0, "fell_back": 0,
              "random": 0, "dtypes": [], "first_failure": ""}  # fmt: skip
    supported = op.supported_dtypes("cpu")
    for name in dtypes:
        dtype = getattr(torch, name)
        if dtype not in supported or op.has_nondeterministic_output:
            continue
        result["dtypes"].append(name)
        with_grad = dtype == torch.float32 and op.supports_autograd
        try:
            samples = list(op.sample_inputs("cpu", dtype, requires_grad=with_grad))[:max_samples]
        except Exception:
            continue
        stays = host_leaves(op, dtype, len(samples))
        for sample, stay in zip(samples, stays):
            status = run_sample(op, sample, dtype, with_grad, stay)
            if status is None:
                continue
            if status == "random":
                result["random"] += 1
                continue
            result["samples"] += 1
            if status.startswith("failed"):
                result["failed"] += 1
                if not result["first_failure"]:
                    result["first_failure"] = f"{name}: {status[8:]}"
            else:
                result[status] += 1
    return result


def worker(args):
    import warnings

    warnings.filterwarnings("ignore")
    ops = select_ops(args.ops, args.part)
    with open(args.results, "a") as out:
        for index in range(args.start, len(ops)):
            out.write(json.dumps({"begin": index}) + "\n")
            out.flush()
            result = run_op(ops[index], args.dtypes.split(","), args.max_samples)
            out.write(json.dumps({"index": index, **result}) + "\n")
            out.flush()


def drive(args):
    names = [op_key(op) for op in select_ops(args.ops, args.part)]
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "results.jsonl")
        start = 0
        while start < len(names):
            cmd = [sys.executable, __file__, "--worker", "--start", str(start), "--results", path,
                   "--ops", args.ops, "--part", args.part, "--dtypes", args.dtypes,
                   "--max-samples", str(args.max_samples)]  # fmt: skip
            subprocess.run(cmd, check=False, stdout=subprocess.DEVNULL)
            begun = None
            with open(path) as f:
                for line in f:
                    rec = json.loads(line)
                    if "begin" in rec:
                        begun = rec["begin"]
                    else:
                        results[rec["index"]] = rec
                        begun = None
            if begun is not None and begun not in results:  # the worker died on this op
                results[begun] = {"op": names[begun], "samples": 1, "passed": 0, "failed": 1,
                                  "fell_back": 0, "random": 0, "dtypes": [],
                                  "first_failure": "the process crashed"}  # fmt: skip
            start = max(results) + 1 if results else len(names)
    k, n = (int(x) for x in args.part.split("/"))
    # `order`: the op's place in the whole selection, which --merge sorts the parts' rows by.
    return [{**results[i], "order": i * n + k - 1} for i in sorted(results)]


# Sections of the report written by other tools (tools/upstream_tests.py), kept on regeneration.
KEPT_FROM = "\n## PyTorch's own device-generic tests"


def _kept_sections(path):
    if not os.path.exists(path):
        return ""
    with open(path) as f:
        old = f.read()
    start = old.find(KEPT_FROM)
    return old[start:] if start >= 0 else ""


def _cause(failure):
    """A failure message without its dtype and numbers, to group failures by cause."""
    why = failure.split(": ", 1)[-1]
    return re.sub(r"\d+(\.\d+)?", "N", why)[:110]


def summarize(rows):
    samples = sum(r["samples"] for r in rows)
    passed = sum(r["passed"] for r in rows)
    return {"ops": len(rows), "samples": samples, "passed": passed,
            "fell_back": sum(r["fell_back"] for r in rows),
            "failed": sum(r["failed"] for r in rows), "random": sum(r["random"] for r in rows),
            "pass_rate": round(100.0 * passed / samples, 2) if samples else 0.0}  # fmt: skip


def write_report(rows, path, runs):
    """`runs`: the commands that produced `rows`, each with the seconds it took."""
    s = summarize(rows)
    clean_ops = sum(1 for r in rows if r["samples"] and r["passed"] == r["samples"])
    fallback_rate = 100.0 * s["fell_back"] / s["samples"] if s["samples"] else 0.0
    total = sum(seconds for _, seconds in runs)
    made_by = [f"- `{command}`: {seconds:.0f} s" for command, seconds in runs]
    lines = [
        '# OpInfo coverage on device "tpu"',
        "",
        f"Generated in {total:.0f} s (XLA CPU PJRT plugin) by:",
        "",
        *made_by,
        "",
        'Each OpInfo sample runs on "tpu" and on the CPU; float32 samples also compare gradients.',
        "A sample passes when the results match with no CPU fallback.",
        "",
        f"**Overall: {s['passed']} of {s['samples']} samples passed natively ({s['pass_rate']:.1f}%)**;",
        f"{s['fell_back']} matched through the CPU fallback ({fallback_rate:.1f}%); {s['failed']} failed.",
        f"{clean_ops} of {len(rows)} OpInfos pass every sample. Not counted: {s['random']} samples",
        "that draw random numbers (the device generator's values differ from the CPU's;",
        "tests/python/test_random.py checks them statistically), and ops PyTorch marks as having",
        "nondeterministic output (empty*).",
        "",
        "| op | dtypes | samples | passed | failed | fell back | first failure |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]  # fmt: skip
    causes = {}
    for r in rows:
        why = r["first_failure"].replace("|", "\\|").replace("\n", " ")
        lines.append(f"| {r['op']} | {' '.join(r['dtypes'])} | {r['samples']} | {r['passed']} | "
                     f"{r['failed']} | {r['fell_back']} | {why} |")  # fmt: skip
        if r["failed"]:
            causes.setdefault(_cause(why), []).append(r["op"])
    lines += ["", "## Failures by cause (first failure of each op)", "",
              "| cause | ops |", "| --- | --- |"]  # fmt: skip
    for cause, ops in sorted(causes.items(), key=lambda kv: -len(kv[1])):
        lines.append(f"| {cause} | {len(ops)}: {' '.join(ops)} |")
    kept = _kept_sections(path)
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n" + kept)
    return s


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--ops", default=".", help="regex on OpInfo names (default: all)")
    p.add_argument("--dtypes", default=",".join(OUR_DTYPES))
    p.add_argument("--max-samples", type=int, default=6, help="per op and dtype")
    p.add_argument("--part", default="1/1", help="K/N: run the K-th of N parts of the ops")
    p.add_argument("--json", help="write the rows to this file instead of the report")
    p.add_argument("--merge", nargs="+", metavar="JSON", help="write the report from parts' --json")
    p.add_argument("--output", default=os.path.join(os.path.dirname(__file__), "..", "docs",
                                                     "op_coverage.md"))  # fmt: skip
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--start", type=int, default=0, help=argparse.SUPPRESS)
    p.add_argument("--results", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker:
        worker(args)
        return
    if args.merge:
        parts = []
        for path in args.merge:
            with open(path) as f:
                parts.append(json.load(f))
        rows = {}  # an op's row from a later file (a rerun of some ops) replaces it in its place
        for part in parts:
            for r in part["rows"]:
                rows[r["op"]] = {**r, "order": rows[r["op"]]["order"]} if r["op"] in rows else r
        rows = sorted(rows.values(), key=lambda r: r["order"])
        runs = [(part["command"], part["seconds"]) for part in parts]
        print(json.dumps(write_report(rows, args.output, runs)))
        return
    start = time.time()
    rows = drive(args)
    command = ("python tools/op_coverage.py " + " ".join(sys.argv[1:])).strip()
    seconds = time.time() - start
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"command": command, "seconds": seconds, "rows": rows}, f)
        print(json.dumps(summarize(rows)))
    else:
        print(json.dumps(write_report(rows, args.output, [(command, seconds)])))


if __name__ == "__main__":
    main()
