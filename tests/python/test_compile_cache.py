"""The on-disk cache of torch.compile(backend="tpu"): a restarted process loads programs instead of
compiling them and trains to the same losses; corrupt or truncated files are ignored and replaced;
LRU eviction under the size cap; `python -m torch_pjrt.cache` lists, sizes and clears."""

import json
import os
import pathlib
import subprocess
import sys

import pytest
import torch

import torch_pjrt
import torch_pjrt.compile as tpc
from torch_pjrt import cache

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]


def _run_fresh(cache_dir):
    env = dict(os.environ, TORCH_PJRT_CACHE_DIR=str(cache_dir), PYTHONPATH=str(ROOT))
    proc = subprocess.run(
        [sys.executable, str(HERE / "compile_child.py"), "20", "1", "default", "{}"], env=env,
        capture_output=True, text=True, check=False, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_restarted_process_loads_programs_from_disk(tmp_path):
    cold = _run_fresh(tmp_path)
    assert cold["counters"]["xla_compiles"] >= 2
    assert cold["counters"]["disk_writes"] == cold["counters"]["xla_compiles"]
    warm = _run_fresh(tmp_path)
    assert warm["counters"]["xla_compiles"] == 0
    assert warm["counters"]["disk_hits"] == cold["counters"]["disk_writes"]
    torch.testing.assert_close(cold["tpu"], cold["cpu"], rtol=1e-4, atol=0)
    assert warm["tpu"] == cold["tpu"]


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    d = tmp_path / "cache"
    monkeypatch.setenv("TORCH_PJRT_CACHE_DIR", str(d))
    torch._dynamo.reset()
    tpc.clear_memory_cache()
    tpc.reset_counters()
    yield d
    torch._dynamo.reset()


def _compile_once(n=9):
    f = torch.compile(lambda x: torch.sinh(x) * 2 - x, backend="tpu")
    x = torch.linspace(-1, 1, n)
    torch.testing.assert_close(f(x.to("tpu")).cpu(), torch.sinh(x) * 2 - x)


@pytest.mark.parametrize("damage", ["truncate", "flip", "garbage", "empty"])
def test_corrupt_cache_file_is_ignored_and_replaced(cache_dir, damage):
    _compile_once()
    (entry,) = cache.entries(str(cache_dir))
    path = pathlib.Path(entry[0])
    blob = path.read_bytes()
    assert cache.load(path.name[: -len(".pjrt")], str(cache_dir))[0] == "hit"
    if damage == "truncate":
        path.write_bytes(blob[: len(blob) // 2])
    elif damage == "flip":
        path.write_bytes(blob[:-10] + bytes(b ^ 0xFF for b in blob[-10:]))
    elif damage == "garbage":
        path.write_bytes(b"\x00" * 100)
    else:
        path.write_bytes(b"")
    torch._dynamo.reset()
    tpc.clear_memory_cache()
    tpc.reset_counters()
    _compile_once()
    c = tpc.counters()
    assert c["disk_errors"] == 1 and c["xla_compiles"] == 1 and c["disk_writes"] == 1
    assert cache.load(path.name[: -len(".pjrt")], str(cache_dir))[0] == "hit"  # a good entry again


def test_disk_hit_in_process_after_memory_cache_is_cleared(cache_dir):
    _compile_once()
    torch._dynamo.reset()
    tpc.clear_memory_cache()
    tpc.reset_counters()
    _compile_once()
    c = tpc.counters()
    assert c["disk_hits"] == 1 and c["xla_compiles"] == 0


def test_lru_eviction_under_size_cap(tmp_path):
    d = str(tmp_path)
    for i, name in enumerate(["a", "b", "c"]):
        assert cache.store(name, bytes([i]) * 1000, d)
        os.utime(os.path.join(d, name + ".pjrt"), (1000 + i, 1000 + i))
    assert cache.load("a", d)[0] == "hit"  # refreshes a: b is now the least recently used
    assert cache.evict(2500, d) == 1
    assert sorted(os.path.basename(p) for p, _, _ in cache.entries(d)) == ["a.pjrt", "c.pjrt"]
    assert cache.load("b", d) == ("miss", None)


def test_size_cap_applies_on_store(tmp_path, monkeypatch):
    monkeypatch.setenv("TORCH_PJRT_CACHE_MAX_MB", str(2500 / 2**20))
    d = str(tmp_path)
    for name in ["a", "b", "c", "d"]:
        cache.store(name, b"x" * 1000, d)
    assert sum(size for _, size, _ in cache.entries(d)) <= 2500


def test_cache_command_lists_sizes_and_clears(tmp_path):
    d = tmp_path / "c"
    cache.store("k1", b"abc", str(d))
    env = dict(os.environ, TORCH_PJRT_CACHE_DIR=str(d), PYTHONPATH=str(ROOT))

    def cli(*args):
        proc = subprocess.run([sys.executable, "-m", "torch_pjrt.cache", *args], env=env,
                              capture_output=True, text=True, timeout=120, check=False)  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        return proc.stdout

    assert "k1.pjrt" in cli("list")
    assert "1 entries" in cli("size")
    assert "deleted 1" in cli("clear")
    assert cache.entries(str(d)) == []


def test_entry_point_finds_the_backend_without_importing_it(tmp_path):
    """A distribution declaring the pyproject's torch_dynamo_backends entry point (as an installed
    torch_pjrt does) lets torch.compile(backend="tpu") load torch_pjrt.compile by itself."""
    import tomllib

    eps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"]
    (target,) = eps["torch_dynamo_backends"].values()
    info = tmp_path / "torch_pjrt_entry_point_check-0.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: torch-pjrt-entry-point-check\n"
                                   "Version: 0.0\n")  # fmt: skip
    (info / "entry_points.txt").write_text(f"[torch_dynamo_backends]\ntpu = {target}\n")
    code = (
        "import sys, torch\n"
        "f = torch.compile(lambda x: x * 2 + 1, backend='tpu')\n"
        "x = torch.arange(4.0)\n"
        "assert torch.equal(f(x.to('tpu')).cpu(), x * 2 + 1)\n"
        "assert 'torch_pjrt.compile' in sys.modules\n"
        "print('ok')\n"
    )
    env = dict(os.environ, PYTHONPATH=f"{ROOT}{os.pathsep}{tmp_path}",
               TORCH_PJRT_CACHE_DIR=str(tmp_path / "cache"))  # fmt: skip
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          timeout=300, check=False)  # fmt: skip
    assert proc.returncode == 0 and proc.stdout.strip().endswith("ok"), proc.stderr[-3000:]


@pytest.fixture
def program_cache_capacity_4():
    """The program cache bound TORCH_PJRT_PROGRAM_CACHE_SIZE=4 sets at import, for one test."""
    saved = torch_pjrt._C._program_cache_capacity()
    torch_pjrt._C._set_program_cache_capacity(4)
    yield
    torch_pjrt._C._set_program_cache_capacity(saved)


def test_memory_caches_are_bounded_by_the_program_cache_size(
    monkeypatch, tmp_path, program_cache_capacity_4
):
    """A run whose shapes keep changing keeps at most TORCH_PJRT_PROGRAM_CACHE_SIZE signatures and
    programs (least recently used dropped): each executable holds memory mappings in the plugin."""
    from torch_pjrt.compile import runner

    monkeypatch.setenv("TORCH_PJRT_CACHE_DIR", str(tmp_path))
    torch._dynamo.reset()
    tpc.clear_memory_cache()
    tpc.reset_counters()
    f = torch.compile(lambda x: (x * 2).sum(), backend="tpu")
    for n in range(1, 11):
        x = torch.arange(float(n))
        assert f(x.to("tpu")).item() == (x * 2).sum().item()
    c = tpc.counters()
    assert len(runner._programs) <= 4 and len(runner._entries) <= 4
    # Earlier tests' signatures, still in the order, go first.
    assert c["evictions"] >= c["graphs_compiled"] - 4 > 0
    # The most recent shape is still served; the first one compiles again (from the disk cache).
    before = tpc.counters()["graphs_compiled"]
    assert f(torch.arange(10.0).to("tpu")).item() == 90.0
    assert tpc.counters()["graphs_compiled"] == before
    assert f(torch.arange(1.0).to("tpu")).item() == 0.0
    assert tpc.counters()["graphs_compiled"] == before + 1
    torch._dynamo.reset()
