"""The start-up walk of vLLM on "tpu": one real step for each padded shape a steady state can
meet, so that serving compiles nothing after start-up.

A step's programs depend on its padded sizes only (buckets.py): the model's on the token count,
the logits' and the sampler's on the request count. The walk runs upstream's `execute_model` and
`sample_tokens` on made-up scheduler outputs (greedy requests on blocks of the KV cache that no
request owns yet, written and then dropped) meeting every token bucket and every request bucket,
so the programs it compiles are a real step's. With
the disk cache of eager programs, it records which cache files it used; a restart that finds them
all runs only the walk's first step, and each other program loads from disk when first needed.
"""

import hashlib
import json
import os
import time

import numpy as np
import torch
from vllm.distributed import get_pp_group
from vllm.logger import init_logger
from vllm.lora.request import LoRARequest
from vllm.pooling_params import PoolingParams
from vllm.sampling_params import SamplingParams
from vllm.v1.core.sched.output import GrammarOutput, NewRequestData, SchedulerOutput

import torch_pjrt
import torch_pjrt.cache
import torch_pjrt.plugins

from .buckets import bucket, buckets
from .kv_connector import empty_step_metadata
from .multimodal import walk_feature, walk_item

logger = init_logger(f"vllm.{__name__}")  # under vLLM's configured logger


# What a walk step samples with: greedy rows only; every feature of the padded sampler (a
# request with all of them, a structured output bitmask included, beside greedy ones).
GREEDY, FEATURES = "greedy", "features"


def _steps(runner):
    """(query lengths, context lengths, sampling) of the walk's steps, smallest first. The
    greedy ones meet every padded token count (which the model's programs depend on) and every
    padded request count (which the logits' and the sampler's depend on) a step can reach, the
    i-th token bucket beside the i-th request bucket (the last one repeated) where the model's
    length allows, a step of one-token queries for a request bucket left over; then, for each
    request bucket, a step of one-token queries with every sampling feature (not for a pooling
    model, which samples nothing)."""
    max_reqs, max_tokens = runner.max_num_reqs, runner.max_num_tokens
    longest = runner.max_model_len - 1  # a prompt's tokens, with room for the sampled one
    # The request buckets a step can reach (a token per request at least), each with the fewest
    # requests that pad to it; the token buckets likewise (a step's requests fit the model).
    fewest = {}
    for n in range(min(max_reqs, max_tokens), 0, -1):
        fewest[bucket(n, max_reqs, 1)] = n
    req_buckets = sorted(fewest)
    reachable = min(max_tokens, max_reqs * longest)
    token_buckets = [t for t in buckets(max_tokens, 16) if t <= bucket(reachable, max_tokens)]
    steps, walked = [], set()
    for i in range(max(len(token_buckets), len(req_buckets))):
        # The fewest tokens this token bucket holds, over enough requests that each fits.
        previous = token_buckets[i - 1] if 0 < i < len(token_buckets) else 0
        n = fewest[req_buckets[min(i, len(req_buckets) - 1)]]
        total = max(previous + 1, n)
        n = max(n, -(-total // longest))
        queries = [total // n + (k < total % n) for k in range(n)]
        steps.append((queries, list(queries), GREEDY))
        walked.add(bucket(n, max_reqs, 1))
    # A pooling model's steps are whole prompts (it pools each request's last step), and it
    # samples nothing.
    pooling = runner.is_pooling_model
    for reqs in req_buckets:
        if reqs not in walked:
            context = [1 if pooling else 2] * fewest[reqs]
            steps.append(([1] * fewest[reqs], context, GREEDY))
    if not pooling:
        for reqs in req_buckets:
            steps.append(([1] * fewest[reqs], [2] * fewest[reqs], FEATURES))
    return steps


def _sampling_params(runner, sampling, i):
    """The walk's sampling parameters of request i of a step."""
    if sampling != FEATURES or i:
        return SamplingParams(temperature=0, max_tokens=1)
    params = SamplingParams(temperature=0.8, top_k=5, top_p=0.9, min_p=0.05, seed=0,
                            presence_penalty=0.5, frequency_penalty=0.5, repetition_penalty=1.1,
                            logprobs=runner.model_config.max_logprobs, logit_bias={0: 1.0},
                            min_tokens=2, allowed_token_ids=[0, 1, 2], max_tokens=2)  # fmt: skip
    # What vLLM's input processor derives from a tokenizer: stop tokens, banned words.
    params._all_stop_token_ids.add(0)
    params._bad_words_token_ids = [[1]]
    return params


def _pooling_params(runner):
    """A pooling model's requests: its first task, with the model's defaults applied, as the
    engine's input processor sets them."""
    task = runner.get_supported_pooling_tasks()[0]
    params = PoolingParams(task=task)
    params.verify(runner.model_config)
    runner.get_model().pooler.get_pooling_updates(task).apply(params)
    return params


def _adapters(runner):
    """What the walk's requests use in turn: no adapter, then each of vLLM's dummy LoRAs
    (`maybe_setup_dummy_loras`), so the walk loads adapters as serving does (lora.py)."""
    count = runner.lora_config.max_loras if runner.lora_config else 0
    return [None] + [LoRARequest(f"warmup_{i}", i, "/not/a/real/path") for i in range(1, count + 1)]


def _run_step(worker, queries, context, sampling, first_block, item=None):
    """Runs one made-up step through the worker (which passes a pipeline stage's activations
    to the next) and then drops its requests. With a multimodal `item` (multimodal.py), the
    first request of a greedy step has it placed over its scheduled tokens: the step encodes it
    and merges its rows."""
    runner = worker.model_runner
    pooling = _pooling_params(runner) if runner.is_pooling_model else None
    block_size = runner.cache_config.block_size
    spare = runner.kv_cache_config.num_blocks - first_block  # ids wrap within the cache
    new, scheduled, block = [], {}, 0
    adapters = _adapters(runner)
    with_item = item is not None and sampling == GREEDY
    for i, (q, c) in enumerate(zip(queries, context)):
        count = -(-c // block_size)
        req_id = f"tpu-warmup-{i}"
        features = [walk_feature(item, "tpu-warmup-item", c - q)] if with_item and i == 0 else []
        new.append(
            NewRequestData(
                req_id=req_id,
                prompt_token_ids=[0] * c,
                mm_features=features,
                sampling_params=None if pooling else _sampling_params(runner, sampling, i),
                pooling_params=pooling,
                block_ids=([first_block + b % spare for b in range(block, block + count)],),
                num_computed_tokens=c - q,
                lora_request=adapters[i % len(adapters)],
            )
        )
        scheduled[req_id] = q
        block += count
    step = SchedulerOutput.make_empty()
    step.scheduled_new_reqs = new
    step.num_scheduled_tokens = scheduled
    step.total_num_scheduled_tokens = sum(queries)
    step.num_common_prefix_blocks = [0] * len(runner.kv_cache_config.kv_cache_groups)
    step.kv_connector_metadata = empty_step_metadata(runner)
    if with_item:
        step.scheduled_encoder_inputs = {"tpu-warmup-0": [0]}
    grammar = None
    if sampling == FEATURES and not pooling:
        words = -(-runner.model_config.get_vocab_size() // 32)
        grammar = GrammarOutput(["tpu-warmup-0"], np.full((1, words), -1, dtype=np.int32))
    if worker.execute_model(step) is None:
        worker.sample_tokens(grammar)
    done = SchedulerOutput.make_empty()
    done.finished_req_ids = set(scheduled)
    done.free_encoder_mm_hashes = ["tpu-warmup-item"] if with_item else []
    done.kv_connector_metadata = empty_step_metadata(runner)
    worker.execute_model(done)
    # Under asynchronous scheduling, nothing carried over into the next step, whose requests
    # have the same ids.
    batch = runner.input_batch
    batch.prev_sampled_token_ids = batch.prev_req_id_to_index = None
    batch.sampled_token_ids_cpu = batch.async_copy_ready_event = None


def _any_stage(flag):
    """Whether `flag` holds on any pipeline stage: the stages pass activations to each other at
    every step, so they must walk the same steps."""
    group = get_pp_group()
    if group.world_size == 1:
        return flag
    flags = torch.tensor([int(flag)])
    torch.distributed.all_reduce(flags, op=torch.distributed.ReduceOp.MAX, group=group.cpu_group)
    return bool(flags.item())


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


def warm_up(worker):
    """Runs the walk (with vLLM's dummy LoRAs loaded when LoRA is on) and logs its size and
    time. A start whose walk is on record, with every program file it used still in the disk
    cache, skips it: each program then loads from disk when a step first needs it."""
    runner = worker.model_runner
    with runner.maybe_setup_dummy_loras(runner.lora_config):
        _walk(worker, runner)


def _walk(worker, runner):
    start = time.perf_counter()
    # The start-up's deferred work (the KV cache's zeros) as a program of its own, so that the
    # first step's programs are the same whether the walk runs or not.
    torch_pjrt.launch_pending()
    steps = _steps(runner)
    item = walk_item(runner) if runner.supports_mm_inputs else None
    record = _record_path(runner, steps)
    if record and not _any_stage(not _recorded_files_present(record)):
        # Only the first step: a step's first run after start-up (the KV cache never written)
        # has programs of its own, which the walk's first step compiled.
        _run_step(worker, *steps[0], first_block=1, item=item)
        logger.info("tpu warm-up: %d step shapes, all in the disk cache", len(steps))
        return
    since = time.time() - 1  # file times are the same clock; a second's margin
    compiled = []
    for _ in range(2):
        compiles = torch_pjrt.metrics.counters()["compiles"]
        for step in steps:
            _run_step(worker, *step, first_block=1, item=item)  # block 0: vLLM's null block
        # A second round when the first compiled: a step's programs can differ with the step
        # before it (which buffers they may reuse for outputs), and serving repeats shapes.
        # A round that only loaded from the disk cache leaves such variants to load on first
        # use.
        compiled.append(torch_pjrt.metrics.counters()["compiles"] - compiles)
        if not _any_stage(compiled[-1] > 0):
            break
    if record:
        _record(record, since)
    seconds = time.perf_counter() - start
    logger.info("tpu warm-up: %d steps in %.2f s, programs compiled per round: %s", len(steps),
                seconds, compiled)  # fmt: skip
