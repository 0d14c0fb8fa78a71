"""Padding sizes for serving: the shapes a step's programs are compiled for.

A size is padded up to the next power of two (at least `minimum`), and never past `limit`, which
is itself a bucket, so the number of programs grows with the logarithm of the largest size."""


def bucket(n: int, limit: int, minimum: int = 16) -> int:
    size = minimum
    while size < n:
        size *= 2
    return max(n, min(size, limit))
