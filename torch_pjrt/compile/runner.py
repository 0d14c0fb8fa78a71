"""One ATen FX graph (from aot_autograd) compiled for "tpu": per input signature, a trace into one
StableHLO program, the program from the memory cache, the disk cache or the plugin, and replays
that call the program on new input buffers without running Python per op.

A signature covers every input's device, dtype, sizes, strides, storage offset and size, which
inputs share a storage, and the values of non-tensor inputs, so a new shape compiles a new program
(counted as a shape recompile). A graph that cannot be replayed faithfully (it reads device values
on the host, takes CPU tensors, returns CPU tensors, ...) runs eagerly as one fused program per call
instead, with a one-time warning naming the reason: slower, never wrong.
"""

import os
import time
import warnings
import weakref
from collections import OrderedDict

import torch
from torch._subclasses import FakeTensorMode
from torch.fx._graph_pickler import GraphPickler, Options
from torch.fx.experimental.symbolic_shapes import ShapeEnv

from .. import _C, introspection
from .. import _compile_stats as stats
from .. import cache as disk_cache

# The in-memory caches, least recently used first, each bounded by TORCH_PJRT_PROGRAM_CACHE_SIZE
# (as the eager program cache is): every executable holds JIT code and memory mappings in the
# plugin, so a run whose shapes keep changing must not keep them all.
_programs = OrderedDict()  # structural key -> _C._Executable
_entries = OrderedDict()  # a CompiledGraph's entry -> (weakref to that graph, its signature)
_fingerprint = None
_warned = set()
_graph_ids = iter(range(1, 1 << 62))
# The StableHLO of the most recently compiled graphs by name ("compiled graph_<id>_<kind>"), for
# torch.tpu.compiled_graph_stablehlo(); bounded, most recent last.
_texts = OrderedDict()
_MAX_TEXTS = 64


def graph_texts():
    """{name: StableHLO text} of the last graphs compiled in this process, oldest first."""
    return dict(_texts)


def _remember_text(name, text):
    _texts.pop(name, None)
    _texts[name] = text
    while len(_texts) > _MAX_TEXTS:
        _texts.popitem(last=False)


def clear_memory_cache():
    _programs.clear()


def _forget(entries):
    """A collected graph's signatures leave the LRU order (their programs go with them)."""
    for entry in entries.values():
        _entries.pop(entry, None)


def _evict():
    """Drops the least recently used signatures and programs past the capacity."""
    capacity = _C._program_cache_capacity()  # the eager cache's (eager.py reads the variable)
    while len(_entries) > capacity:
        _, (graph_ref, sig) = _entries.popitem(last=False)
        graph = graph_ref()
        if graph is not None:
            graph.entries.pop(sig, None)
        stats.add("evictions")
    while len(_programs) > capacity:
        _programs.popitem(last=False)


def _warn_once(message):
    if message not in _warned:
        _warned.add(message)
        warnings.warn(message, stacklevel=3)


def _executable(cg, dump_prefix, name):
    """The executable for a traced graph: memory cache, then disk cache, then the plugin. A new
    one is called `name` in profiles."""
    global _fingerprint
    options = _C._compile_options_key()
    key = (cg.key, options)
    text = cg.stablehlo()
    _remember_text(name, text)
    if dump_prefix:
        with open(dump_prefix + ".stablehlo.mlir", "w") as f:
            f.write(text)
    exe = _programs.get(key)
    if exe is not None:
        _programs.move_to_end(key)
        stats.add("memory_hits")
        return exe
    start = time.perf_counter()
    disk_key = None
    if disk_cache.cache_dir() is not None:
        if _fingerprint is None:
            _fingerprint = disk_cache.environment_fingerprint()
        disk_key = disk_cache.key_for(text, _fingerprint, options)
        status, payload = disk_cache.load(disk_key)
        if status == "hit":
            try:
                exe = _C._load_executable(payload)
            except (
                RuntimeError,
                ValueError,
            ):  # from another build, or damaged in a way the digest missed
                disk_cache.discard(disk_key)
                status = "corrupt"
        if status == "corrupt":
            stats.add("disk_errors")
        if exe is not None and exe.num_outputs == cg.num_program_outputs:
            stats.add("disk_hits")
        else:
            exe = None
    if exe is None:
        exe = _C._compile_stablehlo(text)
        stats.add("xla_compiles")
        if disk_key is not None:
            try:
                if disk_cache.store(disk_key, exe.serialize()):
                    stats.add("disk_writes")
            except RuntimeError as e:  # the plugin cannot serialize: the memory cache still works
                _warn_once(f"torch_pjrt: compiled programs are not cached on disk: {e}")
    stats.add("compile_seconds", time.perf_counter() - start)
    exe.name = name
    _programs[key] = exe
    _evict()
    return exe


class _Replay:
    """A signature served by a compiled program: the program's tensor outputs fill the slots of
    `template` (the traced outputs, with non-tensor outputs kept as they were). CPU scalar inputs
    (e.g. optimizer step counts) are uploaded per call; outputs the graph produces on the CPU, and
    the CPU inputs it updates in place (`writeback`), are read back."""

    __slots__ = (
        "as_tuple", "cpu_inputs", "cpu_slots", "graph", "template", "tensor_slots", "writeback"
    )  # fmt: skip

    def __init__(self, graph, template, tensor_slots, as_tuple, cpu_inputs, cpu_slots, writeback):
        self.graph = graph
        self.template = template
        self.tensor_slots = tensor_slots
        self.as_tuple = as_tuple
        self.cpu_inputs = cpu_inputs
        self.cpu_slots = cpu_slots
        self.writeback = writeback

    def __call__(self, args):
        uploaded = _upload(args, self.cpu_inputs)
        tensors = self.graph.run(uploaded)
        out = list(self.template)
        for slot, t in zip(self.tensor_slots, tensors):
            out[slot] = t
        _read_back(out, self.cpu_slots, [(args[i], uploaded[i]) for i in self.writeback])
        stats.add("replays")
        return tuple(out) if self.as_tuple else out


def _upload(args, cpu_inputs):
    """`args` with the CPU scalar inputs on the device: stacked into one upload when they share a
    dtype (AdamW has one step count per parameter), each then a view of that one storage."""
    if not cpu_inputs:
        return list(args)
    args = list(args)
    idx = [i for i, _ in cpu_inputs]
    device = cpu_inputs[0][1]
    if len(idx) > 1 and len({args[i].dtype for i in idx}) == 1:
        packed = torch.stack([args[i] for i in idx]).to(device)
        for k, i in enumerate(idx):
            args[i] = packed[k]
    else:
        for i in idx:
            args[i] = args[i].to(device)
    return args


def _read_back(out, cpu_slots, writeback=()):
    """The CPU outputs, and the CPU inputs the graph updated in place ((CPU tensor, its device
    copy) pairs), read back with one transfer when they share a dtype and shape (the graph's host
    round trips, counted as such)."""
    values = [out[s] for s in cpu_slots] + [device for _, device in writeback]
    if not values:
        return
    with _C._OpHostReads():
        if len(values) > 1 and len({(v.dtype, v.shape) for v in values}) == 1:
            host = list(torch.stack(values).cpu())
        else:
            host = [v.cpu() for v in values]
    for s, h in zip(cpu_slots, host):
        out[s] = h
    for (cpu, _), h in zip(writeback, host[len(cpu_slots) :]):
        cpu.copy_(h)


def _cpu_outputs(gm):
    """Which of the graph's outputs it computes on the CPU (from the FX output's metadata)."""
    out = next(node for node in reversed(gm.graph.nodes) if node.op == "output")
    vals = out.args[0] if isinstance(out.args[0], (tuple, list)) else [out.args[0]]
    flags = []
    for v in vals:
        meta = v.meta.get("val") if isinstance(v, torch.fx.Node) else None
        flags.append(isinstance(meta, torch.Tensor) and meta.device.type == "cpu")
    return flags


class _Eager:
    """A signature run eagerly, recorded as one fused program per call."""

    __slots__ = ("gm",)

    def __init__(self, gm):
        self.gm = gm

    def __call__(self, args):
        with _C._FusedScope():
            return self.gm(*args)


class CompiledGraph:
    """The callable returned to aot_autograd for one FX graph (boxed calling convention). It
    pickles as its FX graph (node by node, without node metadata), kind and CPU outputs; an
    unpickled one traces and finds its programs anew."""

    _boxed_call = True

    def __init__(self, gm, kind, cpu_outputs=None):
        self.gm = gm
        self.kind = kind
        self.cpu_outputs = _cpu_outputs(gm) if cpu_outputs is None else cpu_outputs
        self.id = next(_graph_ids)
        self.entries = {}
        weakref.finalize(self, _forget, self.entries)

    def __reduce__(self):
        # GraphPickler, not GraphModule's own pickling: that re-traces the generated code on load,
        # which would freeze the results of ops without tensor inputs (factories, random ops).
        options = Options(ops_filter=None, node_metadata_key_filter=lambda key: False)
        return _unpickle_graph, (GraphPickler.dumps(self.gm, options), self.kind, self.cpu_outputs)

    def __call__(self, args):
        sig = _C._graph_signature(args)
        entry = self.entries.get(sig)
        if entry is not None:
            _entries.move_to_end(entry)
            return entry(args)
        return self._first_call(sig, args)

    def _remember(self, sig, entry):
        self.entries[sig] = entry
        _entries[entry] = (weakref.ref(self), sig)
        _evict()
        return entry

    def _device(self, args):
        for a in args:
            if isinstance(a, torch.Tensor) and a.device.type == "tpu":
                return a.device.index
        return torch.tpu.current_device()

    def _eager(self, sig, args, reason):
        _warn_once(
            f"torch_pjrt: a {self.kind} graph runs eagerly (one fused program per call) "
            f"instead of as a compiled program: {reason}"
        )
        stats.add("eager_graphs")
        return self._remember(sig, _Eager(self.gm))

    def _first_call(self, sig, args):
        device = self._device(args)
        cpu_inputs = []
        for i, a in enumerate(args):
            if isinstance(a, torch.Tensor) and a.device.type != "tpu":
                if a.device.type != "cpu" or a.dim() != 0:
                    return self._eager(sig, args, "it takes CPU tensors as inputs")(args)
                cpu_inputs.append((i, torch.device("tpu", device)))
        start = time.perf_counter()
        traced_args = _upload(args, cpu_inputs)
        session = _C._TraceSession(traced_args)
        try:
            with torch.tpu.device(device):
                outs = self.gm(*traced_args)
        finally:
            session.close()
        as_tuple = isinstance(outs, tuple)
        seq = list(outs) if isinstance(outs, (tuple, list)) else None
        reason = None
        cpu_flags = (
            self.cpu_outputs if seq is not None and len(self.cpu_outputs) == len(seq) else None
        )
        if seq is None or cpu_flags is None:
            reason = "its outputs are not a flat tuple"
        tensor_slots, tensors, template, cpu_slots = [], [], list(seq or ()), []
        for i, o in enumerate(seq if reason is None else ()):
            if isinstance(o, torch.Tensor):
                if o.device.type != "tpu":
                    reason = "it returns CPU tensors"
                    break
                tensor_slots.append(i)
                tensors.append(o)
                template[i] = None
                if cpu_flags[i]:
                    cpu_slots.append(i)
            elif not (o is None or isinstance(o, (bool, int, float))):
                reason = f"it returns a {type(o).__name__}"
                break
        if reason is None:
            r = session.finish(traced_args, tensors, device)
            reason = r if isinstance(r, str) else None
        stats.add("trace_seconds", time.perf_counter() - start)
        if reason is not None:
            # The traced work is still recorded: it runs as ordinary pending work.
            self._eager(sig, args, reason)
            if seq is None:
                return outs
            seq = [o.cpu() if cpu_flags and cpu_flags[i] else o for i, o in enumerate(seq)]
            return tuple(seq) if as_tuple else seq
        cg = r
        if self.entries:
            stats.add("shape_recompiles")
        stats.add("graphs_compiled")
        dump_prefix = self._dump()
        name = f"compiled graph_{self.id}_{self.kind}"
        exe = _executable(cg, dump_prefix, name) if cg.num_program_outputs else None
        cg.first_run(exe)
        # A CPU input the graph updates in place (aot_autograd keeps the update in the graph) is
        # written back after each call; uploaded together, the CPU inputs share one device
        # storage, so all of them are.
        cpu_idx = [i for i, _ in cpu_inputs]
        writeback = cpu_idx if any(j in cpu_idx for j in cg.mutated_inputs) else []
        replay = _Replay(cg, template, tensor_slots, as_tuple, cpu_inputs, cpu_slots, writeback)
        self._remember(sig, replay)
        _read_back(seq, cpu_slots, [(args[i], traced_args[i]) for i in writeback])
        return tuple(seq) if as_tuple else seq

    def _dump(self):
        d = introspection.dump_dir()  # TORCH_PJRT_DUMP_DIR or torch.tpu._set_dump_on_cache_miss
        if not d:
            return None
        os.makedirs(d, exist_ok=True)
        prefix = os.path.join(d, f"graph_{self.id:03d}_{self.kind}_{len(self.entries):02d}")
        with open(prefix + ".fx.txt", "w") as f:
            f.write(self.gm.print_readable(print_output=False))
        return prefix


def _unpickle_graph(data, kind, cpu_outputs):
    gm = GraphPickler.loads(data, FakeTensorMode(shape_env=ShapeEnv()))
    gm.recompile()
    return CompiledGraph(gm, kind, cpu_outputs)
