"""Custom kernels: JAX and Pallas functions (torch.tpu.pallas.jax_op) and StableHLO text
(torch_pjrt.stablehlo_op) as torch ops on "tpu", checked against JAX on the CPU and against the
equivalent torch code, in every eager mode, inside Fused programs and torch.compile graphs."""

import functools
import textwrap
import typing

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import torch
import torch.nn.functional as F
import torch.tpu.pallas as tpu_pallas
from conftest import run_python
from jax.experimental import pallas as pl

import torch_pjrt
from torch_pjrt import _C, pallas

jax_op = tpu_pallas.jax_op


def _jax_cpu(fn, *tensors, **statics):
    """`fn` run by JAX on the CPU (the lowering client's device), as numpy arrays."""
    dev = pallas._lowering_device()
    args = [jax.device_put(jnp.asarray(t.numpy()), dev) for t in tensors]
    out = jax.jit(functools.partial(fn, **statics))(*args)
    return jax.tree.map(np.asarray, out)


def _lowerings():
    return torch_pjrt.metrics.counters()["custom_kernels"]["lowerings"]


def _executions():
    return torch_pjrt.metrics.counters()["executions"]


# --- ops shared by several tests (custom op names are process-wide) ------------------------------


@jax_op("tpk::gelu")
def jgelu(x: jax.Array) -> jax.Array:
    return jax.nn.gelu(x, approximate=True)


@jax_op("tpk::sum")
def jsum(x: jax.Array, axis: int, keepdims: bool = False) -> jax.Array:
    return jnp.sum(x, axis=axis, keepdims=keepdims)


@jax_op("tpk::matmul_max")
def jmatmul_max(a: jax.Array, b: jax.Array) -> tuple[jax.Array, jax.Array]:
    return a @ b, jnp.max(a, axis=1)


def _rmsnorm(x, w, eps):
    return x * jax.lax.rsqrt(jnp.mean(x * x, axis=-1, keepdims=True) + eps) * w


@jax_op("tpk::rmsnorm", differentiable=True)
def jrmsnorm(x: jax.Array, w: jax.Array, eps: float = 1e-6) -> jax.Array:
    return _rmsnorm(x, w, eps)


def torch_rmsnorm(x, w, eps=1e-6):
    return x * torch.rsqrt((x * x).mean(-1, keepdim=True) + eps) * w


# --- results against JAX and torch ---------------------------------------------------------------


def test_elementwise_matches_jax_and_torch():
    x = torch.randn(4, 33)
    y = jgelu(x.to("tpu"))
    assert y.device.type == "tpu" and y.shape == x.shape and y.dtype == x.dtype
    want = _jax_cpu(lambda v: jax.nn.gelu(v, approximate=True), x)
    np.testing.assert_allclose(y.cpu().numpy(), want, rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(y.cpu(), F.gelu(x, approximate="tanh"))


def test_reduction_with_static_arguments_and_one_lowering_per_signature():
    x = torch.randn(5, 6)
    t = x.to("tpu")
    before = _lowerings()
    torch.testing.assert_close(jsum(t, 0).cpu(), x.sum(0))
    torch.testing.assert_close(jsum(t, 0).cpu(), x.sum(0))  # cached
    torch.testing.assert_close(jsum(t, 1, keepdims=True).cpu(), x.sum(1, keepdim=True))
    assert _lowerings() - before == 2  # one per (shape, dtype, statics)
    torch.testing.assert_close(jsum(t[:3], 1).cpu(), x[:3].sum(1))  # a view: another shape
    assert _lowerings() - before == 3
    np.testing.assert_allclose(
        jsum(t, 1).cpu().numpy(), _jax_cpu(jnp.sum, x, axis=1), rtol=1e-6, atol=1e-6
    )


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int32])
def test_matmul_with_two_outputs(dtype):
    a = torch.randn(3, 4).mul(4).to(dtype)
    b = torch.randn(4, 5).mul(4).to(dtype)
    prod, amax = jmatmul_max(a.to("tpu"), b.to("tpu"))
    assert prod.dtype == dtype and amax.dtype == dtype
    tol = {"rtol": 2e-2, "atol": 2e-2} if dtype == torch.bfloat16 else {}
    torch.testing.assert_close(prod.cpu(), (a.float() @ b.float()).to(dtype), **tol)
    torch.testing.assert_close(amax.cpu(), a.amax(1))


def test_tensor_lists_optional_tensors_and_keyword_only_statics():
    @jax_op("tpk::weighted_sum")
    def weighted_sum(
        xs: list[jax.Array], bias: typing.Optional[jax.Array], *, scale: float
    ) -> jax.Array:
        out = sum(x * (i + 1) for i, x in enumerate(xs)) * scale
        return out if bias is None else out + bias

    xs = [torch.randn(3) for _ in range(3)]
    bias = torch.randn(3)
    want = (xs[0] + 2 * xs[1] + 3 * xs[2]) * 0.5
    got = weighted_sum([x.to("tpu") for x in xs], None, scale=0.5)
    torch.testing.assert_close(got.cpu(), want)
    got = weighted_sum([x.to("tpu") for x in xs], bias.to("tpu"), scale=0.5)
    torch.testing.assert_close(got.cpu(), want + bias)


def test_functools_partial_binds_values():
    def scaled(x: jax.Array, factor: float) -> jax.Array:
        return x * factor

    op = jax_op("tpk::scaled3", functools.partial(scaled, factor=3.0))
    x = torch.arange(4.0)
    torch.testing.assert_close(op(x.to("tpu")).cpu(), x * 3)


def test_pallas_kernel_in_interpret_mode():
    def kernel(x_ref, y_ref, o_ref):
        o_ref[...] = x_ref[...] * 2.0 + y_ref[...]

    @jax_op("tpk::pallas_axpy")
    def axpy(x: jax.Array, y: jax.Array) -> jax.Array:
        return pl.pallas_call(
            kernel,
            out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
            grid=(x.shape[0] // 8,),
            in_specs=[pl.BlockSpec((8, x.shape[1]), lambda i: (i, 0))] * 2,
            out_specs=pl.BlockSpec((8, x.shape[1]), lambda i: (i, 0)),
            interpret=True,
        )(x, y)

    x, y = torch.randn(16, 128), torch.randn(16, 128)
    torch.testing.assert_close(axpy(x.to("tpu"), y.to("tpu")).cpu(), x * 2 + y)


# --- autograd ------------------------------------------------------------------------------------


def test_register_autograd():
    @jax_op("tpk::sin")
    def jsin(x: jax.Array) -> jax.Array:
        return jnp.sin(x)

    @jax_op("tpk::cos")
    def jcos(x: jax.Array) -> jax.Array:
        return jnp.cos(x)

    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])

    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * jcos(x)

    jsin.register_autograd(backward, setup_context=setup_context)
    x = torch.randn(7, requires_grad=True)
    xt = x.detach().to("tpu").requires_grad_()
    (jsin(xt) * 3).sum().backward()
    (torch.sin(x) * 3).sum().backward()
    torch.testing.assert_close(xt.grad.cpu(), x.grad)


def test_differentiable_derives_the_backward_with_vjp():
    x = torch.randn(4, 16, requires_grad=True)
    w = torch.randn(16, requires_grad=True)
    xt = x.detach().to("tpu").requires_grad_()
    wt = w.detach().to("tpu").requires_grad_()
    out = jrmsnorm(xt, wt, 1e-5)
    ref = torch_rmsnorm(x, w, 1e-5)
    torch.testing.assert_close(out.cpu(), ref.detach())
    g = torch.randn(4, 16)
    out.backward(g.to("tpu"))
    ref.backward(g)
    torch.testing.assert_close(xt.grad.cpu(), x.grad, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(wt.grad.cpu(), w.grad, rtol=1e-5, atol=1e-5)


def test_differentiable_with_integer_input_and_two_outputs():
    @jax_op("tpk::gather_scale", differentiable=True)
    def gather_scale(x: jax.Array, idx: jax.Array) -> tuple[jax.Array, jax.Array]:
        picked = x[idx]
        return picked * 2.0, jnp.sum(x * x)

    x = torch.randn(6, requires_grad=True)
    idx = torch.tensor([0, 3, 3, 5], dtype=torch.int32)
    xt = x.detach().to("tpu").requires_grad_()
    a, b = gather_scale(xt, idx.to("tpu"))
    (a.sum() + b).backward()
    ra, rb = x[idx.long()] * 2.0, (x * x).sum()
    (ra.sum() + rb).backward()
    torch.testing.assert_close(xt.grad.cpu(), x.grad)
    # Only one output used: the other's cotangent is zero.
    xt.grad = None
    a, _ = gather_scale(xt, idx.to("tpu"))
    a.sum().backward()
    want = torch.zeros(6).index_add_(0, idx.long(), torch.full((4,), 2.0))
    torch.testing.assert_close(xt.grad.cpu(), want)


# --- eager modes, Fused programs, torch.compile --------------------------------------------------


@pytest.mark.parametrize("mode", ["strict", "debug", "fused"])
def test_runs_in_every_eager_mode(mode):
    x = torch.randn(3, 8)
    with torch_pjrt.eager_mode(mode):
        y = jgelu(x.to("tpu") + 1)
        out = y.cpu()
    torch.testing.assert_close(out, F.gelu(x + 1, approximate="tanh"))


def test_fused_program_calls_the_kernel_inside_one_execution():
    x = torch.randn(4, 16)
    w = torch.randn(16)
    xt, wt = x.to("tpu"), w.to("tpu")
    jrmsnorm(xt, wt)  # lowered and compiled once outside the measurement
    torch.tpu.synchronize()
    with torch_pjrt.eager_mode("fused"):
        before = _executions()
        h = torch.relu(xt * 2 - 1)
        h = jrmsnorm(h, wt)
        h = jgelu(h) + xt
        s = h.sum(1)
        text = _C._stablehlo_of([s])
        assert _executions() == before  # nothing ran yet
        out = s.cpu()
        assert _executions() == before + 1  # one program for torch ops and both kernels
    assert text.count('"func.call"') == 2 and 'sym_visibility = "private"' in text
    h = torch_rmsnorm(torch.relu(x * 2 - 1), w)
    torch.testing.assert_close(out, (F.gelu(h, approximate="tanh") + x).sum(1))


class _Block(torch.nn.Module):
    def __init__(self, dim, kernel):
        super().__init__()
        self.lin = torch.nn.Linear(dim, dim)
        self.w = torch.nn.Parameter(torch.ones(dim) + 0.1 * torch.randn(dim))
        self.kernel = kernel

    def forward(self, x):
        h = self.lin(x)
        return jrmsnorm(h, self.w) if self.kernel else torch_rmsnorm(h, self.w)


def test_compiled_training_step_with_a_kernel():
    torch.manual_seed(0)
    ref = _Block(16, kernel=False)
    model = _Block(16, kernel=True)
    model.load_state_dict(ref.state_dict())
    model.to("tpu")
    x = torch.randn(8, 16)
    target = torch.randn(8, 16)
    opt_ref = torch.optim.SGD(ref.parameters(), lr=0.1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)

    @torch.compile(backend="tpu")
    def step(x, target):
        loss = F.mse_loss(model(x), target)
        loss.backward()
        return loss

    xt, tt = x.to("tpu"), target.to("tpu")
    before = torch_pjrt.metrics.counters()
    for _ in range(3):
        opt.zero_grad()
        opt_ref.zero_grad()
        loss = step(xt, tt)
        ref_loss = F.mse_loss(ref(x), target)
        ref_loss.backward()
        opt.step()
        opt_ref.step()
        torch.testing.assert_close(loss.cpu(), ref_loss.detach(), rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(model.w.detach().cpu(), ref.w.detach(), rtol=1e-5, atol=1e-6)
    after = torch_pjrt.metrics.counters()
    # The kernels ran inside compiled programs: no graph fell back to eager, the later steps
    # replayed programs without calling the ops' Python implementation again.
    assert after["compile"]["eager_graphs"] == before["compile"]["eager_graphs"]
    assert after["compile"]["replays"] > before["compile"]["replays"]
    calls = after["custom_kernels"]["calls"] - before["custom_kernels"]["calls"]
    assert calls == 2  # forward and vjp, once each while tracing


def test_fake_tensors_and_meta_take_shapes_from_jax():
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode() as mode:
        a = mode.from_tensor(torch.empty(3, 4, device="tpu"))
        b = mode.from_tensor(torch.empty(4, 6, device="tpu"))
        prod, amax = jmatmul_max(a, b)
    assert prod.shape == (3, 6) and amax.shape == (3,) and prod.device.type == "tpu"
    out = jsum(torch.empty(2, 5, device="meta"), 1, keepdims=True)
    assert out.shape == (2, 1) and out.device.type == "meta"


# --- donation ------------------------------------------------------------------------------------


def test_donated_input_is_invalidated_and_its_memory_reused():
    @jax_op("tpk::add_donating", donate_argnums=0)
    def add_d(x: jax.Array, y: jax.Array) -> jax.Array:
        return x + y

    @jax_op("tpk::add_keeping")
    def add_k(x: jax.Array, y: jax.Array) -> jax.Array:
        return x + y

    n = 1 << 16
    y = torch.ones(n, device="tpu")
    for op, donated in ((add_k, False), (add_d, True)):
        x = torch.full((n,), 2.0, device="tpu")
        out = None  # the previous iteration's output is freed before measuring
        torch.tpu.synchronize()
        before = torch.tpu.memory_allocated()
        out = op(x, y)
        torch.tpu.synchronize()
        grown = torch.tpu.memory_allocated() - before
        assert grown == (0 if donated else 4 * n)
        torch.testing.assert_close(out.cpu(), torch.full((n,), 3.0))
        if donated:
            with pytest.raises(RuntimeError, match="tpk::add_donating: this tensor was donated"):
                x.cpu()
        else:
            torch.testing.assert_close(x.cpu(), torch.full((n,), 2.0))


# --- bad input -----------------------------------------------------------------------------------


def test_definition_errors():
    def f(x: jax.Array) -> jax.Array:
        return x

    with pytest.raises(ValueError, match='"namespace::name"'):
        jax_op("no_namespace", f)
    with pytest.raises(ValueError, match="one"):
        jax_op("a::b::c", f)

    def unannotated(x, y: jax.Array) -> jax.Array:
        return x + y

    with pytest.raises(TypeError, match="tpk::bad1: parameter 'x' has no type annotation"):
        jax_op("tpk::bad1", unannotated)

    def no_return(x: jax.Array):
        return x

    with pytest.raises(TypeError, match="tpk::bad2: the function needs a return annotation"):
        jax_op("tpk::bad2", no_return)

    def takes_dict(x: jax.Array, d: dict) -> jax.Array:
        return x

    with pytest.raises(TypeError, match="tpk::bad3: parameter 'd' has the unsupported annotation"):
        jax_op("tpk::bad3", takes_dict)

    def configured(x: jax.Array, cfg: typing.Any = None) -> jax.Array:
        return x

    with pytest.raises(TypeError, match="tpk::bad4: static argument 'cfg' .* not hashable"):
        jax_op("tpk::bad4", functools.partial(configured, cfg={"a": 1}))

    def with_int(x: jax.Array, n: int) -> jax.Array:
        return x * n

    with pytest.raises(ValueError, match="tpk::bad5: donate_argnums 1 names 'n'"):
        jax_op("tpk::bad5", with_int, donate_argnums=1)


@pytest.mark.parametrize("mode", ["strict", "fused"])
def test_call_errors_raise_at_the_call_naming_the_op(mode):
    a = torch.randn(3, 4, device="tpu")
    with torch_pjrt.eager_mode(mode):
        # A shape the function rejects: JAX's error, raised at the call, naming the op.
        with pytest.raises(
            TypeError, match=r"tpk::matmul_max: the JAX function rejected its inputs"
        ):
            jmatmul_max(a, torch.randn(5, 6, device="tpu"))
        # Wrong rank for the function (it indexes a second axis).
        with pytest.raises(ValueError, match=r"tpk::sum: the JAX function rejected"):
            jsum(torch.randn(4, device="tpu"), 1)
        # 64-bit inputs need JAX's x64 mode.
        with pytest.raises(TypeError, match=r"tpk::gelu: an input has dtype torch.float64"):
            jgelu(torch.randn(3, dtype=torch.float64, device="tpu"))
        # A tensor on another device.
        with pytest.raises(RuntimeError, match="same device"):
            jmatmul_max(a, torch.randn(4, 2, device="tpu:1"))
        torch.tpu.synchronize()  # nothing was left pending by the failed calls


# --- JAX as an optional dependency, versions -----------------------------------------------------


def _run(code):
    return run_python(textwrap.dedent(code), timeout=300)


def test_without_jax_the_import_names_the_install_command():
    r = _run(
        """
        import sys
        class Block:
            def find_spec(self, name, path, target=None):
                if name == "jax" or name.startswith("jax."):
                    raise ImportError("No module named 'jax' (blocked)")
        sys.meta_path.insert(0, Block())
        import torch, torch_pjrt
        x = torch.ones(2, device="tpu") + 1  # the device works without JAX
        assert x.cpu().tolist() == [2.0, 2.0]
        try:
            import torch.tpu.pallas
        except ImportError as e:
            print("IMPORT ERROR:", e)
        try:
            torch.tpu.pallas
        except ImportError as e:
            print("ATTRIBUTE ERROR:", e)
        """
    )
    assert r.returncode == 0, r.stderr
    assert "IMPORT ERROR: torch.tpu.pallas needs JAX: pip install 'torch_pjrt[jax]'" in r.stdout
    assert "ATTRIBUTE ERROR: torch.tpu.pallas needs JAX" in r.stdout


def test_lowering_starts_no_jax_backend():
    r = _run(
        """
        import jax, torch, torch_pjrt
        from torch.tpu.pallas import jax_op
        from jax._src import xla_bridge

        @jax_op("sub::double")
        def double(x: jax.Array) -> jax.Array:
            return x * 2

        assert double(torch.ones(3, device="tpu")).cpu().tolist() == [2.0, 2.0, 2.0]
        print("BACKENDS", sorted(xla_bridge._backends))
        """
    )
    assert r.returncode == 0, r.stderr
    assert "BACKENDS []" in r.stdout


def test_versions_outside_what_jax_can_write_raise_naming_both(monkeypatch):
    jax_cur = pallas._mlir()[2].get_current_version()

    @jax_op("tpk::versioned")
    def versioned(x: jax.Array) -> jax.Array:
        return x + 1

    x = torch.ones(2, device="tpu")
    monkeypatch.setattr(pallas, "_plugin_versions", lambda: ("0.1.0", "0.3.0"))
    with pytest.raises(RuntimeError, match=rf"plugin accepts StableHLO 0.1.0 to 0.3.0.*{jax_cur}"):
        versioned(x)
    monkeypatch.setattr(pallas, "_plugin_versions", lambda: ("99.0.0", "99.1.0"))
    with pytest.raises(RuntimeError, match=rf"emits StableHLO {jax_cur}, older than .*99.0.0"):
        versioned(x)
    monkeypatch.undo()
    torch.testing.assert_close(versioned(x).cpu(), torch.full((2,), 2.0))


def test_kernels_are_written_in_the_plugins_version(monkeypatch):
    @jax_op("tpk::e8m0_round_trip")
    def e8m0(x: jax.Array) -> jax.Array:  # float8_e8m0fnu is newer than StableHLO 1.0.0
        return x.astype(jnp.float8_e8m0fnu).astype(jnp.float32)

    @jax_op("tpk::erfinv")
    def erfinv(x: jax.Array) -> jax.Array:  # a CHLO op: legalized to StableHLO on the way
        return jax.scipy.special.erfinv(x)

    x = torch.tensor([0.25, 1.0, 4.0, 8.0], device="tpu")
    monkeypatch.setattr(pallas, "_plugin_versions", lambda: ("0.9.0", "1.0.0"))
    with pytest.raises(
        RuntimeError,
        match=r"tpk::e8m0_round_trip: the kernel cannot be written as StableHLO 1.0.0.*f8E8M0FNU",
    ):
        e8m0(x)
    p = torch.tensor([-0.5, 0.0, 0.3, 0.9])
    want = torch.special.erfinv(p)
    torch.testing.assert_close(erfinv(p.to("tpu")).cpu(), want)  # lowered for 1.0.0
    monkeypatch.undo()
    # The plugin's own version can: powers of two survive the round trip.
    torch.testing.assert_close(e8m0(x).cpu(), x.cpu())


def test_target_version_is_the_older_of_jax_and_plugin():
    cur = pallas._plugin_versions()[1]
    jax_cur = pallas._mlir()[2].get_current_version()
    assert cur is not None  # both CPU plugins report their StableHLO versions
    want = min(jax_cur, cur, key=pallas._version)
    assert pallas.target_version("x::y") == want


# --- StableHLO text ops --------------------------------------------------------------------------

_AXPY = """
module @user attributes {mhlo.num_partitions = 1 : i32} {
  // y = 2 * x + y, through a helper
  func.func public @main(%x: tensor<4xf32>, %y: tensor<4xf32>) -> (tensor<4xf32> {jax.result_info = "r"}) {
    %0 = call @twice(%x) : (tensor<4xf32>) -> tensor<4xf32>
    %1 = stablehlo.add %0, %y : tensor<4xf32>
    return %1 : tensor<4xf32>
  }
  func.func private @twice(%a: tensor<4xf32>) -> tensor<4xf32> {
    %0 = stablehlo.add %a, %a : tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}
"""


def test_stablehlo_text_op_in_strict_and_fused():
    op = torch_pjrt.stablehlo_op("tpk::hlo_axpy", _AXPY)
    x, y = torch.randn(4), torch.randn(4)
    torch.testing.assert_close(op(x.to("tpu"), y.to("tpu")).cpu(), 2 * x + y)
    with torch_pjrt.eager_mode("fused"):
        before = _executions()
        out = op(x.to("tpu") * 3, y.to("tpu")).neg().cpu()
        assert _executions() - before == 1
    torch.testing.assert_close(out, -(6 * x + y))
    with pytest.raises(TypeError, match="tpk::hlo_axpy: input 1 has dtype torch.int32"):
        op(x.to("tpu"), torch.ones(4, dtype=torch.int32, device="tpu"))
    with pytest.raises(ValueError, match=r"tpk::hlo_axpy: input 0 has shape \[5\]"):
        op(torch.ones(5, device="tpu"), y.to("tpu"))


def test_stablehlo_program_function_per_signature():
    @torch_pjrt.stablehlo_op("tpk::hlo_scale")
    def scale(x: torch.Tensor, factor: float) -> tuple[torch.Tensor, torch.Tensor]:
        t = "tensor<" + "x".join(map(str, x.shape)) + "xf32>"
        return f"""
        func.func @main(%x: {t}) -> ({t}, tensor<f32>) {{
          %c = stablehlo.constant dense<{factor!r}> : {t}
          %0 = stablehlo.multiply %x, %c : {t}
          %z = stablehlo.constant dense<0.0> : tensor<f32>
          %1 = stablehlo.reduce(%x init: %z) applies stablehlo.add across dimensions = [{", ".join(map(str, range(len(x.shape))))}] : ({t}, tensor<f32>) -> tensor<f32>
          return %0, %1 : {t}, tensor<f32>
        }}"""

    for shape in ((3,), (2, 5)):
        x = torch.randn(shape)
        a, s = scale(x.to("tpu"), 1.5)
        torch.testing.assert_close(a.cpu(), x * 1.5)
        torch.testing.assert_close(s.cpu(), x.sum())


def test_stablehlo_definition_errors():
    with pytest.raises(ValueError, match="tpk::hlo_bad: the program defines no func.func @main"):
        torch_pjrt.stablehlo_op("tpk::hlo_bad", "func.func @other() -> tensor<f32> {}")
    with pytest.raises(TypeError, match="static shapes"):
        torch_pjrt.stablehlo_op(
            "tpk::hlo_bad2", "func.func @main(%x: tensor<?xf32>) -> tensor<?xf32> { return %x }"
        )
