"""Torch ops backed by custom kernels: what `torch.tpu.pallas.jax_op` and
`torch_pjrt.stablehlo_op` share.

A kernel op is a `torch.library` custom op whose schema comes from the annotated signature of a
Python function. Tensor parameters are the kernel's inputs; every other parameter is static: its
value is part of the cache key. Per input signature (shapes, dtypes and static values) the op's
`lower` callback produces the kernel's StableHLO functions once; they are registered in C++
(`_C._register_custom_kernel`) and each call records one graph node that calls them
(`_C._call_custom_kernel`), inside whatever program that node joins. The fake kernel takes output
shapes from the op's `shapes` callback, so FakeTensor, Dynamo and AOTAutograd work.
"""

import collections.abc
import dataclasses
import functools
import hashlib
import inspect
import json
import numbers
import threading
import types
import typing

import torch

from . import _C

# Counters of all kernel ops (torch_pjrt.metrics.counters()["custom_kernels"]).
_stats = {"lowerings": 0, "calls": 0}
_stats_lock = threading.Lock()


def stats():
    with _stats_lock:
        return dict(_stats, kernels=_C._registered_custom_kernels())


def reset_stats():
    with _stats_lock:
        for k in _stats:
            _stats[k] = 0


def _count(key):
    with _stats_lock:
        _stats[key] += 1


# dtypes a kernel may take or return (the device's element types).
SUPPORTED_DTYPES = (
    torch.float32,
    torch.float64,
    torch.float16,
    torch.bfloat16,
    torch.int8,
    torch.int16,
    torch.int32,
    torch.int64,
    torch.uint8,
    torch.bool,
)


@dataclasses.dataclass(frozen=True)
class TensorSpec:
    """Shape and dtype of a kernel's tensor input or output."""

    shape: tuple
    dtype: torch.dtype


@dataclasses.dataclass(frozen=True)
class Lowered:
    """What `lower` returns for one input signature: the kernel's `func.func` definitions
    (uniquely named, none public), the entry function, and the entry's output specs in order."""

    functions: str
    entry: str
    outputs: tuple


@dataclasses.dataclass(frozen=True)
class Param:
    name: str
    kind: str  # "tensor", "tensor_list", "optional_tensor" or "static"
    schema_type: str
    default: object
    kw_only: bool


_STATIC_TYPES = {
    bool: "bool",
    int: "int",
    float: "float",
    str: "str",
    numbers.Number: "Scalar",
    torch.dtype: "ScalarType",
    torch.device: "Device",
}
_SEQUENCES = (list, tuple, collections.abc.Sequence)


def _literal_type(name, pname, args):
    kinds = {type(a) for a in args}
    if len(kinds) == 1 and next(iter(kinds)) in (bool, int, str):
        return _STATIC_TYPES[next(iter(kinds))]
    raise TypeError(f"{name}: parameter '{pname}': Literal values must all be bool, int or str")


def _param_kind(name, pname, annotation, tensor_types):
    """(kind, schema type) of a parameter annotated `annotation`."""
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if annotation in tensor_types:
        return "tensor", "Tensor"
    if origin in (typing.Union, types.UnionType) and type(None) in args:
        rest = [a for a in args if a is not type(None)]
        if len(rest) == 1:
            kind, schema = _param_kind(name, pname, rest[0], tensor_types)
            if kind == "tensor":
                return "optional_tensor", "Tensor?"
            if kind == "static" and not schema.endswith("?"):
                return "static", schema + "?"
    elif origin in _SEQUENCES and args:
        item = args[0]
        if (origin is tuple and len(args) == 2 and args[1] is Ellipsis) or len(args) == 1:
            kind, schema = _param_kind(name, pname, item, tensor_types)
            if kind == "tensor":
                return "tensor_list", "Tensor[]"
            if schema in ("bool", "int", "float"):
                return "static", schema + "[]"
    elif origin is typing.Literal:
        return "static", _literal_type(name, pname, args)
    elif annotation in _STATIC_TYPES:
        return "static", _STATIC_TYPES[annotation]
    raise TypeError(
        f"{name}: parameter '{pname}' has the unsupported annotation {annotation!r}; allowed: "
        "tensors (optionally in a list, tuple or Sequence, or Optional) and bool, int, float, "
        "str, numbers.Number, torch.dtype, torch.device, Literal, Sequence[int/float/bool], "
        "or Optional of these"
    )


def _schema_default(name, pname, value):
    if value is None or isinstance(value, bool):
        return str(value)
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, (list, tuple)) and all(isinstance(v, (int, float)) for v in value):
        return "[" + ", ".join(repr(v) for v in value) + "]"
    raise TypeError(f"{name}: parameter '{pname}' has a default ({value!r}) a schema cannot hold")


def symbol_prefix(name, text):
    """The prefix of a kernel's function names: unique to the op and its text, so kernels never
    collide with @main or with each other (two ops with the same text stay two kernels, each
    named after its op in errors)."""
    return "k" + hashlib.blake2b(f"{name}\0{text}".encode(), digest_size=8).hexdigest() + "_"


def check_name(name):
    if not isinstance(name, str) or name.count("::") != 1 or not all(name.split("::")):
        raise ValueError(f'custom op name must be "namespace::name" (one "::"), got {name!r}')


def parse_signature(name, fn, tensor_types):
    """The op's parameters, from `fn`'s annotations (parameters bound by functools.partial
    excluded), and its schema's return part from the return annotation."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError) as e:
        raise TypeError(f"{name}: cannot read the signature of {fn!r}: {e}") from None
    hints = typing.get_type_hints(fn.func if isinstance(fn, functools.partial) else fn)
    params = []
    for p in sig.parameters.values():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            raise TypeError(f"{name}: *args and **kwargs parameters are not supported ({p.name})")
        annotation = hints.get(p.name, p.annotation)
        if annotation is inspect.Parameter.empty:
            raise TypeError(
                f"{name}: parameter '{p.name}' has no type annotation; every parameter needs one "
                "(a tensor type for inputs, a plain type for static values)"
            )
        kind, schema_type = _param_kind(name, p.name, annotation, tensor_types)
        if kind != "static" and p.kind == p.KEYWORD_ONLY:
            raise TypeError(
                f"{name}: tensor parameter '{p.name}' is keyword-only; torch custom ops take "
                "tensors as positional parameters"
            )
        default = p.default
        if default is not inspect.Parameter.empty:
            _schema_default(name, p.name, default)
        params.append(Param(p.name, kind, schema_type, default, p.kind == p.KEYWORD_ONLY))
    if not any(p.kind != "static" for p in params):
        raise TypeError(f"{name}: the function needs at least one tensor parameter")
    return params


def returns_of(name, annotation, tensor_types):
    """ "tensor", ("tuple", n) or "list" for a return annotation."""
    if annotation in tensor_types:
        return "tensor"
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis and args[0] in tensor_types:
        return "list"
    if origin is tuple and args and all(a in tensor_types for a in args):
        return ("tuple", len(args))
    if origin is list and len(args) == 1 and args[0] in tensor_types:
        return "list"
    raise TypeError(
        f"{name}: unsupported return annotation {annotation!r}; use a tensor type, a tuple of "
        "them, tuple[T, ...] or list[T]"
    )


def schema_of(name, params, returns):
    parts, star = [], False
    for p in params:
        if p.kw_only and not star:
            parts.append("*")
            star = True
        s = f"{p.schema_type} {p.name}"
        if p.default is not inspect.Parameter.empty:
            s += "=" + _schema_default(name, p.name, p.default)
        parts.append(s)
    if returns == "tensor":
        ret = "Tensor"
    elif returns == "list":
        ret = "Tensor[]"
    else:
        ret = "(" + ", ".join(["Tensor"] * returns[1]) + ")"
    return "(" + ", ".join(parts) + ") -> " + ret


def _hashable(name, pname, value):
    if isinstance(value, list):
        value = tuple(value)
    try:
        hash(value)
    except TypeError:
        raise TypeError(
            f"{name}: static argument '{pname}' ({type(value).__name__}) is not hashable; "
            "static arguments are part of the kernel cache key"
        ) from None
    return value


def check_hashable(name, bound):
    """Checks values bound by functools.partial (part of the kernel, so of its identity)."""
    for pname, value in bound.items():
        _hashable(name, pname, value)


def spec_of(name, what, t):
    if t.dtype not in SUPPORTED_DTYPES:
        raise TypeError(f"{name}: {what} has dtype {t.dtype}, which kernels do not support")
    for s in t.shape:
        if isinstance(s, torch.SymInt):
            raise RuntimeError(
                f"{name}: {what} has a symbolic size ({tuple(t.shape)}); kernel ops need static "
                "shapes: override the fake kernel with register_fake, or compile without "
                "dynamic=True"
            )
    return TensorSpec(tuple(t.shape), t.dtype)


class KernelOp:
    """One custom op: `lower(specs, statics)` -> Lowered and `shapes(specs, statics)` ->
    output specs, both called at most once per signature. `specs` holds one entry per tensor
    parameter (a TensorSpec, a tuple of them for a list, None for an absent optional tensor);
    `statics` maps static parameter names to their (hashable) values."""

    def __init__(self, name, params, returns, lower, shapes, donate=()):
        self.name = name
        self.params = params
        self.returns = returns
        self._lower = lower
        self._shapes = shapes
        self.donate = tuple(donate)  # indices of params whose tensors are donated
        self._lowered = {}  # signature -> (kernel id, output specs)
        self._shaped = {}  # signature -> output specs
        self._direct = {}  # call()'s key -> kernel id
        self._lock = threading.Lock()
        self.signature = inspect.Signature(
            [
                inspect.Parameter(
                    p.name,
                    inspect.Parameter.KEYWORD_ONLY
                    if p.kw_only
                    else inspect.Parameter.POSITIONAL_OR_KEYWORD,
                    default=p.default,
                )
                for p in params
            ]
        )

    def define(self):
        """The torch.library.CustomOpDef: implementation on "tpu", fake kernel."""
        schema = schema_of(self.name, self.params, self.returns)
        op = torch.library.custom_op(
            self.name, self._impl, mutates_args=(), device_types="tpu", schema=schema
        )
        op.register_fake(self._fake)
        return op

    def split(self, args, kwargs):
        """(tensor inputs flattened, per-tensor-param specs, statics, donated flat indices)."""
        bound = self.signature.bind(*args, **kwargs)
        bound.apply_defaults()
        flat, specs, statics, donated = [], [], {}, []
        for i, p in enumerate(self.params):
            v = bound.arguments[p.name]
            start = len(flat)
            if p.kind == "static":
                statics[p.name] = _hashable(self.name, p.name, v)
                continue
            if p.kind == "tensor":
                flat.append(v)
                specs.append(spec_of(self.name, f"input '{p.name}'", v))
            elif p.kind == "tensor_list":
                flat.extend(v)
                specs.append(
                    tuple(spec_of(self.name, f"input '{p.name}[{k}]'", t) for k, t in enumerate(v))
                )
            elif v is None:
                specs.append(None)
            else:
                flat.append(v)
                specs.append(spec_of(self.name, f"input '{p.name}'", v))
            if i in self.donate:
                donated.extend(range(start, len(flat)))
        return flat, tuple(specs), statics, donated

    def _key(self, specs, statics):
        return (specs, tuple(sorted(statics.items())))

    def output_specs(self, specs, statics):
        key = self._key(specs, statics)
        with self._lock:
            if key in self._lowered:
                return self._lowered[key][1]
            if key not in self._shaped:
                self._shaped[key] = tuple(self._shapes(specs, statics))
            return self._shaped[key]

    def kernel(self, specs, statics):
        """(kernel id, output specs) for a signature, lowering and registering on a miss."""
        key = self._key(specs, statics)
        with self._lock:
            hit = self._lowered.get(key)
            if hit is not None:
                return hit
            lowered = self._lower(specs, statics)
            _count("lowerings")
            flat_in = list(flatten_specs(specs))
            kid = _C._register_custom_kernel(
                self.name,
                lowered.functions,
                lowered.entry,
                [(s.dtype, list(s.shape)) for s in flat_in],
                [(s.dtype, list(s.shape)) for s in lowered.outputs],
            )
            hit = self._lowered[key] = (kid, tuple(lowered.outputs))
            return hit

    def call(self, flat, statics):
        """Runs the kernel on `flat`, one tensor per tensor parameter in order (None for an
        absent optional one, no lists, nothing donated), with the static values `statics` (a
        tuple of (name, value) pairs, sorted): the op's work without its dispatch and argument
        binding, for callers that run it once per layer of every step."""
        key = (tuple(None if t is None else (tuple(t.shape), t.dtype) for t in flat), statics)
        kid = self._direct.get(key)
        if kid is None:
            specs = tuple(None if t is None else spec_of(self.name, "an input", t) for t in flat)
            kid = self._direct[key] = self.kernel(specs, dict(statics))[0]
        _count("calls")
        return self._restore(_C._call_custom_kernel(kid, [t for t in flat if t is not None], []))

    def _restore(self, outs):
        if self.returns == "tensor":
            return outs[0]
        if self.returns == "list":
            return list(outs)
        return tuple(outs)

    def _impl(self, *args, **kwargs):
        flat, specs, statics, donated = self.split(args, kwargs)
        kid, _ = self.kernel(specs, statics)
        _count("calls")
        return self._restore(_C._call_custom_kernel(kid, flat, donated))

    def _fake(self, *args, **kwargs):
        flat, specs, statics, _ = self.split(args, kwargs)
        device = flat[0].device
        outs = [
            torch.empty(s.shape, dtype=s.dtype, device=device)
            for s in self.output_specs(specs, statics)
        ]
        return self._restore(outs)


def per_param(params, specs):
    """Each parameter's spec (None for static ones)."""
    it = iter(specs)
    return [None if p.kind == "static" else next(it) for p in params]


def flatten_specs(specs):
    for s in specs:
        if s is None:
            continue
        if isinstance(s, tuple):
            yield from s
        else:
            yield s


def check_outputs(name, returns, outputs):
    """Checks a kernel's flat output specs against the op's return annotation."""
    n = len(outputs)
    if n == 0:
        raise TypeError(f"{name}: the kernel returns no tensors")
    if returns == "tensor" and n != 1:
        raise TypeError(f"{name}: annotated to return one tensor, the kernel returns {n}")
    if isinstance(returns, tuple) and n != returns[1]:
        raise TypeError(f"{name}: annotated to return {returns[1]} tensors, the kernel returns {n}")
    for i, s in enumerate(outputs):
        if s.dtype not in SUPPORTED_DTYPES:
            raise TypeError(f"{name}: output {i} has dtype {s.dtype}, which kernels do not support")


def arguments(params, specs, statics, flat):
    """A function's (args, kwargs) from per-parameter `specs`, `statics` and the values of its
    tensors in order (`flat`: the tensors themselves, or their specs)."""
    values, tensors, per_param = {}, iter(flat), iter(specs)
    for p in params:
        if p.kind == "static":
            values[p.name] = statics[p.name]
            continue
        s = next(per_param)
        if p.kind == "tensor_list":
            values[p.name] = [next(tensors) for _ in s]
        else:
            values[p.name] = None if s is None else next(tensors)
    args = [values[p.name] for p in params if not p.kw_only]
    return args, {p.name: values[p.name] for p in params if p.kw_only}


def donated_params(name, params, donate_argnums):
    """Indices into `params` of the positional parameters `donate_argnums` names."""
    if donate_argnums is None:
        return ()
    argnums = (donate_argnums,) if isinstance(donate_argnums, int) else tuple(donate_argnums)
    positional = [i for i, p in enumerate(params) if not p.kw_only]
    out = []
    for a in argnums:
        if not isinstance(a, int) or not -len(positional) <= a < len(positional):
            raise ValueError(f"{name}: donate_argnums {a!r} is not a positional parameter index")
        i = positional[a]
        if params[i].kind == "static":
            raise ValueError(
                f"{name}: donate_argnums {a} names '{params[i].name}', which is not a tensor"
            )
        out.append(i)
    return tuple(out)


def return_annotation(name, fn):
    hints = typing.get_type_hints(fn.func if isinstance(fn, functools.partial) else fn)
    if "return" not in hints:
        raise TypeError(f"{name}: the function needs a return annotation (e.g. -> torch.Tensor)")
    return hints["return"]
