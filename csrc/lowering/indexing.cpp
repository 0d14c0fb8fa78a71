// Indexing lowerings: gathering elements at computed positions.
#include "lowering/indexing.h"

namespace torch_pjrt::lowering {
namespace {

std::vector<hlo::Value> emit_take(hlo::Builder& b, const std::vector<hlo::Value>& in,
                                  const graph::Attrs&, const std::vector<hlo::TensorType>&) {
  hlo::Value flat = in[0].type.rank() == 1 ? in[0] : b.reshape(in[0], {in[0].type.num_elements()});
  return {b.gather_1d(flat, in[1])};
}

}  // namespace

const graph::OpDef kTake{"take", emit_take};

}  // namespace torch_pjrt::lowering
