// Reductions over a set of dimensions: sum and mean.
#include "lowering/common.h"
#include "lowering/ops.h"

namespace torch_pjrt::lowering {
namespace {

hlo::Value sum(hlo::Builder& b, hlo::Value x, const graph::Attrs& attrs,
               const hlo::TensorType& out) {
  x = to_type(b, x, out.dtype);
  hlo::Value reduced =
      b.reduce(x, b.splat(0, hlo::TensorType{out.dtype, {}}), attrs.ints, hlo::ReduceKind::Sum);
  return reduced.type.dims == out.dims ? reduced : b.reshape(reduced, out.dims);
}

std::vector<hlo::Value> emit_sum(hlo::Builder& b, const std::vector<hlo::Value>& in,
                                 const graph::Attrs& attrs,
                                 const std::vector<hlo::TensorType>& outs) {
  return {sum(b, in[0], attrs, outs[0])};
}

std::vector<hlo::Value> emit_mean(hlo::Builder& b, const std::vector<hlo::Value>& in,
                                  const graph::Attrs& attrs,
                                  const std::vector<hlo::TensorType>& outs) {
  int64_t count = 1;
  for (int64_t d : attrs.ints) count *= in[0].type.dims[d];
  hlo::Value total = sum(b, in[0], attrs, outs[0]);
  return {
      b.binary("divide", total, full(b, static_cast<double>(count), outs[0].dtype, outs[0].dims))};
}

}  // namespace

const graph::OpDef kSum{"sum", emit_sum};
const graph::OpDef kMean{"mean", emit_mean};

}  // namespace torch_pjrt::lowering
