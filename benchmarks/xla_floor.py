"""The XLA floor: the same models written once more in JAX, lowered to StableHLO by jax.jit and run
on the same plugin through torch_pjrt.run_stablehlo, beside torch.compile(backend="tpu") and the
Fused and Strict eager modes. Same weights, same batch; only the programs each side emits and the
host work per step differ. Cases: the benchmark GPT (small, large; benchmarks/gpt.py) and a
Transformers Llama of about 100M parameters, each as a forward (logits) and as a full AdamW training
step (lr 1e-3, weight decay 0.1, as in the other benchmarks).

`--ways` adds two training-step variants: jax_split (the JAX step cut into the three programs a
compiled step runs) and compiled_bwd (torch.compile with Dynamo tracing backward() into the
forward's graph, `torch._dynamo.config.trace_autograd_ops`: two programs per step).
`--fused-adamw` gives the torch ways AdamW(fused=True) instead of PyTorch's default (foreach).

Each step ends with `loss.item()` (or a read of the logits' first element), as a loop that logs
does. After warm-up, rounds run every way in turn and the median round counts. The losses (or
logits) of every way must equal the JAX program's within float32 rounding, else the run fails.

Beside each way's seconds per step: its main thread's CPU time per step (host work, which on the
CPU plugin competes with XLA's compute threads) and, for compiled ways, the part of it inside
torch_pjrt's calls of the compiled programs (the rest is PyTorch's frames around them).

Last line: JSON {case: {way: seconds per step, ..., way_vs_jax: ratio}} with the load average."""

import argparse
import json
import math
import os
import statistics
import sys
import threading
import time
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parent))
import gpt

LR, BETAS, EPS, WEIGHT_DECAY = 1e-3, (0.9, 0.999), 1e-8, 0.1
# About 100M parameters: two 32000 x 768 embeddings (49M) and 8 layers of 6.3M.
LLAMA = {
    "vocab_size": 32000,
    "hidden_size": 768,
    "intermediate_size": 2048,
    "num_hidden_layers": 8,
    "num_attention_heads": 12,
    "num_key_value_heads": 4,
    "max_position_embeddings": 512,
    "rms_norm_eps": 1e-6,
    "rope_theta": 10000.0,
}
LLAMA_BATCH, LLAMA_SEQ = 2, 128
TRAIN_ONLY = ("jax_split", "compiled_bwd")


# ---- The models in JAX, over a dict of the torch model's parameters by name.


def _jax():
    import jax

    jax.config.update("jax_platforms", "cpu")  # JAX only lowers here; the plugin runs the program
    return jax


def _linear(x, w, b=None):
    y = x @ w.T
    return y if b is None else y + b


def _attention(q, k, v):
    """Causal softmax attention over [batch, heads, seq, head_dim]."""
    jnp = _jax().numpy
    t = q.shape[2]
    s = (q @ k.transpose(0, 1, 3, 2)) / math.sqrt(q.shape[-1])
    s = jnp.where(jnp.tril(jnp.ones((t, t), bool)), s, -jnp.inf)
    return _jax().nn.softmax(s, axis=-1) @ v


def gpt_forward(p, idx, config):
    jax = _jax()
    jnp = jax.numpy
    b, t = idx.shape
    d, h = config["d"], config["heads"]

    def layer_norm(x, name):
        mu = x.mean(-1, keepdims=True)
        var = ((x - mu) ** 2).mean(-1, keepdims=True)
        return (x - mu) * jax.lax.rsqrt(var + 1e-5) * p[name + ".weight"] + p[name + ".bias"]

    x = p["tok.weight"][idx] + p["pos.weight"][:t]
    for i in range(config["layers"]):
        pre = f"blocks.{i}."
        qkv = _linear(layer_norm(x, pre + "ln1"), p[pre + "qkv.weight"], p[pre + "qkv.bias"])
        q, k, v = (
            z.reshape(b, t, h, d // h).transpose(0, 2, 1, 3) for z in jnp.split(qkv, 3, axis=-1)
        )
        y = _attention(q, k, v).transpose(0, 2, 1, 3).reshape(b, t, d)
        x = x + _linear(y, p[pre + "proj.weight"], p[pre + "proj.bias"])
        m = _linear(layer_norm(x, pre + "ln2"), p[pre + "mlp.0.weight"], p[pre + "mlp.0.bias"])
        m = jax.nn.gelu(m, approximate=True)
        x = x + _linear(m, p[pre + "mlp.2.weight"], p[pre + "mlp.2.bias"])
    return layer_norm(x, "ln") @ p["tok.weight"].T


def llama_forward(p, idx, config):
    jax = _jax()
    jnp = jax.numpy
    b, t = idx.shape
    heads, kv_heads = config["num_attention_heads"], config["num_key_value_heads"]
    hd = config["hidden_size"] // heads

    def rms_norm(x, name):
        x = x * jax.lax.rsqrt((x * x).mean(-1, keepdims=True) + config["rms_norm_eps"])
        return x * p[name + ".weight"]

    inv_freq = 1.0 / (config["rope_theta"] ** (jnp.arange(0, hd, 2, dtype=jnp.float32) / hd))
    angles = jnp.arange(t, dtype=jnp.float32)[:, None] * inv_freq[None, :]
    cos = jnp.cos(jnp.concatenate([angles, angles], -1))
    sin = jnp.sin(jnp.concatenate([angles, angles], -1))

    def rope(x):  # [b, heads, t, hd], rotating halves as Transformers does
        rotated = jnp.concatenate([-x[..., hd // 2 :], x[..., : hd // 2]], -1)
        return x * cos + rotated * sin

    x = p["model.embed_tokens.weight"][idx]
    for i in range(config["num_hidden_layers"]):
        pre = f"model.layers.{i}."
        h = rms_norm(x, pre + "input_layernorm")

        q, k, v = (
            _linear(h, p[pre + f"self_attn.{name}_proj.weight"])
            .reshape(b, t, n, hd)
            .transpose(0, 2, 1, 3)
            for name, n in (("q", heads), ("k", kv_heads), ("v", kv_heads))
        )
        q, k = rope(q), rope(k)
        k, v = (jnp.repeat(z, heads // kv_heads, axis=1) for z in (k, v))
        y = _attention(q, k, v).transpose(0, 2, 1, 3).reshape(b, t, heads * hd)
        x = x + _linear(y, p[pre + "self_attn.o_proj.weight"])
        h = rms_norm(x, pre + "post_attention_layernorm")
        gate = _linear(h, p[pre + "mlp.gate_proj.weight"])
        up = _linear(h, p[pre + "mlp.up_proj.weight"])
        x = x + _linear(jax.nn.silu(gate) * up, p[pre + "mlp.down_proj.weight"])
    return _linear(rms_norm(x, "model.norm"), p["lm_head.weight"])


def jax_programs(forward, names, config):
    """The JAX functions: the forward (params, idx -> logits), the AdamW training step (params, m,
    v, step, idx, targets -> loss, params, m, v, step), and its parts: the loss (params, idx,
    targets -> loss) and the AdamW update (params, grads, m, v, step -> params, m, v, step)."""
    jax = _jax()
    jnp = jax.numpy

    def logits(params, idx):
        return forward(dict(zip(names, params)), idx, config)

    def loss_fn(params, idx, targets):
        out = logits(params, idx)
        logp = jax.nn.log_softmax(out.reshape(-1, out.shape[-1]), axis=-1)
        return -jnp.take_along_axis(logp, targets.reshape(-1, 1), axis=-1).mean()

    def adamw(params, grads, m, v, step):
        step = step + 1
        b1, b2 = BETAS
        out_p, out_m, out_v = [], [], []
        for w, g, m1, v1 in zip(params, grads, m, v):
            w = w * (1 - LR * WEIGHT_DECAY)
            m1 = b1 * m1 + (1 - b1) * g
            v1 = b2 * v1 + (1 - b2) * g * g
            denom = jnp.sqrt(v1) / jnp.sqrt(1 - b2**step) + EPS
            out_p.append(w - (LR / (1 - b1**step)) * m1 / denom)
            out_m.append(m1)
            out_v.append(v1)
        return out_p, out_m, out_v, step

    def train_step(params, m, v, step, idx, targets):
        loss, grads = jax.value_and_grad(loss_fn)(params, idx, targets)
        return (loss, *adamw(params, grads, m, v, step))

    return {"logits": logits, "train_step": train_step, "loss": loss_fn, "adamw": adamw}


def lower(fn, *args):
    jax = _jax()
    specs = jax.tree_util.tree_map(lambda a: jax.ShapeDtypeStruct(a.shape, a.dtype), args)
    return jax.jit(fn, keep_unused=True).lower(*specs).as_text()


# ---- The ways to run a case. Each is a callable returning the value the step reads.


def _spec(t):
    import numpy as np

    return np.zeros(t.shape, {torch.float32: np.float32, torch.int32: np.int32}[t.dtype])


# Where lowered JAX programs are read from (a machine without jax: the GPU check) or written to.
PROGRAMS = {"read": None, "write": None}


def jax_text(key, make):
    """The JAX program `key`: lowered by make(), or read from PROGRAMS["read"]."""
    if PROGRAMS["read"]:
        return (Path(PROGRAMS["read"]) / f"{key}.mlir").read_text()
    text = make()
    if PROGRAMS["write"]:
        Path(PROGRAMS["write"]).mkdir(parents=True, exist_ok=True)
        (Path(PROGRAMS["write"]) / f"{key}.mlir").write_text(text)
    return text


def _jax_inputs(case):
    """What a JAX way runs on: the parameters' names, the parameters on "tpu", the batch as int32
    on "tpu", and the parameters' specs for lowering."""
    model = case["model"]
    names = [n for n, _ in model.named_parameters()]
    params = [p.detach().to("tpu") for _, p in model.named_parameters()]
    idx32, targets32 = (t.to(torch.int32).to("tpu") for t in (case["x"], case["y"]))
    return names, params, idx32, targets32, [_spec(p) for p in params]


def _adamw_state(params):
    """AdamW's first and second moments and step count at the start, on "tpu"."""
    zeros = [torch.zeros_like(p) for p in params]
    return zeros, [torch.zeros_like(p) for p in params], torch.zeros((), device="tpu")


def jax_way(case, train):
    """The JAX program on "tpu" through run_stablehlo, its outputs fed back as inputs."""
    import torch_pjrt

    names, params, idx32, targets32, specs = _jax_inputs(case)

    def programs():
        return jax_programs(case["jax_forward"], names, case["config"])

    key = f"{case['name']}_{'train' if train else 'forward'}"
    if not train:
        text = jax_text(key, lambda: lower(programs()["logits"], specs, _spec(idx32)))
        return lambda: torch_pjrt.run_stablehlo(text, *params, idx32)[0]
    m, v, step = _adamw_state(params)
    text = jax_text(
        key,
        lambda: lower(
            programs()["train_step"],
            specs,
            specs,
            specs,
            _spec(step),
            _spec(idx32),
            _spec(targets32),
        ),
    )
    state = [params, m, v, step]
    n = len(params)

    def run():
        p, m1, v1, s = state
        out = torch_pjrt.run_stablehlo(text, *p, *m1, *v1, s, idx32, targets32)
        state[:] = [out[1 : 1 + n], out[1 + n : 1 + 2 * n], out[1 + 2 * n : 1 + 3 * n], out[-1]]
        return out[0]

    return run


def jax_split_way(case):
    """The JAX training step cut where torch.compile cuts a step (Dynamo's graph breaks at
    backward() and at the optimizer's step): a forward that returns the loss and the residuals
    its backward needs, the backward, and the AdamW update; three programs through run_stablehlo.
    Beside "jax" (one program) it shows what the cuts alone cost."""
    import torch_pjrt

    jax = _jax()
    names, params, idx32, targets32, specs = _jax_inputs(case)
    fns = jax_programs(case["jax_forward"], names, case["config"])

    def forward(params, idx, targets):  # -> (loss, the backward as a pytree of residuals)
        return jax.vjp(lambda p: fns["loss"](p, idx, targets), params)

    def backward(vjp, seed):
        return vjp(seed)[0]

    residuals = jax.eval_shape(forward, specs, _spec(idx32), _spec(targets32))[1]
    seed = torch.ones((), device="tpu")
    m, v, step = _adamw_state(params)
    key = f"{case['name']}_train_split"
    texts = [
        jax_text(f"{key}_forward", lambda: lower(forward, specs, _spec(idx32), _spec(targets32))),
        jax_text(f"{key}_backward", lambda: lower(backward, residuals, _spec(seed))),
        jax_text(
            f"{key}_adamw", lambda: lower(fns["adamw"], specs, specs, specs, specs, _spec(step))
        ),
    ]
    state = [params, m, v, step]
    n = len(params)

    def run():
        p, m1, v1, s = state
        loss, *saved = torch_pjrt.run_stablehlo(texts[0], *p, idx32, targets32)
        grads = torch_pjrt.run_stablehlo(texts[1], *saved, seed)
        out = torch_pjrt.run_stablehlo(texts[2], *p, *grads, *m1, *v1, s)
        state[:] = [out[:n], out[n : 2 * n], out[2 * n : 3 * n], out[-1]]
        return loss

    return run


def torch_way(case, train, mode, fused_adamw=False):
    """The torch model on "tpu": compiled (backend "tpu"), or eager in Fused or Strict mode; AdamW
    PyTorch's default (foreach) or fused=True."""
    import copy

    import torch_pjrt

    model = copy.deepcopy(case["model"]).to("tpu")
    x, y = case["x"].to("tpu"), case["y"].to("tpu")
    logits_of = case["logits"]
    if train:
        opt = torch.optim.AdamW(model.parameters(), lr=LR, betas=BETAS, eps=EPS,
                                weight_decay=WEIGHT_DECAY, fused=fused_adamw or None)  # fmt: skip

        def step():
            opt.zero_grad(set_to_none=True)
            out = logits_of(model, x)
            loss = F.cross_entropy(out.reshape(-1, out.shape[-1]), y.reshape(-1))
            loss.backward()
            opt.step()
            return loss

        def traced_step():  # its own code object: Dynamo's frames are not shared with step()'s
            opt.zero_grad(set_to_none=True)
            out = logits_of(model, x)
            loss = F.cross_entropy(out.reshape(-1, out.shape[-1]), y.reshape(-1))
            loss.backward()
            # No tensor whose graph the backward consumed may live across the optimizer's graph
            # break, else Dynamo breaks the graph at backward() after all.
            value = loss.detach()
            del loss, out
            opt.step()
            return value
    else:
        model.eval()

        def step():
            with torch.no_grad():
                return logits_of(model, x)

    if mode == "compiled":
        return torch.compile(step, backend="tpu")
    if mode == "compiled_bwd":
        # Dynamo traces backward() into the forward's graph (torch >= 2.12): forward and backward
        # are one program, the optimizer's step (which breaks the graph on purpose) a second.
        compiled = torch.compile(traced_step, backend="tpu")

        def run_traced():
            with torch._dynamo.config.patch(trace_autograd_ops=True):
                return compiled()

        return run_traced

    def run():
        with torch_pjrt.eager_mode(mode):
            return step()

    return run


def read(value):
    """What a logging loop reads per step: the loss, or the first logit."""
    return (value if value.dim() == 0 else value.reshape(-1)[0]).item()


class ReplayClock:
    """The main thread's CPU time inside torch_pjrt's calls of compiled graphs (signature, argument
    buffers, launch, wrapping the outputs): splits a compiled way's host time between torch_pjrt
    and PyTorch's frames around it (Dynamo's guards, AOTAutograd's wrappers, the autograd engine,
    the optimizer's Python)."""

    seconds = 0.0

    @classmethod
    def install(cls):
        from torch_pjrt.compile import runner

        call = runner.CompiledGraph.__call__
        if getattr(call, "clocked", False):
            return

        main = threading.main_thread()

        def clocked(self, args):
            if threading.current_thread() is not main:  # the autograd engine's device thread
                return call(self, args)
            start = time.thread_time()
            try:
                return call(self, args)
            finally:
                cls.seconds += time.thread_time() - start

        clocked.clocked = True
        runner.CompiledGraph.__call__ = clocked


def measure(case, train, ways, rounds, steps, warmup, fused_adamw=False):
    """({way: median seconds per step}, {way: median main-thread CPU seconds per step: the host
    work that on the CPU plugin competes with the device's threads}, {way: median of that inside
    torch_pjrt's compiled-graph calls (compiled ways)}, {way: (step 1's output, values read in
    later warm-up steps)})."""
    ReplayClock.install()
    runners = {}
    first = {}
    for way in ways:
        if way == "jax":
            runners[way] = jax_way(case, train)
        elif way == "jax_split":
            runners[way] = jax_split_way(case)
        else:
            runners[way] = torch_way(case, train, way, fused_adamw)
        start = time.perf_counter()
        out = runners[way]().detach().cpu()
        first[way] = (out, torch.tensor([read(runners[way]()) for _ in range(warmup - 1)]))
        print(f"  {way:>8}: warm-up {time.perf_counter() - start:6.1f} s", flush=True)
    times = {way: [] for way in ways}
    host = {way: [] for way in ways}
    replay = {way: [] for way in ways}
    for _ in range(rounds):
        for way in ways:
            start, cpu, inside = time.perf_counter(), time.thread_time(), ReplayClock.seconds
            for _ in range(steps):
                read(runners[way]())
            times[way].append((time.perf_counter() - start) / steps)
            host[way].append((time.thread_time() - cpu) / steps)
            replay[way].append((ReplayClock.seconds - inside) / steps)
    return (
        {way: statistics.median(t) for way, t in times.items()},
        {way: statistics.median(t) for way, t in host.items()},
        {way: statistics.median(t) for way, t in replay.items() if way.startswith("compiled")},
        first,
    )


def gpt_case(config):
    model, x, y = gpt.make(config)
    return {"model": model, "x": x, "y": y, "config": config, "jax_forward": gpt_forward,
            "logits": lambda m, x: m(x)}  # fmt: skip


def llama_case():
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    model = LlamaForCausalLM(LlamaConfig(**LLAMA, attn_implementation="sdpa")).float()
    g = torch.Generator().manual_seed(1)
    tokens = torch.randint(0, LLAMA["vocab_size"], (LLAMA_BATCH, LLAMA_SEQ + 1), generator=g)
    return {"model": model, "x": tokens[:, :-1].contiguous(), "y": tokens[:, 1:].contiguous(),
            "config": LLAMA, "jax_forward": llama_forward,
            "logits": lambda m, x: m(input_ids=x).logits}  # fmt: skip


CASES = {
    "gpt_tiny": lambda: gpt_case(gpt.TINY),  # the test's size (tests/python/test_xla_floor.py)
    "gpt_small": lambda: gpt_case(gpt.SMALL),
    "gpt_large": lambda: gpt_case(gpt.LARGE),
    "llama_100m": llama_case,
}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--cases", default="gpt_small,gpt_large,llama_100m", help="of " + ",".join(CASES)
    )
    parser.add_argument("--kinds", default="forward,train", help="forward, train or both")
    parser.add_argument(
        "--ways",
        default="jax,compiled,fused,strict",
        help="jax first; training steps only: jax_split (the JAX step as three programs, cut "
        "where torch.compile cuts it) and compiled_bwd (compiled with Dynamo tracing backward(): "
        "torch._dynamo.config.trace_autograd_ops)",
    )
    parser.add_argument(
        "--fused-adamw",
        action="store_true",
        help="the torch ways' AdamW with fused=True (one op per parameter) instead of foreach",
    )
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=3, help="steps per way and round")
    parser.add_argument("--warmup", type=int, default=2, help="steps before timing, per way")
    parser.add_argument(
        "--write-programs", metavar="DIR", help="also write the lowered JAX programs to DIR"
    )
    parser.add_argument(
        "--read-programs",
        metavar="DIR",
        help="read the JAX programs from DIR instead of lowering them (a machine without jax)",
    )
    parser.add_argument(
        "--lower-only", action="store_true", help="with --write-programs: lower, write, stop"
    )
    args = parser.parse_args()
    import torch_pjrt  # noqa: F401  (device "tpu")

    ways = args.ways.split(",")
    assert ways[0] == "jax", "the JAX program is the reference: list it first"
    result = {"device": torch.tpu.get_device_name(), "load_average_start": os.getloadavg()[0],
              "adamw": "fused" if args.fused_adamw else "foreach"}  # fmt: skip
    failures = []
    PROGRAMS.update(read=args.read_programs, write=args.write_programs)
    for name in args.cases.split(","):
        case = CASES[name]()
        case["name"] = name
        for kind in args.kinds.split(","):
            key = f"{name}_{kind}"
            if args.lower_only:
                jax_way(case, kind == "train")
                continue
            print(f"{key}:", flush=True)
            kind_ways = [w for w in ways if kind == "train" or w not in TRAIN_ONLY]
            seconds, host, replay, first = measure(
                case, kind == "train", kind_ways, args.rounds, args.steps, args.warmup,
                args.fused_adamw)  # fmt: skip
            entry = {}
            for way in kind_ways:
                # Equal programs: step 1's loss (train) or logits (forward), then the warm-up steps'
                # losses (the optimizer's updates), within float32 rounding.
                ok = all(
                    torch.allclose(a, b, rtol=1e-3, atol=1e-4)
                    for a, b in zip(first[way], first["jax"])
                )
                if not ok:
                    failures.append(f"{key}: {way} differs from the JAX program")
                ratio = seconds[way] / seconds["jax"]
                ours = f" (replays {replay[way] * 1e3:5.2f})" if way in replay else ""
                print(f"  {way:>8}: {seconds[way] * 1e3:9.2f} ms/step  {ratio:5.2f}x JAX  "
                      f"host {host[way] * 1e3:6.2f} ms/step{ours}"
                      f"{'' if ok else '  (VALUES DIFFER)'}")  # fmt: skip
                entry[f"{way}_s"] = round(seconds[way], 5)
                entry[f"{way}_host_s"] = round(host[way], 5)
                if way in replay:
                    entry[f"{way}_replay_host_s"] = round(replay[way], 5)
                if way != "jax":
                    entry[f"{way}_vs_jax"] = round(ratio, 3)
            result[key] = entry
    result["load_average_end"] = os.getloadavg()[0]
    print(json.dumps(result))
    if failures:
        sys.exit("\n".join(failures))


if __name__ == "__main__":
    main()
