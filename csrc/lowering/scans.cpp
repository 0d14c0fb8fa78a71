// Cumulative sum and product as a reduce_window whose window covers each element's prefix.
#include "lowering/scans.h"

#include <string>

#include "lowering/common.h"

namespace torch_pjrt::lowering {
namespace {

template <int Init>
std::vector<hlo::Value> emit_scan(hlo::Builder& b, const std::vector<hlo::Value>& in,
                                  const graph::Attrs& attrs,
                                  const std::vector<hlo::TensorType>& outs) {
  hlo::Value x = to_type(b, in[0], outs[0].dtype);
  if (x.type.rank() == 0 || x.type.num_elements() == 0) return {x};
  const int64_t dim = attrs.ints[0];
  const int64_t n = x.type.dims[dim];
  std::string window = "window_dimensions = array<i64: ";
  std::string padding = "padding = dense<[";
  for (int64_t d = 0; d < x.type.rank(); ++d) {
    window += (d ? ", " : "") + std::to_string(d == dim ? n : 1);
    padding += std::string(d ? ", " : "") + "[" + std::to_string(d == dim ? n - 1 : 0) + ", 0]";
  }
  padding += "]> : tensor<" + std::to_string(x.type.rank()) + "x2xi64>";
  hlo::Value init = b.splat(Init, hlo::TensorType{x.type.dtype, {}});
  const std::string combiner = b.combiner(x.type.dtype, Init == 0 ? "add" : "multiply");
  return b.op("reduce_window", {x, init}, {x.type}, window + ">, " + padding, combiner);
}

}  // namespace

const graph::OpDef kCumsum{"cumsum", emit_scan<0>};
const graph::OpDef kCumprod{"cumprod", emit_scan<1>};

}  // namespace torch_pjrt::lowering
