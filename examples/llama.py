"""Llama on "tpu": a `LlamaForCausalLM` built from a `LlamaConfig` in code (seeded random
weights) trained with AdamW under bfloat16 autocast on a synthetic token stream, then
`save_pretrained` -> `from_pretrained(dir, device_map="tpu")` -> greedy `generate` with a static
cache (compiled by Transformers with backend "tpu").

    python examples/llama.py                      # Fused eager mode
    python examples/llama.py --compile --steps 50
    python examples/llama.py --mode strict --hidden 64 --layers 2 --seq 32
"""

import sys
import tempfile

import common
import torch
from transformers import LlamaConfig, LlamaForCausalLM


def synthetic_tokens(vocab_size, length, seed):
    """A token stream from a fixed random successor table with 10% noise: learnable, not trivial."""
    g = torch.Generator().manual_seed(seed)
    successor = torch.randperm(vocab_size, generator=g)
    noise = torch.randint(0, vocab_size, (length,), generator=g)
    keep = torch.rand(length, generator=g) < 0.9
    tokens = torch.empty(length, dtype=torch.long)
    tokens[0] = 0
    for i in range(1, length):
        tokens[i] = successor[tokens[i - 1]] if keep[i] else noise[i]
    return tokens


def main(argv=None):
    p = common.lm_parser(__doc__.splitlines()[0])
    p.add_argument("--vocab", type=int, default=512)
    args = p.parse_args(argv)
    device = common.setup(args)
    config = LlamaConfig(
        **common.lm_config_kwargs(args, args.vocab), bos_token_id=0, eos_token_id=1
    )
    tokens = synthetic_tokens(args.vocab, 4096, args.seed)
    model, result = common.train_lm(LlamaForCausalLM, config, tokens, args, device)
    prompt = tokens[:8].unsqueeze(0)
    result["prompt"] = prompt
    with tempfile.TemporaryDirectory() as tmp:
        save_dir = args.save_dir or tmp
        result["generated"], result["generate_tok_s"] = common.reload_and_generate(
            model, prompt, args, save_dir
        )
    return result


if __name__ == "__main__":
    main(sys.argv[1:])
