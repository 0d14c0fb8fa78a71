"""out= into views, for every out= overload of an op the "tpu" device implements (enumerated from
the dispatcher's PrivateUse1 registrations: native kernels, composites and CPU-fallback paths
alike). Results written through a strided column, a transpose (fed by broadcasting inputs for
pointwise ops), an offset slice and an empty out that must be resized equal what the op computes
(its functional form on the CPU, or on the device for random ops and ops the CPU lacks), and every
element of the base outside the view keeps its value.

Inputs come from OpInfo samples located by tools/out_samples.py (tests/python/out_samples.json),
or from RECIPES below for overloads no OpInfo sample reaches. Ops run in Fused mode, many to a
program, so the sweep compiles a few dozen programs rather than one per op and layout.

test_out_forms_on_the_device checks the out= forms written from their functional form on the
device (aten/out_forms.cpp): no CPU fallback, the CPU's values, resize warning and dtype error."""

import json
import os
import sys
import warnings

import pytest
import torch
from torch.utils._pytree import tree_map

import torch_pjrt

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "tools"))
import out_samples  # noqa: E402  (after the sys.path entry)

SAMPLES = json.load(open(os.path.join(os.path.dirname(__file__), "out_samples.json")))


def _x(*shape):
    return torch.rand(shape) + 0.5


def _c(*shape):
    return torch.randn(shape, dtype=torch.complex64)


def _i(hi, *shape):
    return torch.randint(0, hi, shape)


def _host(t):
    """A tensor argument that stays on the host (the scalar lists of _foreach_* ops)."""
    t.stays_on_host = True
    return t


# Arguments (without the out= ones) for overloads that no OpInfo sample calls.
RECIPES = {
    # The transformer fast paths (embed_dim 4, 2 heads): packed projections, then the layer's norms
    # and feed-forward weights.
    "aten._native_multi_head_attention.out": lambda: (
        *(_x(2, 3, 4),) * 3,
        4,
        2,
        _x(12, 4),
        _x(12),
        _x(4, 4),
        _x(4),
    ),
    "aten._transformer_encoder_layer_fwd.out": lambda: (
        _x(2, 3, 4),
        4,
        2,
        _x(12, 4),
        _x(12),
        _x(4, 4),
        _x(4),
        False,
        False,
        1e-5,
        _x(4),
        _x(4),
        _x(4),
        _x(4),
        _x(8, 4),
        _x(8),
        _x(4, 8),
        _x(4),
    ),  # fmt: skip
    "aten._batch_norm_no_update.out": lambda: (_x(2, 3, 4), _x(3), _x(3), _x(3), _x(3), 0.1, 1e-5),
    "aten._native_batch_norm_legit.no_stats_out": lambda: (
        _x(2, 3, 4),
        _x(3),
        _x(3),
        True,
        0.1,
        1e-5,
    ),
    "aten._foreach_powsum.Scalar_out": lambda: ([_x(2, 3), _x(4)], 2),
    "aten._fft_c2c.out": lambda: (_c(3, 4), [1], 0, True),
    # Diagonal, so that the eigen- and singular vectors are unit vectors on the CPU and the device
    # alike (in general they are defined only up to sign).
    "aten._linalg_eigh.eigenvalues": lambda: (torch.diag(torch.tensor([1.0, 3.0, 2.0])), "L"),
    "aten._linalg_svd.U": lambda: (torch.eye(4, 3) * torch.tensor([3.0, 2.0, 1.0]), True),
    "aten._fft_r2c.out": lambda: (_x(3, 8), [1], 2, True),
    "aten._fft_c2r.out": lambda: (_c(3, 5), [1], 1, 8),
    "aten.angle.out": lambda: (_c(3, 4),),
    "aten.complex.out": lambda: (_x(3, 4), _x(3, 4)),
    "aten.conj_physical.out": lambda: (_c(3, 4),),
    "aten.polar.out": lambda: (_x(3, 4), _x(3, 4)),
    "aten._foreach_sub.ScalarList_out": lambda: ([_x(2, 3), _x(4)], [1.5, 2.0]),
    "aten.addmm.dtype_out": lambda: (_x(3, 4), _x(3, 2), _x(2, 4), torch.float32),
    "aten.baddbmm.dtype_out": lambda: (_x(2, 3, 4), _x(2, 3, 2), _x(2, 2, 4), torch.float32),
    "aten.bmm.dtype_out": lambda: (_x(2, 3, 2), _x(2, 2, 4), torch.float32),
    "aten.mm.dtype_out": lambda: (_x(3, 2), _x(2, 4), torch.float32),
    "aten._logcumsumexp.out": lambda: (_x(3, 4), 1),
    "aten._cholesky_solve_helper.out": lambda: (_x(3, 2), torch.eye(3) + _x(3, 3).tril(), False),
    "aten.searchsorted.Scalar_out": lambda: (torch.arange(6.0), 2.5),
    "aten.bucketize.Scalar_out": lambda: (2.5, torch.arange(6.0)),
    "aten.bernoulli.Tensor_out": lambda: (_x(3, 4), torch.rand(3, 4)),
    "aten.bernoulli.float_out": lambda: (_x(3, 4), 0.3),
    "aten.clamp_max.out": lambda: (_x(3, 4), 1.0),
    "aten.all.dims_out": lambda: (_x(3, 4) > 1, [1], False),
    "aten.any.dims_out": lambda: (_x(3, 4) > 1, [1], False),
    "aten.bitwise_and.Scalar_out": lambda: (_i(8, 3, 4), 5),
    "aten.bitwise_or.Scalar_out": lambda: (_i(8, 3, 4), 5),
    "aten.bitwise_xor.Scalar_out": lambda: (_i(8, 3, 4), 5),
    "aten.bitwise_and.Scalar_Tensor_out": lambda: (5, _i(8, 3, 4)),
    "aten.bitwise_or.Scalar_Tensor_out": lambda: (5, _i(8, 3, 4)),
    "aten.bitwise_xor.Scalar_Tensor_out": lambda: (5, _i(8, 3, 4)),
    "aten.__lshift__.Scalar_out": lambda: (_i(8, 3, 4), 2),
    "aten.__lshift__.Tensor_out": lambda: (_i(8, 3, 4), _i(5, 3, 4)),
    "aten.__rshift__.Scalar_out": lambda: (_i(8, 3, 4), 2),
    "aten.__rshift__.Tensor_out": lambda: (_i(8, 3, 4), _i(5, 3, 4)),
    "aten.bitwise_left_shift.Scalar_Tensor_out": lambda: (5, _i(5, 3, 4)),
    "aten.bitwise_left_shift.Tensor_Scalar_out": lambda: (_i(8, 3, 4), 2),
    "aten.bitwise_right_shift.Scalar_Tensor_out": lambda: (50, _i(5, 3, 4)),
    "aten.bitwise_right_shift.Tensor_Scalar_out": lambda: (_i(8, 3, 4), 2),
    "aten.copysign.Scalar_out": lambda: (_x(3, 4), -1.5),
    "aten.count_nonzero.dim_IntList_out": lambda: (_i(3, 3, 4), [1]),
    "aten.norm.Scalar_out": lambda: (_x(3, 4), 3),
    # The OpInfo sample passes keepdim as a keyword, which the capture drops.
    "aten.norm.dtype_out": lambda: (_x(3, 4), 2, [1], False, torch.float64),
    "aten.norm.ScalarOpt_dtype_out": lambda: (_x(3, 4), 2, torch.float64),
    "aten.special_xlog1py.other_scalar_out": lambda: (_x(3, 4), 0.5),
    "aten.special_xlog1py.self_scalar_out": lambda: (0.5, _x(3, 4).abs()),
    "aten.special_zeta.other_scalar_out": lambda: (_x(3, 4).abs() + 1.5, 2.5),
    "aten.special_zeta.self_scalar_out": lambda: (3.0, _x(3, 4).abs() + 0.5),
    "aten.xlogy.OutScalar_Other": lambda: (_x(3, 4), 0.5),
    "aten.xlogy.OutScalar_Self": lambda: (0.5, _x(3, 4).abs()),
    "aten.div.Scalar_mode_out": lambda: (_x(3, 4), 0.7, "floor"),
    "aten.floor_divide.Scalar_out": lambda: (_x(3, 4), 0.7),
    "aten.fmod.Scalar_out": lambda: (_x(3, 4), 0.7),
    "aten.remainder.Scalar_Tensor_out": lambda: (2.5, _x(3, 4)),
    "aten.lerp.Tensor_out": lambda: (_x(3, 4), _x(3, 4), torch.rand(3, 4)),
    "aten.repeat_interleave.Tensor_out": lambda: (torch.tensor([2, 0, 3, 1]),),
    "aten.unique_dim.out": lambda: (_i(3, 4, 3), 0, True, True, True),
    "aten.unique_dim_consecutive.out": lambda: (_i(2, 4, 3), 1, True, True),
    "aten.normal.float_Tensor_out": lambda: (0.5, _x(3, 4)),
    "aten._foreach_addcdiv.Tensor_out": lambda: (
        [_x(2, 3), _x(4)],
        [_x(2, 3), _x(4)],
        [_x(2, 3), _x(4)],
        _host(torch.tensor([0.5, 2.0])),
    ),
    "aten._foreach_addcmul.Tensor_out": lambda: (
        [_x(2, 3), _x(4)],
        [_x(2, 3), _x(4)],
        [_x(2, 3), _x(4)],
        _host(torch.tensor([0.5, 2.0])),
    ),
    "aten.convolution_overrideable.out": lambda: (
        _x(1, 2, 5),
        _x(3, 2, 3),
        None,
        [1],
        [0],
        [1],
        False,
        [0],
        1,
    ),
    "aten.convolution_backward_overrideable.out": lambda: (
        _x(1, 3, 3),
        _x(1, 2, 5),
        _x(3, 2, 3),
        [1],
        [0],
        [1],
        False,
        [0],
        1,
        [True, True, True],
    ),
    "aten._embedding_bag_dense_backward.out": lambda: (
        _x(2, 3),
        torch.tensor([0, 2, 1, 3]),
        torch.tensor([0, 0, 1, 1]),
        torch.tensor([2, 2]),
        torch.tensor([0, 0]),
        5,
        False,
        0,
        None,
        -1,
    ),
    "aten.isin.Scalar_Tensor_out": lambda: (2, _i(4, 3, 4)),
    "aten.isin.Tensor_Scalar_out": lambda: (_i(4, 3, 4), 2),
    "aten.max.out": lambda: (_x(3, 4), _x(3, 4)),
    "aten.min.out": lambda: (_x(3, 4), _x(3, 4)),
    "aten.multinomial.out": lambda: (_x(3, 4), 2, False),
    "aten.native_dropout.out": lambda: (_x(3, 4), 0.5, True),
    "aten.normal.out": lambda: (_x(3, 4), 0.0, 1.0),
    "aten.randperm.out": lambda: (12,),
    "aten.randperm.generator_out": lambda: (12,),
    "aten.range.out": lambda: (0, 5, 1),
    "aten.range.out_": lambda: (0, 5),
    "aten.scatter.value_reduce_out": lambda: (_x(3, 4), 1, _i(4, 3, 2), 2.0, "add"),
    "aten.std.out": lambda: (_x(3, 4), [1], True, False),
    "aten.var.out": lambda: (_x(3, 4), [1], True, False),
    "aten._upsample_nearest_exact2d.out": lambda: (_x(1, 2, 3, 4), [5, 7]),
    "aten._upsample_nearest_exact2d_backward.grad_input": lambda: (
        _x(1, 2, 5, 7),
        [5, 7],
        [1, 2, 3, 4],
    ),
    "aten._upsample_nearest_exact3d.out": lambda: (_x(1, 1, 2, 3, 2), [3, 4, 3]),
    "aten._upsample_nearest_exact3d_backward.grad_input": lambda: (
        _x(1, 1, 3, 4, 3),
        [3, 4, 3],
        [1, 1, 2, 3, 2],
    ),
    "aten._upsample_bicubic2d_aa.out": lambda: (_x(1, 2, 6, 8), [3, 5], False),
    "aten._upsample_bicubic2d_aa_backward.grad_input": lambda: (
        _x(1, 2, 3, 5),
        [3, 5],
        [1, 2, 6, 8],
        False,
    ),
    "aten.reflection_pad2d.out": lambda: (_x(1, 2, 4, 5), [1, 2, 2, 1]),
    "aten.reflection_pad2d_backward.grad_input": lambda: (
        _x(1, 2, 7, 8),
        _x(1, 2, 4, 5),
        [1, 2, 2, 1],
    ),
    "aten.reflection_pad3d.out": lambda: (_x(1, 1, 3, 4, 5), [1, 1, 2, 1, 1, 2]),
    "aten.reflection_pad3d_backward.grad_input": lambda: (
        _x(1, 1, 6, 6, 7),
        _x(1, 1, 3, 4, 5),
        [1, 1, 2, 1, 1, 2],
    ),
    "aten.replication_pad3d.out": lambda: (_x(1, 1, 3, 4, 5), [1, 1, 2, 1, 1, 2]),
    "aten.replication_pad3d_backward.grad_input": lambda: (
        _x(1, 1, 6, 6, 7),
        _x(1, 1, 3, 4, 5),
        [1, 1, 2, 1, 1, 2],
    ),
    "aten.upsample_bilinear2d.vec_out": lambda: (_x(1, 2, 3, 4), None, False, [2.0, 2.0]),
    "aten.upsample_nearest2d.out": lambda: (_x(1, 2, 3, 4), [6, 8]),
    "aten.upsample_nearest2d.vec_out": lambda: (_x(1, 2, 3, 4), None, [2.0, 2.0]),
    "aten.upsample_nearest2d_backward.grad_input": lambda: (_x(1, 2, 6, 8), [6, 8], [1, 2, 3, 4]),
    "aten.upsample_nearest3d.out": lambda: (_x(1, 1, 2, 3, 2), [4, 6, 4]),
    "aten.upsample_nearest3d_backward.grad_input": lambda: (
        _x(1, 1, 4, 6, 4),
        [4, 6, 4],
        [1, 1, 2, 3, 2],
    ),
}
# The polynomials with a scalar x or degree n.
for _name in [
    "chebyshev_polynomial_t",
    "chebyshev_polynomial_u",
    "chebyshev_polynomial_v",
    "chebyshev_polynomial_w",
    "shifted_chebyshev_polynomial_t",
    "shifted_chebyshev_polynomial_u",
    "shifted_chebyshev_polynomial_v",
    "shifted_chebyshev_polynomial_w",
    "hermite_polynomial_h",
    "hermite_polynomial_he",
    "laguerre_polynomial_l",
    "legendre_polynomial_p",
]:
    RECIPES[f"aten.special_{_name}.n_scalar_out"] = lambda: (_x(3, 4), 3)
    RECIPES[f"aten.special_{_name}.x_scalar_out"] = lambda: (0.5, _x(3, 4).abs() * 4)
# Overloads that are copy plumbing rather than ops (every test runs them).
SKIP = {"aten._copy_from.out", "aten._copy_from_and_resize.out"}
# Its result is a nested tensor, which no out= view can hold.
SKIP.add("aten._nested_tensor_from_mask.out")
# The fused RNN cells have CUDA kernels only, so the CPU gives no reference (tests/python/test_rnn.py
# compares the RNNs built on them with the CPU's).
SKIP |= {
    "aten._thnn_fused_lstm_cell.out",
    "aten._thnn_fused_lstm_cell_backward_impl.out",
    "aten._thnn_fused_gru_cell.out",
    "aten._thnn_fused_gru_cell_backward.out",
}
# Ops whose auxiliary outputs the device lays out as PyTorch's meta kernel and CUDA do, not as the
# CPU does (embedding_bag's offset2bag, bag_size and max_indices: the CPU leaves offset2bag empty in
# sum mode): their first result is compared with the CPU's, the others with the device's own
# functional results.
DEVICE_LAYOUT = {"aten._embedding_bag.out", "aten._embedding_bag_forward_only.out"}
# _ctc_loss's log_alpha: the CPU leaves it unwritten past each input's length and target.
DEVICE_LAYOUT |= {"aten._ctc_loss.out", "aten._ctc_loss.Tensor_out"}
# Out tensors whose values are undefined: only the untouched neighbours are compared.
UNDEFINED = {"aten.empty.out", "aten.empty_strided.out"}


class _Found(Exception):  # control flow, not an error
    pass


class _Capture(torch.utils._python_dispatch.TorchDispatchMode):
    """Stops an OpInfo sample at the first call of `via`, keeping its arguments."""

    def __init__(self, via):
        super().__init__()
        self.via = via

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if str(func) == self.via:
            raise _Found(*tree_map(_detached, (args, kwargs or {})))
        return func(*args, **(kwargs or {}))


def _detached(x):
    return x.detach().clone() if isinstance(x, torch.Tensor) else x


_opinfos = None


def arguments(name, out_args):
    """(args, kwargs) for the out= overload `name`, without its out= arguments `out_args`."""
    global _opinfos
    torch.manual_seed(0)
    if name in RECIPES:
        return RECIPES[name](), {}
    entry = SAMPLES[name]
    if _opinfos is None:
        _opinfos = {key: (op, foreach) for key, op, foreach in out_samples.opinfos()}
    op, foreach = _opinfos[entry["opinfo"]]
    dtype = getattr(torch, entry["dtype"])
    for i, sample in enumerate(out_samples.samples(op, foreach, dtype, entry["backward"])):
        if i == entry["sample"]:
            try:
                with _Capture(entry["via"]):
                    out_samples.run_sample(op, sample, entry["backward"])
            except _Found as found:
                args, kwargs = found.args
                drop = out_samples.OPTIONS | {a.name for a in out_args}
                return args, {k: v for k, v in kwargs.items() if k not in drop}
    raise AssertionError(f"{name}: the OpInfo sample {entry} no longer calls {entry['via']}")


def _call(overload, out_args, args, kwargs, outs):
    return overload(*args, **kwargs, **{a.name: v for a, v in zip(out_args, outs)})


def _results(overload, out_args, args, kwargs):
    """What the op computes, as a list per out= argument (a list of lists for a Tensor[] out):
    its functional form's results where it has one (the CPU's own out= kernels are wrong for some
    layouts), else what its out= form writes into empty outs. Raises what the op raises."""
    functional = out_samples.functional_sibling(overload)
    if functional is not None:
        torch.manual_seed(0)
        result = functional(*args, **kwargs)
        return list(result) if isinstance(result, tuple) else [result]
    tensors = [a for a in _flat(list(args)) if isinstance(a, torch.Tensor)]
    dtype = tensors[0].dtype if tensors else torch.get_default_dtype()
    outs = [torch.empty(0, dtype=dtype, device=tensors[0].device if tensors else "cpu")
            for _ in out_args]  # fmt: skip
    torch.manual_seed(0)
    _call(overload, out_args, args, kwargs, outs)
    return outs


def _special_values(results):
    return any(t.is_floating_point() and not torch.isfinite(t).all() for t in _flat(results))


def _finite_or(results, device_results):
    """The CPU's results with their non-finite elements taken from `device_results` (the op's
    functional form on the device): special values differ between machines' CPU kernels, and the
    sweep checks where values land."""

    def pick(cpu, device):
        return (
            torch.where(torch.isfinite(cpu), cpu, device.cpu()) if cpu.is_floating_point() else cpu
        )

    return tree_map(pick, results, device_results)


def _base_values(shape, dtype):
    n = 1
    for s in shape:
        n *= s
    values = torch.arange(n) % 7 + 3
    return (values % 2 if dtype == torch.bool else values).to(dtype).reshape(shape)


# Each layout: (base shape, view of the base) for an out of `shape`, or None where it does not
# apply. The same functions build the CPU and the "tpu" views. "resize" is an empty view into a
# storage with room, so resizing it needs no reallocation (a sync point in Fused mode; the
# reallocating case is test_out_resize_grows_storage).
LAYOUTS = {
    "strided": lambda s: ((*s, 3), lambda b: b[..., 1]),
    "transposed": lambda s: (
        ((*s[:-2], s[-1], s[-2]), lambda b: b.transpose(-1, -2)) if len(s) >= 2 else None
    ),
    "offset": lambda s: ((s.numel() + 3,), lambda b: b[2 : 2 + s.numel()].view(s)),
    "resize": lambda s: ((s.numel() + 3,), lambda b: b[2:2]),
}


def _outs(results, layout, device):
    """(bases, out= values) shaped like `results` in `layout`, or None where it does not apply."""
    bases, views = [], []
    for r in results:
        if isinstance(r, list):
            sub = _outs(r, layout, device)
            if sub is None:
                return None
            bases += sub[0]
            views.append(sub[1])
            continue
        made = LAYOUTS[layout](r.shape)
        if made is None:
            return None
        base = _base_values(made[0], r.dtype).to(device)
        bases.append(base)
        views.append(made[1](base))
    return bases, views


def _broadcast_args(args, shape):
    """args with the first full-shape tensor argument narrowed to size 1 in its last dim, when
    another tensor argument keeps the full shape (so inputs broadcast), else None."""
    full = [i for i, a in enumerate(args) if isinstance(a, torch.Tensor) and a.shape == shape]
    if len(shape) < 2 or len(full) < 2:
        return None
    args = list(args)
    args[full[0]] = args[full[0]][..., :1]
    return tuple(args)


def _to_tpu(tree):
    def move(x):
        if isinstance(x, torch.Tensor) and not getattr(x, "stays_on_host", False):
            return x.to("tpu")
        return x

    return tree_map(move, tree)


def _flat(values):
    return [t for v in values for t in (v if isinstance(v, list) else [v])]


def _run(overload, out_args, args, kwargs, outs):
    """Calls the overload with "tpu" arguments and out= `outs`: None, or the exception."""
    try:
        torch.manual_seed(0)
        returned = _call(overload, out_args, args, kwargs, outs)
    except Exception as e:  # reported by the caller
        return e
    if returned is not None:  # out= overloads return their out= tensors
        returned = returned if isinstance(returned, (tuple, list)) else [returned]
        for r, v in zip(_flat(list(returned)), _flat(outs)):
            if r.data_ptr() != v.data_ptr() or r.shape != v.shape or r.stride() != v.stride():
                return AssertionError("the op did not return its out= tensor")
    return None


def _expected(results, layout, undefined, strides=None):
    """(bases, masks): the initial bases with the views holding `results` (resized views start at
    their offset, with `strides` where given, else contiguous); the masks select the elements to
    compare (all, or for undefined results those outside the views)."""
    bases, views = _outs(results, layout, "cpu")
    if layout == "resize":
        flat = _flat(results)
        strides = strides or [torch.empty(r.shape).stride() for r in flat]
        views = [b.as_strided(r.shape, st, 2) for b, r, st in zip(bases, flat, strides)]
    for v, r in zip(_flat(views), _flat(results)):
        v.copy_(r)
    if not undefined:
        return bases, [None] * len(bases)
    masks = [torch.ones(b.shape, dtype=torch.bool) for b in bases]
    for m, v in zip(masks, _flat(views)):
        m.as_strided(v.shape, v.stride(), v.storage_offset()).fill_(False)
    return bases, masks


def _layouts(overload):
    """Every layout; but out= overloads PyTorch generates for the device (the functional op, then
    resize and copy_ into out, one shared code path; Tag.generated without a PrivateUse1 kernel)
    run the strided one only, which keeps the sweep well under a minute."""
    generated = torch.Tag.generated in overload.tags and not (
        torch._C._dispatch_has_kernel_for_dispatch_key(overload.name(), "PrivateUse1")
    )
    return ["strided"] if generated else list(LAYOUTS)


# Resized outs the device lays out contiguously where the CPU does not: lstsq's solution there is a
# view into LAPACK's (max(m, n), k) column-major buffer.
RESIZED_CONTIGUOUS = {"aten.linalg_lstsq.out"}


def _cpu_resized_strides(overload, out_args, args, kwargs, results):
    """The strides the CPU gives resized outs (LAPACK kernels: column-major matrices), or None
    where the CPU cannot run the call."""
    views = _outs(results, "resize", "cpu")[1]
    try:
        _call(overload, out_args, args, kwargs, views)
    except Exception:  # noqa: BLE001  (no CPU kernel, or one that cannot resize)
        return None
    return [v.stride() for v in _flat(views)]


class Sweep:
    """Records the "tpu" calls of many ops (Fused mode: a program for many of them), then compares
    every base with what it should hold."""

    def __init__(self):
        self.pending = []  # (where, results, layout, undefined, bases)
        self.failures = []

    def add(self, name, overload):
        out_args = [a for a in overload._schema.arguments if a.is_out]
        args, kwargs = arguments(name, out_args)
        # Uploaded once: every layout's call computes the same values (one computation in XLA).
        dev_args, dev_kwargs = _to_tpu(args), _to_tpu(kwargs)
        try:
            results = _results(overload, out_args, args, kwargs)
        except Exception as e:
            try:
                _results(overload, out_args, dev_args, dev_kwargs)
            except Exception as tpu:  # "tpu" rejects it as the CPU does
                if not isinstance(tpu, type(e)):
                    self.failures.append(f"{name}: CPU {e!r:.200}; tpu {tpu!r:.200}")
                return
            if not isinstance(e, NotImplementedError):
                self.failures.append(f"{name}: the CPU raises {e!r:.200}; tpu does not")
                return
            results = None  # the CPU lacks a kernel the device has
        if results is None:  # no CPU kernel: what the device computes itself
            results = tree_map(
                lambda t: t.cpu(), _results(overload, out_args, dev_args, dev_kwargs)
            )
        elif torch.Tag.nondeterministic_seeded in overload.tags:
            # Random draws: what the device writes into contiguous outs with the same seed.
            outs = _to_tpu(tree_map(torch.empty_like, results))
            if not self._check_error(f"{name} [contiguous]",
                                     _run(overload, out_args, dev_args, dev_kwargs, outs)):  # fmt: skip
                return
            results = tree_map(lambda t: t.cpu(), outs)
        elif name in DEVICE_LAYOUT:
            device_results = _results(overload, out_args, dev_args, dev_kwargs)
            torch.testing.assert_close(device_results[0].cpu(), results[0], rtol=1e-4, atol=1e-5)
            results = tree_map(lambda t: t.cpu(), device_results)
        elif _special_values(results):
            results = _finite_or(results, _results(overload, out_args, dev_args, dev_kwargs))
        for layout in _layouts(overload):
            made = _outs(results, layout, "tpu")
            if made is None:
                continue
            case_args, case_dev_args, case_results = args, dev_args, results
            if layout == "transposed" and torch.Tag.pointwise in overload.tags:
                broadcast = _broadcast_args(args, results[0].shape)
                if broadcast is not None:  # inputs broadcast into a transposed out
                    case_args, case_dev_args = broadcast, _to_tpu(broadcast)
                    case_results = _results(overload, out_args, broadcast, kwargs)
            where = f"{name} [{layout}]"
            error = _run(overload, out_args, case_dev_args, dev_kwargs, made[1])
            if layout == "resize" and error is not None:
                try:  # some of PyTorch's own out= kernels cannot resize: the CPU raises too
                    _call(overload, out_args, case_args, kwargs, _outs(results, layout, "cpu")[1])
                except Exception as e:
                    if isinstance(error, type(e)):
                        continue
            if self._check_error(where, error):
                strides = None
                if layout == "resize" and name not in RESIZED_CONTIGUOUS:
                    strides = _cpu_resized_strides(overload, out_args, case_args, kwargs, results)
                self.pending.append(
                    (where, case_results, layout, name in UNDEFINED, made[0], strides)
                )

    def _check_error(self, where, error):
        if error is not None:
            self.failures.append(f"{where}: {error!r:.400}")
        return error is None

    def verify(self):
        for where, results, layout, undefined, bases, strides in self.pending:
            try:
                expected, masks = _expected(results, layout, undefined, strides)
                for e, t, m in zip(expected, bases, masks):
                    t = t.cpu()
                    if m is not None:
                        e, t = e[m], t[m]
                    torch.testing.assert_close(t, e, rtol=1e-3, atol=1e-3, equal_nan=True)
            except Exception as e:
                self.failures.append(f"{where}: {str(e)[:400]}")
        self.pending = []


def test_every_out_overload_has_a_sample():
    overloads = out_samples.out_overloads()
    missing = set(overloads) - set(SAMPLES) - set(RECIPES) - SKIP
    assert not missing, f"no sample for {sorted(missing)}: run tools/out_samples.py"
    assert len(overloads) > 300


def test_out_views_match_cpu():
    warnings.simplefilter("ignore")
    sweep = Sweep()
    # Programs compile at XLA's lowest backend optimization level: the sweep checks where values
    # land, and compiling is most of its time.
    fast = torch.tpu.compiler.custom_compiler_options({"xla_backend_optimization_level": 0})
    with fast, torch_pjrt.eager_mode("fused"):
        for i, (name, overload) in enumerate(sorted(out_samples.out_overloads().items())):
            if name not in SKIP:
                sweep.add(name, overload)
            if i % 32 == 31:
                sweep.verify()
        sweep.verify()
    print(f"{len(sweep.failures)} failures")
    assert not sweep.failures, f"{len(sweep.failures)} failures:\n" + "\n".join(sweep.failures)


def test_issue_examples_strided_out():
    """maximum/minimum (native functional, out= through the CPU fallback) and median/nanmedian
    (CPU fallback) into a column of a 4x5 tensor: the column holds the result, the rest is
    unchanged."""
    a, b, x = torch.randn(4), torch.randn(4), torch.randn(4, 6)
    x[1, 2] = float("nan")
    for op in (torch.maximum, torch.minimum):
        t = torch.arange(20.0).reshape(4, 5)
        expected = t.clone()
        expected[:, 1] = op(a, b)
        d = t.to("tpu")
        assert op(a.to("tpu"), b.to("tpu"), out=d[:, 1]).data_ptr() == d[:, 1].data_ptr()
        torch.testing.assert_close(d.cpu(), expected)
    for op in (torch.median, torch.nanmedian):
        values, indices = torch.arange(20.0).reshape(4, 5), torch.zeros(4, 5, dtype=torch.long)
        ev, ei = values.clone(), indices.clone()
        r = op(x, 1)
        ev[:, 1], ei[:, 1] = r.values, r.indices
        dv, di = values.to("tpu"), indices.to("tpu")
        op(x.to("tpu"), 1, out=(dv[:, 1], di.t()[1]))  # a column and a row of a transpose
        ei = ei.t().clone()
        ei[1] = r.indices
        torch.testing.assert_close(dv.cpu(), ev, equal_nan=True)
        torch.testing.assert_close(di.t().cpu(), ei)


@pytest.mark.parametrize("mode", ["strict", "fused"])
def test_out_resize_grows_storage(mode):
    """Empty outs whose storage must grow: a native out= kernel, a generated composite, and two
    through the CPU fallback (one with two outs)."""
    a, b = torch.randn(3, 4), torch.randn(3, 4)
    cases = [
        lambda d, out: torch.add(a.to(d), b.to(d), out=out[0]),
        lambda d, out: torch.ops.aten.flip.out(a.to(d), [0], out=out[0]),
        lambda d, out: torch.maximum(a.to(d), b.to(d), out=out[0]),
        lambda d, out: torch.median(a.to(d), 1, out=out),
    ]
    with torch_pjrt.eager_mode(mode):
        for case in cases:
            outs = {d: (torch.empty(0, device=d), torch.empty(0, dtype=torch.long, device=d))
                    for d in ("cpu", "tpu")}  # fmt: skip
            for d, out in outs.items():
                case(d, out)
            for cpu, tpu in zip(outs["cpu"], outs["tpu"]):
                torch.testing.assert_close(tpu.cpu(), cpu)


def _spd(dtype):
    g = torch.Generator().manual_seed(3)
    x = torch.randn(2, 3, 3, generator=g, dtype=dtype)
    return x @ x.mH + 3 * torch.eye(3, dtype=dtype)


aten = torch.ops.aten


def _aten_out(functional, out_overload, *params, **kwargs):
    """An op that only torch.ops reaches, as (*tensors, out=None)."""

    def op(*tensors, out=None):
        if out is None:
            return functional(*tensors, *params, **kwargs)
        name = out_overload._schema.arguments[-1].name  # out, grad_input
        return out_overload(*tensors, *params, **kwargs, **{name: out})

    return op


def _out_form_cases(dtype):
    """Out= forms whose functional form is native (aten/out_forms.cpp): name -> (op, arguments)."""
    g = torch.Generator().manual_seed(4)
    a, b = _spd(dtype), torch.randn(2, 3, 2, generator=g, dtype=dtype)
    lower = torch.linalg.cholesky(a)
    lu, piv = torch.linalg.lu_factor(a)
    qr, tau = torch.geqrf(a)
    cases = {
        "linalg.cholesky": (torch.linalg.cholesky, (a,)),
        "linalg.cholesky_ex": (torch.linalg.cholesky_ex, (a,)),
        "cholesky": (torch.cholesky, (a,)),
        "cholesky_inverse": (torch.cholesky_inverse, (lower,)),
        "triangular_solve": (torch.triangular_solve, (b, lower, False)),
        "linalg.solve_triangular": (
            lambda x, y, out=None: torch.linalg.solve_triangular(x, y, upper=False, out=out),
            (lower, b),
        ),
        "linalg.det": (torch.linalg.det, (a,)),
        "linalg.slogdet": (torch.linalg.slogdet, (a,)),
        "linalg.solve": (torch.linalg.solve, (a, b)),
        "linalg.solve_ex": (torch.linalg.solve_ex, (a, b)),
        "linalg.inv": (torch.linalg.inv, (a,)),
        "linalg.inv_ex": (torch.linalg.inv_ex, (a,)),
        "linalg.lu": (torch.linalg.lu, (a,)),
        "linalg.lu_factor_ex": (torch.linalg.lu_factor_ex, (a,)),
        "linalg.lu_solve": (torch.linalg.lu_solve, (lu, piv, b)),
        "lu_unpack": (torch.lu_unpack, (lu, piv)),
        "linalg.qr": (torch.linalg.qr, (a,)),
        "geqrf": (torch.geqrf, (a,)),
        "linalg.householder_product": (torch.linalg.householder_product, (qr, tau)),
        "ormqr": (torch.ormqr, (qr, tau, b)),
        "scatter": (
            lambda x, i, out=None: torch.scatter(x, 1, i, x, reduce="add", out=out),
            (a[0], torch.tensor([[0, 1, 2], [2, 0, 1]])),
        ),
        "narrow_copy": (lambda x, out=None: torch.narrow_copy(x, 1, 0, 2, out=out), (a,)),
        "scatter.value_reduce": (
            lambda x, i, out=None: torch.scatter(x, 1, i, 2.0, reduce="multiply", out=out),
            (a[0], torch.tensor([[0, 1, 2], [2, 0, 1]])),
        ),
    }
    if not dtype.is_complex:
        x = torch.randn(2, 3, 4, generator=g, dtype=dtype)
        cases |= {
            "max": (torch.max, (x,)),
            "min": (torch.min, (x,)),
            "histogram": (lambda t, out=None: torch.histogram(t, 4, out=out), (x,)),
            "histogram.bins_tensor": (torch.histogram, (x, torch.linspace(-2, 2, 5))),
            "nn.functional.logsigmoid": (torch.nn.functional.logsigmoid, (x,)),
            "norm.out": (_aten_out(aten.norm.ScalarOpt_dim, aten.norm.out, 2, [1], False), (x,)),
            "norm.dtype_out": (
                _aten_out(
                    aten.norm.ScalarOpt_dim_dtype,
                    aten.norm.dtype_out,
                    2,
                    [1],
                    False,
                    dtype=torch.float64,
                ),
                (x,),
            ),
            "logit_backward": (
                _aten_out(aten.logit_backward.default, aten.logit_backward.grad_input, 0.1),
                (x, x.sigmoid()),
            ),
        }
    return cases


# Their CPU kernels resize out= with resize_, which does not warn.
SILENT_RESIZE = {"narrow_copy", "nn.functional.logsigmoid"}
# torch.ops calls do not turn C++ warnings into Python ones: their resize warnings go uncounted.
VIA_TORCH_OPS = {"norm.out", "norm.dtype_out", "logit_backward"}


def _form_outs(results, device, first_shape=None, first_dtype=None):
    """Outs like `results` on `device`; the first one of another shape or dtype if asked."""
    outs = [torch.empty_like(r, device=device) for r in results]
    if first_shape is not None:
        outs[0] = torch.empty(first_shape, dtype=results[0].dtype, device=device)
    if first_dtype is not None:
        outs[0] = torch.empty_like(results[0], dtype=first_dtype, device=device)
    return outs


def _call_form(op, args, outs):
    args = [x.to(outs[0].device) if isinstance(x, torch.Tensor) else x for x in args]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        op(*args, out=outs[0] if len(outs) == 1 else tuple(outs))
    return [str(w.message) for w in caught if "was resized" in str(w.message)]


@pytest.mark.parametrize("dtype", [torch.float32, torch.complex64])
def test_out_forms_on_the_device(dtype, counters):
    """Each out= form computes on the device (no CPU fallback) what the CPU does; a non-empty out
    of another shape is resized with the CPU's one warning (none for SILENT_RESIZE), and resized
    outs get the CPU's strides; an int out raises the CPU's error."""
    tol = {"rtol": 1e-4, "atol": 1e-4}
    for name, (op, args) in _out_form_cases(dtype).items():
        expected = op(*args)
        results = [expected] if isinstance(expected, torch.Tensor) else list(expected)
        outs = _form_outs(results, "tpu")
        assert _call_form(op, args, outs) == [], name
        torch.testing.assert_close([o.cpu() for o in outs], results, **tol, msg=name)
        cpu_outs, outs = _form_outs(results, "cpu", (2, 5)), _form_outs(results, "tpu", (2, 5))
        warned = len(_call_form(op, args, cpu_outs))
        if name not in VIA_TORCH_OPS:
            assert warned == (0 if name in SILENT_RESIZE else 1), name
        assert len(_call_form(op, args, outs)) == warned, name
        torch.testing.assert_close([o.cpu() for o in outs], cpu_outs, **tol, msg=name)
        assert outs[0].stride() == cpu_outs[0].stride(), name
        # Empty outs are laid out as the CPU lays them out (LAPACK's column-major matrices).
        cpu_outs = [torch.empty(0, dtype=r.dtype) for r in results]
        outs = [torch.empty(0, dtype=r.dtype, device="tpu") for r in results]
        _call_form(op, args, cpu_outs)
        _call_form(op, args, outs)
        assert [o.stride() for o in outs] == [o.stride() for o in cpu_outs], name
        torch.testing.assert_close([o.cpu() for o in outs], cpu_outs, **tol, msg=name)
        with pytest.raises(RuntimeError) as cpu:
            _call_form(op, args, _form_outs(results, "cpu", first_dtype=torch.int32))
        with pytest.raises(RuntimeError) as tpu:
            _call_form(op, args, _form_outs(results, "tpu", first_dtype=torch.int32))
        assert str(tpu.value) == str(cpu.value), name
        assert counters()["cpu_fallbacks"] == {}, name


def test_out_forms_check_errors(counters):
    """A *_ex op with check_errors=True writes its outs, then raises the CPU's error for the values
    (an out of the wrong dtype is reported first, as on the CPU)."""
    singular = torch.stack([torch.eye(3), torch.zeros(3, 3)])
    cases = [
        (torch.linalg.inv_ex, (singular,)),
        (torch.linalg.lu_factor_ex, (singular[1],)),
        (torch.linalg.solve_ex, (singular, torch.ones(2, 3, 1))),
    ]
    for op, args in cases:
        results = op(*args)
        raised, infos = [], []
        for device in ("cpu", "tpu"):
            dev_args = [a.to(device) for a in args]
            outs = tuple(torch.empty_like(r, device=device) for r in results)
            with pytest.raises(RuntimeError) as e:
                op(*dev_args, check_errors=True, out=outs)
            infos.append(outs[-1].cpu())
            bad = (torch.empty_like(results[0], dtype=torch.int32, device=device),) + outs[1:]
            with pytest.raises(RuntimeError) as dtype_error:
                op(*dev_args, check_errors=True, out=bad)
            raised.append((type(e.value), str(e.value), str(dtype_error.value)))
        assert raised[1] == raised[0]
        assert torch.equal(infos[1], infos[0])
    assert counters()["cpu_fallbacks"] == {}


# Out= overloads that still take the CPU fallback though their functional form runs on the device:
# batch norm's, whose CPU kernels leave save_mean and save_invstd as passed in eval mode.
OUT_ONLY_FALLBACKS = {
    "aten._batch_norm_with_update.out",
    "aten._native_batch_norm_legit.no_stats_out",
    "aten._native_batch_norm_legit.out",
    "aten.native_batch_norm.out",
}


def test_out_forms_of_device_ops_have_kernels():
    """Every out= overload of an op the device implements has a kernel (its own, a composite, or
    aten/out_forms.cpp's) where its functional form has one, but OUT_ONLY_FALLBACKS: read from the
    dispatcher's registrations."""
    kinds = ("PrivateUse1", "CompositeImplicitAutograd", "CompositeExplicitAutograd",
             "CompositeExplicitAutogradNonFunctional")  # fmt: skip

    def has_kernel(overload):
        schema = overload._schema
        name = schema.name + ("." + schema.overload_name if schema.overload_name else "")
        return any(torch._C._dispatch_has_kernel_for_dispatch_key(name, k) for k in kinds)

    falling_back = set()
    for name, overload in out_samples.out_overloads().items():
        functional = out_samples.functional_sibling(overload)
        if functional is not None and has_kernel(functional) and not has_kernel(overload):
            falling_back.add(name)
    assert falling_back == OUT_ONLY_FALLBACKS
