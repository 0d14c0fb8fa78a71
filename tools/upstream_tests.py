"""Runs copies of PyTorch's own device-generic test files (test_view_ops.py, test_indexing.py, ...)
against the installed torch + torch_pjrt with the device restricted to "tpu".

`instantiate_device_type_tests` instantiates each generic class for PrivateUse1 (class names ending
`PRIVATEUSE1`, or `TPU` for the classes of a file's later calls; test ids ending `_tpu`; all are
counted) when torch_pjrt is loaded before the file imports
common_device_type (it is: torch autoloads it) and PYTORCH_TESTING_DEVICE_ONLY_FOR=tpu drops the CPU
classes. Each file runs in worker processes of at most --shard-size tests; a worker records every
test as it starts and ends, so a worker killed by a signal (SIGSEGV) is reported as "crashed" with
the test that was running, and a new worker resumes after it. A test running past --test-timeout
fails (SIGALRM); a worker stuck where that cannot interrupt it (in C++) for 5 minutes more is killed
and the test reported as "timeout".

The upstream files are not part of this repository. Take them from pytorch/pytorch (the commits and
sizes used for docs/op_coverage.md are listed there), put them in a folder and run:

  python tools/upstream_tests.py /work/upstream_tests                      # every test_*.py there
  python tools/upstream_tests.py /work/upstream_tests --files test_indexing.py -k index_reduce
  python tools/upstream_tests.py /work/upstream_tests --files test_reductions.py --sample 1000

Prints per file passed / failed / skipped / errors / crashed, the pass rate over the tests that were
not skipped, failures grouped by cause (first line of the error), and one JSON line last.

--compare-cpu then reruns each test that did not pass on "tpu" as its CPU twin (class `<Name>CPU`,
name `_cpu`, PYTORCH_TESTING_DEVICE_ONLY_FOR=cpu) on the same torch and reports per file
"cpu_too" (the twin does not pass either: not ours), "tpu_only", "cpu_skipped", and the pass rate
over the tests that pass on the CPU; --reuse RESULTS.json takes the "tpu" results from an earlier
--out file instead of running them again:

  python tools/upstream_tests.py /work/upstream_tests --files test_nn.py --compare-cpu \
      --reuse nn.json --out nn_cpu.json
"""

import argparse
import collections
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

# Per-file counts; all but "skipped" are the tests that ran, the denominator of the pass rate.
COUNTS = ("passed", "failed", "skipped", "errors", "crashed", "timeouts")
RAN = tuple(k for k in COUNTS if k != "skipped")


class _Recorder:
    """pytest plugin of a worker: keeps the chosen tests and appends one JSON line per event."""

    def __init__(self, ids_file, events_file, test_timeout):
        self.test_timeout = test_timeout
        with open(ids_file) as f:
            self.wanted = [line.rstrip("\n") for line in f if line.strip()]
        self.events_file = events_file

    def pytest_collection_modifyitems(self, session, config, items):
        if not self.wanted:  # collect mode: keep everything
            return
        keep = set(self.wanted)
        items[:] = [item for item in items if item.nodeid in keep]

    def _write(self, **record):  # opened per line, so a crash loses nothing written before it
        with open(self.events_file, "a") as f:
            f.write(json.dumps(record) + "\n")

    def pytest_runtest_logstart(self, nodeid, location):
        self._write(event="start", id=nodeid)
        signal.alarm(self.test_timeout)  # raises in the test at the next Python bytecode

    def pytest_runtest_logfinish(self, nodeid, location):
        signal.alarm(0)

    def pytest_runtest_logreport(self, report):
        if report.when == "call" or report.outcome != "passed":
            outcome = report.outcome
            if hasattr(report, "wasxfail"):
                outcome = "skipped" if report.skipped else "failed"  # xfail / unexpected pass
            elif report.when != "call" and report.failed:
                outcome = "error"
            self._write(event="end", id=report.nodeid, outcome=outcome, cause=_cause(report))

    def pytest_collectreport(self, report):  # a module that fails to import collects nothing
        if report.failed:  # its error is the last "E   " line (the first says which module)
            errors = [ln[1:].strip() for ln in str(report.longrepr).splitlines() if ln[:2] == "E "]
            self._write(event="collect_error", cause=errors[-1] if errors else _cause(report))

    def pytest_collection_finish(self, session):
        self._write(event="collected", ids=[item.nodeid for item in session.items])


def _cause(report):
    if report.passed:
        return ""
    if report.skipped:
        longrepr = report.longrepr
        return str(longrepr[2]) if isinstance(longrepr, tuple) else str(longrepr)
    crash = getattr(report.longrepr, "reprcrash", None)
    text = crash.message if crash is not None else str(report.longrepr)
    return text.strip().splitlines()[0] if text.strip() else "(no message)"


def _too_slow(signum, frame):
    raise TimeoutError("test ran past --test-timeout")


def _worker(test_file, ids_file, events_file, test_timeout, collect_only):
    import pytest

    signal.signal(signal.SIGALRM, _too_slow)

    # Python's default warning filters are kept: some tests count the warnings an op gives under
    # them (test_indexing's uint8 masks), and fail even on the CPU under -W ignore.
    args = [test_file, "-q", "-p", "no:cacheprovider", "-p", "no:randomly"]
    if collect_only:
        args.append("--collect-only")
    return pytest.main(args, plugins=[_Recorder(ids_file, events_file, test_timeout)])


def _read_events(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def _spawn(test_file, ids, work, stall, test_timeout=0, device="tpu"):
    """Runs one worker over `ids`, killed when it writes no event for `stall` seconds; returns
    (events, how it ended: 'ok', 'timeout' or 'signal NAME', the worker's log)."""
    fd, ids_file = tempfile.mkstemp(dir=work, suffix=".ids")
    with os.fdopen(fd, "w") as f:
        f.write("\n".join(ids))
    events_file = ids_file[: -len(".ids")] + ".jsonl"
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", test_file, ids_file, events_file,
           str(test_timeout)]  # fmt: skip
    if not ids:
        cmd.append("--collect")
    env = dict(os.environ, PYTORCH_TESTING_DEVICE_ONLY_FOR=device)
    with open(events_file[: -len(".jsonl")] + ".log", "w") as log:
        proc = subprocess.Popen(
            cmd, cwd=os.path.dirname(test_file), env=env, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
        last_event = time.time()
        while (rc := proc.poll()) is None:
            time.sleep(1)
            if os.path.exists(events_file):
                last_event = max(last_event, os.path.getmtime(events_file))
            if time.time() - last_event > stall:  # stuck where SIGALRM cannot reach (C++)
                os.killpg(proc.pid, signal.SIGKILL)  # the worker's own process group
                proc.wait()
                return _read_events(events_file), "timeout", log.name
    ended = "ok" if rc >= 0 else f"signal {signal.Signals(-rc).name}"
    return _read_events(events_file), ended, log.name


def collect(test_file, work, stall):
    """(the test ids, None), or (the ids collected, the first collection error)."""
    events, ended, log = _spawn(test_file, [], work, stall)
    errors = [f"collection failed: {e['cause']}" for e in events if e["event"] == "collect_error"]
    for e in events:
        if e["event"] == "collected":
            return e["ids"], errors[0] if errors else None
    with open(log) as f:
        tail = f.read()[-2000:]
    return (
        [],
        f"collection failed ({ended}): {tail.strip().splitlines()[-1] if tail.strip() else ''}",
    )


NOT_RUN = "not run by pytest"


def run_ids(test_file, ids, work, stall, test_timeout, device="tpu"):
    """Runs `ids` in workers until each has a result; yields (id, outcome, cause)."""
    pending = list(ids)
    while pending:
        events, ended, _ = _spawn(test_file, pending, work, stall, test_timeout, device)
        done, started = {}, None
        for e in events:
            if e["event"] == "start":
                started = e["id"]
            elif e["event"] == "end":
                done[e["id"]] = (e["outcome"], e["cause"])
                started = None if started == e["id"] else started
        for test_id in pending:
            if test_id in done:
                yield (test_id, *done[test_id])
        if ended == "ok":  # anything left was not run by pytest (e.g. not found)
            for test_id in pending:
                if test_id not in done:
                    yield (test_id, "error", NOT_RUN)
            return
        if started is not None:
            outcome = "timeout" if ended == "timeout" else "crashed"
            yield (started, outcome, f"worker ended by {ended} in this test")
            done[started] = None
        elif not done:  # died outside any test without progress: give up on the rest
            for test_id in pending:
                yield (test_id, "error", f"worker ended by {ended} outside a test")
            return
        pending = [t for t in pending if t not in done]


def _normalize(cause):
    return re.sub(r"\d+(\.\d+)?", "N", cause)[:160]


# A device-generic class instantiated for "tpu": `instantiate_device_type_tests` names the first
# such class of a file `<Name>PRIVATEUSE1`, and the classes of its later calls in the same file
# `<Name>TPU` (the device type it has learnt by then).
_DEVICE_CLASS = re.compile(r"::\w+(PRIVATEUSE1|TPU)::")


def device_test_ids(ids):
    """The ids of tests in the classes instantiated for "tpu", in their order."""
    return [i for i in ids if _DEVICE_CLASS.search(i)]


# The "tpu" test's device suffix in a test name: `test_x_tpu`, `test_x_tpu_float32`.
_TPU_SUFFIX = re.compile(r"_tpu(?=_|$)")


def cpu_twin(test_id):
    """The id of the same test instantiated for the CPU (its class `<Name>CPU`, its name `_cpu`);
    None for a file's collection error."""
    if test_id.count("::") < 2:
        return None
    path, cls, name = test_id.split("::", 2)
    cls = re.sub(r"(PRIVATEUSE1|TPU)$", "CPU", cls)
    suffixes = list(_TPU_SUFFIX.finditer(name))
    if suffixes:  # the last one: a parametrized name may hold "_tpu" earlier only by accident
        m = suffixes[-1]
        name = name[: m.start()] + "_cpu" + name[m.end() :]
    return f"{path}::{cls}::{name}"


def compare_with_cpu(tpu_results, cpu_results):
    """Splits the tests that did not pass on "tpu" by their CPU twin's outcome: "cpu_too" (it does
    not pass either), "tpu_only" (it passes), "cpu_skipped" (skipped, or not run); and the pass
    rate over the tests that pass on the CPU. A test that passes on "tpu" is counted as passing
    on the CPU: its twin is not run, to keep this cheap."""
    counts = collections.Counter()
    for test_id, (outcome, _) in tpu_results.items():
        if outcome == "passed":
            counts["passed"] += 1
        elif outcome != "skipped":
            twin = cpu_results.get(cpu_twin(test_id))
            if twin is None or twin[0] == "skipped" or twin[1] == NOT_RUN:
                counts["cpu_skipped"] += 1
            elif twin[0] == "passed":
                counts["tpu_only"] += 1
            else:
                counts["cpu_too"] += 1
    cpu_passing = counts["passed"] + counts["tpu_only"]
    return {
        "cpu_too": counts["cpu_too"],
        "tpu_only": counts["tpu_only"],
        "cpu_skipped": counts["cpu_skipped"],
        "pass_rate_cpu_passing": round(counts["passed"] / cpu_passing, 4) if cpu_passing else None,
    }


def run_file(path, name, a, work, stall):
    """Runs the file's tests on "tpu" (all, or the ones -k and --sample choose): {id: (outcome,
    cause)}, a file that fails to import giving one error."""
    ids, error = collect(path, work, stall)
    ids = [i for i in device_test_ids(ids) if re.search(a.k, i)]
    if a.sample and len(ids) > a.sample:
        step = len(ids) / a.sample
        ids = [ids[int(i * step)] for i in range(a.sample)]
    results = {f"{name}::(collection)": ("error", error)} if error else {}
    results.update(run_in_shards(path, ids, a, work, stall, "tpu"))
    return results


def run_in_shards(path, ids, a, work, stall, device):
    results = {}
    for shard in range(0, len(ids), a.shard_size):
        shard_ids = ids[shard : shard + a.shard_size]
        for test_id, outcome, cause in run_ids(
            path, shard_ids, work, stall, a.test_timeout, device
        ):
            results[test_id] = (outcome, cause)
            if outcome in ("crashed", "timeout"):
                on = "" if device == "tpu" else f" on {device}"
                print(f"  {outcome.upper()}{on}: {test_id} ({cause})", flush=True)
    return results


def count(results):
    counts = collections.Counter()
    for outcome, _ in results.values():
        counts[{"error": "errors", "timeout": "timeouts"}.get(outcome, outcome)] += 1
    ran = sum(counts[k] for k in RAN)
    return dict(
        {k: counts[k] for k in COUNTS}, pass_rate=round(counts["passed"] / ran, 4) if ran else None
    )


def failing(results):
    return [i for i, (outcome, _) in results.items() if outcome not in ("passed", "skipped")]


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("folder", help="folder holding copies of upstream test_*.py files")
    p.add_argument("--files", nargs="*", help="file names in the folder (default: all test_*.py)")
    p.add_argument("-k", default="", help="regex: only test ids matching it")
    p.add_argument("--sample", type=int, default=0, help="at most N tests per file, evenly spaced")
    p.add_argument("--shard-size", type=int, default=300, help="tests per worker process")
    p.add_argument("--test-timeout", type=int, default=300, help="seconds per test")
    p.add_argument("--top", type=int, default=25, help="failure causes to print")
    p.add_argument("--out", help="write every test's result to this JSON file")
    p.add_argument("--compare-cpu", action="store_true",
                   help="rerun each test that fails on tpu on the CPU (its _cpu twin)")  # fmt: skip
    p.add_argument("--reuse", help="take the tpu results from an earlier --out file, not a run")
    a = p.parse_args()

    folder = os.path.abspath(a.folder)
    names = a.files or sorted(f for f in os.listdir(folder) if re.match(r"test_.*\.py$", f))
    reused = None
    if a.reuse:
        with open(a.reuse) as f:
            reused = json.load(f)
    work = tempfile.mkdtemp(prefix="upstream_tests_")
    summary, results, cpu_results = {}, {}, {}
    for name in names:
        start = time.time()
        path = os.path.join(folder, name)
        stall = a.test_timeout + 300  # a worker silent this long is stuck: killed, "timeout"
        if reused:
            file_results = {
                i: tuple(r) for i, r in reused["results"].items() if i.startswith(name + "::")
            }
            seconds = reused["summary"][name]["seconds"]
        else:
            file_results = run_file(path, name, a, work, stall)
            seconds = round(time.time() - start)
        summary[name] = dict(count(file_results), seconds=seconds)
        if a.compare_cpu:
            start = time.time()
            twins = [cpu_twin(i) for i in failing(file_results) if cpu_twin(i)]
            file_cpu = run_in_shards(path, twins, a, work, stall, "cpu")
            summary[name].update(
                compare_with_cpu(file_results, file_cpu), cpu_seconds=round(time.time() - start)
            )
            cpu_results.update(file_cpu)
        results.update(file_results)
        print(f"{name}: " + ", ".join(f"{k} {v}" for k, v in summary[name].items()), flush=True)

    if any(s["crashed"] or s["timeouts"] for s in summary.values()) or any(
        r[0] in ("crashed", "timeout") for r in cpu_results.values()
    ):
        print(f"worker logs: {work}")
    else:
        shutil.rmtree(work, ignore_errors=True)
    causes, tpu_only = collections.Counter(), collections.Counter()
    for test_id in failing(results):
        name, cause = test_id.split("::")[0], _normalize(results[test_id][1])
        causes[(name, cause)] += 1
        if cpu_results.get(cpu_twin(test_id), ("",))[0] == "passed":
            tpu_only[(name, cause)] += 1
    print("\nfailures by cause (count, file, first line of the error):")
    for (name, cause), n in causes.most_common(a.top):
        print(f"{n:6d}  {name}  {cause}")
    if a.compare_cpu:
        print("\nfailures whose CPU twin passes, by cause:")
        for (name, cause), n in tpu_only.most_common(a.top):
            print(f"{n:6d}  {name}  {cause}")
    if a.out:
        with open(a.out, "w") as f:
            json.dump(
                {"summary": summary, "results": results, "cpu_twins": cpu_results}, f, indent=1
            )
    total = collections.Counter()
    for s in summary.values():
        total.update(
            {k: v for k, v in s.items() if not k.startswith("pass_rate") and "seconds" not in k}
        )
    ran = sum(total[k] for k in RAN)
    overall = dict(total, pass_rate=round(total["passed"] / ran, 4) if ran else None)
    if a.compare_cpu:
        cpu_passing = total["passed"] + total["tpu_only"]
        overall["pass_rate_cpu_passing"] = (
            round(total["passed"] / cpu_passing, 4) if cpu_passing else None
        )
    print(json.dumps({"files": summary, "total": overall}))
    return 0


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        sys.exit(_worker(*sys.argv[2:5], int(sys.argv[5]), "--collect" in sys.argv[6:]))
    sys.exit(main())
