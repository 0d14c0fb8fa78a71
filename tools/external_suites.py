"""Transformers' own model tests on device "tpu" beside the same tests on "cpu".

The transformers sdist on PyPI ships tests/*_common.py (ModelTesterMixin: ~160 tests every model
file inherits) but not tests/models/ (each model's tester and extra tests), nor the mixins
test_modeling_common.py imports from tests/exporters and tests/generation. So, from the sdist alone
(`--sdist`), this lays out a test tree whose per-model files pair ModelTesterMixin with a small
tester of our own (MODELS: a tiny config and its inputs, as the upstream testers build them); the
export and generation mixins are left out (empty stand-ins). With a transformers source tree at the
installed version (`--tests-dir`, e.g. a checkout of the release tag) it runs the upstream
tests/models/<m>/test_modeling_<m>.py files instead.

Each file runs once per device (TRANSFORMERS_TEST_DEVICE=cpu / tpu) in its own pytest process with a
per-file timeout; outcomes come from pytest's JUnit XML. Writes report.md (passed / failed /
skipped / errors per device and model, then the tests that pass on CPU but not on tpu, and those
that run on tpu only and fail, with the head of their error) and report.json to --out; exits 1 when a file ran no test on the CPU (a broken
setup). scripts/external_suites.sh downloads the sdist and calls it.
"""

import argparse
import json
import os
import subprocess
import sys
import tarfile
import time
import xml.etree.ElementTree as ET

DEVICES = ("cpu", "tpu")
OUTCOMES = ("passed", "failed", "skipped", "error")

# model -> (config class, config kwargs, kind of inputs, model classes). Sizes follow the upstream
# testers (hidden 32, 2 layers, 4 heads, intermediate 37, vocab 99).
_TEXT = {
    "vocab_size": 99,
    "hidden_size": 32,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "intermediate_size": 37,
    "max_position_embeddings": 512,
}
_GQA = {**_TEXT, "num_key_value_heads": 2, "pad_token_id": 0}
MODELS = {
    "bert": ("BertConfig", {**_TEXT, "type_vocab_size": 16}, "encoder",
             ("BertModel", "BertForMaskedLM", "BertForSequenceClassification",
              "BertForTokenClassification", "BertForQuestionAnswering")),
    "gpt2": ("GPT2Config", {"vocab_size": 99, "n_embd": 32, "n_layer": 2, "n_head": 4,
                            "n_inner": 37, "n_positions": 512, "bos_token_id": 98,
                            "eos_token_id": 98, "pad_token_id": 98},
             "decoder", ("GPT2Model", "GPT2LMHeadModel", "GPT2ForSequenceClassification",
                         "GPT2ForTokenClassification")),
    "llama": ("LlamaConfig", _GQA, "decoder",
              ("LlamaModel", "LlamaForCausalLM", "LlamaForSequenceClassification",
               "LlamaForTokenClassification")),
    "qwen2": ("Qwen2Config", _GQA, "decoder",
              ("Qwen2Model", "Qwen2ForCausalLM", "Qwen2ForSequenceClassification",
               "Qwen2ForTokenClassification")),
    "mistral": ("MistralConfig", _GQA, "decoder",
                ("MistralModel", "MistralForCausalLM", "MistralForSequenceClassification")),
}  # fmt: skip
# ModelTesterMixin's model_split_percents where its default (0.5, 0.7, 0.9) does not split our tiny
# model: bert's embeddings, the largest module device_map="auto" may not split, leave room on
# device 0 for nothing below 0.8 of the model (upstream sets these per model too).
SPLIT_PERCENTS = {"bert": [0.5, 0.8, 0.9]}


class _Tester:
    """What ModelTesterMixin reads from `self.model_tester`: sizes and prepared inputs."""

    batch_size = 3
    seq_length = 7
    is_training = True

    def __init__(self, model):
        import transformers

        config_name, self.kwargs, self.kind, _ = MODELS[model]
        self.config_class = getattr(transformers, config_name)
        for key, value in self.kwargs.items():
            setattr(self, key, value)
        self.hidden_size = self.get_config().hidden_size
        self.num_hidden_layers = self.get_config().num_hidden_layers
        self.num_attention_heads = self.get_config().num_attention_heads

    def get_config(self):
        return self.config_class(**self.kwargs)

    def prepare_config_and_inputs_for_common(self):
        from tests.test_modeling_common import ids_tensor, random_attention_mask

        b, t = self.batch_size, self.seq_length
        inputs = {
            "input_ids": ids_tensor([b, t], self.vocab_size),
            "attention_mask": random_attention_mask([b, t]),
        }
        if self.kind == "encoder":
            inputs["token_type_ids"] = ids_tensor([b, t], self.type_vocab_size)
        return self.get_config(), inputs


def model_test_case(model):
    """The unittest class of one model: ModelTesterMixin over _Tester(model). Generative models
    also take the (empty) GenerationTesterMixin, as ModelTesterMixin checks."""
    import unittest

    import transformers
    from tests.generation.test_utils import GenerationTesterMixin
    from tests.test_modeling_common import ModelTesterMixin

    classes = tuple(getattr(transformers, name) for name in MODELS[model][3])
    bases = [ModelTesterMixin, unittest.TestCase]
    if any(c.can_generate() for c in classes):
        bases.insert(1, GenerationTesterMixin)

    def setUp(self):
        self.model_tester = _Tester(model)

    attrs = {"all_model_classes": classes, "setUp": setUp}
    if model in SPLIT_PERCENTS:
        attrs["model_split_percents"] = SPLIT_PERCENTS[model]
    return type(f"{model.title()}CommonTest", tuple(bases), attrs)


def lay_out_from_sdist(sdist, root, models):
    """tests/ from the sdist under `root`, stand-ins for the mixins it lacks, and one test file per
    model; returns {model: test file}."""
    with tarfile.open(sdist) as tar:
        for member in tar.getmembers():
            parts = member.name.split("/", 1)
            if len(parts) == 2 and parts[1].startswith("tests/") and member.isfile():
                member.name = parts[1]
                tar.extract(member, root, filter="data")
    stubs = {
        "tests/__init__.py": "",
        "tests/exporters/__init__.py": "",
        "tests/exporters/test_export.py": "class ExportTesterMixin:\n    pass\n",
        "tests/generation/__init__.py": "",
        "tests/generation/test_utils.py": "class GenerationTesterMixin:\n    pass\n",
        "tests/models/__init__.py": "",
    }
    files = {}
    for model in models:
        path = f"tests/models/{model}/test_modeling_{model}_common.py"
        stubs[f"tests/models/{model}/__init__.py"] = ""
        stubs[path] = (
            "from external_suites import model_test_case\n\n"
            f"{model.title()}CommonTest = model_test_case({model!r})\n"
        )
        files[model] = os.path.join(root, path)
    for rel, text in stubs.items():
        os.makedirs(os.path.dirname(os.path.join(root, rel)), exist_ok=True)
        with open(os.path.join(root, rel), "w") as f:
            f.write(text)
    return files


def run_file(path, root, device, junit, timeout, test_timeout):
    """One pytest process over one test file on one device; returns (seconds, timed out)."""
    env = dict(
        os.environ,
        TRANSFORMERS_TEST_DEVICE=device,
        HF_HUB_OFFLINE="1",  # tests that need the Hub fail on both devices alike, fast
        PYTHONPATH=os.pathsep.join([root, os.path.dirname(os.path.abspath(__file__))]),
    )
    cmd = [sys.executable, "-m", "pytest", path, "-p", "no:cacheprovider", "-q", "-rN",
           f"--junitxml={junit}", "-o", "junit_family=xunit1", "-o", f"timeout={test_timeout}",
           "--rootdir", root]  # fmt: skip
    start = time.perf_counter()
    try:
        subprocess.run(cmd, cwd=root, env=env, timeout=timeout, check=False,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
        timed_out = False
    except subprocess.TimeoutExpired:
        timed_out = True
    return time.perf_counter() - start, timed_out


def parse_junit(junit):
    """{test id: (outcome, first line of the message)} from a JUnit XML file."""
    results = {}
    if not os.path.exists(junit):
        return results
    for case in ET.parse(junit).getroot().iter("testcase"):
        test_id = f"{case.get('classname', '').rsplit('.', 1)[-1]}::{case.get('name')}"
        outcome, message = "passed", ""
        for child in case:
            if child.tag in ("failure", "error", "skipped"):
                outcome = {"failure": "failed"}.get(child.tag, child.tag)
                text = child.get("message") or child.text or ""
                message = text.strip().splitlines()[0][:300] if text.strip() else ""
                break
        results[test_id] = (outcome, message)
    return results


def compare(by_device):
    """Counts per device; the tests that pass on CPU but fail (or error) on tpu; and those that
    only run on tpu (skipped on CPU: they need an accelerator) and fail there."""
    counts = {d: {o: 0 for o in OUTCOMES} for d in DEVICES}
    for device, results in by_device.items():
        for outcome, _ in results.values():
            counts[device][outcome] += 1
    regressions, tpu_only = {}, {}
    for test, (outcome, _) in sorted(by_device["cpu"].items()):
        tpu, message = by_device["tpu"].get(test, ("missing", "not run on tpu (timeout or crash)"))
        if tpu in ("passed", "skipped"):
            continue
        if outcome == "passed":
            regressions[test] = message
        elif outcome == "skipped":
            tpu_only[test] = message
    return counts, regressions, tpu_only


def markdown(report):
    header = ["model", *(f"{d} {o}" for d in DEVICES for o in OUTCOMES), "cpu-pass/tpu-fail"]
    header += [f"{d} s" for d in DEVICES]
    lines = [
        f"# transformers {report['transformers']} model tests: cpu vs tpu ({report['source']})",
        "",
        "| " + " | ".join(header) + " |",
        "|---|" + "---:|" * (len(header) - 1),
    ]
    for model, r in report["models"].items():
        cells = [str(r["counts"][d][o]) for d in DEVICES for o in OUTCOMES]
        secs = [
            f"{r['seconds'][d]:.0f}{' (timeout)' if r['timed_out'][d] else ''}" for d in DEVICES
        ]
        lines.append(f"| {model} | {' | '.join(cells)} | {len(r['regressions'])} | "
                     f"{' | '.join(secs)} |")  # fmt: skip
    for model, r in report["models"].items():
        for key, title in (("regressions", "pass on cpu, fail on tpu"),
                           ("tpu_only_failures", "skipped on cpu, fail on tpu")):  # fmt: skip
            if r[key]:
                lines += ["", f"## {model}: {title}", ""]
                lines += [f"- `{t}`: {m}" for t, m in r[key].items()]
    return "\n".join(lines) + "\n"


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--sdist", help="the transformers sdist (.tar.gz) of the installed version")
    source.add_argument("--tests-dir", help="a transformers source tree (has tests/models/)")
    p.add_argument("--models", default="bert,gpt2,llama")
    p.add_argument("--timeout", type=int, default=1800, help="seconds per file and device")
    p.add_argument("--test-timeout", type=int, default=300, help="seconds per test")
    p.add_argument("--out", required=True, help="folder for report.md, report.json, junit files")
    args = p.parse_args(argv)
    args.out = os.path.abspath(args.out)  # the pytest processes run in the test tree
    import transformers

    models = args.models.split(",")
    os.makedirs(args.out, exist_ok=True)
    if args.sdist:
        unknown = [m for m in models if m not in MODELS]
        if unknown:
            p.error(f"no tester for {unknown}; known: {sorted(MODELS)}")
        root = os.path.join(args.out, "tree")
        files = lay_out_from_sdist(args.sdist, root, models)
    else:
        root = os.path.abspath(args.tests_dir)
        files = {m: os.path.join(root, f"tests/models/{m}/test_modeling_{m}.py") for m in models}
        missing = [f for f in files.values() if not os.path.exists(f)]
        if missing:
            p.error(f"missing test files: {missing}")
    report = {"transformers": transformers.__version__, "models": {},
              "source": "sdist common tests" if args.sdist else f"tests from {root}"}  # fmt: skip
    for model, path in files.items():
        by_device, seconds, timed_out = {}, {}, {}
        for device in DEVICES:
            junit = os.path.join(args.out, f"junit-{model}-{device}.xml")
            if os.path.exists(junit):
                os.remove(junit)
            seconds[device], timed_out[device] = run_file(
                path, root, device, junit, args.timeout, args.test_timeout
            )
            by_device[device] = parse_junit(junit)
            print(f"{model} {device}: {len(by_device[device])} tests, {seconds[device]:.0f} s",
                  file=sys.stderr)  # fmt: skip
        counts, regressions, tpu_only = compare(by_device)
        report["models"][model] = {"counts": counts, "regressions": regressions,
                                   "tpu_only_failures": tpu_only, "seconds": seconds,
                                   "timed_out": timed_out}  # fmt: skip
    with open(os.path.join(args.out, "report.json"), "w") as f:
        json.dump(report, f, indent=1)
    text = markdown(report)
    with open(os.path.join(args.out, "report.md"), "w") as f:
        f.write(text)
    print(text)
    # No CPU results at all means a broken setup (missing test extras, wrong tree), not a finding.
    return 0 if all(sum(r["counts"]["cpu"].values()) for r in report["models"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
