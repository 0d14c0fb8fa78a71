"""The six examples (examples/*.py) at tiny size, run in-process through their main(): on "tpu" in
Strict, Fused and compiled mode against the same script on CPU PyTorch, with no CPU fallback.

Tolerances: training runs in float32 (--no-amp), so the per-step losses agree to float32 rounding
amplified by a few optimizer steps: 1e-4 relative/absolute for all, 2e-4 for the convolutional
ones (XLA's and oneDNN's convolutions sum in different orders). Held-out logits and DDPM samples
come from the slightly different trained weights: 1e-3. Generated tokens (greedy) must be equal
to CPU greedy decoding from the weights the "tpu" run trained, loaded on the CPU.
"""

import functools
import os
import sys

import pytest
import torch

import torch_pjrt

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples"))

import dlrm
import llama
import mingpt
import qwen
import resnet
import unet

LM = "--steps 2 --batch-size 2 --seq 16 --hidden 32 --layers 1 --heads 2 --kv-heads 1 --no-amp"
TINY = {
    "mingpt": (
        mingpt,
        "--steps 3 --batch-size 4 --block-size 16 --dim 32 --heads 2 --layers 1 "
        "--sample-chars 6 --greedy",
    ),
    "resnet": (resnet, "--steps 2 --batch-size 4 --width 8 --image-size 32"),
    "dlrm": (dlrm, "--steps 3 --batch-size 16 --rows 50 --tables 3 --dim 8 --bottom 16 --top 16"),
    "unet": (
        unet,
        "--steps 2 --batch-size 2 --image-size 16 --channels 8 16 --inference-steps 2 "
        "--train-timesteps 50 --samples 1",
    ),
    "llama": (llama, LM + " --vocab 64 --new-tokens 4"),
    "qwen": (qwen, LM + " --new-tokens 4"),
}
LOSS_TOL = {"resnet": 2e-4, "unet": 2e-4}
# Held-out logits: ResNet's (magnitude ~6) differ by up to 1.2e-3 relative after two SGD steps with
# momentum through BatchNorm (compiled: XLA fuses the normalization differently).
LOGITS_TOL = {"resnet": 5e-3, "dlrm": 1e-3}
WAYS = {"strict": ["--mode", "strict"], "fused": ["--mode", "fused"], "compiled": ["--compile"]}
CASES = [(name, way) for way in WAYS for name in TINY]


def run(name, device, extra=()):
    """The example's main(); the eager mode it sets (process-wide) is restored afterwards."""
    module, flags = TINY[name]
    mode = torch_pjrt.get_eager_mode()
    try:
        return module.main([*flags.split(), "--device", device, "--quiet", *extra])
    finally:
        torch_pjrt.set_eager_mode(mode)


@functools.cache
def on_cpu(name):
    return run(name, "cpu")


def cpu_greedy_from(save_dir, prompt, new_tokens):
    """Greedy generation on the CPU from the weights a "tpu" run saved."""
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(save_dir, device_map="cpu", dtype=torch.float32)
    pad = model.config.eos_token_id or 0
    out = model.generate(prompt, max_new_tokens=new_tokens, do_sample=False, pad_token_id=pad)
    return out[:, prompt.shape[1] :]


@pytest.mark.parametrize("name,way", CASES)
def test_example_matches_cpu(name, way, counters, tmp_path):
    extra = list(WAYS[way])
    if name in ("llama", "qwen"):
        extra += ["--save-dir", str(tmp_path)]
    result = run(name, "tpu", extra)
    assert counters()["cpu_fallbacks"] == {}
    expected = on_cpu(name)
    tol = LOSS_TOL.get(name, 1e-4)
    torch.testing.assert_close(result["losses"], expected["losses"], rtol=tol, atol=tol)
    if name in LOGITS_TOL:
        tol = LOGITS_TOL[name]
        torch.testing.assert_close(result["logits"], expected["logits"], rtol=tol, atol=tol)
    elif name == "unet":
        torch.testing.assert_close(result["images"], expected["images"], rtol=1e-3, atol=1e-3)
    elif name == "mingpt":
        model = result["model"].cpu()
        reference = mingpt.sample(model, result["prompt"].cpu(), 6, top_k=1, greedy=True)
        assert result["generated"].tolist() == reference[0].tolist()
    else:
        reference = cpu_greedy_from(tmp_path, result["prompt"], 4)
        assert result["generated"].tolist() == reference.tolist()
