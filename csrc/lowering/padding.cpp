// Reflection and replication padding: each output position reads one input position per axis.
#include "lowering/padding.h"

#include <algorithm>

#include "lowering/common.h"
#include "lowering/pooling.h"

namespace torch_pjrt::lowering {
namespace {

using hlo::ElementType;
using hlo::TensorType;

// Source positions along each spatial axis of `in` for the output `out`.
AxisIndices pad_indices(const graph::Attrs& attrs, const TensorType& in, const TensorType& out) {
  const int64_t nd = attrs.ints.at(0), mode = attrs.ints.at(1);
  AxisIndices index;
  for (int64_t i = 0; i < nd; ++i) {
    const int64_t n = in.dims[in.rank() - nd + i], before = attrs.ints.at(2 + i);
    std::vector<int64_t> axis;
    for (int64_t o = 0; o < out.dims[out.rank() - nd + i]; ++o) {
      int64_t j = o - before;
      if (mode == kPadReplicate) {
        j = std::clamp<int64_t>(j, 0, n - 1);
      } else {
        if (j < 0) j = -j;
        if (j >= n) j = 2 * (n - 1) - j;
      }
      axis.push_back(j);
    }
    index.push_back(std::move(axis));
  }
  return index;
}

std::vector<hlo::Value> emit_pad(hlo::Builder& b, const std::vector<hlo::Value>& in,
                                 const graph::Attrs& attrs, const std::vector<TensorType>& outs) {
  hlo::Value x = to_type(b, in[0], outs[0].dtype);
  return {gather_spatial(b, x, pad_indices(attrs, x.type, outs[0]))};
}

// Gradients accumulate in PyTorch's opmath type (float32 for float16/bfloat16).
std::vector<hlo::Value> emit_pad_backward(hlo::Builder& b, const std::vector<hlo::Value>& in,
                                          const graph::Attrs& attrs,
                                          const std::vector<TensorType>& outs) {
  const ElementType ct = opmath_type(outs[0].dtype);
  hlo::Value g = to_type(b, in[0], ct);
  const TensorType acc{ct, outs[0].dims};
  hlo::Value r = scatter_add_spatial(b, acc, {pad_indices(attrs, acc, g.type)}, {g});
  return {to_type(b, r, outs[0].dtype)};
}

}  // namespace

const graph::OpDef kIndexPad{"index_pad", emit_pad};
const graph::OpDef kIndexPadBackward{"index_pad_backward", emit_pad_backward};

}  // namespace torch_pjrt::lowering
