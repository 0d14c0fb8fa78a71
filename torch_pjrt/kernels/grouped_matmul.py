"""Grouped matmul in JAX, the experts' matmul of a mixture-of-experts layer: `lhs` [m, k] with its
rows sorted by group, `rhs` [groups, k, n] (or [groups, n, k] with `transpose_rhs`), and
`group_sizes` [groups] (int32): row i of group g gives lhs[i] @ rhs[g]; the rows past
sum(group_sizes) give zeros.

Two forms of the same inputs:
- `megablox`: JAX's Pallas TPU kernel (`jax.experimental.pallas.ops.tpu.megablox.gmm`), whose work
  follows the group sizes (tiles of rows, each against its group's weights only). For libtpu; in
  Pallas's interpret mode it lowers to plain HLO, which is how its arguments are checked elsewhere.
- `portable`: `jax.lax.ragged_dot_general`, StableHLO for every plugin. Outside TPUs JAX expands it
  into a contraction over every group with the other groups' rows masked to zero: the right
  result with the work of the dense form.
"""

import jax
import jax.numpy as jnp

# megablox tiles at most this many rows, contracted and output columns at once.
TILE = 128


def portable(lhs: jax.Array, rhs: jax.Array, group_sizes: jax.Array,
             transpose_rhs: bool = False) -> jax.Array:  # fmt: skip
    numbers = jax.lax.RaggedDotDimensionNumbers(
        dot_dimension_numbers=(([1], [2 if transpose_rhs else 1]), ([], [])),
        lhs_ragged_dimensions=[0],
        rhs_group_dimensions=[0],
    )
    return jax.lax.ragged_dot_general(lhs, rhs, group_sizes, numbers,
                                      preferred_element_type=lhs.dtype)  # fmt: skip


def tiling(m, k, n):
    """megablox's (rows, k, n) tile sizes: up to TILE each; a dimension smaller than that is one
    tile of its whole size (a TPU block is a multiple of (8, 128) or the whole dimension). Rows
    are a multiple of 16 (bfloat16's sublanes); the kernel needs m divisible by them, so
    `megablox` pads the rows."""
    return (min(TILE, -(-m // 16) * 16), min(TILE, k), min(TILE, n))


def megablox(lhs: jax.Array, rhs: jax.Array, group_sizes: jax.Array, transpose_rhs: bool = False,
             interpret: bool = False) -> jax.Array:  # fmt: skip
    from jax.experimental.pallas.ops.tpu.megablox import gmm

    m, k = lhs.shape
    n = rhs.shape[1 if transpose_rhs else 2]
    tm, tk, tn = tiling(m, k, n)
    padded = jnp.pad(lhs, ((0, -m % tm), (0, 0)))
    out = gmm(padded, rhs, group_sizes, lhs.dtype, (tm, tk, tn), transpose_rhs=transpose_rhs,
              interpret=interpret)[:m]  # fmt: skip
    # The kernel leaves the rows past the groups' unwritten.
    return jnp.where((jnp.arange(m) < group_sizes.sum())[:, None], out, 0)
