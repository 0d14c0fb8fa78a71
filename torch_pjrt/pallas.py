"""`torch.tpu.pallas`: JAX and Pallas functions as torch ops on "tpu".

`jax_op(name, fn)` makes a `torch.library` custom op of a JAX function (TorchTPU's rules: a
"namespace::name", every parameter annotated, non-tensor parameters static). Per input signature
the function is lowered once by JAX on the CPU (never taking an accelerator) for the plugin's
platform; its StableHLO functions become a kernel that each call records as one node of the
deferred graph, so it runs on the device buffers inside Strict, Fused and compiled programs alike.
JAX is optional: without it, importing this module raises ImportError naming the install command.
"""

import contextlib
import functools
import inspect

try:
    import jax
    import jax.numpy as jnp
except ImportError as e:  # pragma: no cover - exercised in a subprocess without JAX
    raise ImportError(
        "torch.tpu.pallas needs JAX: pip install 'torch_pjrt[jax]' (or pip install jax)"
    ) from e

import torch

from . import _C, _kernel_ops
from ._kernel_ops import Lowered, Param, TensorSpec

__all__ = ["TensorSpec", "jax_op"]

_TENSOR_TYPES = (jax.Array, torch.Tensor)
_JAX_DTYPES = {
    torch.float32: jnp.float32,
    torch.float64: jnp.float64,
    torch.float16: jnp.float16,
    torch.bfloat16: jnp.bfloat16,
    torch.int8: jnp.int8,
    torch.int16: jnp.int16,
    torch.int32: jnp.int32,
    torch.int64: jnp.int64,
    torch.uint8: jnp.uint8,
    torch.bool: jnp.bool_,
}
_TORCH_DTYPES = {jnp.dtype(v): k for k, v in _JAX_DTYPES.items()}


@functools.cache
def _lowering_device():
    """A device of a CPU client of JAX's own: lowering with it as the default device never
    starts JAX's backends, so JAX takes no accelerator (and no memory on one)."""
    from jax._src import xla_bridge

    return xla_bridge.make_cpu_client().local_devices()[0]


def _platform():
    """The JAX platform programs are lowered for: the plugin's."""
    name = _C._platform_name().lower()
    return {"gpu": "cuda"}.get(name, name)


def _version(v):
    return tuple(int(p) for p in str(v).split("."))


def _version_str(v):
    return ".".join(str(p) for p in v) if isinstance(v, (list, tuple)) else str(v)


def _plugin_versions():
    attrs = _C._plugin_attributes()
    cur, low = attrs.get("stablehlo_current_version"), attrs.get("stablehlo_minimum_version")
    return (_version_str(low) if low else None), (_version_str(cur) if cur else None)


def _mlir():
    from jax._src.interpreters import mlir
    from jaxlib.mlir import ir
    from jaxlib.mlir.dialects import stablehlo

    return mlir, ir, stablehlo


def target_version(name):
    """The StableHLO version kernels are checked against: the older of JAX's and the plugin's
    current versions; None when the plugin reports none. Raises RuntimeError naming both when
    JAX cannot produce StableHLO the plugin accepts."""
    _, _, stablehlo = _mlir()
    plugin_min, plugin_cur = _plugin_versions()
    if plugin_cur is None:
        return None
    jax_cur, jax_min = stablehlo.get_current_version(), stablehlo.get_minimum_version()
    if plugin_min and _version(jax_cur) < _version(plugin_min):
        raise RuntimeError(
            f"{name}: JAX {jax.__version__} emits StableHLO {jax_cur}, older than the plugin "
            f"accepts (StableHLO {plugin_min} to {plugin_cur}); install a newer JAX"
        )
    target = jax_cur if _version(jax_cur) <= _version(plugin_cur) else plugin_cur
    if _version(target) < _version(jax_min):
        raise RuntimeError(
            f"{name}: the plugin accepts StableHLO {plugin_min or '?'} to {plugin_cur}, but JAX "
            f"{jax.__version__} (StableHLO {jax_cur}) can target {jax_min} at the oldest; install "
            "an older JAX or a newer plugin"
        )
    return target


def _portable(name, text, target):
    """`text` written as StableHLO `target` and read back (CHLO legalized, nothing newer than
    `target` left), as a module of the current context. Raises RuntimeError naming both versions
    when the kernel uses something `target` cannot express."""
    from jax._src.lib import _jax

    stablehlo = _mlir()[2]
    try:
        artifact = _jax.mlir.serialize_portable_artifact(text, target)
    except jax.errors.JaxRuntimeError as e:
        # The MLIR diagnostics name what does not fit; the module dump after them does not help.
        errors = [line.strip() for line in str(e).splitlines() if "error:" in line]
        raise RuntimeError(
            f"{name}: the kernel cannot be written as StableHLO {target}, the newest version the "
            f"plugin accepts (JAX {jax.__version__} emits {stablehlo.get_current_version()}): "
            + ("; ".join(errors) or str(e))
        ) from None
    return _jax.mlir.deserialize_portable_artifact(artifact)


def kernel_functions(name, text, target):
    """(functions, entry) of a lowered module, in StableHLO `target` (None: as JAX wrote it): its
    functions renamed with a prefix unique to the module's contents, all private, argument and
    result attributes dropped, in generic syntax."""
    mlir, ir, _ = _mlir()
    prefix = _kernel_ops.symbol_prefix(name, text)
    with mlir.make_ir_context():
        module = _portable(name, text, target) if target else ir.Module.parse(text)
        funcs = list(module.body.operations)
        for op in funcs:
            if op.operation.name != "func.func":
                raise NotImplementedError(
                    f"{name}: the lowered module holds '{op.operation.name}'; kernels take only "
                    "functions (no sharding meshes or other module-level ops)"
                )
        for op in funcs:
            old = ir.StringAttr(op.attributes["sym_name"]).value
            ir.SymbolTable.replace_all_symbol_uses(old, prefix + old, module.operation)
            op.attributes["sym_name"] = ir.StringAttr.get(prefix + old)
            op.attributes["sym_visibility"] = ir.StringAttr.get("private")
            for attr in ("arg_attrs", "res_attrs"):
                if attr in op.attributes:
                    del op.attributes[attr]
        functions = "\n".join(
            op.operation.get_asm(print_generic_op_form=True, enable_debug_info=False)
            for op in funcs
        )
    return functions, prefix + "main"


def _rejected(name, specs, e):
    inputs = ", ".join(
        f"{s.dtype}{list(s.shape)}".replace("torch.", "") for s in _kernel_ops.flatten_specs(specs)
    )
    msg = f"{name}: the JAX function rejected its inputs ({inputs}): {e}"
    cls = (
        TypeError
        if isinstance(e, TypeError)
        else ValueError
        if isinstance(e, ValueError)
        else RuntimeError
    )
    return cls(msg)


class _JaxKernel:
    """Lowering and shapes of one JAX function over flat tensor inputs. `make(specs, statics)`
    returns the function of the flat inputs (the tensors, in order) for that signature."""

    def __init__(self, name, make, returns):
        self.name = name
        self.make = make
        self.returns = returns

    def _avals(self, specs):
        avals = []
        x64 = jax.config.read("jax_enable_x64")
        for s in _kernel_ops.flatten_specs(specs):
            if s.dtype in (torch.float64, torch.int64) and not x64:
                raise TypeError(
                    f"{self.name}: an input has dtype {s.dtype}, which JAX keeps only in 64-bit "
                    "mode: convert it (e.g. to torch.float32/int32) or enable "
                    "jax.config.update('jax_enable_x64', True)"
                )
            avals.append(jax.ShapeDtypeStruct(s.shape, _JAX_DTYPES[s.dtype]))
        return avals

    @contextlib.contextmanager
    def _tracing(self, specs):
        try:
            with jax.default_device(_lowering_device()):
                yield
        except (TypeError, ValueError, RuntimeError) as e:
            if str(e).startswith(self.name + ":"):
                raise
            raise _rejected(self.name, specs, e) from e

    def _outputs(self, out_tree):
        leaves = jax.tree.leaves(out_tree)
        outs = []
        for i, leaf in enumerate(leaves):
            dtype = _TORCH_DTYPES.get(jnp.dtype(leaf.dtype))
            if dtype is None:
                raise TypeError(
                    f"{self.name}: output {i} has dtype {leaf.dtype}, which kernels do not support"
                )
            outs.append(TensorSpec(tuple(leaf.shape), dtype))
        _kernel_ops.check_outputs(self.name, self.returns, outs)
        return tuple(outs)

    def shapes(self, specs, statics):
        avals = self._avals(specs)
        with self._tracing(specs):
            return self._outputs(jax.eval_shape(self.make(specs, statics), *avals))

    def lower(self, specs, statics):
        avals = self._avals(specs)
        target = target_version(self.name)
        with self._tracing(specs):
            traced = jax.jit(self.make(specs, statics), keep_unused=True).trace(*avals)
            outputs = self._outputs(traced.out_info)
            lowered = traced.lower(lowering_platforms=(_platform(),))
        functions, entry = kernel_functions(self.name, lowered.as_text(debug_info=False), target)
        return Lowered(functions, entry, outputs)


def _vjp_autograd(op, impl, fn):
    """Registers on `op` a backward computed by a second kernel op, `<name>_vjp`, whose JAX
    function is jax.vjp of `fn` over its float inputs and float outputs."""
    params, returns = impl.params, impl.returns
    # First (torch custom ops take no keyword-only tensors, and the forward's may have defaults).
    cotangents = Param("cotangents", "tensor_list", "Tensor[]", inspect.Parameter.empty, False)

    def make(specs, statics):
        n_cts, fwd_specs = len(specs[0]), specs[1:]
        flat_specs = list(_kernel_ops.flatten_specs(fwd_specs))
        diff = [i for i, s in enumerate(flat_specs) if s.dtype.is_floating_point]

        def pullback(*xs):
            primals = list(xs[n_cts:])

            def differentiable_part(*d):
                full = list(primals)
                for i, v in zip(diff, d):
                    full[i] = v
                args, kwargs = _kernel_ops.arguments(params, fwd_specs, statics, full)
                leaves = jax.tree.leaves(fn(*args, **kwargs))
                return [v for v in leaves if jnp.issubdtype(v.dtype, jnp.floating)]

            _, back = jax.vjp(differentiable_part, *[primals[i] for i in diff])
            return list(back(list(xs[:n_cts])))

        return pullback

    vjp_name = impl.name + "_vjp"
    kernel = _JaxKernel(vjp_name, make, "list")
    vjp = _kernel_ops.KernelOp(vjp_name, [cotangents, *params], "list", kernel.lower, kernel.shapes)
    vjp_op = vjp.define()
    names = [p.name for p in params]

    def setup_context(ctx, inputs, output):
        flat, specs, statics, _ = impl.split((), dict(zip(names, inputs)))
        ctx.specs, ctx.statics = specs, statics
        outs = [output] if returns == "tensor" else list(output)
        ctx.out_meta = [(o.shape, o.dtype, o.device) for o in outs]
        ctx.save_for_backward(*flat)

    def backward(ctx, *grads):
        flat = ctx.saved_tensors
        if returns == "list":
            grads = grads[0]
        cts = [
            g if g is not None else torch.zeros(shape, dtype=dtype, device=device)
            for g, (shape, dtype, device) in zip(grads, ctx.out_meta)
            if dtype.is_floating_point
        ]
        args, kwargs = _kernel_ops.arguments(params, ctx.specs, ctx.statics, flat)
        computed = iter(vjp_op(cts, *args, **kwargs))

        def grad(spec):
            return next(computed) if spec.dtype.is_floating_point else None

        result = []
        for p, spec in zip(params, _kernel_ops.per_param(params, ctx.specs)):
            if spec is None:
                result.append(None)
            elif p.kind == "tensor_list":
                result.append([grad(s) for s in spec])
            else:
                result.append(grad(spec))
        return tuple(result)

    op.register_autograd(backward, setup_context=setup_context)
    return vjp_op


def jax_op(
    name,
    fn=None,
    /,
    *,
    donate_argnums=None,
    differentiable=False,
    mesh=None,
    input_partition_specs=None,
    output_partition_specs=None,
):
    """Makes the JAX function `fn` a torch op named `name` ("namespace::op") that runs on "tpu"
    tensors; usable as `@jax_op(name)`. Returns a torch.library.CustomOpDef.

    Every parameter needs an annotation: `jax.Array`/`torch.Tensor` (optionally in a
    list/tuple/Sequence or Optional) for inputs, or bool, int, float, str, numbers.Number,
    torch.dtype, torch.device, Literal, Sequence of int/float/bool, Optional of these for static
    values (part of the cache key). The return annotation is a tensor type, a tuple of them,
    tuple[T, ...] or list[T]. Arguments bound with functools.partial are fixed (and must be
    hashable). The function is lowered once per input signature; output shapes come from
    jax.eval_shape (the fake kernel).

    `donate_argnums`: positional parameters whose tensors are donated: after the call they hold
    no value (using them raises), and the kernel may reuse their memory for its outputs.
    `differentiable=True` registers a backward derived with jax.vjp (float inputs get
    gradients); otherwise attach one with `op.register_autograd`. `mesh` and the partition specs
    (TorchTPU's multi-device kernels) are not supported yet.
    """
    if fn is None:
        return lambda f: jax_op(
            name,
            f,
            donate_argnums=donate_argnums,
            differentiable=differentiable,
            mesh=mesh,
            input_partition_specs=input_partition_specs,
            output_partition_specs=output_partition_specs,
        )
    if mesh is not None or input_partition_specs is not None or output_partition_specs is not None:
        _kernel_ops.check_name(name)
        raise NotImplementedError(f"{name}: mesh and partition specs are not supported yet")
    impl = kernel_op(name, fn, donate_argnums, differentiable)
    op = impl.define()
    if differentiable:
        _vjp_autograd(op, impl, fn)
    return op


def kernel_op(name, fn, donate_argnums=None, differentiable=False):
    """The `_kernel_ops.KernelOp` of the JAX function `fn` (what jax_op defines as a torch
    op; its `call` runs the kernel without the op's dispatch)."""
    _kernel_ops.check_name(name)
    if isinstance(fn, functools.partial):
        _kernel_ops.check_hashable(name, {**dict(enumerate(fn.args)), **fn.keywords})
    params = _kernel_ops.parse_signature(name, fn, _TENSOR_TYPES)
    returns = _kernel_ops.returns_of(name, _kernel_ops.return_annotation(name, fn), _TENSOR_TYPES)
    donated = _kernel_ops.donated_params(name, params, donate_argnums)
    if donated and differentiable:
        raise ValueError(
            f"{name}: donated inputs cannot be differentiated (the backward needs them)"
        )

    def make(specs, statics):
        def flat_fn(*flat):
            args, kwargs = _kernel_ops.arguments(params, specs, statics, flat)
            return fn(*args, **kwargs)

        return flat_fn

    kernel = _JaxKernel(name, make, returns)
    return _kernel_ops.KernelOp(name, params, returns, kernel.lower, kernel.shapes, donated)
