// Reductions over a set of dimensions: sum, mean, amax, amin.
#include <cmath>
#include <limits>

#include "lowering/common.h"
#include "lowering/reductions.h"

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

// The identity of max (the type's lowest value) or min (its highest) as a rank-0 constant.
hlo::Value identity(hlo::Builder& b, hlo::ReduceKind kind, hlo::ElementType t) {
  const bool max = kind == hlo::ReduceKind::Max;
  using hlo::ElementType;
  switch (t) {
    case ElementType::Bool:
      return b.constant_int(max ? 0 : 1, t);
    case ElementType::U8:
      return b.constant_int(max ? 0 : 255, t);
    case ElementType::I8:
      return b.constant_int(max ? INT8_MIN : INT8_MAX, t);
    case ElementType::I16:
      return b.constant_int(max ? INT16_MIN : INT16_MAX, t);
    case ElementType::I32:
      return b.constant_int(max ? INT32_MIN : INT32_MAX, t);
    case ElementType::I64:
      return b.constant_int(max ? INT64_MIN : INT64_MAX, t);
    default: {
      const double inf = std::numeric_limits<double>::infinity();
      return b.constant_float(max ? -inf : inf, t);
    }
  }
}

// Max/min with NaN propagation: XLA's maximum/minimum may drop NaNs, so NaN-ness is reduced
// separately and selected back in.
template <hlo::ReduceKind Kind>
std::vector<hlo::Value> emit_extremum(hlo::Builder& b, const std::vector<hlo::Value>& in,
                                      const graph::Attrs& attrs,
                                      const std::vector<hlo::TensorType>& outs) {
  const hlo::TensorType& out = outs[0];
  hlo::Value x = to_type(b, in[0], out.dtype);
  hlo::Value r = b.reduce(x, identity(b, Kind, out.dtype), attrs.ints, Kind);
  if (runtime::is_floating(out.dtype)) {
    hlo::Value is_nan = b.compare(hlo::Cmp::NE, x, x);
    hlo::Value any_nan = b.reduce(is_nan, b.splat(0, hlo::TensorType{hlo::ElementType::Bool, {}}),
                                  attrs.ints, hlo::ReduceKind::Or);
    hlo::Value nan = b.splat(std::numeric_limits<double>::quiet_NaN(), r.type);
    r = b.select(any_nan, nan, r);
  }
  return {r.type.dims == out.dims ? r : b.reshape(r, out.dims)};
}

}  // namespace

const graph::OpDef kAmax{"amax", emit_extremum<hlo::ReduceKind::Max>};
const graph::OpDef kAmin{"amin", emit_extremum<hlo::ReduceKind::Min>};
const graph::OpDef kSum{"sum", emit_sum};
const graph::OpDef kMean{"mean", emit_mean};

}  // namespace torch_pjrt::lowering
