// Conversion and broadcasting helpers for lowerings.
#include "lowering/common.h"

namespace torch_pjrt::lowering {

hlo::Value to_type(hlo::Builder& b, hlo::Value v, hlo::ElementType t) {
  return v.type.dtype == t ? v : b.convert(v, t);
}

hlo::Value broadcast_to(hlo::Builder& b, hlo::Value v, const std::vector<int64_t>& dims) {
  if (v.type.dims == dims) return v;
  const int64_t lead = static_cast<int64_t>(dims.size()) - v.type.rank();
  std::vector<int64_t> mapping;
  for (int64_t i = 0; i < v.type.rank(); ++i) mapping.push_back(lead + i);
  return b.broadcast_in_dim(v, dims, mapping);
}

hlo::Value full(hlo::Builder& b, double value, hlo::ElementType t,
                const std::vector<int64_t>& dims) {
  return b.splat(value, hlo::TensorType{t, dims});
}

hlo::ElementType opmath_type(hlo::ElementType t) {
  return t == hlo::ElementType::F16 || t == hlo::ElementType::BF16 ? hlo::ElementType::F32 : t;
}

hlo::Precision precision_from_attr(int64_t value) {
  switch (value) {
    case static_cast<int64_t>(hlo::Precision::kHigh):
      return hlo::Precision::kHigh;
    case static_cast<int64_t>(hlo::Precision::kHighest):
      return hlo::Precision::kHighest;
    default:
      return hlo::Precision::kDefault;
  }
}

hlo::Value reduce_sum(hlo::Builder& b, hlo::Value x, const std::vector<int64_t>& dims) {
  return b.reduce(x, b.splat(0, hlo::TensorType{x.type.dtype, {}}), dims, hlo::ReduceKind::Sum);
}

}  // namespace torch_pjrt::lowering
