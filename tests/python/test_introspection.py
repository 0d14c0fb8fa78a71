"""In-process introspection on torch.tpu: StableHLO of pending work, of the last eager program and
of compiled graphs; compile-cache counters and controls; synchronize() waits for run_stablehlo's
programs; the autocast helpers."""

import time

import pytest
import torch

import torch_pjrt


def test_computation_mlir_of_one_eager_op_in_fused_mode():
    x = torch.arange(6.0).to("tpu")
    with torch_pjrt.eager_mode("fused"):
        y = torch.sin(x)
        text = torch.tpu.computation_mlir(y)
        assert "stablehlo.sine" in text and "func.func public @main" in text
        assert "tensor<6xf32>" in text
        assert torch.tpu.computation_mlir(x) == ""  # computed already: nothing to run
    torch.testing.assert_close(y.cpu(), torch.sin(torch.arange(6.0)))
    with pytest.raises(TypeError, match="expected tpu tensors"):
        torch.tpu.computation_mlir(torch.ones(2))


def test_last_program_is_the_last_eager_program():
    x = torch.arange(4.0).to("tpu")
    y = torch.cos(x)
    y.cpu()
    text, ops = torch.tpu.last_program_stablehlo(with_ops=True)
    assert "stablehlo.cosine" in text and "cos" in ops
    # A cached program (second run of the same op) is reported too.
    z = torch.exp(x)
    z.cpu()
    assert "stablehlo.exponential" in torch.tpu.last_program_stablehlo()
    torch.cos(x).cpu()
    assert "stablehlo.cosine" in torch.tpu.last_program_stablehlo()


def test_last_program_of_fused_mode_holds_every_op():
    x = torch.arange(4.0).to("tpu")
    with torch_pjrt.eager_mode("fused"):
        y = torch.tanh(torch.sqrt(x) * 3.0)
        assert torch.allclose(y.cpu(), torch.tanh(torch.sqrt(torch.arange(4.0)) * 3.0))
    text = torch.tpu.last_program_stablehlo()
    for op in ("stablehlo.sqrt", "stablehlo.multiply", "stablehlo.tanh"):
        assert op in text


def test_compiled_graph_stablehlo():
    def f(a, b):
        return torch.relu(a @ b) + 1

    a, b = torch.randn(3, 4), torch.randn(4, 5)
    cf = torch.compile(f, backend="tpu")
    out = cf(a.to("tpu"), b.to("tpu"))
    torch.testing.assert_close(out.cpu(), f(a, b))
    texts = torch.tpu.compiled_graph_stablehlo()
    name, text = list(texts.items())[-1]
    assert name.startswith("compiled graph_") and name.endswith("_inference")
    assert "stablehlo.dot_general" in text and "stablehlo.select" in text  # relu
    assert "tensor<3x5xf32>" in text
    optimized = torch.tpu.optimized_hlo(text)  # the plugin's HLO after its optimizations
    assert optimized.startswith("HloModule") and "dot(" in optimized and "f32[3,5]" in optimized


def test_cache_counters_and_clear():
    torch_pjrt.metrics.reset()
    start = torch.tpu._get_cache_stats()
    x = torch.arange(8.0).to("tpu")
    for _ in range(3):
        torch.atan(x).cpu()
    stats = torch.tpu._get_cache_stats()
    reqs = stats["num_cache_reqs"] - start["num_cache_reqs"]
    hits = stats["num_cache_hits"] - start["num_cache_hits"]
    assert reqs >= 3 and hits >= 2
    assert stats["num_cache_reqs"] == stats["num_cache_hits"] + stats["num_cache_misses"]
    assert torch.tpu._get_cache_requests() == stats["num_cache_reqs"]
    assert torch.tpu._get_cache_hits() == stats["num_cache_hits"]
    assert torch.tpu._get_cache_misses() == stats["num_cache_misses"]
    assert stats["cached_programs"] > 0
    torch.tpu._clear_cache()
    assert torch.tpu._get_cache_stats()["cached_programs"] == 0
    misses = torch.tpu._get_cache_misses()
    compiles = torch_pjrt.metrics.counters()["compiles"]
    torch.atan(x).cpu()  # compiles again
    assert torch.tpu._get_cache_misses() == misses + 1
    assert torch_pjrt.metrics.counters()["compiles"] == compiles + 1


def test_cache_only_refuses_to_compile():
    x = torch.arange(5.0).to("tpu")
    torch.asinh(x).cpu()  # cached now
    torch.tpu._set_cache_only(True)
    try:
        assert torch.tpu._get_cache_stats()["cache_only"] is True
        torch.testing.assert_close(torch.asinh(x).cpu(), torch.asinh(torch.arange(5.0)))
        with pytest.raises(RuntimeError, match="no more compilation should happen"):
            torch.special.erfcx(torch.arange(7.0).to("tpu") + 0.5).cpu()
    finally:
        torch.tpu._set_cache_only(False)
    torch.testing.assert_close(
        torch.special.erfcx(torch.arange(7.0).to("tpu") + 0.5).cpu(),
        torch.special.erfcx(torch.arange(7.0) + 0.5),
    )


def test_allow_cache_false_compiles_every_time():
    x = torch.arange(3.0).to("tpu")
    torch.acosh(x + 1).cpu()
    torch.tpu._set_allow_cache(False)
    try:
        compiles = torch_pjrt.metrics.counters()["compiles"]
        torch.acosh(x + 1).cpu()
        torch.acosh(x + 1).cpu()
        assert torch_pjrt.metrics.counters()["compiles"] >= compiles + 2
        assert torch.tpu._get_cache_stats()["allow_cache"] is False
    finally:
        torch.tpu._set_allow_cache(True)
    assert torch.tpu._get_cache_stats()["allow_cache"] is True
    torch.acosh(x + 1).cpu()  # cached again
    compiles = torch_pjrt.metrics.counters()["compiles"]
    torch.acosh(x + 1).cpu()
    assert torch_pjrt.metrics.counters()["compiles"] == compiles


_SLOW = """
module {
  func.func public @main(%x: tensor<512x512xf32>) -> tensor<512x512xf32> {
    %c0 = stablehlo.constant dense<0> : tensor<i32>
    %c1 = stablehlo.constant dense<1> : tensor<i32>
    %n = stablehlo.constant dense<N> : tensor<i32>
    %r:2 = stablehlo.while(%i = %c0, %acc = %x) : tensor<i32>, tensor<512x512xf32>
      cond {
        %lt = stablehlo.compare LT, %i, %n : (tensor<i32>, tensor<i32>) -> tensor<i1>
        stablehlo.return %lt : tensor<i1>
      } do {
        %d = stablehlo.dot_general %acc, %x, contracting_dims = [1] x [0]
          : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
        %s = stablehlo.tanh %d : tensor<512x512xf32>
        %j = stablehlo.add %i, %c1 : tensor<i32>
        stablehlo.return %j, %s : tensor<i32>, tensor<512x512xf32>
      }
    return %r#1 : tensor<512x512xf32>
  }
}"""


def test_synchronize_waits_for_run_stablehlo_programs():
    program = _SLOW.replace("dense<N>", "dense<40>")
    x = (torch.randn(512, 512) * 0.01).to("tpu")
    (y,) = torch_pjrt.run_stablehlo(program, x)  # compiles
    y.cpu()
    start = time.perf_counter()
    (y,) = torch_pjrt.run_stablehlo(program, x)
    y.cpu()
    one = time.perf_counter() - start  # one run, read back
    # A timing loop: launches, then synchronize(); the results are dropped on the way.
    start = time.perf_counter()
    for _ in range(4):
        (y,) = torch_pjrt.run_stablehlo(program, x)
    del y
    torch.tpu.synchronize()
    timed = time.perf_counter() - start
    assert timed > 2 * one, (timed, one)
    # After synchronize() nothing is left running: an event recorded now is complete at once.
    torch_pjrt.run_stablehlo(program, x)
    torch.tpu.synchronize()
    event = torch.tpu.Event()
    event.record()
    assert event.query()
    torch.accelerator.synchronize()


def test_autocast_helpers():
    assert torch.tpu._get_autocast_dtype() == torch.get_autocast_dtype("tpu") == torch.bfloat16
    assert torch.tpu._is_autocast_enabled() is False
    with torch.autocast("tpu"):
        assert torch.tpu._is_autocast_enabled() is True
    torch.tpu._set_autocast_dtype(torch.float16)
    try:
        assert torch.get_autocast_dtype("tpu") == torch.float16
        with torch.autocast("tpu"):
            a = torch.randn(4, 4).to("tpu")
            assert (a @ a).dtype == torch.float16
    finally:
        torch.tpu._set_autocast_dtype(torch.bfloat16)
    with pytest.raises(ValueError, match="unsupported dtype torch.int32"):
        torch.tpu._set_autocast_dtype(torch.int32)
    assert torch.tpu._get_autocast_dtype() == torch.bfloat16
    torch.tpu._set_autocast_enabled(True)
    try:
        assert torch.is_autocast_enabled("tpu")
    finally:
        torch.tpu._set_autocast_enabled(False)
    assert not torch.tpu._is_autocast_enabled()


def test_optimized_hlo_of_a_fused_program_and_one_op():
    x = torch.arange(4.0).to("tpu")
    with torch_pjrt.eager_mode("fused"):
        y = torch.tanh(torch.sqrt(x) * 3.0)
        op = torch.tpu.computation_mlir(torch.sin(x))  # one eager op, not run
        y.cpu()
    fused = torch.tpu.optimized_hlo(torch.tpu.last_program_stablehlo())
    assert fused.startswith("HloModule") and "ENTRY" in fused
    assert "sqrt(" in fused and "tanh(" in fused and "fusion" in fused  # XLA fused them
    single = torch.tpu.optimized_hlo(op)
    assert "sine(" in single and "f32[4]" in single
    with pytest.raises(RuntimeError):
        torch.tpu.optimized_hlo("func.func @main() -> () { not a program }")
    with pytest.raises(ValueError, match="expected a program's StableHLO text"):
        torch.tpu.optimized_hlo("")


def test_dump_on_cache_miss(tmp_path, monkeypatch):
    # Afterwards graphs follow TORCH_PJRT_DUMP_DIR again, as other tests set it.
    monkeypatch.setattr(torch_pjrt.introspection, "_dump_dir", torch_pjrt.introspection._dump_dir)
    dump = tmp_path / "dump"
    assert not torch.tpu._get_dump_on_cache_miss()
    assert torch.tpu._set_dump_on_cache_miss(True, dump) == str(dump)
    try:
        assert torch.tpu._get_dump_on_cache_miss()
        x = torch.arange(11.0).to("tpu")
        torch.special.i1e(x).cpu()  # compiled: dumped with its ops in the first line
        files = sorted(p.name for p in dump.iterdir())
        assert files and all(n.startswith("eager-") and n.endswith(".mlir") for n in files)
        texts = [(dump / n).read_text() for n in files]
        assert any(t.startswith("// ops: ") and "i1e" in t.splitlines()[0] for t in texts)
        assert all("func.func public @main" in t for t in texts)
        torch.special.i1e(x).cpu()  # from the cache: nothing new
        assert sorted(p.name for p in dump.iterdir()) == files
        f = torch.compile(lambda t: torch.cos(t) * 3, backend="tpu")
        torch.testing.assert_close(f(torch.ones(13).to("tpu")).cpu(), torch.cos(torch.ones(13)) * 3)
        graphs = [p for p in dump.iterdir() if p.name.endswith(".stablehlo.mlir")]
        assert len(graphs) == 1 and "stablehlo.cosine" in graphs[0].read_text()
    finally:
        torch.tpu._set_dump_on_cache_miss(False)
    assert not torch.tpu._get_dump_on_cache_miss()
    before = len(list(dump.iterdir()))
    torch.special.i1e(torch.arange(12.0).to("tpu")).cpu()  # compiled, not dumped
    assert len(list(dump.iterdir())) == before
