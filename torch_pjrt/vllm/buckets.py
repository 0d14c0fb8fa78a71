"""Padding sizes for serving: the shapes a step's programs are compiled for.

A size is padded up to the next power of two (at least `minimum`), and never past `limit`, which
is itself a bucket, so the number of programs grows with the logarithm of the largest size. A
step's model forward depends on its padded token count only (the attention reads the runner's
whole buffers), its logits and sampling on its padded request count only."""


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
