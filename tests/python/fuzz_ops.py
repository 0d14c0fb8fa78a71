"""Differential fuzzing of device "tpu" against CPU PyTorch (issue 24): hypothesis strategies that
draw op calls (shapes with 0-size dims and 0-dim tensors, dtypes, views: transposes, step slices,
expand, as_strided; in-place and out= forms) from a table of natively lowered ops, and `check`,
which runs one call on the CPU and on the device in an eager mode and raises `Mismatch`, with a
runnable reproducer, when they differ. Used by tests/python/test_fuzz.py (a bounded run) and
scripts/fuzz.sh (long runs with random seeds)."""

import argparse
import dataclasses
import functools
import math
import platform
import random
import re
import sys
import time
import warnings

import torch
import torch.nn.functional as F
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st
from torch.utils._pytree import tree_flatten

import torch_pjrt

FLOATS = [torch.float32, torch.float16, torch.bfloat16, torch.float64]
INTS = [torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8]
ALL = FLOATS + INTS + [torch.bool]
NUMERIC = FLOATS + INTS
SPECIALS = [math.inf, -math.inf, math.nan, 0.0, -0.0]
GLOBALS = {"torch": torch, "F": F}


class Mismatch(AssertionError):
    """The device disagrees with the CPU on a case; the message holds a runnable reproducer."""


# --- inputs --------------------------------------------------------------------------------------


@dataclasses.dataclass
class Input:
    """A tensor argument: `base`, a contiguous CPU tensor that owns the storage, and `view`, an
    expression of `t` (the base on the device under test) that gives the argument."""

    base: torch.Tensor
    view: str = "t"

    def make(self, device, env):
        """The base on `device` (None for an input derived from earlier ones) and the argument."""
        if self.base is None:
            return None, eval(self.view, GLOBALS, env)
        base = self.base.to(device, copy=True)
        return base, eval(self.view, GLOBALS, {"t": base})

    def code(self, name):
        if self.base is None:
            return [f"{name} = {self.view}"]
        flat = ", ".join(_literal(v) for v in self.base.flatten().tolist())
        shape = tuple(self.base.shape)
        return [
            f"{name}_base = torch.tensor([{flat}], dtype={self.base.dtype}, device=device)",
            f"{name}_base = {name}_base.reshape({shape})",
            f"{name} = {self.view.replace('t', f'{name}_base', 1)}",
        ]


def _literal(v):
    if isinstance(v, float) and not math.isfinite(v):
        return f'float("{v}")'
    return repr(v)


def _contiguous_strides(shape):
    strides, acc = [], 1
    for size in reversed(shape):
        strides.append(acc)
        acc *= max(size, 1)
    return tuple(reversed(strides))


def _values(shape, dtype, seed, kind, specials):
    """Deterministic values for `seed`. Float kinds: "normal", "ints" (small integers: ties and
    exact zeros), "wide" (large magnitudes: overflow to inf in float16); specials (inf, nan, ±0)
    replace about a fifth of the elements where the op's CPU results do not depend on the
    machine's vector path."""
    g = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=g).bool()
    if not dtype.is_floating_point:
        low = 0 if dtype == torch.uint8 else -9
        return torch.randint(low, 10, shape, generator=g).to(dtype)
    if kind == "ints":
        x = torch.randint(-4, 5, shape, generator=g).double()
    elif kind == "wide":
        scale = 300 if dtype == torch.float16 else 1e5
        x = torch.randn(shape, generator=g, dtype=torch.float64) * scale
    else:
        x = torch.randn(shape, generator=g, dtype=torch.float64) * 2
    if specials:
        pick = torch.randint(0, 5 * len(SPECIALS), shape, generator=g)
        for i, s in enumerate(SPECIALS):
            x = torch.where(pick == i, torch.tensor(s, dtype=torch.float64), x)
    return x.to(dtype)


# --- cases ---------------------------------------------------------------------------------------


@dataclasses.dataclass
class Case:
    op: "Op"
    expr: str
    inputs: dict
    params: dict

    def code(self, mode="strict"):
        """A Python snippet that runs the case on the device and prints both results."""
        lines = ["import torch, torch_pjrt", "import torch.nn.functional as F", ""]
        lines.append(f'torch_pjrt.set_eager_mode("{mode}")')
        lines.append('for device in ("cpu", "tpu"):')
        body = []
        for name, inp in self.inputs.items():
            body += inp.code(name)
        body += [f"{k} = {_param_code(v)}" for k, v in self.params.items()]
        body.append(f"print(device, {self.expr})")
        lines += ["    " + line for line in body]
        return "\n".join(lines)


def _param_code(v):
    if isinstance(v, float):
        return _literal(v)
    if v == ():
        return "()"
    if isinstance(v, (list, tuple)):
        inner = ", ".join(_param_code(x) for x in v)
        return f"({inner},)" if isinstance(v, tuple) else f"[{inner}]"
    return repr(v)


class Builder:
    """What an op's sampler draws with: shapes, dtypes, tensor inputs (with a random view) and
    parameters, collected into a Case."""

    def __init__(self, draw, op):
        self.draw = draw
        self.op = op
        self.inputs = {}
        self.params = {}

    def shape(self, min_dims=0, max_dims=4):
        n = self.draw(st.integers(min_dims, max_dims))
        return tuple(self.size() for _ in range(n))

    def size(self, low=0):
        # About one dim in sixteen is empty; sizes shrink towards 0.
        v = self.draw(st.integers(0, 15))
        return max(low, 0 if v == 0 else 1 + v % 5)

    def dtype(self, dtypes=None):
        return self.draw(st.sampled_from(dtypes or self.op.dtypes))

    def arg(self, name):
        """Input `name` as the op sees it (on the CPU)."""
        inp = self.inputs[name]
        return eval(inp.view, GLOBALS, {"t": inp.base})

    def param(self, name, strategy):
        self.params[name] = self.draw(strategy)
        return self.params[name]

    def tensor(self, name, shape, dtype, values=None):
        """Adds input `name` of `shape` behind a random view of a base tensor: `values` (a CPU
        tensor) when given, else random values of `dtype`."""
        if values is None:
            kind = self.draw(st.sampled_from(["normal", "ints", "wide"]))
            specials = self.op.specials and self.draw(st.booleans())
            seed = self.draw(st.integers(0, 2**16))
            base, expr = self._view(shape, lambda s: _values(s, dtype, seed, kind, specials))
        else:
            base, expr = self._view(shape, None, values)
        self.inputs[name] = Input(base, expr)
        return eval(expr, {"torch": torch}, {"t": base})

    def index(self, name, shape, size, unique=False, bad=True):
        """Adds int64 input `name` of `shape` with indices into a dim of `size`; unique when the
        op's result would depend on the order of duplicates; rarely (`bad`) out of range."""
        g = torch.Generator().manual_seed(self.draw(st.integers(0, 2**16)))
        n = math.prod(shape)
        if unique and n <= size:
            values = torch.randperm(size, generator=g)[:n].reshape(shape)
        elif size > 0:
            values = torch.randint(0, size, shape, generator=g)
        else:
            values = torch.zeros(shape, dtype=torch.int64)
        if bad and n > 0 and self.draw(st.integers(0, 9)) == 0:
            values.view(-1)[self.draw(st.integers(0, n - 1))] = self.draw(
                st.sampled_from([size, -size - 1, -1])
            )
        return self.tensor(name, shape, torch.int64, values=values)

    def dim(self, ndim, name="dim", bad=True):
        """A dim of an `ndim`-dim tensor, negative or not; rarely (`bad`) out of range."""
        n = max(ndim, 1)
        low, high = (-n - 1, n) if bad and self.draw(st.integers(0, 9)) == 0 else (-n, n - 1)
        return self.param(name, st.integers(low, high))

    def _view(self, shape, make, values=None):
        """A base tensor and an expression of it, `t`, that gives a tensor of `shape`: `values`
        placed in the base when given, else the base holds `make(base_shape)`."""
        n = len(shape)
        kinds = ["contiguous"] + (["permute", "slice"] if n else [])
        if values is None:
            kinds += ["expand", "as_strided"]
        else:
            make = lambda s: torch.zeros(s, dtype=values.dtype)
        kind = self.draw(st.sampled_from(kinds))
        if kind == "permute":
            perm = self.draw(st.permutations(range(n)))
            base = make([shape[p] for p in perm])
            if values is not None:
                base = values.permute(perm).contiguous()
            return base, f"t.permute({[perm.index(i) for i in range(n)]})"
        if kind == "slice":
            d = self.draw(st.integers(0, n - 1))
            start, step = self.draw(st.integers(0, 2)), self.draw(st.integers(1, 3))
            stop = start + shape[d] * step
            base = make(shape[:d] + (stop,) + shape[d + 1 :])
            expr = f"t[{':, ' * d}{start}:{stop}:{step}]"
            if values is not None:
                eval(expr, {}, {"t": base}).copy_(values)
            return base, expr
        if kind == "expand":
            # Leading dims to add and size-1 dims to broadcast (stride 0).
            lead = self.draw(st.integers(0, n))
            small = [1 if self.draw(st.booleans()) else s for s in shape[lead:]]
            return make(small), f"t.expand({list(shape)})"
        if kind == "as_strided":
            # Strides may overlap (0 included): elements that alias read alike on both devices.
            strides = [self.draw(st.integers(0, 6)) for _ in range(n)]
            offset = self.draw(st.integers(0, 3))
            span = 0 if 0 in shape else sum((s - 1) * k for s, k in zip(shape, strides)) + 1
            return make([offset + span]), f"t.as_strided({list(shape)}, {strides}, {offset})"
        return (make(list(shape)) if values is None else values.clone()), "t"


def _scalars():
    return st.one_of(
        st.integers(-3, 3), st.sampled_from([0.5, -1.5, 2.0, 1e-3, 3.25]), st.booleans()
    )


def _divisors(n):
    return [d for d in range(1, n + 1) if n % d == 0]


def s_arange(b):
    b.param("start", st.sampled_from([0, 1, -3, 0.5, -2.25]))
    b.param("end", st.sampled_from([0, 5, 7, 10.5, -2]))
    b.param("step", st.sampled_from([1, 2, 0.5, -1, 3, 0.3]))


def s_linspace(b):
    b.param("start", st.sampled_from([0, 1, -3, 0.5, -2.25, 1 + 2j]))
    b.param("end", st.sampled_from([0, 5, 7, 10.5, -2, -1j]))
    b.param("steps", st.sampled_from([0, 1, 2, 5, 6, 7]))


def s_full(b):
    b.param("size", st.sampled_from([(6,), (2, 3), (0,), (3, 1, 2)]))
    b.param("value", st.sampled_from([0, 1.5, -2, True, 3e38]))


def s_eye(b):
    b.param("n", st.sampled_from([0, 1, 3]))
    b.param("m", st.sampled_from([0, 2, 3, 4]))


# Points on and beside the branch cuts of the complex functions (the real axis beyond +-1, the
# imaginary axis beyond +-i, the negative real axis) with both signs of zero parts.
_CUT_PARTS = [0.0, -0.0, 0.5, -0.5, 1.0, -1.0, 2.0, -2.0, 1e-20, -1e-20]
CUT_POINTS = [complex(x, y) for x in _CUT_PARTS for y in _CUT_PARTS]


def s_branch_cuts(b):
    dtype = b.draw(st.sampled_from([torch.complex64, torch.complex128]))
    n = b.draw(st.integers(1, len(CUT_POINTS)))
    start = b.draw(st.integers(0, len(CUT_POINTS) - n))
    b.tensor("a", (n,), dtype, values=torch.tensor(CUT_POINTS[start : start + n], dtype=dtype))


# --- the op table ----------------------------------------------------------------------------


@dataclasses.dataclass
class Op:
    """An op to fuzz: `expr` calls it on the inputs and parameters that `sample(builder)` adds;
    `inplace` is its in-place form, `out` whether `expr` takes out=; `specials`: inf/nan/±0 inputs
    (only where the CPU's results do not depend on its vector path); `layout`: fresh results keep
    the strides of a dense input (preserve_format), so their strides are compared; `tol` scales
    the float tolerances."""

    name: str
    family: str
    expr: str
    sample: object
    dtypes: list = dataclasses.field(default_factory=lambda: ALL)
    inplace: str = None
    out: bool = False
    specials: bool = False
    layout: bool = False
    tol: float = 1.0


def _broadcastable(b, shape):
    """A shape that broadcasts with `shape`: leading dims dropped or added, dims set to 1; rarely
    one that does not (the CPU's error is then the expected outcome)."""
    drop = b.draw(st.integers(0, len(shape)))
    out = [1 if b.draw(st.integers(0, 2)) == 0 else s for s in shape[drop:]]
    if out and b.draw(st.integers(0, 14)) == 0:
        out[b.draw(st.integers(0, len(out) - 1))] += 2
    if b.draw(st.integers(0, 5)) == 0:
        out.insert(0, b.size(low=1))
    return tuple(out)


def _operand(b, name, shape, dtypes=None):
    """Adds operand `name`: a tensor broadcastable with `shape` (any dtype of the op), a 0-dim
    tensor, a Python scalar or a view of input `a` (aliasing)."""
    kind = b.draw(st.sampled_from(["tensor", "tensor", "tensor", "0-dim", "scalar", "alias"]))
    if kind == "scalar":
        b.param(name, _scalars())
    elif kind == "alias" and "a" in b.inputs:
        view = b.draw(st.sampled_from(["a", "a.transpose(0, -1)", "a[..., :1]", "a[:1]"]))
        if shape or view == "a":
            b.inputs[name] = Input(None, view)
        else:
            b.tensor(name, shape, b.dtype(dtypes))
    else:
        b.tensor(name, () if kind == "0-dim" else _broadcastable(b, shape), b.dtype(dtypes))


def s_unary(b):
    b.tensor("a", b.shape(), b.dtype())


def s_binary(b):
    shape = b.shape()
    b.tensor("a", shape, b.dtype())
    _operand(b, "b", shape)


def s_alpha(b):
    s_binary(b)
    b.param("alpha", st.sampled_from([1, 2, -1, 0.5]))


def s_div(b):
    s_binary(b)
    b.param("mode", st.sampled_from([None, "trunc", "floor"]))


def s_pow(b):
    shape = b.shape()
    dtype = b.dtype()
    b.tensor("a", shape, dtype)
    if b.draw(st.booleans()):
        b.param("b", st.sampled_from([0, 1, 2, 3, -1, 0.5, -2.0, 2.5]))
    else:
        g = torch.Generator().manual_seed(b.draw(st.integers(0, 2**16)))
        other = b.dtype()
        # Integer exponents stay in 0..3: larger ones overflow, which C++ leaves undefined.
        low = 0 if not other.is_floating_point else -3
        values = torch.randint(low, 4, _broadcastable(b, shape), generator=g).to(other)
        b.tensor("b", tuple(values.shape), other, values=values)


def s_ternary(b):
    shape = b.shape()
    b.tensor("a", shape, b.dtype())
    _operand(b, "b", shape)
    _operand(b, "c", shape)
    b.param("value", st.sampled_from([1, 0.5, -2]))


def s_lerp(b):
    shape = b.shape()
    dtype = b.dtype()
    b.tensor("a", shape, dtype)
    b.tensor("b", _broadcastable(b, shape), dtype)
    if b.draw(st.booleans()):
        b.param("w", st.sampled_from([0.0, 0.25, 0.5, 1.0, 1.5]))
    else:
        b.tensor("w", _broadcastable(b, shape), dtype)


def s_where(b):
    shape = b.shape()
    b.tensor("cond", shape, torch.bool)
    _operand(b, "a", shape)
    _operand(b, "b", shape)


def s_clamp(b):
    shape = b.shape()
    b.tensor("a", shape, b.dtype())
    for name in ("lo", "hi"):
        kind = b.draw(st.sampled_from(["none", "scalar", "tensor"]))
        if kind == "tensor":
            b.tensor(name, _broadcastable(b, shape), b.dtype())
        else:
            b.param(name, st.just(None) if kind == "none" else _scalars())


def _dims(b, ndim, kinds):
    """A reduction's dim parameter: None, an int or a tuple of distinct dims (as `kinds` allow)."""
    kind = b.draw(st.sampled_from(kinds))
    if kind == "none":
        return b.param("dim", st.just(None))
    if kind == "int":
        return b.dim(ndim)
    n = max(ndim, 1)
    dims = b.draw(st.lists(st.integers(-n, n - 1), unique_by=lambda d: d % n, max_size=n))
    b.params["dim"] = tuple(dims)
    return b.params["dim"]


def reduction(kinds, keepdim=True, dtype_kw=False, extra=None):
    def sample(b):
        shape = b.shape()
        dtype = b.dtype()
        b.tensor("a", shape, dtype)
        _dims(b, len(shape), kinds)
        if keepdim:
            b.param("keepdim", st.booleans())
        if dtype_kw:
            # Not floats to int64: inf, nan and large values convert to what C++ leaves undefined.
            to = [None, torch.float32, torch.float64] + [torch.int64] * (
                not dtype.is_floating_point
            )
            b.param("dtype", st.sampled_from(to))
        for name, strategy in (extra or {}).items():
            b.param(name, strategy)

    return sample


def s_mm(b):
    n, k, m = b.size(), b.size(), b.size()
    dtype = b.dtype()
    b.tensor("a", (n, k), dtype)
    k2 = k + 1 if b.draw(st.integers(0, 14)) == 0 else k
    b.tensor("b", (k2, m), dtype if b.draw(st.integers(0, 9)) else b.dtype())


def s_bmm(b):
    batch, n, k, m = b.size(), b.size(), b.size(), b.size()
    dtype = b.dtype()
    b.tensor("a", (batch, n, k), dtype)
    b.tensor("b", (batch, k, m), dtype)


def s_matmul(b):
    """1-D to 4-D operands whose batch dims broadcast (rarely not)."""
    dtype = b.dtype()
    k, batch = b.size(), b.shape(max_dims=2)
    for name, rank in (("a", b.draw(st.integers(1, 4))), ("b", b.draw(st.integers(1, 4)))):
        lead = _broadcastable(b, batch)
        lead = lead[max(len(lead) - rank + 2, 0) :]
        shape = (k,) if rank == 1 else lead + ((b.size(), k) if name == "a" else (k, b.size()))
        b.tensor(name, shape, dtype)


def s_addmm(b):
    s_mm(b)
    n, m = b.arg("a").shape[0], b.arg("b").shape[1]
    b.tensor("c", _broadcastable(b, (n, m)), b.dtype())
    b.param("beta", st.sampled_from([1, 0, 0.5]))
    b.param("alpha", st.sampled_from([1, 2, -0.5]))


def s_vec(b):
    dtype = b.dtype()
    k = b.size()
    b.tensor("a", (k,), dtype)
    b.tensor("b", (k,), dtype)


def s_mv(b):
    dtype = b.dtype()
    n, k = b.size(), b.size()
    b.tensor("a", (n, k), dtype)
    b.tensor("b", (k,), dtype)


def s_linear(b):
    dtype = b.dtype()
    k, m = b.size(), b.size()
    b.tensor("a", b.shape(max_dims=2) + (k,), dtype)
    b.tensor("w", (m, k), dtype)
    if b.draw(st.booleans()):
        b.tensor("bias", (m,), dtype)
    else:
        b.params["bias"] = None


def _nonempty_shape(b, min_dims=1, max_dims=3):
    return tuple(b.size(low=1) for _ in range(b.draw(st.integers(min_dims, max_dims))))


def s_index_select(b):
    shape = b.shape(min_dims=1, max_dims=3)
    b.tensor("a", shape, b.dtype())
    dim = b.dim(len(shape), bad=False)
    idx_shape = (b.size(),) if b.draw(st.integers(0, 5)) else ()
    if shape[dim] == 0:
        # Indices into an empty dim fail to compile and leave a check pending that a later sync
        # raises (test_fuzz.py: test_index_select_from_an_empty_dim).
        idx_shape = (0,)
    b.index("idx", idx_shape, shape[dim])


def s_gather(b):
    shape = b.shape(min_dims=1, max_dims=3)
    b.tensor("a", shape, b.dtype())
    dim = b.dim(len(shape), bad=False) % len(shape)
    # No indices into an empty dim: see s_index_select.
    idx_shape = tuple(
        (b.size() if s else 0) if d == dim else b.draw(st.integers(0, s))
        for d, s in enumerate(shape)
    )
    b.index("idx", idx_shape, shape[dim])


def s_scatter(b, unique=True):
    """scatter-family: a, dim, idx and src, whose sizes bound idx's; unique indices along dim
    where duplicates would leave the result to the order of the writes."""
    shape = _nonempty_shape(b)
    dtype = b.dtype()
    b.tensor("a", shape, dtype)
    dim = b.dim(len(shape), bad=False) % len(shape)
    idx_shape = tuple(
        b.draw(st.integers(0, s if unique and d == dim else 5 if d == dim else s))
        for d, s in enumerate(shape)
    )
    src_shape = tuple(s + b.draw(st.integers(0, 1)) for s in idx_shape)
    b.tensor("src", src_shape, dtype)
    if unique:
        g = torch.Generator().manual_seed(b.draw(st.integers(0, 2**16)))
        full = list(idx_shape)
        full[dim] = shape[dim]
        values = torch.rand(full, generator=g).argsort(dim).narrow(dim, 0, idx_shape[dim])
        b.tensor("idx", idx_shape, torch.int64, values=values.contiguous())
    else:
        b.index("idx", idx_shape, shape[dim])


def s_scatter_reduce(b):
    s_scatter(b, unique=False)
    b.param("reduce", st.sampled_from(["sum", "prod", "mean", "amax", "amin"]))
    b.param("include_self", st.booleans())


def s_index_add(b, unique=False):
    shape = _nonempty_shape(b)
    dtype = b.dtype()
    b.tensor("a", shape, dtype)
    dim = b.dim(len(shape), bad=False) % len(shape)
    n = b.draw(st.integers(0, shape[dim] if unique else 5))
    b.index("idx", (n,), shape[dim], unique=unique)
    b.tensor("src", shape[:dim] + (n,) + shape[dim + 1 :], dtype)
    b.param("alpha", st.sampled_from([1, 2]))


def s_index(b):
    shape = _nonempty_shape(b)
    b.tensor("a", shape, b.dtype())
    b.index("idx", b.shape(max_dims=2), shape[0])


def s_index_put(b):
    shape = _nonempty_shape(b)
    dtype = b.dtype()
    b.tensor("a", shape, dtype)
    acc = b.param("accumulate", st.booleans())
    idx_shape = (b.draw(st.integers(0, 5 if acc else shape[0])),)
    b.index("idx", idx_shape, shape[0], unique=not acc)
    b.tensor("v", _broadcastable(b, idx_shape + shape[1:]), dtype)


def s_mask(b):
    shape = b.shape()
    b.tensor("a", shape, b.dtype())
    b.tensor("mask", _broadcastable(b, shape), torch.bool)
    if b.draw(st.booleans()):
        b.param("value", _scalars())
    else:
        b.tensor("value", (), b.dtype())


def s_masked_select(b):
    shape = b.shape()
    b.tensor("a", shape, b.dtype())
    b.tensor("mask", _broadcastable(b, shape), torch.bool)


def s_bool_index(b):
    shape = _nonempty_shape(b)
    b.tensor("a", shape, b.dtype())
    b.tensor("mask", shape[: b.draw(st.integers(1, len(shape)))], torch.bool)


def s_take(b):
    shape = b.shape()
    b.tensor("a", shape, b.dtype())
    b.index("idx", b.shape(max_dims=2), math.prod(shape))


def s_cat(b):
    shape = list(_nonempty_shape(b, max_dims=3))
    dim = b.dim(len(shape)) % (len(shape) + 1)
    names = []
    for i in range(b.draw(st.integers(1, 3))):
        s = list(shape)
        if dim < len(s):
            s[dim] = b.size()
        if b.draw(st.integers(0, 9)) == 0:
            s = [0]  # a 1-D empty tensor, which cat skips
        b.tensor(f"x{i}", tuple(s), b.dtype())
        names.append(f"x{i}")
    b.expr = b.expr.replace("xs", "[" + ", ".join(names) + "]")


def s_stack(b):
    shape = b.shape(max_dims=3)
    names = []
    for i in range(b.draw(st.integers(1, 3))):
        b.tensor(f"x{i}", shape, b.dtype())
        names.append(f"x{i}")
    b.dim(len(shape) + 1)
    b.expr = b.expr.replace("xs", "[" + ", ".join(names) + "]")


def s_reshape(b):
    shape = b.shape()
    b.tensor("a", shape, b.dtype())
    numel = math.prod(shape)
    sizes, rest = [], numel
    for _ in range(b.draw(st.integers(0, 3))):
        d = b.draw(st.sampled_from(_divisors(rest))) if rest else b.size()
        sizes.append(d)
        rest = rest // d if rest else 0
    if rest != 1 or not sizes:
        sizes.append(rest)
    if b.draw(st.integers(0, 3)) == 0:
        sizes[b.draw(st.integers(0, len(sizes) - 1))] = -1
    b.params["shape"] = tuple(sizes)


def s_dims(b, count):
    shape = b.shape(min_dims=1)
    b.tensor("a", shape, b.dtype())
    for i in range(count):
        b.dim(len(shape), name=f"d{i}")


def s_permute(b):
    shape = b.shape()
    b.tensor("a", shape, b.dtype())
    b.params["dims"] = tuple(b.draw(st.permutations(range(len(shape)))))


def s_unsqueeze(b):
    shape = b.shape(max_dims=3)
    b.tensor("a", shape, b.dtype())
    b.dim(len(shape) + 1)


def s_flip(b):
    shape = b.shape(min_dims=1)
    b.tensor("a", shape, b.dtype())
    _dims(b, len(shape), ["tuple"])


def s_roll(b):
    shape = b.shape(min_dims=1)
    b.tensor("a", shape, b.dtype())
    b.param("shifts", st.integers(-7, 7))
    b.dim(len(shape))


def s_repeat(b):
    shape = b.shape(max_dims=3)
    b.tensor("a", shape, b.dtype())
    extra = b.draw(st.integers(0, 2))
    b.params["sizes"] = tuple(b.draw(st.integers(0, 3)) for _ in range(len(shape) + extra))


def s_expand(b):
    shape = b.shape(max_dims=3)
    b.tensor("a", shape, b.dtype())
    sizes = [b.size() if s == 1 else b.draw(st.sampled_from([s, -1])) for s in shape]
    b.params["sizes"] = tuple([b.size(low=1) for _ in range(b.draw(st.integers(0, 2)))] + sizes)


def s_split(b):
    shape = b.shape(min_dims=1)
    b.tensor("a", shape, b.dtype())
    b.param("n", st.integers(1, 4))
    b.dim(len(shape))


def s_tri(b):
    shape = b.shape(min_dims=2)
    b.tensor("a", shape, b.dtype())
    b.param("diagonal", st.integers(-3, 3))


def s_narrow(b):
    shape = b.shape(min_dims=1)
    b.tensor("a", shape, b.dtype())
    dim = b.dim(len(shape), bad=False)
    start = b.param("start", st.integers(-shape[dim], shape[dim]))
    b.param("length", st.integers(0, max(shape[dim] - start % max(shape[dim], 1), 0)))


def s_select(b):
    shape = b.shape(min_dims=1)
    b.tensor("a", shape, b.dtype())
    dim = b.dim(len(shape), bad=False)
    b.param("index", st.integers(-shape[dim] - 1, shape[dim]))


def s_diagonal(b):
    shape = b.shape(min_dims=2)
    b.tensor("a", shape, b.dtype())
    b.param("offset", st.integers(-3, 3))
    b.params["d0"], b.params["d1"] = b.draw(st.permutations(range(len(shape))))[:2]


def s_unfold(b):
    shape = b.shape(min_dims=1, max_dims=3)
    b.tensor("a", shape, b.dtype())
    dim = b.dim(len(shape), bad=False)
    b.param("size", st.integers(0, shape[dim] + 1))
    b.param("step", st.integers(1, 3))


def s_softmax(b):
    shape = b.shape()
    b.tensor("a", shape, b.dtype())
    b.dim(len(shape))
    b.param("dtype", st.sampled_from([None, torch.float32, torch.float64]))


def s_layer_norm(b):
    shape = b.shape(min_dims=1)
    dtype = b.dtype()
    b.tensor("a", shape, dtype)
    ns = shape[len(shape) - b.draw(st.integers(1, len(shape))) :]
    b.params["ns"] = ns
    for name in ("w", "bias"):
        if b.draw(st.booleans()):
            b.tensor(name, ns, dtype)
        else:
            b.params[name] = None
    b.param("eps", st.sampled_from([1e-5, 1e-2]))


def s_embedding(b):
    n, dim = b.size(low=1), b.size()
    b.tensor("w", (n, dim), b.dtype())
    # In range only: the CPU's error for others depends on its kernel (IndexError, or fbgemm's
    # RuntimeError for float32).
    b.index("idx", b.shape(max_dims=2), n, bad=False)


def s_convert(b):
    shape = b.shape()
    src = b.dtype()
    dst = b.param("dtype", st.sampled_from(ALL))
    if platform.machine() == "x86_64" and b.draw(st.booleans()):
        # Out of range, inf and NaN too: "tpu" gives the x86-64 CPU's results (docs/ARCHITECTURE.md,
        # "Float to integer casts"), which is what the reference runs on here.
        seed = b.draw(st.integers(0, 2**16))
        b.tensor("a", shape, src, values=_values(shape, src, seed, "wide", True))
    elif src.is_floating_point and not (dst.is_floating_point or dst == torch.bool):
        # Floats out of an integer type's range convert to a value C++ leaves undefined.
        g = torch.Generator().manual_seed(b.draw(st.integers(0, 2**16)))
        values = _values(shape, src, 0, "ints", False)
        values = (values.abs() if dst == torch.uint8 else values) + torch.rand(shape, generator=g)
        b.tensor("a", shape, src, values=values.to(src))
    else:
        b.tensor("a", shape, src)


def s_copy(b):
    shape = b.shape()
    b.tensor("a", shape, b.dtype())
    src = b.dtype()
    if src.is_floating_point:
        # As s_convert: values every destination dtype holds.
        values = _values(_broadcastable(b, shape), src, b.draw(st.integers(0, 99)), "ints", False)
        b.tensor("src", tuple(values.shape), src, values=values.abs())
    else:
        b.tensor("src", _broadcastable(b, shape), src)


def s_gelu(b):
    s_unary(b)
    b.param("approximate", st.sampled_from(["none", "tanh"]))


def s_full_like(b):
    s_unary(b)
    b.param("value", _scalars())


def _table():
    ops = []

    def add(family, name, expr, sample, dtypes=ALL, **kw):
        ops.append(Op(name, family, expr, sample, dtypes, **kw))

    # Unary elementwise. Exact ops take inf/nan; transcendental ones do not (the CPU's vector and
    # scalar paths may differ there).
    un = functools.partial(add, "unary", sample=s_unary, out=True)
    for name in ["abs", "neg", "floor", "ceil", "trunc", "round", "sign", "sqrt", "reciprocal"]:
        un(name, f"torch.{name}(a)", dtypes=NUMERIC, inplace=f"a.{name}_()", specials=True)
    un("square", "torch.square(a)", inplace="a.square_()", specials=True)
    un("relu", "torch.relu(a)", dtypes=NUMERIC, inplace="a.relu_()", specials=True)
    for name in ["isnan", "isinf", "isfinite", "logical_not", "signbit"]:
        un(name, f"torch.{name}(a)", specials=True)
    un("bitwise_not", "torch.bitwise_not(a)", inplace="a.bitwise_not_()")
    for name in ["exp", "log", "sin", "cos", "tanh", "sigmoid", "expm1", "log1p", "erf", "rsqrt"]:
        un(name, f"torch.{name}(a)", inplace=f"a.{name}_()", tol=2)
    for name in ["atan", "asin", "sinh", "log2", "exp2", "frac"]:
        un(name, f"torch.{name}(a)", dtypes=FLOATS, inplace=f"a.{name}_()", tol=2)

    # Binary elementwise, with type promotion, broadcasting, scalars and aliasing operands.
    bi = functools.partial(add, "binary", out=True)
    for name in ["add", "sub"]:
        expr, inplace = f"torch.{name}(a, b, alpha=alpha)", f"a.{name}_(b, alpha=alpha)"
        bi(name, expr, s_alpha, inplace=inplace, specials=True)
    for name in ["mul", "maximum", "minimum", "fmax", "fmin", "eq", "ne", "lt", "le", "gt", "ge"]:
        bi(name, f"torch.{name}(a, b)", s_binary, inplace=f"a.{name}_(b)", specials=True)
    for name in ["logical_and", "logical_or", "logical_xor", "bitwise_and", "bitwise_or"]:
        bi(name, f"torch.{name}(a, b)", s_binary, inplace=f"a.{name}_(b)")
    for name in ["remainder", "fmod", "floor_divide", "atan2", "copysign", "hypot"]:
        bi(name, f"torch.{name}(a, b)", s_binary, NUMERIC, inplace=f"a.{name}_(b)")
    expr, inplace = "torch.div(a, b, rounding_mode=mode)", "a.div_(b, rounding_mode=mode)"
    bi("div", expr, s_div, NUMERIC, inplace=inplace)
    bi("pow", "torch.pow(a, b)", s_pow, NUMERIC, inplace="a.pow_(b)", tol=2)
    for name in ["addcmul", "addcdiv"]:
        expr, inplace = f"torch.{name}(a, b, c, value=value)", f"a.{name}_(b, c, value=value)"
        bi(name, expr, s_ternary, FLOATS, inplace=inplace)
    bi("lerp", "torch.lerp(a, b, w)", s_lerp, FLOATS, inplace="a.lerp_(b, w)")
    add("where", "where", "torch.where(cond, a, b)", s_where, out=True, specials=True)
    expr, inplace = "torch.clamp(a, lo, hi)", "a.clamp_(lo, hi)"
    add("where", "clamp", expr, s_clamp, NUMERIC, inplace=inplace, out=True, specials=True)

    # Reductions over None, one dim or a tuple of dims, keepdim, dtype=.
    red = functools.partial(add, "reduction", out=True)
    every = ["none", "int", "tuple"]
    with_dtype = reduction(every, dtype_kw=True)
    red("sum", "torch.sum(a, dim, keepdim, dtype=dtype)", with_dtype, specials=True)
    red("nansum", "torch.nansum(a, dim, keepdim)", reduction(every), FLOATS, specials=True)
    red("mean", "torch.mean(a, dim, keepdim, dtype=dtype)", with_dtype, specials=True)
    expr = "torch.prod(a, dim, keepdim, dtype=dtype)"
    red("prod", expr, reduction(["int"], dtype_kw=True), specials=True, tol=2)
    for name in ["amax", "amin"]:
        red(name, f"torch.{name}(a, dim, keepdim)", reduction(["int", "tuple"]), specials=True)
    for name in ["max", "min"]:
        expr = f"torch.{name}(a, dim, keepdim)"
        add("reduction", name, expr, reduction(["int"]), specials=True)
    for name in ["argmax", "argmin"]:
        expr = f"torch.{name}(a, dim, keepdim)"
        red(name, expr, reduction(["none", "int"]), NUMERIC, specials=True)
    for name in ["all", "any"]:
        red(name, f"torch.{name}(a, dim, keepdim)", reduction(every), specials=True)
    for name in ["std", "var"]:
        sample = reduction(every, extra={"correction": st.sampled_from([0, 1, 2])})
        expr = f"torch.{name}(a, dim, correction=correction, keepdim=keepdim)"
        red(name, expr, sample, FLOATS, tol=2)
    expr = "torch.logsumexp(a, dim, keepdim)"
    red("logsumexp", expr, reduction(["int", "tuple"]), FLOATS, tol=2)
    sample = reduction(every, extra={"p": st.sampled_from([1, 2, 3, math.inf])})
    red("norm", "torch.norm(a, p, dim, keepdim)", sample, FLOATS, tol=2)
    for name in ["cumsum", "cumprod"]:
        sample = reduction(["int"], keepdim=False, dtype_kw=True)
        expr, inplace = f"torch.{name}(a, dim, dtype=dtype)", f"a.{name}_(dim, dtype=dtype)"
        red(name, expr, sample, inplace=inplace, specials=True, tol=2)
    sample = reduction(every, keepdim=False)
    add("reduction", "count_nonzero", "torch.count_nonzero(a, dim)", sample, specials=True)

    # Matmul family.
    mm = functools.partial(add, "matmul", dtypes=FLOATS + [torch.int32, torch.int64], tol=2)
    for name, sample in [("mm", s_mm), ("bmm", s_bmm), ("matmul", s_matmul), ("dot", s_vec)]:
        mm(name, f"torch.{name}(a, b)", sample, out=True)
    mm("mv", "torch.mv(a, b)", s_mv, out=True)
    mm("outer", "torch.outer(a, b)", s_vec, out=True)
    expr, inplace = "torch.addmm(c, a, b, beta=beta, alpha=alpha)", "c.addmm_(a, b, beta=beta)"
    mm("addmm", expr, s_addmm, inplace=inplace.replace(")", ", alpha=alpha)"), out=True)
    mm("linear", "F.linear(a, w, bias)", s_linear, dtypes=FLOATS)

    # Indexing, gather and scatter (indices rarely out of range: the device's checks raise).
    ix = functools.partial(add, "indexing")
    ix("index_select", "torch.index_select(a, dim, idx)", s_index_select, out=True)
    ix("gather", "torch.gather(a, dim, idx)", s_gather, out=True)
    expr, inplace = "torch.scatter(a, dim, idx, src)", "a.scatter_(dim, idx, src)"
    ix("scatter", expr, s_scatter, inplace=inplace, out=True)
    expr, inplace = "torch.scatter_add(a, dim, idx, src)", "a.scatter_add_(dim, idx, src)"
    ix("scatter_add", expr, functools.partial(s_scatter, unique=False), inplace=inplace, out=True)
    args = "dim, idx, src, reduce, include_self=include_self"
    expr, inplace = f"torch.scatter_reduce(a, {args})", f"a.scatter_reduce_({args})"
    ix("scatter_reduce", expr, s_scatter_reduce, NUMERIC, inplace=inplace, out=True)
    args = "dim, idx, src, alpha=alpha"
    expr, inplace = f"torch.index_add(a, {args})", f"a.index_add_({args})"
    ix("index_add", expr, s_index_add, inplace=inplace, out=True)
    expr, inplace = "torch.index_copy(a, dim, idx, src)", "a.index_copy_(dim, idx, src)"
    sample = functools.partial(s_index_add, unique=True)
    ix("index_copy", expr, sample, inplace=inplace, out=True)
    ix("index", "a[idx]", s_index)
    args = "(idx,), v, accumulate=accumulate"
    ix("index_put", f"a.index_put({args})", s_index_put, inplace=f"a.index_put_({args})")
    expr, inplace = "torch.masked_fill(a, mask, value)", "a.masked_fill_(mask, value)"
    ix("masked_fill", expr, s_mask, inplace=inplace)
    ix("bool_index", "a[mask]", s_bool_index)
    ix("masked_select", "torch.masked_select(a, mask)", s_masked_select, out=True)
    ix("take", "torch.take(a, idx)", s_take, out=True)
    ix("embedding", "F.embedding(idx, w)", s_embedding, FLOATS)

    # Shape and view ops: views must alias their input with the CPU's strides.
    sh = functools.partial(add, "shape")
    sh("cat", "torch.cat(xs, dim)", s_cat, out=True)
    sh("stack", "torch.stack(xs, dim)", s_stack, out=True)
    sh("reshape", "a.reshape(shape)", s_reshape)
    sh("view", "a.view(shape)", s_reshape)
    sh("permute", "a.permute(dims)", s_permute)
    two_dims, one_dim = functools.partial(s_dims, count=2), functools.partial(s_dims, count=1)
    sh("transpose", "a.transpose(d0, d1)", two_dims, inplace="a.transpose_(d0, d1)")
    sh("flatten", "a.flatten(d0, d1)", two_dims)
    sh("movedim", "a.movedim(d0, d1)", two_dims)
    sh("squeeze", "a.squeeze(d0)", one_dim, inplace="a.squeeze_(d0)")
    sh("unsqueeze", "a.unsqueeze(dim)", s_unsqueeze, inplace="a.unsqueeze_(dim)")
    sh("flip", "a.flip(dim)", s_flip)
    sh("roll", "a.roll(shifts, dim)", s_roll)
    sh("repeat", "a.repeat(sizes)", s_repeat)
    sh("expand", "a.expand(sizes)", s_expand)
    sh("split", "a.split(n, dim)", s_split)
    sh("chunk", "a.chunk(n, dim)", s_split)
    sh("unbind", "a.unbind(d0)", one_dim)
    for name in ["tril", "triu"]:
        expr, inplace = f"torch.{name}(a, diagonal)", f"a.{name}_(diagonal)"
        sh(name, expr, s_tri, inplace=inplace, out=True)
    sh("narrow", "a.narrow(dim, start, length)", s_narrow)
    sh("select", "a.select(dim, index)", s_select)
    sh("diagonal", "a.diagonal(offset, d0, d1)", s_diagonal)
    sh("unfold", "a.unfold(dim, size, step)", s_unfold)
    sh("contiguous", "a.contiguous()", s_unary)

    # Normalization and activations.
    nn = functools.partial(add, "nn", dtypes=FLOATS)
    for name in ["softmax", "log_softmax"]:
        nn(name, f"torch.{name}(a, dim, dtype=dtype)", s_softmax, dtypes=ALL, tol=2)
    nn("layer_norm", "F.layer_norm(a, ns, w, bias, eps)", s_layer_norm, tol=4)
    nn("gelu", "F.gelu(a, approximate=approximate)", s_gelu, tol=2)
    nn("silu", "F.silu(a)", s_unary, tol=2)
    expr, inplace = "F.leaky_relu(a, 0.1)", "F.leaky_relu_(a, 0.1)"
    nn("leaky_relu", expr, s_unary, inplace=inplace, specials=True)
    expr, inplace = "F.hardtanh(a, -0.5, 2.0)", "F.hardtanh_(a, -0.5, 2.0)"
    nn("hardtanh", expr, s_unary, dtypes=NUMERIC, inplace=inplace, specials=True)

    # Type conversions and copies (fresh results of these keep a dense input's strides).
    cv = functools.partial(add, "convert", layout=True)
    cv("to", "a.to(dtype)", s_convert)
    cv("copy_", "a.copy_(src)", s_copy)
    cv("clone", "torch.clone(a)", s_unary, specials=True)
    cv("zeros_like", "torch.zeros_like(a)", s_unary)
    cv("full_like", "torch.full_like(a, value)", s_full_like)

    # Factories, whose out= forms (other shapes, dtypes and strides) the CPU fills in row-major
    # order or resizes.
    fa = functools.partial(add, "factory", out=True)
    fa("arange", "torch.arange(start, end, step, device=device)", s_arange)
    fa("range", "torch.range(start, end, step, device=device)", s_arange)
    fa("linspace", "torch.linspace(start, end, steps, device=device)", s_linspace)
    fa("logspace", "torch.logspace(start, end, steps, device=device)", s_linspace, tol=4)
    fa("full", "torch.full(size, value, device=device)", s_full)
    fa("eye", "torch.eye(n, m, device=device)", s_eye)

    # Complex functions on their branch cuts, signed zeros included.
    cx = functools.partial(add, "branch_cut", sample=s_branch_cuts, out=True, specials=True)
    for name in ["asinh", "acosh", "atanh", "asin", "acos", "atan", "sqrt", "log", "log1p"]:
        cx(name, f"torch.{name}(a)", inplace=f"a.{name}_()", tol=2)
    for name in ["log2", "log10", "sinh", "cosh", "exp", "expm1", "tanh", "reciprocal", "rsqrt"]:
        cx(name, f"torch.{name}(a)", tol=2)
    return ops


OPS = _table()
FAMILIES = sorted({op.family for op in OPS})


# --- drawing and checking cases ------------------------------------------------------------------


@st.composite
def cases(draw, ops=None):
    """A Case of one of `ops` (default: the whole table) in its plain, in-place or out= form."""
    op = draw(st.sampled_from(ops or OPS))
    b = Builder(draw, op)
    b.expr = op.expr
    op.sample(b)
    forms = ["call"] + (["inplace"] if op.inplace else []) + (["out"] if op.out else [])
    form = draw(st.sampled_from(forms))
    if form == "inplace":
        b.expr = op.inplace
    elif form == "out":
        _add_out(b)
    return Case(op, b.expr, b.inputs, b.params)


def _add_out(b):
    """Adds `out=`: of the result's shape and dtype, empty, of another shape (resized) or of
    another dtype (cast, or the CPU's error), behind a random view."""
    try:
        result = _run(Case(b.op, b.expr, b.inputs, b.params), "cpu")[0]
    except Exception:  # noqa: BLE001
        return  # the plain call already raises: its out= form adds nothing
    if not isinstance(result, torch.Tensor):
        return
    kind = b.draw(st.sampled_from(["exact", "exact", "empty", "resize", "dtype"]))
    shape = {"empty": (0,), "resize": b.shape(max_dims=3)}.get(kind, tuple(result.shape))
    out = b.tensor("out", shape, b.dtype(ALL) if kind == "dtype" else result.dtype)
    if b.op.name in ("tril", "triu") and not out.is_contiguous():
        # CPU PyTorch 2.13's tril/triu corrupt the heap writing a strided out= of uint8 (glibc
        # aborts the process), so the reference cannot run them: such outs stay contiguous.
        b.inputs["out"] = Input(out.contiguous(), "t")
    b.expr = b.expr[:-1] + ", out=out)"


def _run(case, device):
    """Builds the inputs on `device` and evaluates the case: (result, bases, args)."""
    env = dict(case.params, device=device)  # factories name it
    bases = {}
    for name, inp in case.inputs.items():
        bases[name], env[name] = inp.make(device, env)
    args = {name: env[name] for name in case.inputs}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # resized outs, std's degrees of freedom, ...
        result = eval(case.expr, GLOBALS, env)
    return result, {k: v for k, v in bases.items() if v is not None}, args


@dataclasses.dataclass
class Outcome:
    error: Exception = None
    leaves: list = None  # per result leaf: a dict of its tensor's facts, or the value itself
    bases: dict = None  # the inputs' bases afterwards, on the CPU


def _outcome(case, device):
    try:
        result, bases, args = _run(case, device)
        leaves = [_facts(x, bases, args) for x in tree_flatten(result)[0]]
        return Outcome(leaves=leaves, bases={k: v.cpu() for k, v in bases.items()})
    except Exception as e:  # noqa: BLE001 (the CPU's exception is an expected outcome to compare)
        return Outcome(error=e)


def _facts(x, bases, args):
    if not isinstance(x, torch.Tensor):
        return x
    ptr = x.untyped_storage().data_ptr() if x.numel() else None
    return {
        "device": x.device.type,
        "dtype": x.dtype,
        "shape": tuple(x.shape),
        "stride": x.stride(),
        "offset": x.storage_offset(),
        # Which input the result is (in-place, out=) or shares storage with (views).
        "is": next((k for k, v in args.items() if v is x), None),
        "alias": next(
            (k for k, v in bases.items() if ptr and v.untyped_storage().data_ptr() == ptr), None
        ),
        "value": x.cpu(),
    }


def tolerances(dtype, scale=1.0):
    if dtype.is_complex:  # the tolerances of its parts
        return tolerances(torch.float32 if dtype == torch.complex64 else torch.float64, scale)
    if dtype in (torch.float16, torch.bfloat16):
        return {"rtol": 1.6e-2 * scale, "atol": 1e-3 * scale}
    if dtype == torch.float32:
        return {"rtol": 1e-4 * scale, "atol": 1e-5 * scale}
    if dtype == torch.float64:
        return {"rtol": 1e-7 * scale, "atol": 1e-7 * scale}
    return {"rtol": 0, "atol": 0}


def _significant(shape, stride):
    """Strides of the dims with more than one element: the only ones that locate elements."""
    return tuple(s for n, s in zip(shape, stride) if n > 1)


def _compare_tensor(where, dev, cpu, op, fixed_layout, values):
    problems = []
    for key in ("device", "dtype", "shape", "is", "alias"):
        expected = "tpu" if key == "device" else cpu[key]
        if dev[key] != expected:
            problems.append(f"{where}: {key} {dev[key]} != CPU {expected}")
    if problems:
        return problems
    shape = cpu["shape"]
    if math.prod(shape) > 1:
        ours, theirs = _significant(shape, dev["stride"]), _significant(shape, cpu["stride"])
        # Views, in-place results, outs of the right size and preserve_format results have
        # PyTorch-defined strides; other fresh results may be contiguous instead.
        view = cpu["alias"] is not None and cpu["is"] is None
        defined = view or fixed_layout or op.layout
        allowed = {theirs} if defined else {theirs, _significant(shape, _contiguous_strides(shape))}
        if ours not in allowed:
            problems.append(f"{where}: strides {dev['stride']} != CPU {cpu['stride']}")
        if cpu["alias"] is not None and dev["offset"] != cpu["offset"]:
            problems.append(f"{where}: storage offset {dev['offset']} != CPU {cpu['offset']}")
    if values:
        problems += _compare_values(where, dev["value"], cpu["value"], op)
    return problems


def _compare_values(where, dev, cpu, op):
    tol = tolerances(cpu.dtype, op.tol)
    if cpu.dtype.is_complex and dev.dtype == cpu.dtype:
        # part by part: a complex difference is NaN where a part is infinite
        dev, cpu = torch.view_as_real(dev.resolve_conj()), torch.view_as_real(cpu.resolve_conj())
    try:
        torch.testing.assert_close(dev, cpu, equal_nan=True, check_stride=False, **tol)
    except AssertionError as e:
        return [f"{where}: values differ: {e}"]
    return []


def compare(case, dev, cpu):
    """The differences of the device's Outcome from the CPU's, as a list of lines."""
    if cpu.error is not None or dev.error is not None:
        if type(dev.error) is type(cpu.error):
            return []
        return [f"device {_describe(dev.error)}, CPU {_describe(cpu.error)}"]
    if len(dev.leaves) != len(cpu.leaves):
        return [f"{len(dev.leaves)} results != CPU {len(cpu.leaves)}"]
    # Writes into overlapping memory that the CPU does not reject leave values to the order of
    # its loops, which PyTorch does not define: only their metadata is compared.
    values = not racy(case)
    problems = []
    for i, (d, c) in enumerate(zip(dev.leaves, cpu.leaves)):
        if isinstance(c, dict) and isinstance(d, dict):
            # An out= or in-place result whose size did not change keeps its strides.
            fixed = c["is"] is not None and c["shape"] == tuple(_cpu_args(case)[c["is"]].shape)
            problems += _compare_tensor(f"result {i}", d, c, case.op, fixed, values)
        elif d != c:
            problems.append(f"result {i}: {d!r} != CPU {c!r}")
    for name, base in cpu.bases.items() if values else ():
        problems += _compare_values(f"input {name} afterwards", dev.bases[name], base, case.op)
    return problems


def _cpu_args(case):
    """The case's inputs on the CPU (derived inputs evaluated on the others)."""
    env = dict(case.params)
    for name, inp in case.inputs.items():
        env[name] = inp.make("cpu", env)[1]
    return {name: env[name] for name in case.inputs}


def written(case):
    """The input the case writes into: an in-place op's self, or out=; None if none."""
    if "out=out" in case.expr:
        return "out"
    m = re.match(r"F\.\w+_\((\w+)|(\w+)\.\w+_\(", case.expr)
    return m and (m.group(1) or m.group(2))


def racy(case):
    """Whether the written input overlaps itself or, other than as the same view, another
    input: element offsets are compared on the CPU copies of the inputs."""
    name = written(case)
    if name is None:
        return False
    args = _cpu_args(case)
    w = _element_offsets(args[name])
    if len(set(w)) < len(w):
        return True
    storage = args[name].untyped_storage().data_ptr()
    for other, x in args.items():
        if other != name and x.numel() and x.untyped_storage().data_ptr() == storage:
            offsets = _element_offsets(x)
            if set(offsets) & set(w) and offsets != w:
                return True
    return False


def _element_offsets(t):
    index = torch.arange(t.untyped_storage().nbytes() // t.element_size())
    return index.as_strided(t.shape, t.stride(), t.storage_offset()).flatten().tolist()


def _describe(error):
    if error is None:
        return "returned"
    first = str(error).strip().splitlines()[0] if str(error).strip() else ""
    return f"raised {type(error).__name__}: {first[:160]}"


# Differences that are not device bugs: a mismatch they explain is counted, not raised.


def _cpu_skips_dtype_check_when_empty(case, dev, cpu):
    # Not a device bug: the CPU kernel's dtype check is never reached for an empty input.
    return cpu.error is None and type(dev.error) is NotImplementedError


def _cpu_fbgemm_index_error(case, dev, cpu):
    # Not a device bug: the CPU's float32 index_select (fbgemm) raises its own RuntimeError where
    # its other dtypes and the device raise IndexError.
    return "out of DATA bounds" in str(cpu.error) and type(dev.error) is IndexError


def _cpu_std_var_all_refuses_reduced_precision(case, dev, cpu):
    # Not a device bug: one path of the CPU's std/var (std_var_all, taken when the reduced dims
    # coalesce into one) refuses a float16/bfloat16 input written to an out= of another dtype.
    return "std_var_all: Unsupported dtype" in str(cpu.error) and dev.error is None


def _cpu_tril_copies_back(case, dev, cpu):
    # Not a device bug: the CPU's tril_/triu_ on a batch it cannot write in place computes a copy
    # and copy_()s it back, which refuses a self-overlapping tensor; its direct path does not.
    return (
        case.op.name in ("tril", "triu")
        and written(case) == "a"
        and "more than one element of the written-to tensor" in str(cpu.error)
        and dev.error is None
    )


def _cpu_masked_fill_checks_device_value(case, dev, cpu):
    # Not a device bug: the CPU reads masked_fill's tensor value and converts it with an overflow
    # check; the device converts it on the device, unchecked and without a sync, as CUDA does.
    return "without overflow" in str(cpu.error) and dev.error is None


def _cpu_reduced_precision_imprecise(case, dev, cpu):
    # Not a device bug: two CPU kernels lose precision in float16/bfloat16 (layer_norm of a nearly
    # constant row is off by its mean's rounding error over sqrt(eps); nansum accumulates in the
    # input's type); the device matches the float64 result there.
    if case.op.name not in ("layer_norm", "nansum") or dev.error or cpu.error:
        return False
    args = _cpu_args(case)
    wide = {k: v.double() if v.is_floating_point() else v for k, v in args.items()}
    exact = eval(case.expr, GLOBALS, {**case.params, **wide})
    value = dev.leaves[0]["value"]
    reduced = value.dtype in (torch.float16, torch.bfloat16)
    return reduced and not _compare_values("", value, exact.to(value.dtype), case.op)


def _float_to_integer_out_of_range(case, dev, cpu):
    # Not a device bug: a reduction into an integer out= converts its float input to out's dtype
    # first, and floats outside that type's range convert to what C++ leaves undefined.
    if written(case) != "out" or dev.error is not None or cpu.error is not None:
        return False
    args = _cpu_args(case)
    out = args["out"].dtype
    if out == torch.bool or out.is_floating_point or out.is_complex:
        return False
    info = torch.iinfo(out)
    return any(
        x.is_floating_point() and x.numel() and bool(((x < info.min) | (x > info.max)).any())
        for x in args.values()
    )


def _racy_data_dependent_error(case, dev, cpu):
    # Not a device bug: in a write into memory that its inputs share (which the CPU does not
    # reject), a divisor or an index may be read before or after the CPU's loop overwrote it.
    errors = " ".join(str(e) for e in (dev.error, cpu.error) if e is not None)
    data_dependent = "ZeroDivisionError" in errors or "out of bounds" in errors
    return data_dependent and (dev.error is None) != (cpu.error is None) and racy(case)


KNOWN = {
    "the CPU returns for empty inputs of dtypes its kernel lacks": _cpu_skips_dtype_check_when_empty,
    "the CPU's float32 index_select raises fbgemm's RuntimeError": _cpu_fbgemm_index_error,
    "the CPU's std_var_all path refuses float16/bfloat16 into another out= dtype": (
        _cpu_std_var_all_refuses_reduced_precision
    ),
    "the CPU's tril_/triu_ copy back into a self-overlapping batch": _cpu_tril_copies_back,
    "the CPU checks masked_fill's tensor value for overflow": _cpu_masked_fill_checks_device_value,
    "a racy write's data-dependent error depends on the CPU's loop order": (
        _racy_data_dependent_error
    ),
    "floats out of an integer out='s range convert to an undefined value": (
        _float_to_integer_out_of_range
    ),
    "the CPU's float16/bfloat16 layer_norm and nansum lose precision": (
        _cpu_reduced_precision_imprecise
    ),
}
known_counts = dict.fromkeys(KNOWN, 0)


def _fallbacks():
    return dict(torch_pjrt.metrics.counters()["cpu_fallbacks"])


def check(case, mode):
    """Runs `case` on the CPU and on the device in eager `mode`; raises Mismatch when they differ
    or when the device ran an op through the CPU fallback."""
    cpu = _outcome(case, "cpu")
    before = _fallbacks()
    with torch_pjrt.eager_mode(mode):
        dev = _outcome(case, "tpu")
    after = _fallbacks()
    problems = compare(case, dev, cpu)
    for name, explains in KNOWN.items():
        if problems and explains(case, dev, cpu):
            known_counts[name] += 1
            problems = []
    fell = {k: n - before.get(k, 0) for k, n in after.items() if n != before.get(k, 0)}
    if fell:
        problems.append(f"ran through the CPU fallback: {fell}")
    if problems:
        raise Mismatch(
            f"{case.op.name} ({mode} mode): "
            + "\n".join(problems)
            + "\n\nReproducer:\n"
            + case.code(mode)
        )


# --- long runs (scripts/fuzz.sh) -----------------------------------------------------------------


def _fuzz_round(op, mode, examples, seed_value):
    @seed(seed_value)
    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(cases([op]))
    def run(case):
        check(case, mode)

    run()


def main(argv=None):
    """Fuzzes random (op, mode) pairs, a hypothesis run of --examples cases each with a random
    seed, until --minutes are up; prints each distinct finding (shrunk) as it comes."""
    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--minutes", type=float, default=10)
    parser.add_argument("--seed", type=int, default=random.randrange(2**32))
    parser.add_argument("--examples", type=int, default=30)
    parser.add_argument("--ops", default="", help="regex on op names")
    parser.add_argument("--modes", default="strict,fused,debug")
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    ops = [op for op in OPS if re.search(args.ops, op.name)]
    modes = args.modes.split(",")
    print(f"fuzz: seed {args.seed}, {len(ops)} ops, modes {modes}, {args.minutes} min", flush=True)
    end = time.monotonic() + args.minutes * 60
    seen, rounds = set(), 0
    while time.monotonic() < end:
        op, mode = rng.choice(ops), rng.choice(modes)
        rounds += 1
        try:
            _fuzz_round(op, mode, args.examples, rng.getrandbits(64))
        except Exception as e:  # noqa: BLE001 (every failure is a finding to print)
            key = (op.name, mode, str(e).splitlines()[0][:200] if str(e) else type(e).__name__)
            if key not in seen:
                seen.add(key)
                print(f"\n=== finding {len(seen)}: {op.name} in {mode} mode\n{e}", flush=True)
    print(f"\nfuzz: {rounds} rounds of up to {args.examples} cases, {len(seen)} findings")
    for name, count in known_counts.items():
        if count:
            print(f"  known (reported) finding seen {count}x: {name}")
    return 1 if seen else 0


if __name__ == "__main__":
    sys.exit(main())
