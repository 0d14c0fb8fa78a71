"""The disk cache of eager programs (TORCH_PJRT_EAGER_DISK_CACHE=1): a second process loads the
programs the first compiled (no compile, disk hits) and computes the same values; a damaged file
is a miss that is compiled and written again, never an error or a wrong result."""

import json
import os
import subprocess
import sys

import torch

SCRIPT = """
import json, torch, torch_pjrt
torch.manual_seed(0)
x = torch.randn(8, 8)
torch_pjrt.metrics.reset()
with torch_pjrt.eager_mode("fused"):
    y = (x.to("tpu") @ x.to("tpu")).relu().sum(0) * 3
    values = y.cpu().tolist()
c = torch_pjrt.metrics.counters()
print(json.dumps({"values": values, "compiles": c["compiles"], "disk_hits": c["disk_hits"]}))
"""


def run(cache_dir):
    env = dict(os.environ, TORCH_PJRT_EAGER_DISK_CACHE="1", TORCH_PJRT_CACHE_DIR=str(cache_dir))
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=300,
        check=True,
    )  # fmt: skip
    return json.loads(out.stdout.strip().splitlines()[-1])


def expected():
    torch.manual_seed(0)
    x = torch.randn(8, 8)
    return ((x @ x).relu().sum(0) * 3).tolist()


def test_second_process_loads_programs_from_disk(tmp_path):
    first = run(tmp_path)
    assert first["compiles"] > 0 and first["disk_hits"] == 0
    files = list((tmp_path / "eager").iterdir())
    assert len(files) == first["compiles"]
    second = run(tmp_path)
    assert second["compiles"] == 0
    assert second["disk_hits"] == first["compiles"]
    assert second["values"] == first["values"]
    torch.testing.assert_close(torch.tensor(second["values"]), torch.tensor(expected()))


def test_damaged_file_is_a_miss(tmp_path):
    first = run(tmp_path)
    for f in (tmp_path / "eager").iterdir():
        f.write_bytes(f.read_bytes()[:100])  # truncated
    second = run(tmp_path)
    assert second["compiles"] == first["compiles"] and second["disk_hits"] == 0
    assert second["values"] == first["values"]
    third = run(tmp_path)  # the programs were written again
    assert third["compiles"] == 0 and third["values"] == first["values"]
