"""The OpInfo coverage tool on a fast subset: it runs, writes its table, and lowered ops pass."""

import json
import os
import subprocess
import sys

TOOL = os.path.join(os.path.dirname(__file__), "..", "..", "tools", "op_coverage.py")


def test_op_coverage_subset(tmp_path):
    out = tmp_path / "coverage.md"
    r = subprocess.run(
        [
            sys.executable,
            TOOL,
            "--ops",
            "^(add|mul|mm|neg)$",
            "--dtypes",
            "float32,int64",
            "--max-samples",
            "4",
            "--output",
            str(out),
        ],  # fmt: skip
        check=False,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode == 0, r.stderr
    summary = json.loads(r.stdout.strip().splitlines()[-1])
    assert summary["ops"] == 4
    assert summary["samples"] > 0
    assert summary["failed"] == 0 and summary["fell_back"] == 0
    assert summary["pass_rate"] == 100.0
    text = out.read_text()
    assert "| mm | float32 int64 |" in text and "**Overall:" in text
