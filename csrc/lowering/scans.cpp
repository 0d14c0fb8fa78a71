// Scans as log-step (Hillis-Steele) scans: ceil(log2 n) combines of each prefix value with the one
// k places earlier, for an associative combine of a tuple of values.
#include "lowering/scans.h"

#include <cmath>
#include <functional>

#include "lowering/common.h"
#include "lowering/elementwise.h"
#include "lowering/special_math.h"

namespace torch_pjrt::lowering {
namespace {

using hlo::Cmp;
using hlo::Value;
using Values = std::vector<Value>;
// combine(earlier, later) of two tuples of the same types and dims.
using Combine = std::function<Values(const Values& earlier, const Values& later)>;

// Inclusive scan of `xs` (one type and dims each, rank >= 1) along `dim`; positions before the
// start read `pad` (one constant per tuple element), which `combine` must treat as an identity.
Values scan(hlo::Builder& b, Values xs, int64_t dim, const std::vector<double>& pad,
            const Combine& combine) {
  const std::vector<int64_t> dims = xs[0].type.dims;
  const int64_t n = dims[dim];
  const std::vector<int64_t> start(dims.size(), 0), strides(dims.size(), 1);
  for (int64_t k = 1; k < n; k *= 2) {
    std::vector<int64_t> limit = dims, pad_dims = dims;
    limit[dim] = n - k;
    pad_dims[dim] = k;
    Values shifted;
    for (size_t j = 0; j < xs.size(); ++j)
      shifted.push_back(b.concatenate(
          {full(b, pad[j], xs[j].type.dtype, pad_dims), b.slice(xs[j], start, limit, strides)},
          dim));
    xs = combine(shifted, xs);
  }
  return xs;
}

template <int Identity>
std::vector<Value> emit_arith(hlo::Builder& b, const std::vector<Value>& in,
                              const graph::Attrs& attrs, const std::vector<hlo::TensorType>& outs) {
  const char* op = Identity == 0 ? "add" : "multiply";
  Value x = to_type(b, in[0], opmath_type(outs[0].dtype));
  if (x.type.rank() > 0)
    x = scan(b, {x}, attrs.ints[0], {Identity},
             [&](const Values& e, const Values& l) { return Values{b.binary(op, e[0], l[0])}; })[0];
  return {to_type(b, x, outs[0].dtype)};
}

// (value, index) pairs; the later one wins when it is NaN, or when it is `Wins` (GE for cummax) of
// the earlier non-NaN value. Padding has index -1 and always loses.
template <Cmp Wins>
std::vector<Value> emit_cumextreme(hlo::Builder& b, const std::vector<Value>& in,
                                   const graph::Attrs& attrs, const std::vector<hlo::TensorType>&) {
  Value x = in[0];
  const hlo::TensorType index_type{hlo::ElementType::I64, x.type.dims};
  if (x.type.rank() == 0) return {x, b.splat(0, index_type)};
  const int64_t dim = attrs.ints[0];
  const Math m{b, x.type.dtype, x.type.dims};
  const bool floating = runtime::is_floating(x.type.dtype);
  auto combine = [&](const Values& e, const Values& l) {
    Value later = m.cmp(Wins, l[0], e[0]);
    if (floating)
      later = b.binary("or", m.isnan(l[0]), b.binary("and", b.unary("not", m.isnan(e[0])), later));
    later =
        b.binary("or", later, b.compare(Cmp::LT, e[1], full(b, 0, hlo::ElementType::I64, m.dims)));
    return Values{m.sel(later, l[0], e[0]), b.select(later, l[1], e[1])};
  };
  return scan(b, {x, b.iota(index_type, dim)}, dim, {0, -1}, combine);
}

std::vector<Value> emit_logcumsumexp(hlo::Builder& b, const std::vector<Value>& in,
                                     const graph::Attrs& attrs,
                                     const std::vector<hlo::TensorType>& outs) {
  const hlo::ElementType t = opmath_type(outs[0].dtype);
  Value x = to_type(b, in[0], t);
  if (x.type.rank() > 0) {
    const Math m{b, t, x.type.dims};
    x = scan(b, {x}, attrs.ints[0], {-INFINITY}, [&](const Values& e, const Values& l) {
      return Values{log_add_exp(m, e[0], l[0])};
    })[0];
  }
  return {to_type(b, x, outs[0].dtype)};
}

}  // namespace

const graph::OpDef kCumsum{"cumsum", emit_arith<0>};
const graph::OpDef kCumprod{"cumprod", emit_arith<1>};
const graph::OpDef kCummax{"cummax", emit_cumextreme<Cmp::GE>};
const graph::OpDef kCummin{"cummin", emit_cumextreme<Cmp::LE>};
const graph::OpDef kLogcumsumexp{"logcumsumexp", emit_logcumsumexp};

}  // namespace torch_pjrt::lowering
