"""Runs vLLM's offline `LLM.generate` on "tpu" in a process of its own (tests/python/test_vllm.py
starts it) and prints one JSON line: the compiles and disk-cache loads of the engine's start-up,
the greedy token ids of each round over the same prompts (and with `--logprobs`, each token's
logprob),
the runtime's compile and CPU-fallback counts per round, the same for a round without the
shortest prompt whose first request stops after 2 tokens, the sampled ids of seeded requests,
and whether the engine scheduled asynchronously.

    python tests/python/vllm_generate.py MODEL_DIR PROMPTS_JSON [--rounds N] [--new-tokens N]
        [--tensor-parallel-size N] [--no-sampling] [--logprobs] [--engine JSON]

`--engine` adds keyword arguments of `LLM(...)` (their values win), e.g. '{"dtype": "bfloat16",
"quantization": "fp8"}'.
"""

import argparse
import json
import os

os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")  # engine in this process: counters
# Worker processes (tensor or pipeline parallel) report their counters through a function sent
# to them with vLLM's collective_rpc, which pickles it.
os.environ.setdefault("VLLM_ALLOW_INSECURE_SERIALIZATION", "1")


def counters(worker=None):
    import torch_pjrt

    return torch_pjrt.metrics.counters()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("model")
    parser.add_argument("prompts")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--new-tokens", type=int, default=8)
    parser.add_argument("--tensor-parallel-size", type=int, default=1)
    parser.add_argument("--no-sampling", action="store_true", help="skip the seeded sampling")
    parser.add_argument("--logprobs", action="store_true", help="greedy tokens' logprobs too")
    parser.add_argument("--engine", default="{}", help="more LLM(...) arguments, JSON")
    args = parser.parse_args()

    import torch
    from vllm import LLM, SamplingParams

    import torch_pjrt

    engine = {
        "dtype": "float32",
        "max_model_len": 256,
        "max_num_batched_tokens": 256,
        "max_num_seqs": 8,
        "enable_prefix_caching": True,
        "tensor_parallel_size": args.tensor_parallel_size,
    }
    engine.update(json.loads(args.engine))
    on_ray = engine.get("distributed_executor_backend") == "ray"
    if on_ray:
        import ray

        # A local Ray cluster of this process's, ended with it; its TPU resource (which vLLM
        # places its workers on) counted by hand: Ray detects TPU chips, not this plugin's devices.
        ray.init(address="local", num_cpus=4, resources={"TPU": torch.tpu.device_count()},
                 include_dashboard=False)  # fmt: skip
    llm = LLM(model=args.model, **engine)
    if llm.llm_engine.vllm_config.parallel_config.world_size > 1:

        def compiles():  # the workers' (this process runs none of the model)
            return sum(c["compiles"] for c in llm.collective_rpc(counters))
    else:

        def compiles():
            return torch_pjrt.metrics.counters()["compiles"]

    started = torch_pjrt.metrics.counters()  # after the start-up walk
    startup = {"compiles": started["compiles"], "disk_hits": started["disk_hits"]}
    prompts = json.loads(args.prompts)
    greedy = SamplingParams(temperature=0, max_tokens=args.new_tokens,
                            logprobs=0 if args.logprobs else None)  # fmt: skip

    def greedy_round(batch, params=greedy):
        before = compiles()
        outs = llm.generate(batch, params, use_tqdm=False)
        after = torch_pjrt.metrics.counters()
        result = {
            "tokens": [list(o.outputs[0].token_ids) for o in outs],
            "cached_tokens": [o.num_cached_tokens for o in outs],
            "compiles": compiles() - before,
            "cpu_fallbacks": after["cpu_fallbacks"],
        }
        if args.logprobs:
            result["logprobs"] = [
                [step[t].logprob for step, t in zip(o.outputs[0].logprobs, o.outputs[0].token_ids)]
                for o in outs
            ]
        return result

    rounds = [greedy_round(prompts) for _ in range(args.rounds)]
    # Without the shortest prompt (one request fewer, the same padded sizes), the first request
    # finishing while the others go on.
    batch = [p for p in prompts if p != min(prompts, key=len)]
    early = SamplingParams(temperature=0, max_tokens=2, logprobs=greedy.logprobs)
    fewer = greedy_round(batch, [early] + [greedy] * (len(batch) - 1))
    sampled = []
    if not args.no_sampling:
        seeded = [
            SamplingParams(temperature=0.8, top_p=0.9, top_k=20, seed=s, max_tokens=args.new_tokens)
            for s in (1, 1, 2)
        ]
        outs = llm.generate([prompts[0]] * 3, seeded, use_tqdm=False)
        sampled = [list(o.outputs[0].token_ids) for o in outs]
    asynchronous = llm.llm_engine.vllm_config.scheduler_config.async_scheduling
    print(json.dumps({"startup": startup, "rounds": rounds, "fewer": fewer, "sampled": sampled,
                      "async_scheduling": asynchronous}))  # fmt: skip
    # End the engine while Ray is still up: left to the interpreter's exit, vLLM's Ray executor's
    # finalizer runs after Ray's own atexit shutdown, and its ray.kill of the workers starts a
    # new local Ray instance in the middle of the teardown (once, a SIGSEGV of this process).
    llm.llm_engine.engine_core.shutdown()
    if on_ray:
        ray.shutdown()


if __name__ == "__main__":
    main()
