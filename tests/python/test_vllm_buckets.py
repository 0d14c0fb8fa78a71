"""The padded sizes of vLLM steps on "tpu" (torch_pjrt/vllm/buckets.py) and the start-up walk's
choice of steps (warmup._steps): its greedy steps meet every padded token count (the model's
programs) and every padded request count (the logits' and the sampler's), and for every request
count a step samples with every feature (a bitmask too), so serving compiles nothing after
start-up; the walk stays short at vLLM's default limits."""

import types

import pytest

pytest.importorskip("vllm")
from torch_pjrt.vllm.buckets import bucket, buckets
from torch_pjrt.vllm.warmup import FEATURES, GREEDY, _steps


def test_buckets_are_the_sizes_bucket_pads_to():
    assert buckets(256, 16) == [16, 32, 64, 128, 256]
    assert buckets(8, 1) == [1, 2, 4, 8]
    assert buckets(24, 16) == [16, 24]
    for limit, minimum in ((256, 16), (24, 16), (8, 1), (5, 1)):
        assert {bucket(n, limit, minimum) for n in range(1, limit + 1)} == set(
            buckets(limit, minimum)
        )


@pytest.mark.parametrize(
    "max_reqs,max_tokens,max_len",
    [
        (8, 256, 256),
        (32, 256, 256),
        (256, 8192, 8192),
        (4, 16, 64),
        (200, 150, 1024),
        (256, 2048, 256),
        (2, 2048, 100),
    ],
)
@pytest.mark.parametrize("pooling", [False, True])
def test_the_walk_covers_every_step(max_reqs, max_tokens, max_len, pooling):
    runner = types.SimpleNamespace(max_num_reqs=max_reqs, max_num_tokens=max_tokens,
                                   max_model_len=max_len, is_pooling_model=pooling)  # fmt: skip
    steps = _steps(runner)
    greedy = [(bucket(sum(q), max_tokens), bucket(len(q), max_reqs, 1))
              for q, _, s in steps if s == GREEDY]  # fmt: skip
    # Every token count a step can have (its requests each fit the model) pads to one walked.
    tokens = min(max_tokens, max_reqs * (max_len - 1))
    assert {t for t, _ in greedy} == {bucket(t, max_tokens) for t in range(1, tokens + 1)}
    # Every request count a step can have (a token each at least) pads to a walked bucket.
    reachable = {bucket(n, max_reqs, 1) for n in range(1, min(max_reqs, max_tokens) + 1)}
    assert {r for _, r in greedy} == reachable
    walked = [bucket(len(q), max_reqs, 1) for q, _, s in steps if s == FEATURES]
    # A pooling model samples nothing, and pools whole prompts.
    assert sorted(walked) == ([] if pooling else sorted(reachable))
    for queries, context, _ in steps:
        assert sum(queries) <= max_tokens and len(queries) <= max_reqs
        assert all(0 < q <= c < max_len for q, c in zip(queries, context))
        assert not pooling or queries == context


def test_the_walk_at_vllm_defaults_is_short():
    runner = types.SimpleNamespace(max_num_reqs=256, max_num_tokens=8192, max_model_len=8192,
                                   is_pooling_model=False)  # fmt: skip
    # 10 token buckets (16 ... 8,192) beside 9 request buckets (1 ... 256), then 9.
    assert len(_steps(runner)) == 19
