// Scan lowerings: cumulative sums, products, maxima/minima and log-sum-exp along one dimension.
#pragma once

#include "graph/node.h"

namespace torch_pjrt::lowering {

// Inclusive cumulative sum / product of operand 0 (converted to the output type; float16/bfloat16
// accumulate in float32 and round each output once, as PyTorch's CPU does) along dim ints[0].
extern const graph::OpDef kCumsum;
extern const graph::OpDef kCumprod;
// Running maximum / minimum of operand 0 along dim ints[0]: (values, int64 indices). As PyTorch's
// CPU: an element equal to the running value takes over its index, and NaN propagates, each later
// NaN taking over the index.
extern const graph::OpDef kCummax;
extern const graph::OpDef kCummin;
// log(sum(exp(x))) of the prefixes of operand 0 along dim ints[0] (float16/bfloat16 in float32).
extern const graph::OpDef kLogcumsumexp;

}  // namespace torch_pjrt::lowering
