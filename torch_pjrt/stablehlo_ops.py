"""StableHLO text as torch ops on "tpu", for kernels written without JAX.

`stablehlo_op(name, program)` registers a `torch.library` custom op whose kernel is the MLIR text
`program`: a `func.func @main` (alone, with helper functions, or inside a `module`) in StableHLO's
pretty syntax. Each call records one node of the deferred graph that calls @main inside the
program it joins (Strict, Fused, torch.compile), exactly as `torch.tpu.pallas.jax_op` kernels do.
Output shapes are read from @main's result types, which is the op's fake kernel.
"""

import inspect
import re

import torch

from . import _kernel_ops
from ._kernel_ops import Lowered, Param, TensorSpec

__all__ = ["TensorSpec", "stablehlo_op"]

_ELEMENT_TYPES = {
    "f32": torch.float32,
    "f64": torch.float64,
    "f16": torch.float16,
    "bf16": torch.bfloat16,
    "i1": torch.bool,
    "i8": torch.int8,
    "i16": torch.int16,
    "i32": torch.int32,
    "i64": torch.int64,
    "ui8": torch.uint8,
}
_TENSOR_TYPE = re.compile(r"tensor<([^<>]*)>")
_FUNC = re.compile(r"func\.func\s+(?:(?:public|private|nested)\s+)?@([A-Za-z_][\w$.]*)")
_SYMBOL = re.compile(r"@([A-Za-z_][\w$.]*)")


def _code_spans(text):
    """(start, end, is_code) spans of `text`: string literals and // comments are not code."""
    spans, i, start, n = [], 0, 0, len(text)
    while i < n:
        if text[i] == '"' or text.startswith("//", i):
            spans.append((start, i, True))
            if text[i] == '"':
                j = i + 1
                while j < n and text[j] != '"':
                    j += 2 if text[j] == "\\" else 1
                j += 1
            else:
                j = text.find("\n", i)
                j = n if j < 0 else j
            spans.append((i, j, False))
            start = i = j
        else:
            i += 1
    spans.append((start, n, True))
    return spans


def _code_only(text):
    """`text` with string literals and comments blanked (same length, same offsets)."""
    return "".join(
        text[a:b]
        if code
        else '"' + " " * max(b - a - 2, 0) + '"'
        if text[a] == '"'
        else " " * (b - a)
        for a, b, code in _code_spans(text)
        if b > a
    )


def _matching(code, open_at, pair="()"):
    depth = 0
    for i in range(open_at, len(code)):
        depth += {pair[0]: 1, pair[1]: -1}.get(code[i], 0)
        if depth == 0:
            return i
    raise ValueError("unbalanced " + pair)


def _spec(name, text):
    parts = text.split("x")
    element = _ELEMENT_TYPES.get(parts[-1])
    if element is None:
        raise TypeError(f"{name}: @main uses the unsupported type tensor<{text}>")
    if any(not p.isdigit() for p in parts[:-1]):
        raise TypeError(f"{name}: @main must have static shapes, got tensor<{text}>")
    return TensorSpec(tuple(int(p) for p in parts[:-1]), element)


def main_signature(name, program):
    """(input specs, output specs) of @main in `program`."""
    code = _code_only(program)
    m = re.search(r"func\.func\s+(?:(?:public|private)\s+)?@main\s*\(", code)
    if m is None:
        raise ValueError(f"{name}: the program defines no func.func @main")
    close = _matching(code, m.end() - 1)
    inputs = [_spec(name, t) for t in _TENSOR_TYPE.findall(code[m.end() : close])]
    rest = code[close + 1 :].lstrip()
    if not rest.startswith("->"):
        raise ValueError(f"{name}: @main returns nothing")
    rest = rest[2:].lstrip()
    results = rest[: _matching(rest, 0) + 1] if rest.startswith("(") else rest.split("{", 1)[0]
    return inputs, [_spec(name, t) for t in _TENSOR_TYPE.findall(results)]


def _module_body(name, program):
    """The functions of `program`, without a `module ... { }` around them."""
    code = _code_only(program)
    m = re.match(r"\s*module\b", code)
    if m is None:
        return program
    i = m.end()
    sym = re.match(r"\s*@[\w$.]+", code[i:])
    i += sym.end() if sym else 0
    attrs = re.match(r"\s*attributes\s*\{", code[i:])
    if attrs:
        i = _matching(code, i + attrs.end() - 1, "{}") + 1
    body = re.match(r"\s*\{", code[i:])
    if body is None:
        raise ValueError(f"{name}: cannot read the module around the program")
    start = i + body.end()
    return program[start : _matching(code, start - 1, "{}")]


def kernel_functions(name, program):
    """(functions, entry) of `program`: every function renamed with a prefix unique to the text
    and made private."""
    body = _module_body(name, program)
    defined = set(_FUNC.findall(_code_only(body)))
    if "main" not in defined:
        raise ValueError(f"{name}: the program defines no func.func @main")
    prefix = _kernel_ops.symbol_prefix(name, body)
    out = []
    for a, b, code in _code_spans(body):
        piece = body[a:b]
        if code:
            piece = _SYMBOL.sub(lambda m: "@" + prefix + m[1] if m[1] in defined else m[0], piece)
            piece = re.sub(
                r"func\.func\s+(?:(?:public|private|nested)\s+)?@", "func.func private @", piece
            )
        out.append(piece)
    return "".join(out), prefix + "main"


def _check_inputs(name, want, specs):
    got = list(_kernel_ops.flatten_specs(specs))
    for i, (g, w) in enumerate(zip(got, want)):
        if g.dtype != w.dtype:
            raise TypeError(f"{name}: input {i} has dtype {g.dtype}, @main takes {w.dtype}")
        if g.shape != w.shape:
            raise ValueError(
                f"{name}: input {i} has shape {list(g.shape)}, @main takes {list(w.shape)}"
            )


def stablehlo_op(name, program=None, /, *, donate_argnums=None):
    """Registers the torch op `name` ("namespace::op") computed by StableHLO text.

    `program` is MLIR text defining `func.func @main` with static tensor types (helper functions
    and a surrounding `module` are allowed): the op takes @main's arguments as tensors and returns
    its result (a tensor, or a tuple for several). Inputs must match @main's types exactly.

    Used as a decorator, `@stablehlo_op(name)` takes a function with annotated parameters (as for
    `torch.tpu.pallas.jax_op`) that returns the program text for given inputs: it is called once
    per input signature with a TensorSpec (shape, dtype) for each tensor and the static values.
    `donate_argnums` as for jax_op. Returns a torch.library.CustomOpDef.
    """
    if program is None:
        return lambda f: stablehlo_op(name, f, donate_argnums=donate_argnums)
    _kernel_ops.check_name(name)
    if isinstance(program, str):
        inputs, outputs = main_signature(name, program)
        params = [
            Param(f"x{i}", "tensor", "Tensor", inspect.Parameter.empty, False)
            for i in range(len(inputs))
        ]
        returns = "tensor" if len(outputs) == 1 else ("tuple", len(outputs))
        text = program

        def program_of(specs, statics):
            _check_inputs(name, inputs, specs)
            return text
    elif callable(program):
        params = _kernel_ops.parse_signature(name, program, (torch.Tensor, TensorSpec))
        returns = _kernel_ops.returns_of(
            name, _kernel_ops.return_annotation(name, program), (torch.Tensor, TensorSpec)
        )

        def program_of(specs, statics):
            args, kwargs = _kernel_ops.arguments(
                params, specs, statics, _kernel_ops.flatten_specs(specs)
            )
            text = program(*args, **kwargs)
            if not isinstance(text, str):
                raise TypeError(
                    f"{name}: the program function returned {type(text).__name__}, not str"
                )
            _check_inputs(name, main_signature(name, text)[0], specs)
            return text
    else:
        raise TypeError(f"{name}: program must be StableHLO text or a function returning it")

    def outputs_of(text):
        outputs = main_signature(name, text)[1]
        _kernel_ops.check_outputs(name, returns, outputs)
        return tuple(outputs)

    def shapes(specs, statics):
        return outputs_of(program_of(specs, statics))

    def lower(specs, statics):
        text = program_of(specs, statics)
        functions, entry = kernel_functions(name, text)
        return Lowered(functions, entry, outputs_of(text))

    donated = _kernel_ops.donated_params(name, params, donate_argnums)
    return _kernel_ops.KernelOp(name, params, returns, lower, shapes, donated).define()
