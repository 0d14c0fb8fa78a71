// Lowerings that create values: constant fills and element type conversion.
#include "lowering/creation.h"

#include "lowering/common.h"

namespace torch_pjrt::lowering {
namespace {

std::vector<hlo::Value> emit_fill(hlo::Builder& b, const std::vector<hlo::Value>&,
                                  const graph::Attrs& attrs,
                                  const std::vector<hlo::TensorType>& outs) {
  if (attrs.ints.empty()) return {b.splat(attrs.floats.at(0), outs[0])};
  hlo::Value v = b.constant_int(attrs.ints[0], outs[0].dtype);
  return {outs[0].rank() == 0 ? v : b.broadcast_in_dim(v, outs[0].dims, {})};
}

std::vector<hlo::Value> emit_convert(hlo::Builder& b, const std::vector<hlo::Value>& in,
                                     const graph::Attrs&,
                                     const std::vector<hlo::TensorType>& outs) {
  return {broadcast_to(b, to_type(b, in[0], outs[0].dtype), outs[0].dims)};
}

}  // namespace

const graph::OpDef kFill{"fill", emit_fill};
const graph::OpDef kConvert{"convert", emit_convert};

}  // namespace torch_pjrt::lowering
