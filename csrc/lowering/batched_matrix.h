// Helpers for the loop-based matrix lowerings (decompositions.cpp, spectral.cpp): broadcasting
// batched rows/columns back to matrices, dynamic single-index slices and conjugation.
#pragma once

#include <vector>

#include "hlo/builder.h"

namespace torch_pjrt::lowering {

// `v` [batch..., rest of v] broadcast to `dims`, its batch dims leading and its other dims at
// `at` (the positions in `dims` of v's trailing dims).
hlo::Value expand(hlo::Builder& b, hlo::Value v, const std::vector<int64_t>& dims,
                  std::vector<int64_t> at);
// The rank-0 `s` broadcast to `dims`.
hlo::Value scalar_to(hlo::Builder& b, hlo::Value s, const std::vector<int64_t>& dims);
// x[..., i] along `dim` (a scalar i32 index) with that dim removed.
hlo::Value take(hlo::Builder& b, hlo::Value x, int64_t dim, hlo::Value i);
// The complex conjugate; `x` itself when real.
hlo::Value conj(hlo::Builder& b, hlo::Value x);

}  // namespace torch_pjrt::lowering
