"""Qwen on "tpu": a `Qwen3ForCausalLM` (or Qwen2 with --arch qwen2) built from its config in code,
with a byte-level BPE tokenizer trained in code on examples/data/lighthouse.txt and a ChatML chat
template. Trains with AdamW under bfloat16 autocast on the text written as chat turns (user: one
sentence, assistant: the next), then `save_pretrained` (model and tokenizer) ->
`from_pretrained(dir, device_map="tpu")` -> greedy `generate` with a static cache on a chat prompt.

    python examples/qwen.py
    python examples/qwen.py --arch qwen2 --compile
"""

import os
import sys
import tempfile

import common
import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import (
    PreTrainedTokenizerFast,
    Qwen2Config,
    Qwen2ForCausalLM,
    Qwen3Config,
    Qwen3ForCausalLM,
)

TEXT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "lighthouse.txt")
CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)
ARCHS = {"qwen3": (Qwen3Config, Qwen3ForCausalLM), "qwen2": (Qwen2Config, Qwen2ForCausalLM)}


def sentences():
    with open(TEXT) as f:
        return [line.strip() for line in f if line.strip()]


def build_tokenizer(vocab_size=384):
    """A byte-level BPE trained on the example text, with ChatML special tokens and template."""
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tok.train_from_iterator(sentences(), trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>"
    )
    fast.chat_template = CHAT_TEMPLATE
    return fast


def save_tiny_model(path, config_class, model_class, **config):
    """A causal LM with seeded weights and this tokenizer, saved to `path` (the serving tests and
    benchmark load it from there); returns (model, tokenizer)."""
    tokenizer = build_tokenizer()
    config = config_class(
        vocab_size=len(tokenizer),
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        **config,
    )
    torch.manual_seed(0)
    model = model_class(config).eval()
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return model, tokenizer


def chat_tokens(tokenizer):
    """The text as chat turns, one token stream."""
    lines = sentences()
    ids = []
    for user, assistant in zip(lines, lines[1:]):
        turn = [{"role": "user", "content": user}, {"role": "assistant", "content": assistant}]
        ids += tokenizer.apply_chat_template(turn, tokenize=True, return_dict=False)
    return torch.tensor(ids, dtype=torch.long)


def build_config(arch, args, tokenizer):
    config_class, _ = ARCHS[arch]
    return config_class(
        **common.lm_config_kwargs(args, len(tokenizer)),
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )


def main(argv=None):
    p = common.lm_parser(__doc__.splitlines()[0])
    p.add_argument("--arch", default="qwen3", choices=sorted(ARCHS))
    args = p.parse_args(argv)
    device = common.setup(args)
    tokenizer = build_tokenizer()
    config = build_config(args.arch, args, tokenizer)
    tokens = chat_tokens(tokenizer)
    model, result = common.train_lm(ARCHS[args.arch][1], config, tokens, args, device)
    messages = [{"role": "user", "content": sentences()[0]}]
    prompt = tokenizer.apply_chat_template(
        messages, add_generation_prompt=True, return_tensors="pt", return_dict=False
    )
    result["prompt"] = prompt
    with tempfile.TemporaryDirectory() as tmp:
        save_dir = args.save_dir or tmp
        tokenizer.save_pretrained(save_dir)
        result["generated"], result["generate_tok_s"] = common.reload_and_generate(
            model, prompt, args, save_dir
        )
    if result["generated"] is None:
        return result
    result["text"] = tokenizer.decode(result["generated"][0], skip_special_tokens=True)
    if not args.quiet:
        print(f"user: {messages[0]['content']}\nassistant: {result['text']}")
    return result


if __name__ == "__main__":
    main(sys.argv[1:])
