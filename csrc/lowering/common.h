// Helpers shared by the lowering files: type conversion and PyTorch-style broadcasting.
#pragma once

#include <vector>

#include "hlo/builder.h"

namespace torch_pjrt::lowering {

hlo::Value to_type(hlo::Builder& b, hlo::Value v, hlo::ElementType t);
// Broadcasts `v` to `dims`, aligning trailing dimensions as PyTorch does.
hlo::Value broadcast_to(hlo::Builder& b, hlo::Value v, const std::vector<int64_t>& dims);
// A rank-0 constant of type `t` broadcast to `dims`.
hlo::Value full(hlo::Builder& b, double value, hlo::ElementType t,
                const std::vector<int64_t>& dims);

// The type PyTorch computes in for `t`: float32 for float16/bfloat16, else `t` itself.
hlo::ElementType opmath_type(hlo::ElementType t);
// The precision an op recorded as an integer attribute (hlo::Precision's value); kDefault for -1,
// which ops recorded without one use.
hlo::Precision precision_from_attr(int64_t value);
// Sum of `x` over `dims` (removed from the result).
hlo::Value reduce_sum(hlo::Builder& b, hlo::Value x, const std::vector<int64_t>& dims);

}  // namespace torch_pjrt::lowering
