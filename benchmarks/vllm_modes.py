"""vLLM's offline `LLM.generate` on "tpu" with the model run in Fused eager mode (the platform's
default) and compiled by torch.compile(backend="tpu") (compilation mode 1), each in a process of
its own with an empty compile cache, on the serving benchmark's tiny Llama (benchmarks/serving.py):
8 prompts, 32 greedy tokens each, 256-token model, 8 sequences. Per mode: seconds to build the
engine (with the start-up walk), then output tokens/s as the median of 3 rounds after one warm-up
round, and the compiles in those rounds.

Last line JSON: fused_tok_s, compiled_tok_s, compiled_vs_fused (ratio of tokens/s),
fused_start_s, compiled_start_s, steady_compiles ({mode: compiles}), same_tokens (the two modes'
greedy tokens are equal).

    python benchmarks/vllm_modes.py
"""

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

PROMPTS = [
    "The lighthouse stood on a rock above the sea.",
    "Every evening he climbed",
    "The cat",
    "The keeper wrote in his book every night",
    "Ships passed far out on the water",
    "In the morning the fog",
]
MODES = {"fused": 0, "compiled": 1}  # vLLM compilation modes: none, torch.compile
ROUNDS = 3


def child(mode, model):
    os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0"  # engine in this process: counters
    from vllm import LLM, SamplingParams

    import torch_pjrt

    start = time.perf_counter()
    llm = LLM(model=model, dtype="float32", max_model_len=256, max_num_batched_tokens=256,
              max_num_seqs=8, compilation_config={"mode": MODES[mode]})  # fmt: skip
    start_s = time.perf_counter() - start
    prompts = [PROMPTS[i % len(PROMPTS)] for i in range(8)]
    greedy = SamplingParams(temperature=0, max_tokens=32, ignore_eos=True)
    llm.generate(prompts, greedy, use_tqdm=False)  # warm-up round
    before = torch_pjrt.metrics.counters()["compiles"]
    rates = []
    for _ in range(ROUNDS):
        t = time.perf_counter()
        outs = llm.generate(prompts, greedy, use_tqdm=False)
        rates.append(sum(len(o.outputs[0].token_ids) for o in outs) / (time.perf_counter() - t))
    print(json.dumps({"tok_s": statistics.median(rates), "start_s": start_s,
                      "compiles": torch_pjrt.metrics.counters()["compiles"] - before,
                      "tokens": [list(o.outputs[0].token_ids) for o in outs]}))  # fmt: skip


def main():
    from serving import MODELS, make_model

    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        model = os.path.join(tmp, "llama")
        make_model(model, MODELS["tiny"])
        for mode in MODES:
            env = dict(os.environ, TORCH_PJRT_CACHE_DIR=os.path.join(tmp, f"cache-{mode}"))
            run = subprocess.run([sys.executable, __file__, "--child", mode, model], env=env,
                                 capture_output=True, text=True, check=True)  # fmt: skip
            results[mode] = json.loads(run.stdout.strip().splitlines()[-1])
            print(f"{mode}: {results[mode]['tok_s']:.1f} tok/s, engine start "
                  f"{results[mode]['start_s']:.1f} s")  # fmt: skip
    fused, compiled = results["fused"], results["compiled"]
    print(json.dumps({
        "fused_tok_s": round(fused["tok_s"], 1),
        "compiled_tok_s": round(compiled["tok_s"], 1),
        "compiled_vs_fused": round(compiled["tok_s"] / fused["tok_s"], 2),
        "fused_start_s": round(fused["start_s"], 1),
        "compiled_start_s": round(compiled["start_s"], 1),
        "steady_compiles": {m: r["compiles"] for m, r in results.items()},
        "same_tokens": fused["tokens"] == compiled["tokens"],
    }))  # fmt: skip


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    if sys.argv[1:2] == ["--child"]:
        child(sys.argv[2], sys.argv[3])
    else:
        main()
