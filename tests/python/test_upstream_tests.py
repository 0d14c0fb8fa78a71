"""tools/upstream_tests.py on a small device-generic test file of its own: the tests are instantiated
for "tpu" only, outcomes are counted, and a test that kills its process (SIGSEGV) is reported as
crashed by name while the tests after it still run."""

import json
import os
import subprocess
import sys
import textwrap

TOOL = os.path.join(os.path.dirname(__file__), "..", "..", "tools", "upstream_tests.py")

GENERIC_TESTS = textwrap.dedent("""
    import os
    import signal
    import unittest

    import torch
    from torch.testing._internal.common_device_type import instantiate_device_type_tests
    from torch.testing._internal.common_utils import TestCase


    class TestSmall(TestCase):
        def test_a_add(self, device):
            self.assertEqual((torch.ones(3, device=device) + 1).cpu(), torch.full((3,), 2.0))

        def test_b_wrong(self, device):
            self.assertEqual(torch.ones(2, device=device).cpu(), torch.zeros(2))

        def test_c_crash(self, device):
            os.kill(os.getpid(), signal.SIGSEGV)

        @unittest.skip("not this one")
        def test_d_skipped(self, device):
            pass

        def test_e_after_crash(self, device):
            self.assertEqual(str(torch.zeros(1, device=device).device), "tpu:0")


    instantiate_device_type_tests(TestSmall, globals())
""")


def _run_tool(tmp_path, name, source):
    """Runs the tool on one test file `name` holding `source`: (its run, the per-test results)."""
    (tmp_path / name).write_text(source)
    out = tmp_path / "results.json"
    run = subprocess.run(
        [sys.executable, TOOL, str(tmp_path), "--out", str(out), "--test-timeout", "120"],
        check=False, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    return run, json.loads(out.read_text())["results"]


def test_counts_outcomes_and_names_the_crashed_test(tmp_path):
    run, results = _run_tool(tmp_path, "test_small.py", GENERIC_TESTS)
    last = json.loads(run.stdout.strip().splitlines()[-1])
    counts = last["files"]["test_small.py"]
    assert {k: counts[k] for k in ("passed", "failed", "skipped", "crashed")} == {
        "passed": 2, "failed": 1, "skipped": 1, "crashed": 1,
    }  # fmt: skip
    assert counts["pass_rate"] == 0.5  # 2 of the 4 tests that were not skipped
    assert set(results) == {  # only the PRIVATEUSE1 class: no CPU instantiation
        f"test_small.py::TestSmallPRIVATEUSE1::test_{n}_tpu"
        for n in ("a_add", "b_wrong", "c_crash", "d_skipped", "e_after_crash")
    }
    crashed = results["test_small.py::TestSmallPRIVATEUSE1::test_c_crash_tpu"]
    assert crashed == ["crashed", "worker ended by signal SIGSEGV in this test"]
    assert "CRASHED: test_small.py::" in run.stdout


def test_op_coverage_report_keeps_the_upstream_section(tmp_path):
    sys.path.insert(0, os.path.dirname(TOOL))
    try:
        import op_coverage
    finally:
        sys.path.pop(0)
    report = tmp_path / "op_coverage.md"
    section = "\n## PyTorch's own device-generic tests\n\nfigures\n"
    report.write_text("# old table\n" + section)
    op_coverage.write_report([], str(report), [("cmd", 1.0)])
    text = report.read_text()
    assert text.startswith('# OpInfo coverage on device "tpu"') and "# old table" not in text
    assert text.endswith(section)


def _tool_module():
    sys.path.insert(0, os.path.dirname(TOOL))
    try:
        import upstream_tests
    finally:
        sys.path.pop(0)
    return upstream_tests


def test_selection_keeps_every_device_class():
    ids = [
        "test_x.py::TestA::test_plain",  # not device-generic
        "test_x.py::TestAPRIVATEUSE1::test_one_tpu",
        "test_x.py::TestBTPU::test_two_tpu_float32",  # a later instantiate_device_type_tests
        "test_x.py::TestBCPU::test_two_cpu",
        "test_x.py::TestTPUThings::test_not_a_device_class",
        "test_x.py::TestCTPU::test_three_tpu",
    ]
    assert _tool_module().device_test_ids(ids) == [
        "test_x.py::TestAPRIVATEUSE1::test_one_tpu",
        "test_x.py::TestBTPU::test_two_tpu_float32",
        "test_x.py::TestCTPU::test_three_tpu",
    ]


TWO_INSTANTIATIONS = textwrap.dedent("""
    import torch
    from torch.testing._internal.common_device_type import instantiate_device_type_tests
    from torch.testing._internal.common_utils import TestCase


    class TestFirst(TestCase):
        def test_one(self, device):
            self.assertEqual(torch.ones(2, device=device).sum().item(), 2.0)


    instantiate_device_type_tests(TestFirst, globals())


    class TestSecond(TestCase):
        def test_two(self, device):
            self.assertEqual(torch.arange(3, device=device).cpu(), torch.arange(3))

        def test_three(self, device):
            self.assertEqual(torch.zeros(1, device=device).cpu(), torch.ones(1))


    instantiate_device_type_tests(TestSecond, globals())
""")


def test_counts_the_classes_of_later_instantiations(tmp_path):
    run, results = _run_tool(tmp_path, "test_two.py", TWO_INSTANTIATIONS)
    counts = json.loads(run.stdout.strip().splitlines()[-1])["files"]["test_two.py"]
    assert (counts["passed"], counts["failed"]) == (2, 1)
    assert len(results) == 3


def test_a_file_that_fails_to_import_is_an_error(tmp_path):
    # pytest collects nothing from it: the file is counted as one error naming the ImportError,
    # not as a file of 0 tests.
    source = "from torch.testing._internal.common_utils import no_such_name\n"
    run, results = _run_tool(tmp_path, "test_broken.py", source)
    counts = json.loads(run.stdout.strip().splitlines()[-1])["files"]["test_broken.py"]
    assert counts["errors"] == 1 and counts["passed"] == 0 and counts["pass_rate"] == 0.0
    outcome, cause = results["test_broken.py::(collection)"]
    assert outcome == "error" and "no_such_name" in cause


def test_cpu_twin_names():
    twin = _tool_module().cpu_twin
    assert twin("t.py::TestAPRIVATEUSE1::test_one_tpu") == "t.py::TestACPU::test_one_cpu"
    assert twin("t.py::TestBTPU::test_two_tpu_float32") == "t.py::TestBCPU::test_two_cpu_float32"
    assert twin("t.py::TestBTPU::test_x_tpu_y_True_tpu_int8") == (
        "t.py::TestBCPU::test_x_tpu_y_True_cpu_int8"
    )
    assert twin("t.py::(collection)") is None


ONLY_ON_TPU = textwrap.dedent("""
    import torch
    from torch.testing._internal.common_device_type import instantiate_device_type_tests
    from torch.testing._internal.common_utils import TestCase


    class TestCmp(TestCase):
        def test_a_passes(self, device):
            self.assertEqual(torch.ones(2, device=device).sum().item(), 2.0)

        def test_b_fails_everywhere(self, device):
            self.assertEqual(torch.ones(2, device=device).sum().item(), 3.0)

        def test_c_fails_on_tpu_only(self, device):
            self.assertEqual(torch.zeros(1, device=device).device.type, "cpu")


    instantiate_device_type_tests(TestCmp, globals())
""")


def test_compare_cpu_separates_cpu_failures(tmp_path):
    (tmp_path / "test_cmp.py").write_text(ONLY_ON_TPU)
    first, second = tmp_path / "tpu.json", tmp_path / "both.json"
    base = [sys.executable, TOOL, str(tmp_path), "--test-timeout", "120"]
    subprocess.run(base + ["--out", str(first)], check=True, capture_output=True, timeout=600)
    run = subprocess.run(  # the tpu results are reused: only the two failing tests' twins run
        base + ["--compare-cpu", "--reuse", str(first), "--out", str(second)],
        check=True, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    counts = json.loads(run.stdout.strip().splitlines()[-1])["files"]["test_cmp.py"]
    assert (counts["passed"], counts["failed"]) == (1, 2)
    assert (counts["cpu_too"], counts["tpu_only"], counts["cpu_skipped"]) == (1, 1, 0)
    assert counts["pass_rate_cpu_passing"] == 0.5  # 1 of the 2 tests that pass on the CPU
    twins = json.loads(second.read_text())["cpu_twins"]
    assert {k: v[0] for k, v in twins.items()} == {
        "test_cmp.py::TestCmpCPU::test_b_fails_everywhere_cpu": "failed",
        "test_cmp.py::TestCmpCPU::test_c_fails_on_tpu_only_cpu": "passed",
    }
    tpu_only_causes = run.stdout.split("failures whose CPU twin passes, by cause:")[1]
    assert "'tpu' != 'cpu'" in tpu_only_causes and "Scalars are not close" not in tpu_only_causes
