"""What the examples share: command-line flags, device and eager-mode set-up, the training loop
(tqdm progress bar, throughput, loss), and the Hugging Face causal-LM round trip of llama.py and
qwen.py. Each example's main(argv) returns its figures, so tests can run it in-process.

Common flags: --device tpu|cpu, --mode strict|fused|debug (eager mode on "tpu"), --compile
(torch.compile the training step: backend "tpu" on "tpu", Inductor on the CPU), --steps,
--batch-size, --seed, --amp/--no-amp (bfloat16 autocast), --quiet (no progress bar).
"""

import argparse
import contextlib
import time

import torch
from tqdm import tqdm


def parser(description, steps, batch_size):
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--device", default="tpu", choices=["tpu", "cpu"])
    p.add_argument("--mode", default="fused", choices=["strict", "fused", "debug"])
    p.add_argument("--compile", action="store_true", help="torch.compile the training step")
    p.add_argument("--steps", type=int, default=steps)
    p.add_argument("--batch-size", type=int, default=batch_size)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--amp", action=argparse.BooleanOptionalAction, default=False, help="bfloat16 autocast"
    )
    p.add_argument(
        "--warmup", type=int, default=2, help="first steps left out of the timing (compiles)"
    )
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    return p


def setup(args):
    """Seeds, chooses the device and sets the eager mode; returns the device."""
    torch.manual_seed(args.seed)
    if args.device == "tpu":
        import torch_pjrt  # (import torch already loaded it)

        torch_pjrt.set_eager_mode(args.mode)
    return torch.device(args.device)


def autocast(args):
    if not args.amp:
        return contextlib.nullcontext()
    return torch.autocast(args.device, dtype=torch.bfloat16)


def compiled(fn, args):
    """fn under torch.compile when --compile is given: backend "tpu" on "tpu", Inductor on the CPU."""
    if not args.compile:
        return fn
    return torch.compile(fn, backend="tpu" if args.device == "tpu" else "inductor")


def synchronize(device):
    if device.type == "tpu":
        torch.tpu.synchronize()


def train(step, batches, args, device, unit="samples", items_per_step=None, desc="train"):
    """Runs step(batch) -> loss tensor for each batch with a progress bar. The loss is read back
    only every 10 steps and at the end (reading it is a sync point in Fused mode). Returns the
    per-step losses (floats) and the throughput in steps/s and units/s, timed from the end of the
    --warmup first steps (which include compilation) to the end of the last."""
    losses = []
    bar = tqdm(total=len(batches), desc=desc, disable=args.quiet, unit="step")
    warmup = min(max(args.warmup, 1), len(batches))
    start = None
    for i, batch in enumerate(batches):
        losses.append(step(batch).detach())
        if i == warmup - 1:
            synchronize(device)
            start = time.perf_counter()
        if i % 10 == 0 or i == len(batches) - 1:
            bar.set_postfix(loss=f"{losses[-1].item():.4f}")
        bar.update(1)
    synchronize(device)
    elapsed = time.perf_counter() - start if start is not None else 0.0
    bar.close()
    losses = [float(v) for v in torch.stack(losses).float().cpu()]
    timed = len(batches) - warmup
    steps_per_s = timed / elapsed if timed > 0 and elapsed > 0 else float("nan")
    items = items_per_step if items_per_step is not None else args.batch_size
    result = {"losses": losses, "steps_per_s": steps_per_s, f"{unit}_per_s": steps_per_s * items}
    if not args.quiet:
        print(
            f"{desc}: loss {losses[0]:.4f} -> {losses[-1]:.4f}; "
            f"{steps_per_s:.2f} steps/s, {steps_per_s * items:.1f} {unit}/s"
        )
    return result


def optimizer_step(model, opt, loss_fn, args):
    """A training step: forward under autocast (when --amp), backward, AdamW/SGD step."""

    def step(batch):
        opt.zero_grad(set_to_none=True)
        with autocast(args):
            loss = loss_fn(model, batch)
        loss.backward()
        opt.step()
        return loss

    return compiled(step, args)


# --- Hugging Face causal language models (llama.py, qwen.py) ---------------------------------


def lm_parser(description):
    p = parser(description, steps=20, batch_size=8)
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--heads", type=int, default=8)
    p.add_argument("--kv-heads", type=int, default=4)
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--new-tokens", type=int, default=16, help="tokens to generate afterwards")
    p.add_argument("--save-dir", default=None, help="where to save the model (a temporary dir)")
    p.set_defaults(amp=True)
    return p


def lm_config_kwargs(args, vocab_size):
    return dict(
        vocab_size=vocab_size,
        hidden_size=args.hidden,
        intermediate_size=args.hidden * 2,
        num_hidden_layers=args.layers,
        num_attention_heads=args.heads,
        num_key_value_heads=args.kv_heads,
        head_dim=args.hidden // args.heads,
        max_position_embeddings=max(256, args.seq + args.new_tokens),
        tie_word_embeddings=True,
    )


def train_lm(model_class, config, tokens, args, device):
    """Trains a causal LM built from `config` (seeded weights, made on the CPU and moved) on
    next-token prediction over batches of `tokens` (a 1-D CPU tensor), with AdamW."""
    model = model_class(config).to(device)
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.0)
    g = torch.Generator().manual_seed(args.seed)
    batches = []
    for _ in range(args.steps):
        starts = torch.randint(0, tokens.numel() - args.seq - 1, (args.batch_size,), generator=g)
        chunk = torch.stack([tokens[s : s + args.seq + 1] for s in starts.tolist()]).to(device)
        batches.append(chunk)

    def loss_fn(m, chunk):
        return m(input_ids=chunk[:, :-1], labels=chunk[:, 1:].contiguous(), use_cache=False).loss

    step = optimizer_step(model, opt, loss_fn, args)
    result = train(step, batches, args, device, "tokens", args.batch_size * args.seq)
    return model, result


def reload_and_generate(model, prompt_ids, args, save_dir):
    """save_pretrained, from_pretrained(dir, device_map=<device>), then greedy generation with a
    static cache (which Transformers compiles with backend "tpu" on "tpu"). Returns the new token
    ids and the generation speed (tokens/s after a warm-up call); nothing with --new-tokens 0."""
    if args.new_tokens == 0:
        return None, None
    if args.quiet:
        import transformers

        transformers.utils.logging.disable_progress_bar()
    model.save_pretrained(save_dir)
    loaded = type(model).from_pretrained(save_dir, device_map=args.device, dtype=torch.float32)
    loaded.eval()
    ids = prompt_ids.to(loaded.device)
    kwargs = dict(
        max_new_tokens=args.new_tokens,
        do_sample=False,
        cache_implementation="static",
        pad_token_id=loaded.config.eos_token_id or 0,
    )
    with torch.no_grad():
        loaded.generate(ids, **kwargs)  # warm-up: compiles
        start = time.perf_counter()
        out = loaded.generate(ids, **kwargs)
        elapsed = time.perf_counter() - start
    new = out[:, ids.shape[1] :].cpu()
    tok_s = new.numel() / elapsed
    if not args.quiet:
        print(
            f"generate: {new.shape[1]} tokens x {new.shape[0]}, {tok_s:.1f} tokens/s (static cache)"
        )
    return new, tok_s
