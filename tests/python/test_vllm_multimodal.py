"""Multimodal serving through vLLM 0.29 on "tpu": a tiny LLaVA (CLIP vision tower, Llama) made in
code with its processor (CLIP's PIL image processor: no torchvision), served through vLLM's
Transformers modeling backend (`model_impl="transformers"`: vLLM's own LLaVA module imports
transformers' torchvision image processors) with `limit_mm_per_prompt` and the start-up walk on.
Prompts with an image (the placeholder at the start or inside the text, or alone) and text-only
ones, in one batch, give Transformers' greedy tokens on the CPU, with no CPU fallback and no
compile after the walk: two images in one step, an image's placeholder split over two steps by
the small token budget."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("vllm")
import torch
from PIL import Image
from transformers import (
    AutoProcessor,
    CLIPVisionConfig,
    LlamaConfig,
    LlavaConfig,
    LlavaForConditionalGeneration,
    LlavaProcessor,
)
from transformers.models.clip.image_processing_pil_clip import CLIPImageProcessorPil

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples"))
import qwen

NEW_TOKENS = 6
ROUNDS = [  # (prompt, image seed or None), per generate call
    [("<image>\nDescribe the lighthouse", 0), ("The cat", None)],
    [("<image>", 2), ("Look: <image> What is the keeper doing every evening?", 1),
     ("Every evening he climbed", None)],
]  # fmt: skip
# ChatML whose content may be a list of parts, an image part written as the <image> placeholder
# (vLLM's server then hands it the image parts of a chat request).
CHAT_TEMPLATE = (
    "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' }}"
    "{% if message['content'] is string %}{{ message['content'] }}{% else %}"
    "{% for part in message['content'] %}{% if part['type'] == 'image' %}{{ '<image>' }}"
    "{% elif part['type'] == 'text' %}{{ part['text'] }}{% endif %}{% endfor %}{% endif %}"
    "{{ '<|im_end|>\\n' }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)
SERVE = """
import json, os, sys
import torch_pjrt
from PIL import Image
from vllm import LLM, SamplingParams
llm = LLM(model=sys.argv[1], model_impl="transformers", dtype="float32", max_model_len=128,
          max_num_seqs=2, max_num_batched_tokens=32, limit_mm_per_prompt={"image": 1})
greedy = SamplingParams(temperature=0, max_tokens=int(sys.argv[3]))
for batch in json.loads(sys.argv[2]):
    prompts = [{"prompt": p, "multi_modal_data": {"image": Image.open(i)}} if i else p
               for p, i in batch]
    before = torch_pjrt.metrics.counters()["compiles"]
    outs = llm.generate(prompts, greedy, use_tqdm=False)
    after = torch_pjrt.metrics.counters()
    print(json.dumps({"tokens": [list(o.outputs[0].token_ids) for o in outs],
                      "compiles": after["compiles"] - before,
                      "cpu_fallbacks": after["cpu_fallbacks"]}))
"""


def make_llava(path):
    """A LLaVA with seeded weights: 56x56 images in 14x14 patches (16 image tokens, CLIP's
    class token dropped), the examples' tokenizer with an <image> token; saved with its
    processor."""
    tokenizer = qwen.build_tokenizer()
    tokenizer.add_special_tokens({"additional_special_tokens": ["<image>"]})
    text = LlamaConfig(vocab_size=len(tokenizer), hidden_size=64, intermediate_size=128,
                       num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                       max_position_embeddings=128, eos_token_id=tokenizer.eos_token_id,
                       pad_token_id=tokenizer.pad_token_id)  # fmt: skip
    vision = CLIPVisionConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                              num_attention_heads=2, image_size=56, patch_size=14)  # fmt: skip
    config = LlavaConfig(vision_config=vision, text_config=text, image_seq_length=16,
                         image_token_id=tokenizer.convert_tokens_to_ids("<image>"))  # fmt: skip
    torch.manual_seed(0)
    model = LlavaForConditionalGeneration(config).eval()
    model.save_pretrained(path)
    images = CLIPImageProcessorPil(size={"shortest_edge": 56},
                                   crop_size={"height": 56, "width": 56})  # fmt: skip
    LlavaProcessor(image_processor=images, tokenizer=tokenizer, patch_size=14,
                   vision_feature_select_strategy="default", num_additional_image_tokens=1,
                   chat_template=CHAT_TEMPLATE).save_pretrained(path)  # fmt: skip
    return model


def image(seed):
    """A 64x48 image of noise: resized and cropped by the processor."""
    rng = np.random.default_rng(seed)
    return Image.fromarray(rng.integers(0, 256, (48, 64, 3), dtype=np.uint8))


def test_llava_equals_cpu_greedy_with_the_walk(tmp_path):
    path = tmp_path / "llava"
    model = make_llava(path)
    processor = AutoProcessor.from_pretrained(path)
    expected, batches = [], []
    for batch in ROUNDS:
        tokens, files = [], []
        for prompt, seed in batch:
            picture = None if seed is None else image(seed)
            inputs = processor(text=prompt, images=picture, return_tensors="pt")
            with torch.no_grad():
                out = model.generate(**inputs, max_new_tokens=NEW_TOKENS, do_sample=False)
            tokens.append(out[0, inputs.input_ids.shape[1] :].tolist())
            if picture is not None:
                picture.save(tmp_path / f"{seed}.png")  # lossless: the same pixels
            files.append(None if seed is None else str(tmp_path / f"{seed}.png"))
        expected.append(tokens)
        batches.append([[p, f] for (p, _), f in zip(batch, files)])
    env = dict(os.environ, HF_HUB_OFFLINE="1", VLLM_ENABLE_V1_MULTIPROCESSING="0",
               TORCH_PJRT_CACHE_DIR=str(tmp_path / "cache"))  # fmt: skip
    command = [sys.executable, "-c", SERVE, str(path), json.dumps(batches), str(NEW_TOKENS)]
    run = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600, check=False)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "tpu warm-up" in run.stdout + run.stderr  # the walk ran
    rounds = [json.loads(line) for line in run.stdout.splitlines() if line.startswith('{"tokens"')]
    assert [r["tokens"] for r in rounds] == expected
    for r in rounds:
        assert r["cpu_fallbacks"] == {}
        assert r["compiles"] == 0  # the walk compiled the encoder and every merge shape
