"""Padding sizes for serving: the shapes a step's programs are compiled for.

A size is padded up to the next power of two (at least `minimum`), and never past `limit`, which
is itself a bucket, so the number of programs grows with the logarithm of the largest size.
The attention pads further, so that a step's programs depend on few sizes: the longest query is
1 in a step of single-token queries (decoding) and the padded token count otherwise, and the
context is the model's whole length up to `WHOLE_CONTEXT_TOKENS` tokens."""

# Up to this many tokens a request's context is read whole (one size for every step), beyond it
# in power-of-two numbers of blocks from this many tokens' worth.
WHOLE_CONTEXT_TOKENS = 2048


def bucket(n: int, limit: int, minimum: int = 16) -> int:
    size = minimum
    while size < n:
        size *= 2
    return max(n, min(size, limit))


def buckets(limit: int, minimum: int) -> list[int]:
    """Every size `bucket` pads to, for sizes from 1 to `limit`."""
    sizes = []
    size = minimum
    while size < limit:
        sizes.append(size)
        size *= 2
    return [*sizes, limit]


def attention_sizes(num_reqs, padded_tokens, longest_query, context_blocks, limits):
    """(requests, longest query, blocks per request) of a step's attention, padded; `limits` is
    (most requests, most blocks per request, tokens per block)."""
    max_reqs, max_blocks, block_size = limits
    reqs = bucket(num_reqs, max_reqs, minimum=1)
    longest = 1 if longest_query == 1 else padded_tokens
    if max_blocks * block_size <= WHOLE_CONTEXT_TOKENS:
        blocks = max_blocks
    else:
        blocks = bucket(context_blocks, max_blocks, minimum=WHOLE_CONTEXT_TOKENS // block_size)
    return reqs, longest, blocks
