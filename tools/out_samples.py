"""Finds, for every out= overload of an op the "tpu" device implements, an OpInfo sample that calls
it (or its functional sibling) on the CPU, and writes tests/python/out_samples.json, which
tests/python/test_out_views.py replays through out= views.

The ops are enumerated from the dispatcher: every aten operator with a PrivateUse1 kernel, and
every overload of it that has out= arguments. Samples come from PyTorch's OpInfo databases (op_db
and the _foreach_* ones), forward and, for float32, backward, recorded with a TorchDispatchMode.
A sample whose output has at least two dimensions and four elements is preferred (it makes
strided and transposed views meaningful).

  python tools/out_samples.py            # rewrites tests/python/out_samples.json (about a minute)
"""

import argparse
import json
import os
import warnings

import torch
from torch.utils._python_dispatch import TorchDispatchMode

import torch_pjrt  # noqa: F401  (registers the PrivateUse1 kernels the enumeration reads)

OUTPUT = os.path.join(os.path.dirname(__file__), "..", "tests", "python", "out_samples.json")
DTYPES = (torch.float32, torch.int64, torch.bool)


def is_out(overload):
    return any(a.is_out for a in overload._schema.arguments)


def out_overloads():
    """{name: overload} of every out= overload of an aten op with a PrivateUse1 kernel."""
    found = {}
    for reg in torch._C._dispatch_get_registrations_for_dispatch_key("PrivateUse1"):
        if not reg.startswith("aten::"):
            continue
        packet = getattr(torch.ops.aten, reg[len("aten::") :].partition(".")[0], None)
        if packet is None:
            continue
        for name in packet.overloads():
            overload = getattr(packet, name)
            if is_out(overload):
                found[str(overload)] = overload
    return found


# Arguments of factory functions that out= overloads leave out (the out tensor supplies them).
OPTIONS = {"dtype", "layout", "device", "pin_memory", "memory_format"}


def _signature(overload, keep):
    return [(a.name, str(a.type)) for a in overload._schema.arguments
            if keep(a) and a.name not in OPTIONS]  # fmt: skip


def functional_sibling(overload):
    """The overload of the same op taking overload's arguments without the out= ones (and without
    tensor options, for factories), if any."""
    wanted = _signature(overload, lambda a: not a.is_out)
    packet = overload.overloadpacket
    for name in packet.overloads():
        candidate = getattr(packet, name)
        if not is_out(candidate) and _signature(candidate, lambda a: True) == wanted:
            return candidate
    return None


def opinfos():
    """(key, OpInfo, is_foreach) of every OpInfo database entry."""
    import torch.testing._internal.common_methods_invocations as cmi

    for op in cmi.op_db:
        yield op.name + ("." + op.variant_test_name if op.variant_test_name else ""), op, False
    for db in ("foreach_unary_op_db", "foreach_binary_op_db", "foreach_pointwise_op_db",
               "foreach_reduce_op_db", "foreach_other_op_db"):  # fmt: skip
        for op in getattr(cmi, db):
            yield "foreach:" + op.name, op, True


def samples(op, foreach, dtype, requires_grad):
    if foreach:
        return op.sample_inputs("cpu", dtype, requires_grad=requires_grad, num_input_tensors=[2])
    return op.sample_inputs("cpu", dtype, requires_grad=requires_grad)


def run_sample(op, sample, backward):
    out = op(sample.input, *sample.args, **sample.kwargs)
    if backward:
        leaves = [t for t in torch.utils._pytree.tree_leaves(out) if isinstance(t, torch.Tensor)]
        grads = [t.sum() for t in leaves if t.requires_grad and t.is_floating_point()]
        if grads:
            torch.autograd.backward(sum(grads))


def quality(result):
    """2 for an output of rank >= 2 with >= 4 elements, 1 for rank >= 1, else 0."""
    tensors = [t for t in torch.utils._pytree.tree_leaves(result) if isinstance(t, torch.Tensor)]
    if not tensors:
        return 0
    t = tensors[0]
    return 2 if t.dim() >= 2 and t.numel() >= 4 else int(t.dim() >= 1 and t.numel() >= 2)


class Recorder(TorchDispatchMode):
    """Notes, per overload, the best sample locator seen so far."""

    def __init__(self, wanted):
        super().__init__()
        self.wanted = wanted
        self.best = {}
        self.locator = None

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        result = func(*args, **(kwargs or {}))
        name = str(func)
        if name in self.wanted:
            q = quality(result)
            if name not in self.best or q > self.best[name][0]:
                self.best[name] = (q, self.locator)
        return result


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--output", default=OUTPUT)
    parser.add_argument("--max-samples", type=int, default=3)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    targets = out_overloads()
    wanted = set(targets)
    for overload in targets.values():
        sibling = functional_sibling(overload)
        if sibling is not None:
            wanted.add(str(sibling))
    rec = Recorder(wanted)
    for key, op, foreach in opinfos():
        for dtype in DTYPES:
            if dtype not in op.supported_dtypes("cpu"):
                continue
            for backward in (False, True) if dtype == torch.float32 else (False,):
                if backward and not op.supports_autograd:
                    continue
                try:
                    for i, sample in enumerate(samples(op, foreach, dtype, backward)):
                        if i >= (4 * args.max_samples if foreach else args.max_samples):
                            break
                        rec.locator = {"opinfo": key, "dtype": str(dtype)[len("torch.") :],
                                       "sample": i, "backward": backward}  # fmt: skip
                        with rec:
                            run_sample(op, sample, backward)
                except Exception:  # a sample the CPU rejects: try the next one
                    continue
    table = {}
    for name, overload in sorted(targets.items()):
        options = [name]
        sibling = functional_sibling(overload)
        if sibling is not None:
            options.append(str(sibling))
        found = [rec.best[o] + (o,) for o in options if o in rec.best]
        if found:
            _, locator, via = max(found, key=lambda f: f[0])
            table[name] = {**locator, "via": via}
    with open(args.output, "w") as f:  # one overload per line
        lines = [f"{json.dumps(k)}: {json.dumps(v, sort_keys=True)}" for k, v in table.items()]
        f.write("{\n" + ",\n".join(lines) + "\n}\n")
    missing = sorted(set(targets) - set(table))
    print(f"{len(table)} of {len(targets)} out= overloads have a sample; without one: {missing}")


if __name__ == "__main__":
    main()
