// Lowerings of random ops. Every one takes as operand 0 the generator state, an i64[2] tensor
// {seed, first block}, and draws 32-bit words from the Philox4x32-10 stream keyed by the seed,
// block counter = first block + i; `words()` tells how many words an op consumes, so the caller
// can advance the generator offset past them.
#pragma once

#include "graph/node.h"

namespace torch_pjrt::lowering {

// Uniform in [floats[0], floats[1]) for a floating output.
extern const graph::OpDef kUniform;
// Normal with mean floats[0] and standard deviation floats[1] (Box-Muller), floating output.
extern const graph::OpDef kNormal;
// 1 with probability p, else 0, in the output type: p = operand 1 (any type, broadcastable to the
// output dims) when present, else floats[0].
extern const graph::OpDef kBernoulli;
// Integers ints[0] + (bits mod ints[1]) with the range ints[1] read as uint64 (0 means 2^64),
// converted to the output type.
extern const graph::OpDef kRandomInt;
// Exponential with rate floats[0], floating output.
extern const graph::OpDef kExponential;
// exp of a normal with mean floats[0] and standard deviation floats[1], floating output.
extern const graph::OpDef kLogNormal;
// Cauchy with median floats[0] and scale floats[1], floating output.
extern const graph::OpDef kCauchy;
// Geometric (trials until the first success, >= 1) with success probability floats[0].
extern const graph::OpDef kGeometric;
// A random permutation of 0..n-1 (sorting random keys), integer or floating output of dims {n}.
extern const graph::OpDef kRandperm;
// Dropout of operand 1 with probability floats[0]: outputs (input * mask / (1 - p), bool mask).
extern const graph::OpDef kDropout;
// Not random: operand 0 (grad) * operand 1 (bool mask) * floats[0], in grad's type.
extern const graph::OpDef kDropoutBackward;

// Number of 32-bit words a random op above consumes for outputs `outs` with `attrs`.
int64_t words(const graph::OpDef& op, const graph::Attrs& attrs,
              const std::vector<hlo::TensorType>& outs);

}  // namespace torch_pjrt::lowering
