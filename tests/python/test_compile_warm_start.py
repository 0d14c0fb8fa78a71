"""Warm start of torch.compile(backend="tpu") across processes (torch_pjrt.compile.warm_start): a
second process with the same cache directory loads every Dynamo graph's AOTAutograd result and
every program from disk and trains to the same losses as the first process and the CPU; a change of
the model code, of the torch.compile mode or of the XLA compile options misses; a corrupt entry is
deleted with a warning and traced again."""

import json
import os
import pathlib
import shutil
import subprocess
import sys

import pytest
import torch

import torch_pjrt.compile as tpc
from torch_pjrt.compile import warm_start

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]


def _run(cache_dir, scale=1.0, mode="default", xla_options=None):
    env = dict(os.environ, TORCH_PJRT_CACHE_DIR=str(cache_dir), PYTHONPATH=str(ROOT))
    env.pop("TORCH_PJRT_AOT_CACHE", None)
    # A fresh process: 3 compiled AdamW steps of the MLP (compile_child.py).
    args = [str(HERE / "compile_child.py"), "3", str(scale), mode, json.dumps(xla_options or {})]
    proc = subprocess.run([sys.executable, *args], env=env, capture_output=True,
                          text=True, check=False, timeout=300)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    out["stderr"] = proc.stderr
    return out


def _aot_entries(cache_dir):
    return sorted(p for p in (cache_dir / "aot").glob("*/aotautograd/*/*") if p.is_file())


@pytest.fixture(scope="module")
def first(tmp_path_factory):
    """The first process's output, and the cache it filled (each test runs on a copy)."""
    d = tmp_path_factory.mktemp("warm") / "cache"
    return d, _run(d)


@pytest.fixture
def cold(first, tmp_path):
    d = tmp_path / "cache"
    shutil.copytree(first[0], d)
    return d, first[1]


def test_second_process_hits_every_level(cold):
    d, first = cold
    c = first["counters"]
    # Two Dynamo graphs (forward with backward, and the optimizer step), each traced by
    # AOTAutograd and written; three programs compiled and written.
    assert c["aot_misses"] == 2 and c["aot_writes"] == 2 and c["aot_hits"] == 0
    assert c["xla_compiles"] == 3 and c["disk_writes"] == 3
    torch.testing.assert_close(first["tpu"], first["cpu"], rtol=1e-4, atol=0)

    second = _run(d)
    c = second["counters"]
    assert c["aot_hits"] == 2 and c["aot_misses"] == 0 and c["aot_writes"] == 0
    assert c["aot_errors"] == 0 and c["aot_bypasses"] == 0
    assert c["disk_hits"] == 3 and c["xla_compiles"] == 0
    assert second["tpu"] == first["tpu"]


def test_model_code_change_misses(cold):
    d, first = cold
    out = _run(d, scale=2.0)
    c = out["counters"]
    # The model's graph is new; the optimizer step's graph is the same and still hits.
    assert c["aot_misses"] == 1 and c["aot_hits"] == 1
    torch.testing.assert_close(out["tpu"], out["cpu"], rtol=1e-4, atol=0)
    assert out["tpu"] != first["tpu"]


def test_compile_option_change_misses(cold):
    out = _run(cold[0], xla_options={"xla_optimization_level": "O1"})
    c = out["counters"]
    assert c["aot_misses"] == 2 and c["aot_hits"] == 0
    torch.testing.assert_close(out["tpu"], out["cpu"], rtol=1e-4, atol=0)


def test_folder_depends_on_mode_options_and_compile_options(monkeypatch, tmp_path):
    monkeypatch.setenv("TORCH_PJRT_CACHE_DIR", str(tmp_path))
    base = warm_start.folder(None, None)
    assert warm_start.folder(None, None) == base
    assert warm_start.folder("max-autotune", None) != base
    assert warm_start.folder(None, {"triton.cudagraphs": False}) != base
    with torch.tpu.compiler.custom_compiler_options({"xla_optimization_level": "O1"}):
        assert warm_start.folder(None, None) != base
    assert warm_start.folder(None, None) == base


def test_corrupt_entry_is_deleted_with_a_warning_and_traced_again(cold):
    d = cold[0]
    entries = _aot_entries(d)
    assert len(entries) == 2
    blob = entries[0].read_bytes()
    entries[0].write_bytes(blob[: len(blob) // 2])  # truncated
    out = _run(d)
    c = out["counters"]
    assert "corrupt AOTAutograd cache entry" in out["stderr"]
    assert c["aot_errors"] == 1 and c["aot_misses"] == 1 and c["aot_hits"] == 1
    assert c["aot_writes"] == 1
    assert out["tpu"] == cold[1]["tpu"]
    assert len(_aot_entries(d)) == 2  # the damaged entry replaced by a good one


def test_opt_out(monkeypatch, tmp_path):
    monkeypatch.setenv("TORCH_PJRT_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("TORCH_PJRT_AOT_CACHE", "0")
    torch._dynamo.reset()
    tpc.reset_counters()
    f = torch.compile(lambda x: torch.sin(x) * 3, backend="tpu")
    x = torch.randn(8)
    torch.testing.assert_close(f(x.to("tpu")).cpu(), torch.sin(x) * 3)
    c = tpc.counters()
    assert c["aot_misses"] == c["aot_hits"] == c["aot_writes"] == 0
    assert c["graphs_compiled"] == 1
    assert not (tmp_path / "aot").exists()
    torch._dynamo.reset()


def test_random_ops_stay_random_when_loaded(monkeypatch, tmp_path):
    """A loaded graph draws new random values per call (an FX graph pickled by re-tracing its code
    would hold the values drawn at load time as constants)."""
    monkeypatch.setenv("TORCH_PJRT_CACHE_DIR", str(tmp_path))
    x = torch.zeros(64, device="tpu")
    for hits in (0, 1):
        torch._dynamo.reset()
        tpc.clear_memory_cache()
        tpc.reset_counters()
        f = torch.compile(lambda t: t + torch.rand(64, device=t.device), backend="tpu")
        a, b = f(x).cpu(), f(x).cpu()
        assert tpc.counters()["aot_hits"] == hits
        assert not torch.equal(a, b)
        assert 0 <= a.min() and a.max() < 1
    torch._dynamo.reset()


def test_cache_clear_removes_the_aot_results(cold):
    from torch_pjrt import cache

    d = cold[0]
    assert len(_aot_entries(d)) == 2
    removed = cache.clear(str(d))
    assert removed >= 5  # 3 programs and 2 AOTAutograd entries
    assert _aot_entries(d) == [] and not (d / "aot").exists()


# --- Dynamo's own results (compile/dynamo_cache.py): inference functions, opt-in ---------------

_MODEL_SOURCE = """
import torch


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(16, 32)
        self.b = torch.nn.Linear(32, 4)

    def forward(self, x):
        return self.b(torch.nn.functional.gelu(self.a(x))) * {scale}


def make_input():
    return torch.randn(8, 16, generator=torch.Generator().manual_seed(1))
"""


def _run_inference(cache_dir, module_dir, scale):
    module_dir.mkdir(exist_ok=True)
    (module_dir / "model_source.py").write_text(_MODEL_SOURCE.format(scale=scale))
    env = dict(os.environ, TORCH_PJRT_CACHE_DIR=str(cache_dir), PYTHONPATH=str(ROOT))
    env["TORCH_CACHING_PRECOMPILE"] = "1"
    env.pop("TORCH_PJRT_AOT_CACHE", None)
    proc = subprocess.run(
        [sys.executable, str(HERE / "dynamo_cache_child.py"), str(module_dir)],
        env=env, capture_output=True, text=True, check=False, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_dynamo_cache_second_process_skips_dynamo(tmp_path):
    """With torch's precompile cache on, a second process loads the compiled forward's Dynamo
    entry (bytecode, guards, graphs) and its program from disk: no Dynamo or AOTAutograd tracing,
    no XLA compile, the same results; a change of the model's code misses."""
    cache = tmp_path / "cache"
    first = _run_inference(cache, tmp_path / "v1", 1.0)
    assert first["dynamo_cache"] == {"dynamo_cache_miss": 1}
    assert first["counters"]["dynamo_saves"] == 1
    assert first["counters"]["xla_compiles"] == 1
    torch.testing.assert_close(torch.tensor(first["tpu"][0]), torch.tensor(first["cpu"]))
    entries = list((cache / "dynamo").glob("*/*/entry"))
    assert len(entries) == 1

    second = _run_inference(cache, tmp_path / "v1", 1.0)
    assert second["dynamo_cache"] == {"dynamo_cache_hit": 1}
    c = second["counters"]
    assert c["aot_misses"] == c["aot_hits"] == c["xla_compiles"] == c["dynamo_saves"] == 0
    assert c["disk_hits"] == 1
    assert second["tpu"] == first["tpu"]

    # Dynamo keys an entry by the function's name and first line, so it loads the old entry, then
    # finds the traced source changed and traces afresh.
    changed = _run_inference(cache, tmp_path / "v2", 3.0)
    assert changed["counters"]["aot_misses"] == 1 and changed["counters"]["dynamo_saves"] == 1
    torch.testing.assert_close(torch.tensor(changed["tpu"][1]), torch.tensor(changed["cpu"]))

    from torch_pjrt import cache as disk_cache

    disk_cache.clear(str(cache))
    assert not (cache / "dynamo").exists()
