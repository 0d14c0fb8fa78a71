// CTC loss's alpha and beta recursions as stablehlo.while loops over time (see ctc.h): one
// program whatever the sequence length, instead of a few ops per time step.
#include "lowering/ctc.h"

#include <limits>
#include <vector>

#include "lowering/batched_matrix.h"
#include "lowering/common.h"

namespace torch_pjrt::lowering {
namespace {

using hlo::Builder;
using hlo::Cmp;
using hlo::ElementType;
using hlo::Value;

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

// `x` [B, S'] moved `by` positions along S' (towards higher s when `up`), -inf shifted in.
Value shift(Builder& b, Value x, int64_t by, bool up) {
  const int64_t batch = x.type.dims[0], n = x.type.dims[1];
  if (by >= n) return full(b, kNegInf, x.type.dtype, x.type.dims);
  const Value fill = full(b, kNegInf, x.type.dtype, {batch, by});
  if (up) return b.concatenate({fill, b.slice(x, {0, 0}, {batch, n - by}, {1, 1})}, 1);
  return b.concatenate({b.slice(x, {0, by}, {batch, n}, {1, 1}), fill}, 1);
}

// log(exp(a) + exp(b) + exp(c)), -inf when all three are.
Value logsumexp3(Builder& b, Value x, Value y, Value z) {
  const std::vector<int64_t>& dims = x.type.dims;
  const ElementType t = x.type.dtype;
  const Value m = b.binary("maximum", x, b.binary("maximum", y, z));
  const Value finite = b.compare(Cmp::NE, m, full(b, kNegInf, t, dims));
  const Value base = b.select(finite, m, full(b, 0, t, dims));
  const auto term = [&](Value v) { return b.unary("exponential", b.binary("subtract", v, base)); };
  const Value sum = b.binary("add", b.binary("add", term(x), term(y)), term(z));
  return b.binary("add", base, b.unary("log", sum));
}

// lp[t] [B, S'] of lp [T, B, S'] at the scalar i32 `t`.
Value step(Builder& b, Value lp, Value t) { return take(b, lp, 0, t); }

Value masked(Builder& b, Value where, Value x) {
  return b.select(where, x, full(b, kNegInf, x.type.dtype, x.type.dims));
}

// The [1, B, S'] slice `x` written at time `t` of `out`.
Value put(Builder& b, Value out, Value x, Value t) {
  std::vector<int64_t> one = x.type.dims;
  one.insert(one.begin(), 1);
  const Value zero = b.constant_int(0, ElementType::I32);
  return b.dynamic_update_slice(out, b.reshape(x, one), {t, zero, zero});
}

std::vector<Value> emit_ctc_alpha(Builder& b, const std::vector<Value>& in, const graph::Attrs&,
                                  const std::vector<hlo::TensorType>& outs) {
  const Value lp = in[0], skip = in[1], start = in[2];
  const int64_t steps = lp.type.dims[0];
  const ElementType i32 = ElementType::I32;
  const Value first = masked(b, start, step(b, lp, b.constant_int(0, i32)));
  const Value out0 =
      put(b, full(b, kNegInf, outs[0].dtype, outs[0].dims), first, b.constant_int(0, i32));
  auto cond = [&](Builder& r, const std::vector<Value>& c) {
    return std::vector<Value>{r.compare(Cmp::LT, c[0], r.constant_int(steps, i32))};
  };
  auto body = [&](Builder& r, const std::vector<Value>& c) {
    const Value t = c[0], alpha = c[1];
    const Value next = r.binary(
        "add", step(r, lp, t),
        logsumexp3(r, alpha, shift(r, alpha, 1, true), masked(r, skip, shift(r, alpha, 2, true))));
    return std::vector<Value>{r.binary("add", t, r.constant_int(1, i32)), next,
                              put(r, c[2], next, t)};
  };
  return {b.while_loop({b.constant_int(1, i32), first, out0}, cond, body)[2]};
}

std::vector<Value> emit_ctc_beta(Builder& b, const std::vector<Value>& in, const graph::Attrs&,
                                 const std::vector<hlo::TensorType>& outs) {
  const Value lp = in[0], skip_ahead = in[1], start = in[2];
  const std::vector<int64_t> dims = outs[0].dims;
  const int64_t steps = dims[0];
  const std::vector<int64_t> slice_dims{dims[1], dims[2]};
  const ElementType i32 = ElementType::I32;
  // Each entry's last step, broadcast over its positions.
  const Value last = b.broadcast_in_dim(
      b.binary("subtract", to_type(b, in[3], i32), full(b, 1, i32, {dims[1]})), slice_dims, {0});
  auto cond = [&](Builder& r, const std::vector<Value>& c) {
    return std::vector<Value>{r.compare(Cmp::GE, c[0], r.constant_int(0, i32))};
  };
  auto body = [&](Builder& r, const std::vector<Value>& c) {
    const Value t = c[0], beta = c[1];
    const Value lp_t = step(r, lp, t);
    const Value recurse = r.binary("add", lp_t,
                                   logsumexp3(r, beta, shift(r, beta, 1, false),
                                              masked(r, skip_ahead, shift(r, beta, 2, false))));
    const Value tt = scalar_to(r, t, slice_dims);
    const Value next = r.select(r.compare(Cmp::EQ, tt, last), masked(r, start, lp_t),
                                masked(r, r.compare(Cmp::LT, tt, last), recurse));
    return std::vector<Value>{r.binary("subtract", t, r.constant_int(1, i32)), next,
                              put(r, c[2], next, t)};
  };
  const Value none = full(b, kNegInf, outs[0].dtype, slice_dims);
  const Value out0 = full(b, kNegInf, outs[0].dtype, dims);
  return {b.while_loop({b.constant_int(steps - 1, i32), none, out0}, cond, body)[2]};
}

}  // namespace

const graph::OpDef kCtcAlpha{"ctc_alpha", emit_ctc_alpha};
const graph::OpDef kCtcBeta{"ctc_beta", emit_ctc_beta};

}  // namespace torch_pjrt::lowering
