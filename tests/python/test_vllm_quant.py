"""Quantized vLLM models on "tpu" (torch_pjrt/vllm/quant.py, quant_int.py), with the start-up walk
on and nothing compiled after it:
- a tiny bfloat16 Llama served with `quantization="fp8"` (weights quantized per tensor at load,
  activations per token at each step) gives the greedy tokens of the same quantized math in
  Transformers on the CPU, tokens that differ from the unquantized model's;
- a tiny float32 Llama saved as a compressed-tensors checkpoint with a different integer scheme
  per projection (W8A8 int8, per token or static, symmetric or not; W4A16 and W8A16, per group or
  channel, bias or zero points) gives the greedy tokens and their logprobs of the same math in
  Transformers on the CPU (its weight-only layers' weights dequantized by vLLM's own reference);
- methods vLLM 0.29 gives no path here (GPTQ, int8 MoE experts) are refused at configuration.
"""

import copy
import json

import pytest
import torch

pytest.importorskip("vllm")
from test_vllm import PROMPTS, TINY, generate, greedy_ids, make_model, qwen

FP8 = torch.float8_e4m3fn
FP8_MAX = torch.finfo(FP8).max


def fp8_linear(linear, weight_scale):
    """`linear` computing as vLLM's fp8 layers: its weight / weight_scale and each input row /
    its own scale (the row's largest magnitude over fp8's, at least 1 / (448 * 512)) rounded to
    fp8, multiplied in float32, scaled back, rounded to the input's dtype."""
    weight = (linear.weight.float() / weight_scale).clamp(-FP8_MAX, FP8_MAX).to(FP8).float()

    def forward(x):
        rows = x.reshape(-1, x.shape[-1])
        scale = rows.abs().amax(-1, keepdim=True).float() / FP8_MAX
        scale = scale.clamp(min=1 / (FP8_MAX * 512))
        q = (rows.float() * scale.reciprocal()).clamp(-FP8_MAX, FP8_MAX).to(FP8).float()
        y = (q @ weight.t()) * scale * weight_scale
        return y.to(x.dtype).view(*x.shape[:-1], -1)

    linear.forward = forward


def quantize_like_vllm_fp8(model):
    """Each decoder layer's linears as vLLM's online fp8 quantizes them: one weight scale per
    vLLM layer (q, k and v are one; gate and up are one), its largest magnitude over fp8's."""
    for layer in model.model.layers:
        attn, mlp = layer.self_attn, layer.mlp
        for fused in ((attn.q_proj, attn.k_proj, attn.v_proj), (attn.o_proj,),
                      (mlp.gate_proj, mlp.up_proj), (mlp.down_proj,)):  # fmt: skip
            scale = max(linear.weight.abs().max() for linear in fused).float() / FP8_MAX
            for linear in fused:
                fp8_linear(linear, scale)


def test_fp8_equals_cpu_fp8_greedy(tmp_path):
    model, tokenizer = make_model("llama", tmp_path / "llama")
    model = model.to(torch.bfloat16)  # vLLM loads the checkpoint in bfloat16, then quantizes
    unquantized = [greedy_ids(model, tokenizer, p) for p in PROMPTS]
    quantize_like_vllm_fp8(model)
    expected = [greedy_ids(model, tokenizer, p) for p in PROMPTS]
    assert expected != unquantized  # the check below can tell quantized from not
    engine = {"dtype": "bfloat16", "quantization": "fp8"}
    result = generate(tmp_path / "llama", tmp_path, "--rounds", "1", "--no-sampling",
                      "--engine", json.dumps(engine))  # fmt: skip
    assert result["rounds"][0]["tokens"] == expected
    assert result["rounds"][0]["compiles"] == 0
    assert result["rounds"][0]["cpu_fallbacks"] == {}


# compressed-tensors checkpoints (llm-compressor's formats), one engine for every integer scheme
# of torch_pjrt/vllm/quant_int.py: each projection of the tiny bfloat16 Llama gets its own. W8A8:
# int8 weights, int8 activations (per token or static, symmetric or with a zero point); W4A16 and
# W8A16: packed weight-only codes (per group of 32 inputs or per channel, bias or zero points).
W8A8 = {  # projections: (weight scales per channel, activations per token, symmetric)
    (0, "qkv"): (True, True, True),
    (0, "o"): (False, False, True),
    (1, "qkv"): (False, False, False),
    (1, "o"): (True, True, False),
}
WNA16 = {  # projections: (bits, group size, zero points, activation order)
    (0, "gate_up"): (4, 32, False, True),
    (0, "down"): (8, -1, False, False),
    (1, "gate_up"): (4, 32, True, False),
    (1, "down"): (8, 32, True, False),
}
PARTS = {"qkv": ("q_proj", "k_proj", "v_proj"), "o": ("o_proj",),
         "gate_up": ("gate_proj", "up_proj"), "down": ("down_proj",)}  # fmt: skip


def projections(model, layer, key):
    module = model.model.layers[layer]
    module = module.self_attn if key in ("qkv", "o") else module.mlp
    prefix = f"model.layers.{layer}.{'self_attn' if key in ('qkv', 'o') else 'mlp'}"
    return [(f"{prefix}.{name}", getattr(module, name)) for name in PARTS[key]]


def input_ranges(model, tokenizer):
    """Each linear's input range (min, max) over the prompts: the static activation scales'
    calibration."""
    ranges, hooks = {}, []
    for name, module in model.named_modules():
        if isinstance(module, torch.nn.Linear):

            def hook(module, args, name=name):
                x = args[0].float()
                low, high = ranges.get(name, (x.min(), x.max()))
                ranges[name] = (min(low, x.min()), max(high, x.max()))

            hooks.append(module.register_forward_pre_hook(hook))
    with torch.no_grad():
        for prompt in PROMPTS:
            model(**tokenizer(prompt, return_tensors="pt"))
    for h in hooks:
        h.remove()
    return ranges


def w8a8_forward(weight, weight_scale, input_scale, input_zp, symmetric):
    """vLLM's W8A8 int8 linear: each input row quantized to int8 (by the static scale and zero
    point, else by its own range), times the int8 weight (exact in float32), scaled back."""

    def forward(x):
        rows = x.reshape(-1, x.shape[-1]).float()
        scale, zp = input_scale, input_zp
        if scale is None and symmetric:
            scale = rows.abs().amax(-1, keepdim=True) / 127
        elif scale is None:
            low, high = rows.amin(-1, keepdim=True), rows.amax(-1, keepdim=True)
            scale = (high - low) / 255
            zp = torch.round(-128 - low / scale)
        q = torch.round(rows / scale)
        q = q.clamp(-128, 127) if zp is None else (q + zp).clamp(-128, 127) - zp
        y = (q @ weight.float().t()) * scale * weight_scale.reshape(1, -1)
        return y.to(x.dtype).view(*x.shape[:-1], -1)

    return forward


def quantize_w8a8(linear, ranges, per_channel, dynamic, symmetric):
    """The layer's compressed-tensors tensors; its forward becomes their W8A8 math."""
    w = linear.weight.detach().float()
    amax = w.abs().amax(1, keepdim=True) if per_channel else w.abs().amax().reshape(1)
    scale = amax / 127
    weight = torch.round(w / scale.reshape(-1, 1)).clamp(-128, 127).to(torch.int8)
    tensors = {"weight": weight, "weight_scale": scale}
    input_scale = input_zp = None
    if not dynamic:
        low, high = ranges
        if symmetric:
            input_scale = max(-low, high).reshape(1) / 127
        else:
            input_scale = (high - low).reshape(1) / 255
            input_zp = torch.round(-128 - low / input_scale)
            tensors["input_zero_point"] = input_zp.to(torch.int8)
        tensors["input_scale"] = input_scale
    linear.forward = w8a8_forward(weight, scale, input_scale, input_zp, symmetric)
    return tensors


def quantize_wna16(linear, bits, group_size, zero_points, order):
    """The layer's compressed-tensors tensors (vLLM's own quantization and packing of weight-only
    integers; with an activation `order`, its reference for GPTQ's, inputs grouped in that order);
    its weight becomes vLLM's dequantized reference."""
    from vllm.model_executor.layers.quantization.utils import quant_utils
    from vllm.scalar_type import scalar_types

    kind = getattr(scalar_types, f"uint{bits}" if zero_points else f"uint{bits}b{2 ** (bits - 1)}")
    w = linear.weight.detach().t()
    tensors = {"weight_shape": torch.tensor(linear.weight.shape, dtype=torch.int64)}
    if order is not None:
        w_ref, codes, scales, g_idx, _ = quant_utils.gptq_quantize_weights(w, kind, group_size,
                                                                           True, order)  # fmt: skip
        tensors["weight_g_idx"] = g_idx
    else:
        w_ref, codes, scales, zp = quant_utils.quantize_weights(w, kind, group_size, zero_points)
    linear.weight.data = w_ref.t().contiguous()
    tensors["weight_packed"] = quant_utils.pack_quantized_values_into_int32(codes.t(), kind, 1)
    tensors["weight_scale"] = scales.t()
    if zero_points:
        tensors["weight_zero_point"] = quant_utils.pack_quantized_values_into_int32(zp.t(), kind, 0)
    return tensors


def save_int_checkpoint(model, tokenizer, path):
    """`model`'s projections quantized as W8A8 and WNA16 say, saved over its checkpoint in
    `path` with their compressed-tensors quantization_config; `model` computes as they do."""
    from safetensors.torch import save_file

    ranges = input_ranges(model, tokenizer)
    state = dict(model.state_dict())
    groups = {}
    for (layer, key), (per_channel, dynamic, symmetric) in W8A8.items():
        parts = projections(model, layer, key)
        low = min(ranges[name][0] for name, _ in parts)  # q, k and v: one input, one scale
        high = max(ranges[name][1] for name, _ in parts)
        for name, linear in parts:
            del state[f"{name}.weight"]
            tensors = quantize_w8a8(linear, (low, high), per_channel, dynamic, symmetric)
            state.update({f"{name}.{k}": v for k, v in tensors.items()})
        groups[f"w8a8_{layer}_{key}"] = {
            "targets": [name for name, _ in parts],
            "format": "int-quantized",
            "weights": {"num_bits": 8, "type": "int", "symmetric": True, "dynamic": False,
                        "strategy": "channel" if per_channel else "tensor"},
            "input_activations": {"num_bits": 8, "type": "int", "symmetric": symmetric,
                                  "dynamic": dynamic, "strategy": "token" if dynamic else "tensor"},
        }  # fmt: skip
    for (layer, key), (bits, group_size, zero_points, ordered) in WNA16.items():
        parts = projections(model, layer, key)
        # One activation order for the layer's parts: they share its input (and its g_idx).
        order = torch.randperm(parts[0][1].in_features) if ordered else None
        for name, linear in parts:
            del state[f"{name}.weight"]
            tensors = quantize_wna16(linear, bits, group_size, zero_points, order)
            state.update({f"{name}.{k}": v for k, v in tensors.items()})
        groups[f"w{bits}a16_{layer}_{key}"] = {
            "targets": [name for name, _ in parts],
            "format": "pack-quantized",
            "weights": {"num_bits": bits, "type": "int", "symmetric": not zero_points,
                        "dynamic": False, "strategy": "group" if group_size > 0 else "channel",
                        "group_size": group_size if group_size > 0 else None,
                        "actorder": "group" if ordered else None},
        }  # fmt: skip
    state = {k: v.contiguous() for k, v in state.items()}
    save_file(state, path / "model.safetensors", metadata={"format": "pt"})
    config = json.loads((path / "config.json").read_text())
    config["quantization_config"] = {"quant_method": "compressed-tensors",
                                     "format": "mixed-precision", "config_groups": groups}  # fmt: skip
    (path / "config.json").write_text(json.dumps(config))


def token_logprobs(model, tokenizer, prompt, ids):
    """Each of `ids`' logprob after `prompt` and the ids before it."""
    prompt = tokenizer(prompt, return_tensors="pt").input_ids
    with torch.no_grad():
        logits = model(torch.cat([prompt, torch.tensor([ids])], 1)).logits[0].float()
    steps = logits[prompt.shape[1] - 1 : -1].log_softmax(-1)
    return steps.gather(1, torch.tensor(ids)[:, None])[:, 0]


def test_compressed_tensors_int_equals_cpu(tmp_path):
    # float32, so that the CPU and the device agree far closer than quantization moves the model
    model, tokenizer = make_model("llama", tmp_path / "llama")
    unquantized = copy.deepcopy(model)
    save_int_checkpoint(model, tokenizer, tmp_path / "llama")
    expected = [greedy_ids(model, tokenizer, p) for p in PROMPTS]
    engine = {"max_num_batched_tokens": 64, "max_num_seqs": 4}  # a short start-up walk
    result = generate(tmp_path / "llama", tmp_path, "--rounds", "1", "--no-sampling",
                      "--logprobs", "--engine", json.dumps(engine))  # fmt: skip
    got = result["rounds"][0]
    assert got["tokens"] == expected
    assert got["compiles"] == 0
    assert got["cpu_fallbacks"] == {}
    for prompt, ids, logprobs in zip(PROMPTS, expected, got["logprobs"]):
        reference = token_logprobs(model, tokenizer, prompt, ids)
        before = token_logprobs(unquantized, tokenizer, prompt, ids)
        assert (reference - before).abs().max() > 1e-4  # the check below tells quantized from not
        torch.testing.assert_close(torch.tensor(logprobs), reference, rtol=0, atol=1e-5)


@pytest.mark.parametrize("method", ["experts_int8", "int8_per_channel_weight_only", "gptq"])
def test_quantization_without_a_path_refused_at_start_up(method, tmp_path, monkeypatch):
    # vLLM 0.29 runs int8 experts through Triton, Humming or CPU kernels only, and accepts GPTQ
    # checkpoints only where Marlin runs: the engine's configuration says so, before any load.
    from test_vllm_moe import MOE
    from vllm.engine.arg_utils import EngineArgs

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    config_class, model_class, extra, _ = MOE["qwen3_moe"]
    qwen.save_tiny_model(tmp_path, config_class, model_class, **TINY, **extra)
    args = EngineArgs(model=str(tmp_path), quantization=method, dtype="bfloat16")
    if method == "gptq":  # a checkpoint's method, from its config (vLLM names it auto_gptq)
        config = json.loads((tmp_path / "config.json").read_text())
        config["quantization_config"] = {"quant_method": "gptq", "bits": 4, "group_size": 32,
                                         "desc_act": False, "sym": True}  # fmt: skip
        (tmp_path / "config.json").write_text(json.dumps(config))
        args, method = EngineArgs(model=str(tmp_path), dtype="float16"), "auto_gptq"
    with pytest.raises(NotImplementedError, match=f'quantization="{method}".* is not supported'):
        args.create_engine_config()
