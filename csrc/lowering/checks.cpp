// Device-side checks: the first invalid element of an operand, as (position, value).
#include "lowering/checks.h"

#include "lowering/common.h"

namespace torch_pjrt::lowering {
namespace {

using hlo::ElementType;

hlo::Value invalid(hlo::Builder& b, hlo::Value x, const graph::Attrs& attrs) {
  switch (attrs.ints[0]) {
    case kZero:
      return b.compare(hlo::Cmp::EQ, x, b.splat(0, x.type));
    case kOutsideUnit: {  // not (0 <= x <= 1): NaN compares false, so it is invalid
      hlo::Value inside = b.binary("and", b.compare(hlo::Cmp::GE, x, b.splat(0, x.type)),
                                   b.compare(hlo::Cmp::LE, x, b.splat(1, x.type)));
      return b.unary("not", inside);
    }
    default: {
      hlo::Value xi = to_type(b, x, ElementType::I64);
      const hlo::TensorType t = xi.type;
      hlo::Value lo = b.compare(hlo::Cmp::LT, xi, b.splat(static_cast<double>(attrs.ints[1]), t));
      hlo::Value hi = b.compare(hlo::Cmp::GE, xi, b.splat(static_cast<double>(attrs.ints[2]), t));
      hlo::Value bad = b.binary("or", lo, hi);
      for (size_t i = 3; i < attrs.ints.size(); ++i) {
        hlo::Value allowed =
            b.compare(hlo::Cmp::EQ, xi, b.splat(static_cast<double>(attrs.ints[i]), t));
        bad = b.binary("and", bad, b.unary("not", allowed));
      }
      return bad;
    }
  }
}

std::vector<hlo::Value> emit_check(hlo::Builder& b, const std::vector<hlo::Value>& in,
                                   const graph::Attrs& attrs, const std::vector<hlo::TensorType>&) {
  const int64_t n = in[0].type.num_elements();
  hlo::Value x = in[0].type.rank() == 1 ? in[0] : b.reshape(in[0], {n});
  hlo::Value bad = invalid(b, x, attrs);
  const hlo::TensorType index_type{ElementType::I64, {n}};
  hlo::Value iota = b.iota(index_type, 0);
  hlo::Value none = b.constant_int(n, ElementType::I64);
  // The first invalid position: the minimum over positions, n where valid.
  hlo::Value position = b.reduce(b.select(bad, iota, b.splat(static_cast<double>(n), index_type)),
                                 none, {0}, hlo::ReduceKind::Min);
  // Its value: the only term of a sum that is not zero.
  hlo::Value at = b.compare(hlo::Cmp::EQ, iota, b.broadcast_in_dim(position, {n}, {}));
  hlo::Value xi = to_type(b, x, ElementType::I64);
  hlo::Value value = b.reduce(b.select(at, xi, b.splat(0, index_type)),
                              b.constant_int(0, ElementType::I64), {0}, hlo::ReduceKind::Sum);
  hlo::Value found = b.compare(hlo::Cmp::LT, position, none);
  position = b.select(found, position, b.constant_int(-1, ElementType::I64));
  return {b.concatenate({b.reshape(position, {1}), b.reshape(value, {1})}, 0)};
}

}  // namespace

const graph::OpDef kCheck{"check", emit_check};

}  // namespace torch_pjrt::lowering
