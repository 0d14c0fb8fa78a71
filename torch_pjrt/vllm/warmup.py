"""The start-up walk of vLLM on "tpu": one real step for each padded shape a steady state can
meet, so that serving compiles nothing after start-up.

A step's programs depend on its padded sizes only (buckets.py): the token count, and the
attention's requests, longest query (1 when decoding, else the token count) and blocks per
request. The walk runs upstream's `execute_model` and `sample_tokens` on made-up scheduler
outputs (greedy requests on blocks of the KV cache that no request owns yet, written and then
dropped) for each reachable combination, so the programs it compiles are a real step's. With
the disk cache of eager programs, it records which cache files it used; a restart that finds them
all runs only the walk's first step, and each other program loads from disk when first needed.
Sampling with temperature, top-k or top-p adds small programs on first use.
"""

import hashlib
import json
import os
import time

from vllm.logger import init_logger
from vllm.sampling_params import SamplingParams
from vllm.v1.core.sched.output import NewRequestData, SchedulerOutput

import torch_pjrt
import torch_pjrt.cache
import torch_pjrt.plugins

from .buckets import attention_sizes, bucket, buckets

logger = init_logger(f"vllm.{__name__}")  # under vLLM's configured logger


def _steps(runner):
    """(query lengths, context lengths) of one step per padded shape, smallest first."""
    max_reqs, max_tokens = runner.max_num_reqs, runner.max_num_tokens
    max_len = runner.max_model_len
    block_size = runner.cache_config.block_size
    max_blocks = -(-max_len // block_size)
    limits = (max_reqs, max_blocks, block_size)
    seen, steps = set(), []
    token_buckets = buckets(max_tokens, 16)
    for blocks in buckets(max_blocks, 1):
        for previous, tokens in zip([0, *token_buckets], token_buckets):
            for reqs in buckets(max_reqs, 1):
                n = reqs // 2 + 1 if reqs > 1 else 1  # fewest requests of this bucket
                # The fewest tokens of this token bucket, one request taking all but one each
                # (its query must be longer than 1, or the step would be decoding).
                total = max(previous + 1, n + 1)
                prefill = [total - (n - 1)] + [1] * (n - 1)
                for queries in ([1] * n, prefill):
                    if sum(queries) > tokens or queries[0] >= max_len:
                        continue
                    # The first request's context sets the blocks per request (one token short
                    # of the model's length: the sampled token must fit).
                    longest = max(queries[0], min(blocks * block_size, max_len - 1))
                    context = [longest, *queries[1:]]
                    padded = bucket(sum(queries), max_tokens)
                    sizes = attention_sizes(
                        n, padded, max(queries), -(-longest // block_size), limits
                    )
                    if (padded, *sizes) not in seen:
                        seen.add((padded, *sizes))
                        steps.append((queries, context))
    return steps


def _run_step(runner, queries, context, first_block):
    """Runs one made-up step and then drops its requests."""
    block_size = runner.cache_config.block_size
    spare = runner.kv_cache_config.num_blocks - first_block  # ids wrap within the cache
    greedy = SamplingParams(temperature=0, max_tokens=1)
    new, scheduled, block = [], {}, 0
    for i, (q, c) in enumerate(zip(queries, context)):
        count = -(-c // block_size)
        req_id = f"tpu-warmup-{i}"
        new.append(
            NewRequestData(
                req_id=req_id,
                prompt_token_ids=[0] * c,
                mm_features=[],
                sampling_params=greedy,
                pooling_params=None,
                block_ids=([first_block + b % spare for b in range(block, block + count)],),
                num_computed_tokens=c - q,
                lora_request=None,
            )
        )
        scheduled[req_id] = q
        block += count
    step = SchedulerOutput.make_empty()
    step.scheduled_new_reqs = new
    step.num_scheduled_tokens = scheduled
    step.total_num_scheduled_tokens = sum(queries)
    step.num_common_prefix_blocks = [0] * len(runner.kv_cache_config.kv_cache_groups)
    if runner.execute_model(step) is None:
        runner.sample_tokens(None)
    done = SchedulerOutput.make_empty()
    done.finished_req_ids = set(scheduled)
    runner.execute_model(done)


def _record_path(runner, steps):
    """Where the walk records the disk-cache files it used, for these steps on this device and
    configuration; None without the disk cache of eager programs."""
    root = torch_pjrt.cache.cache_dir()
    if not root or os.environ.get("TORCH_PJRT_EAGER_DISK_CACHE") != "1":
        return None
    identity = (runner.vllm_config.compute_hash(), steps, str(runner.device),
                torch_pjrt.__version__, torch_pjrt.plugins.state.get("path"))  # fmt: skip
    key = hashlib.sha256(repr(identity).encode()).hexdigest()[:24]
    return os.path.join(root, "eager", f"vllm-walk-{key}.json")


def _recorded_files_present(record):
    try:
        with open(record) as f:
            names = json.load(f)
    except (OSError, ValueError):
        return False
    folder = os.path.dirname(record)
    return bool(names) and all(os.path.exists(os.path.join(folder, n)) for n in names)


def _record(record, since):
    """Writes the names of the cache files used (loaded or stored) since `since`: the disk cache
    marks a file it loads or stores with the time."""
    folder = os.path.dirname(record)
    with os.scandir(folder) as entries:
        names = [e.name for e in entries if e.name.endswith(".bin") and e.stat().st_mtime >= since]
    partial = f"{record}.{os.getpid()}"
    with open(partial, "w") as f:
        json.dump(sorted(names), f)
    os.replace(partial, record)


def warm_up(runner):
    """Runs the walk and logs its size and time. A start whose walk is on record, with every
    program file it used still in the disk cache, skips it: each program then loads from disk
    when a step first needs it."""
    start = time.perf_counter()
    # The start-up's deferred work (the KV cache's zeros) as a program of its own, so that the
    # first step's programs are the same whether the walk runs or not.
    torch_pjrt.launch_pending()
    steps = _steps(runner)
    record = _record_path(runner, steps)
    if record and _recorded_files_present(record):
        # Only the first step: a step's first run after start-up (the KV cache never written)
        # has programs of its own, which the walk's first step compiled.
        _run_step(runner, *steps[0], first_block=1)
        logger.info("tpu warm-up: %d step shapes, all in the disk cache", len(steps))
        return
    since = time.time() - 1  # file times are the same clock; a second's margin
    for _ in range(2):
        compiles = torch_pjrt.metrics.counters()["compiles"]
        for queries, context in steps:
            _run_step(runner, queries, context, first_block=1)  # block 0 is vLLM's null block
        # A second round when the first compiled: a step's programs can differ with the step
        # before it (which buffers they may reuse for outputs), and serving repeats shapes.
        # A round that only loaded from the disk cache leaves such variants to load on first
        # use.
        if torch_pjrt.metrics.counters()["compiles"] == compiles:
            break
    if record:
        _record(record, since)
    seconds = time.perf_counter() - start
    logger.info("tpu warm-up: %d step shapes in %.2f s", len(steps), seconds)
