// Reductions over a set of dimensions: sum, mean, prod, amax/amin, max/min with indices, var/std,
// vector norms, logsumexp, all/any, and softmax/log_softmax (and _safe_softmax) with their
// backward.
#include "lowering/reductions.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "lowering/common.h"

namespace torch_pjrt::lowering {
namespace {

// The sum in opmath type (float32 for float16/bfloat16, as PyTorch accumulates), shaped as `out`.
hlo::Value sum(hlo::Builder& b, hlo::Value x, const graph::Attrs& attrs,
               const hlo::TensorType& out) {
  hlo::Value reduced = reduce_sum(b, to_type(b, x, opmath_type(out.dtype)), attrs.ints);
  return reduced.type.dims == out.dims ? reduced : b.reshape(reduced, out.dims);
}

std::vector<hlo::Value> emit_sum(hlo::Builder& b, const std::vector<hlo::Value>& in,
                                 const graph::Attrs& attrs,
                                 const std::vector<hlo::TensorType>& outs) {
  return {to_type(b, sum(b, in[0], attrs, outs[0]), outs[0].dtype)};
}

std::vector<hlo::Value> emit_mean(hlo::Builder& b, const std::vector<hlo::Value>& in,
                                  const graph::Attrs& attrs,
                                  const std::vector<hlo::TensorType>& outs) {
  int64_t count = 1;
  for (int64_t d : attrs.ints) count *= in[0].type.dims[d];
  hlo::Value total = sum(b, in[0], attrs, outs[0]);
  hlo::Value mean = b.binary("divide", total,
                             full(b, static_cast<double>(count), total.type.dtype, outs[0].dims));
  return {to_type(b, mean, outs[0].dtype)};
}

// The identity of max (the type's lowest value) or min (its highest) as a rank-0 constant.
hlo::Value identity(hlo::Builder& b, hlo::ReduceKind kind, hlo::ElementType t) {
  const bool max = kind == hlo::ReduceKind::Max;
  using hlo::ElementType;
  switch (t) {
    case ElementType::Bool:
      return b.constant_int(max ? 0 : 1, t);
    case ElementType::U8:
    case ElementType::U16:
    case ElementType::U32:
    case ElementType::U64:  // the highest value has all bits set: -1 cast to the type
      return b.constant_int(max ? 0 : -1, t);
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

// Brings a value reduced over `dims` back to `full_dims` (reduced dims broadcast).
hlo::Value expand(hlo::Builder& b, hlo::Value r, const std::vector<int64_t>& dims,
                  const std::vector<int64_t>& full_dims) {
  std::vector<int64_t> mapping;
  for (int64_t d = 0; d < static_cast<int64_t>(full_dims.size()); ++d) {
    if (std::find(dims.begin(), dims.end(), d) == dims.end()) mapping.push_back(d);
  }
  return b.broadcast_in_dim(r, full_dims, mapping);
}

hlo::Value shaped(hlo::Builder& b, hlo::Value r, const hlo::TensorType& out) {
  return r.type.dims == out.dims ? r : b.reshape(r, out.dims);
}

int64_t count(const hlo::Value& x, const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= x.type.dims[d];
  return n;
}

// Max or min over `dims`; NaN wins, as in PyTorch.
hlo::Value reduce_extremum(hlo::Builder& b, hlo::ReduceKind kind, hlo::Value x,
                           const std::vector<int64_t>& dims) {
  hlo::Value r = b.reduce(x, identity(b, kind, x.type.dtype), dims, kind);
  if (!runtime::is_floating(x.type.dtype)) return r;
  hlo::Value is_nan = b.compare(hlo::Cmp::NE, x, x);
  hlo::Value any_nan = b.reduce(is_nan, b.splat(0, hlo::TensorType{hlo::ElementType::Bool, {}}),
                                dims, hlo::ReduceKind::Or);
  return b.select(any_nan, b.splat(std::numeric_limits<double>::quiet_NaN(), r.type), r);
}

// Max/min with NaN propagation: XLA's maximum/minimum may drop NaNs, so NaN-ness is reduced
// separately and selected back in.
template <hlo::ReduceKind Kind>
std::vector<hlo::Value> emit_extremum(hlo::Builder& b, const std::vector<hlo::Value>& in,
                                      const graph::Attrs& attrs,
                                      const std::vector<hlo::TensorType>& outs) {
  hlo::Value x = to_type(b, in[0], outs[0].dtype);
  return {shaped(b, reduce_extremum(b, Kind, x, attrs.ints), outs[0])};
}

std::vector<hlo::Value> emit_prod(hlo::Builder& b, const std::vector<hlo::Value>& in,
                                  const graph::Attrs& attrs,
                                  const std::vector<hlo::TensorType>& outs) {
  hlo::Value x = to_type(b, in[0], outs[0].dtype);
  hlo::Value r =
      b.reduce(x, b.splat(1, hlo::TensorType{x.type.dtype, {}}), attrs.ints, hlo::ReduceKind::Prod);
  return {shaped(b, r, outs[0])};
}

// Values and int64 indices of the max/min along one dimension (ints {dim}; no ints: over the
// flattened input). The index is the first among ties; a NaN wins, at its first position.
template <hlo::ReduceKind Kind>
std::vector<hlo::Value> emit_arg_extremum(hlo::Builder& b, const std::vector<hlo::Value>& in,
                                          const graph::Attrs& attrs,
                                          const std::vector<hlo::TensorType>& outs) {
  hlo::Value x = in[0];
  if (attrs.ints.empty()) x = b.reshape(x, {x.type.num_elements()});
  const std::vector<int64_t> dims{attrs.ints.empty() ? 0 : attrs.ints[0]};
  hlo::Value m = reduce_extremum(b, Kind, x, dims);
  hlo::Value mb = expand(b, m, dims, x.type.dims);
  hlo::Value hit = b.compare(hlo::Cmp::EQ, x, mb);
  if (runtime::is_floating(x.type.dtype)) {
    hit = b.binary("or", hit,
                   b.binary("and", b.compare(hlo::Cmp::NE, x, x), b.compare(hlo::Cmp::NE, mb, mb)));
  }
  const hlo::TensorType index_type{hlo::ElementType::I64, x.type.dims};
  // Misses get the dimension's size, above every real index.
  hlo::Value candidates = b.select(hit, b.iota(index_type, dims[0]),
                                   b.splat(static_cast<double>(x.type.dims[dims[0]]), index_type));
  hlo::Value index = b.reduce(candidates, identity(b, hlo::ReduceKind::Min, hlo::ElementType::I64),
                              dims, hlo::ReduceKind::Min);
  if (outs.size() == 1) return {shaped(b, index, outs[0])};
  return {shaped(b, m, outs[0]), shaped(b, index, outs[1])};
}

// var (or std) over dims ints with correction floats[0]; a second output receives the mean.
// float16/bfloat16 compute in float32 and round once, as PyTorch's CPU does.
template <bool Std>
std::vector<hlo::Value> emit_var(hlo::Builder& b, const std::vector<hlo::Value>& in,
                                 const graph::Attrs& attrs,
                                 const std::vector<hlo::TensorType>& outs) {
  const hlo::ElementType t = opmath_type(outs[0].dtype);
  hlo::Value x = to_type(b, in[0], t);
  const int64_t n = count(x, attrs.ints);
  hlo::Value total = reduce_sum(b, x, attrs.ints);
  hlo::Value mean = b.binary("divide", total, full(b, static_cast<double>(n), t, total.type.dims));
  hlo::Value diff = b.binary("subtract", x, expand(b, mean, attrs.ints, x.type.dims));
  hlo::Value ss = reduce_sum(b, b.binary("multiply", diff, diff), attrs.ints);
  const double denom = std::max(0.0, static_cast<double>(n) - attrs.floats[0]);
  hlo::Value r = b.binary("divide", ss, full(b, denom, t, ss.type.dims));
  if (Std) r = b.unary("sqrt", r);
  r = to_type(b, r, outs[0].dtype);
  if (outs.size() == 1) return {shaped(b, r, outs[0])};
  return {shaped(b, r, outs[0]), shaped(b, to_type(b, mean, outs[1].dtype), outs[1])};
}

// The vector norm of order floats[0] over dims ints, computed in the output type (float32 for
// float16/bfloat16, rounded once, as PyTorch's CPU does).
std::vector<hlo::Value> emit_vector_norm(hlo::Builder& b, const std::vector<hlo::Value>& in,
                                         const graph::Attrs& attrs,
                                         const std::vector<hlo::TensorType>& outs) {
  const hlo::ElementType t = opmath_type(outs[0].dtype);
  const double ord = attrs.floats[0];
  hlo::Value x = b.unary("abs", to_type(b, in[0], t));
  hlo::Value r;
  if (std::isinf(ord)) {
    r = reduce_extremum(b, ord > 0 ? hlo::ReduceKind::Max : hlo::ReduceKind::Min, x, attrs.ints);
  } else if (ord == 0) {
    r = reduce_sum(b, to_type(b, b.compare(hlo::Cmp::NE, x, full(b, 0, t, x.type.dims)), t),
                   attrs.ints);
  } else if (ord == 1) {
    r = reduce_sum(b, x, attrs.ints);
  } else if (ord == 2) {
    r = b.unary("sqrt", reduce_sum(b, b.binary("multiply", x, x), attrs.ints));
  } else {
    hlo::Value s = reduce_sum(b, b.binary("power", x, full(b, ord, t, x.type.dims)), attrs.ints);
    r = b.binary("power", s, full(b, 1.0 / ord, t, s.type.dims));
  }
  return {shaped(b, to_type(b, r, outs[0].dtype), outs[0])};
}

// log(sum(exp(x))) over dims ints, shifted by the max (taken as 0 where it is infinite). As on the
// CPU, each step rounds to the output type and the sum accumulates in float32 for float16/bfloat16.
std::vector<hlo::Value> emit_logsumexp(hlo::Builder& b, const std::vector<hlo::Value>& in,
                                       const graph::Attrs& attrs,
                                       const std::vector<hlo::TensorType>& outs) {
  const hlo::ElementType t = outs[0].dtype;
  hlo::Value x = to_type(b, in[0], t);
  hlo::Value m =
      b.reduce(x, identity(b, hlo::ReduceKind::Max, t), attrs.ints, hlo::ReduceKind::Max);
  m = b.select(b.unary("is_finite", m), m, full(b, 0, t, m.type.dims));
  hlo::Value shifted = b.binary("subtract", x, expand(b, m, attrs.ints, x.type.dims));
  hlo::Value exp = to_type(b, b.unary("exponential", shifted), opmath_type(t));
  hlo::Value s = to_type(b, reduce_sum(b, exp, attrs.ints), t);
  return {shaped(b, b.binary("add", b.unary("log", s), m), outs[0])};
}

// all/any over dims ints: elements are tested against zero, the result converted to the output.
template <hlo::ReduceKind Kind>
std::vector<hlo::Value> emit_all_any(hlo::Builder& b, const std::vector<hlo::Value>& in,
                                     const graph::Attrs& attrs,
                                     const std::vector<hlo::TensorType>& outs) {
  hlo::Value x = in[0];
  hlo::Value nz = b.compare(hlo::Cmp::NE, x, full(b, 0, x.type.dtype, x.type.dims));
  hlo::Value r =
      b.reduce(nz, b.constant_int(Kind == hlo::ReduceKind::And ? 1 : 0, hlo::ElementType::Bool),
               attrs.ints, Kind);
  return {shaped(b, to_type(b, r, outs[0].dtype), outs[0])};
}

std::vector<hlo::Value> emit_hash_tensor(hlo::Builder& b, const std::vector<hlo::Value>& in,
                                         const graph::Attrs& attrs,
                                         const std::vector<hlo::TensorType>& outs) {
  const hlo::ElementType t = in[0].type.dtype;
  const hlo::ElementType wide = runtime::is_floating(t) ? hlo::ElementType::F64
                                : runtime::is_unsigned(t) || t == hlo::ElementType::Bool
                                    ? hlo::ElementType::U64
                                    : hlo::ElementType::I64;
  hlo::Value bits = to_type(b, in[0], wide);
  if (wide != hlo::ElementType::U64) bits = b.bitcast_convert(bits, hlo::ElementType::U64);
  hlo::Value r =
      b.reduce(bits, b.constant_int(0, hlo::ElementType::U64), attrs.ints, hlo::ReduceKind::Xor);
  return {shaped(b, r, outs[0])};
}

// softmax (or log_softmax) of operand 0 along dim ints[0], computed in the output type's opmath
// type (f32 for f16 and bf16, as the CPU's kernels) and rounded once.
// The rows a softmax reduces: operand 0 in the output type's opmath type (rank 1 at least), the
// reduced dim and each row's maximum.
struct SoftmaxRows {
  hlo::Value x;
  std::vector<int64_t> dims;
  hlo::Value max;
};

SoftmaxRows softmax_rows(hlo::Builder& b, const std::vector<hlo::Value>& in,
                         const graph::Attrs& attrs, const hlo::TensorType& out) {
  const hlo::ElementType t = opmath_type(out.dtype);
  hlo::Value x = to_type(b, in[0], t);
  if (x.type.rank() == 0) x = b.reshape(x, {1});
  const std::vector<int64_t> dims{attrs.ints[0]};
  hlo::Value m = b.reduce(x, identity(b, hlo::ReduceKind::Max, t), dims, hlo::ReduceKind::Max);
  return {x, dims, m};
}

template <bool Log>
std::vector<hlo::Value> emit_softmax(hlo::Builder& b, const std::vector<hlo::Value>& in,
                                     const graph::Attrs& attrs,
                                     const std::vector<hlo::TensorType>& outs) {
  auto [x, dims, m] = softmax_rows(b, in, attrs, outs[0]);
  hlo::Value shifted = b.binary("subtract", x, expand(b, m, dims, x.type.dims));
  hlo::Value e = b.unary("exponential", shifted);
  hlo::Value s = expand(b, reduce_sum(b, e, dims), dims, x.type.dims);
  hlo::Value r = Log ? b.binary("subtract", shifted, b.unary("log", s)) : b.binary("divide", e, s);
  return {shaped(b, to_type(b, r, outs[0].dtype), outs[0])};
}

// _safe_softmax: softmax along dim ints[0], with 0 for rows that are all -inf (attention rows that
// mask out every key). Such a row's maximum is -inf; shifted by 0 instead, its exponentials sum
// to 0, which no other row's do (the maximum's own term is 1; a NaN keeps the sum NaN), so the
// softmax's own reductions find the rows. The composite's compare of every element with -inf and
// its all() over the row were two more passes over the scores, the all() a pred reduction that
// XLA's CPU backend splits into a reduce-window.
std::vector<hlo::Value> emit_safe_softmax(hlo::Builder& b, const std::vector<hlo::Value>& in,
                                          const graph::Attrs& attrs,
                                          const std::vector<hlo::TensorType>& outs) {
  auto [x, dims, m] = softmax_rows(b, in, attrs, outs[0]);
  const hlo::TensorType row = m.type;
  m = b.select(b.compare(hlo::Cmp::EQ, m, b.splat(-std::numeric_limits<double>::infinity(), row)),
               b.splat(0, row), m);
  hlo::Value e = b.unary("exponential", b.binary("subtract", x, expand(b, m, dims, x.type.dims)));
  hlo::Value s = reduce_sum(b, e, dims);
  hlo::Value empty = expand(b, b.compare(hlo::Cmp::EQ, s, b.splat(0, row)), dims, x.type.dims);
  hlo::Value r =
      b.select(empty, b.splat(0, x.type), b.binary("divide", e, expand(b, s, dims, x.type.dims)));
  return {shaped(b, to_type(b, r, outs[0].dtype), outs[0])};
}

// Gradient of softmax (log_softmax) from grad_output (operand 0) and the forward output
// (operand 1) along dim ints[0], in the opmath type as the forward.
template <bool Log>
std::vector<hlo::Value> emit_softmax_backward(hlo::Builder& b, const std::vector<hlo::Value>& in,
                                              const graph::Attrs& attrs,
                                              const std::vector<hlo::TensorType>& outs) {
  const hlo::ElementType t = opmath_type(outs[0].dtype);
  hlo::Value g = to_type(b, in[0], t);
  hlo::Value y = to_type(b, in[1], t);
  if (g.type.rank() == 0) {
    g = b.reshape(g, {1});
    y = b.reshape(y, {1});
  }
  const std::vector<int64_t> dims{attrs.ints[0]};
  if (Log) {
    hlo::Value s = expand(b, reduce_sum(b, g, dims), dims, g.type.dims);
    hlo::Value r = b.binary("subtract", g, b.binary("multiply", b.unary("exponential", y), s));
    return {shaped(b, to_type(b, r, outs[0].dtype), outs[0])};
  }
  hlo::Value gy = b.binary("multiply", g, y);
  hlo::Value s = expand(b, reduce_sum(b, gy, dims), dims, g.type.dims);
  hlo::Value r = b.binary("subtract", gy, b.binary("multiply", y, s));
  return {shaped(b, to_type(b, r, outs[0].dtype), outs[0])};
}

}  // namespace

const graph::OpDef kAmax{"amax", emit_extremum<hlo::ReduceKind::Max>};
const graph::OpDef kAmin{"amin", emit_extremum<hlo::ReduceKind::Min>};
const graph::OpDef kSum{"sum", emit_sum};
const graph::OpDef kMean{"mean", emit_mean};
const graph::OpDef kProd{"prod", emit_prod};
const graph::OpDef kMaxDim{"max_dim", emit_arg_extremum<hlo::ReduceKind::Max>};
const graph::OpDef kMinDim{"min_dim", emit_arg_extremum<hlo::ReduceKind::Min>};
const graph::OpDef kVar{"var", emit_var<false>};
const graph::OpDef kStd{"std", emit_var<true>};
const graph::OpDef kVectorNorm{"linalg_vector_norm", emit_vector_norm};
const graph::OpDef kLogsumexp{"logsumexp", emit_logsumexp};
const graph::OpDef kAll{"all", emit_all_any<hlo::ReduceKind::And>};
const graph::OpDef kAny{"any", emit_all_any<hlo::ReduceKind::Or>};
const graph::OpDef kHashTensor{"hash_tensor", emit_hash_tensor};
const graph::OpDef kSoftmax{"softmax", emit_softmax<false>};
const graph::OpDef kLogSoftmax{"log_softmax", emit_softmax<true>};
const graph::OpDef kSafeSoftmax{"safe_softmax", emit_safe_softmax};
const graph::OpDef kSoftmaxBackward{"softmax_backward", emit_softmax_backward<false>};
const graph::OpDef kLogSoftmaxBackward{"log_softmax_backward", emit_softmax_backward<true>};

}  // namespace torch_pjrt::lowering
