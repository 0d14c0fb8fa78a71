"""The padded sizes of vLLM steps on "tpu" (torch_pjrt/vllm/buckets.py) and the start-up walk's
choice of steps (warmup._steps): every step the scheduler's limits allow pads to a shape the walk
runs, so serving compiles nothing after start-up."""

import types

import pytest

pytest.importorskip("vllm")
from torch_pjrt.vllm.buckets import WHOLE_CONTEXT_TOKENS, attention_sizes, bucket, buckets
from torch_pjrt.vllm.warmup import _steps


def test_buckets_are_the_sizes_bucket_pads_to():
    assert buckets(256, 16) == [16, 32, 64, 128, 256]
    assert buckets(8, 1) == [1, 2, 4, 8]
    assert buckets(24, 16) == [16, 24]
    for limit, minimum in ((256, 16), (24, 16), (8, 1), (5, 1)):
        assert {bucket(n, limit, minimum) for n in range(1, limit + 1)} == set(
            buckets(limit, minimum)
        )


def test_attention_sizes():
    limits = (8, 16, 16)  # 8 requests, 16 blocks of 16 tokens: the whole context
    assert attention_sizes(3, 16, 1, 2, limits) == (4, 1, 16)  # decoding
    assert attention_sizes(3, 32, 20, 2, limits) == (4, 32, 16)  # a longer query: all tokens
    long = (8, 512, 16)  # 8,192-token model: blocks in powers of two from 2,048 tokens
    first = WHOLE_CONTEXT_TOKENS // 16
    assert attention_sizes(1, 16, 1, 3, long) == (1, 1, first)
    assert attention_sizes(1, 16, 1, first + 1, long) == (1, 1, 2 * first)
    assert attention_sizes(1, 16, 1, 500, long) == (1, 1, 512)


@pytest.mark.parametrize(
    "max_reqs,max_tokens,max_len", [(8, 256, 256), (32, 256, 256), (4, 512, 8192)]
)
def test_the_walk_covers_every_step(max_reqs, max_tokens, max_len):
    runner = types.SimpleNamespace(max_num_reqs=max_reqs, max_num_tokens=max_tokens,
                                   max_model_len=max_len,
                                   cache_config=types.SimpleNamespace(block_size=16))  # fmt: skip
    limits = (max_reqs, -(-max_len // 16), 16)

    def shape(queries, context_blocks):
        padded = bucket(sum(queries), max_tokens)
        return (
            padded,
            *attention_sizes(len(queries), padded, max(queries), context_blocks, limits),
        )

    walked = [shape(q, -(-max(c) // 16)) for q, c in _steps(runner)]
    assert len(walked) == len(set(walked))  # one step per shape
    for n in range(1, max_reqs + 1):
        for total in range(n, max_tokens + 1):
            queries = [total - n + 1] + [1] * (n - 1)
            for blocks in sorted({1, limits[1] // 2 + 1, limits[1]}):
                assert shape(queries, blocks) in walked, (n, total, blocks)
