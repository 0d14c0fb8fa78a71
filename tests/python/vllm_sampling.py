"""Runs vLLM's offline `LLM.generate` on "tpu" in a process of its own (tests/python/
test_vllm_sampling.py starts it) over requests whose sampling parameters all differ, in one
batch, and prints one JSON line: the compiles of the start-up walk and of the generate call, and
per request its token ids, and its logprobs (top token ids and values, sampled token's logprob
and rank per step) where asked for.

    python tests/python/vllm_sampling.py MODEL_DIR REQUESTS_JSON
REQUESTS_JSON: a list of [prompt, SamplingParams keyword arguments].
"""

import json
import os
import sys

os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")  # engine in this process: counters


def main():
    from vllm import LLM, SamplingParams
    from vllm.sampling_params import StructuredOutputsParams

    import torch_pjrt

    llm = LLM(model=sys.argv[1], dtype="float32", max_model_len=256, max_num_batched_tokens=256,
              max_num_seqs=8, max_logprobs=8)  # fmt: skip
    started = torch_pjrt.metrics.counters()["compiles"]
    prompts, params = [], []
    for prompt, kwargs in json.loads(sys.argv[2]):
        if "logit_bias" in kwargs:  # JSON keys are strings
            kwargs["logit_bias"] = {int(t): b for t, b in kwargs["logit_bias"].items()}
        if "structured_outputs" in kwargs:
            kwargs["structured_outputs"] = StructuredOutputsParams(**kwargs["structured_outputs"])
        prompts.append(prompt)
        params.append(SamplingParams(**kwargs))
    outs = llm.generate(prompts, params, use_tqdm=False)
    results = []
    for out in outs:
        o = out.outputs[0]
        entry = {"tokens": list(o.token_ids), "text": o.text}
        if o.logprobs is not None:
            entry["logprobs"] = [
                {str(t): [lp.logprob, lp.rank] for t, lp in step.items()} for step in o.logprobs
            ]
        results.append(entry)
    counters = torch_pjrt.metrics.counters()
    print(json.dumps({"startup_compiles": started, "compiles": counters["compiles"] - started,
                      "cpu_fallbacks": counters["cpu_fallbacks"], "results": results}))  # fmt: skip


if __name__ == "__main__":
    main()
