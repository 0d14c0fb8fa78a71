// LU with partial pivoting as a stablehlo.while over columns (batched: each matrix swaps its own
// rows, through masks rather than gathers), and the permutation of LU pivots.
#include "lowering/decompositions.h"

#include <vector>

#include "lowering/batched_matrix.h"
#include "lowering/common.h"
#include "lowering/elementwise.h"
#include "runtime/element_type.h"

namespace torch_pjrt::lowering {
namespace {

using hlo::Builder;
using hlo::Cmp;
using hlo::ElementType;
using hlo::TensorType;
using hlo::Value;

// LAPACK's pivot magnitude: |x|, or |re| + |im| for complex.
Value magnitude(Builder& b, Value x) {
  if (!runtime::is_complex(x.type.dtype)) return b.unary("abs", x);
  return b.binary("add", b.unary("abs", b.unary("real", x)), b.unary("abs", b.unary("imag", x)));
}

std::vector<Value> emit_lu_factor(Builder& b, const std::vector<Value>& in, const graph::Attrs&,
                                  const std::vector<TensorType>& outs) {
  const std::vector<int64_t> dims = outs[0].dims;
  const int64_t rank = static_cast<int64_t>(dims.size()), m = dims[rank - 2], n = dims[rank - 1];
  const int64_t k_max = std::min(m, n);
  const std::vector<int64_t> batch(dims.begin(), dims.end() - 2);
  const ElementType t = outs[0].dtype, i32 = ElementType::I32;
  const Value a0 = to_type(b, in[0], t);
  if (k_max == 0) return {a0, full(b, 0, i32, outs[1].dims), full(b, 0, i32, batch)};
  std::vector<int64_t> col_dims = batch, row_dims = batch;
  col_dims.push_back(m);
  row_dims.push_back(n);
  const std::vector<Value> init = {b.constant_int(0, i32), a0, full(b, 0, i32, outs[1].dims),
                                   full(b, 0, i32, batch)};
  auto cond = [&](Builder& r, const std::vector<Value>& c) {
    return std::vector<Value>{r.compare(Cmp::LT, c[0], r.constant_int(k_max, i32))};
  };
  auto body = [&](Builder& r, const std::vector<Value>& c) {
    const Value k = c[0], a = c[1];
    const Value rows = r.iota({i32, dims}, rank - 2), cols = r.iota({i32, dims}, rank - 1);
    const Value kk = scalar_to(r, k, dims);
    // The pivot: the first row at or below k of largest magnitude in column k.
    const Value col = take(r, a, rank - 1, k);
    const Value col_rows = r.iota({i32, col_dims}, rank - 2);
    const Value below = r.compare(Cmp::GE, col_rows, scalar_to(r, k, col_dims));
    Value mag = magnitude(r, col);
    const ElementType real = mag.type.dtype;
    mag = r.select(below, mag, full(r, -1, real, col_dims));
    const Value largest =
        r.reduce(mag, r.constant_float(-2, real), {rank - 2}, hlo::ReduceKind::Max);
    const Value is_max = r.compare(Cmp::EQ, mag, expand(r, largest, col_dims, {}));
    Value p = r.reduce(r.select(is_max, col_rows, full(r, m, i32, col_dims)),
                       r.constant_int(m, i32), {rank - 2}, hlo::ReduceKind::Min);
    // No row compares equal when the column holds NaN: keep row k, as LAPACK's search does.
    p = r.select(r.compare(Cmp::EQ, p, full(r, m, i32, batch)), scalar_to(r, k, batch), p);
    const Value pp = expand(r, p, dims, {});
    const Value zero = full(r, 0, t, dims);
    const Value row_p = reduce_sum(r, r.select(r.compare(Cmp::EQ, rows, pp), a, zero), {rank - 2});
    const Value row_k = take(r, a, rank - 2, k);
    Value swapped = r.select(r.compare(Cmp::EQ, rows, pp), expand(r, row_k, dims, {rank - 1}), a);
    swapped = r.select(r.compare(Cmp::EQ, rows, kk), expand(r, row_p, dims, {rank - 1}), swapped);
    // Eliminate below the pivot; a zero pivot (whose column below is all zero) divides nothing.
    const Value pivot = take(r, row_p, rank - 2, k);
    const Value singular = r.compare(Cmp::EQ, pivot, full(r, 0, t, batch));
    const Value divisor = r.select(singular, full(r, 1, t, batch), pivot);
    const Value scaled =
        r.binary("divide", take(r, swapped, rank - 1, k), expand(r, divisor, col_dims, {}));
    const Value l = expand(r, scaled, dims, {rank - 2});
    const Value under = r.compare(Cmp::GT, rows, kk);
    const Value right = r.compare(Cmp::GT, cols, kk);
    const Value update =
        r.binary("subtract", swapped, r.binary("multiply", l, expand(r, row_p, dims, {rank - 1})));
    Value next = r.select(r.binary("and", under, right), update, swapped);
    next = r.select(r.binary("and", under, r.compare(Cmp::EQ, cols, kk)), l, next);
    std::vector<int64_t> one = batch;
    one.push_back(1);
    std::vector<Value> start(batch.size(), r.constant_int(0, i32));
    start.push_back(k);
    const Value p1 = r.binary("add", p, full(r, 1, i32, batch));
    const Value pivots = r.dynamic_update_slice(c[2], r.reshape(p1, one), start);
    const Value first = r.binary("and", singular, r.compare(Cmp::EQ, c[3], full(r, 0, i32, batch)));
    const Value k1 = r.binary("add", k, r.constant_int(1, i32));
    const Value info = r.select(first, scalar_to(r, k1, batch), c[3]);
    return std::vector<Value>{k1, next, pivots, info};
  };
  std::vector<Value> res = b.while_loop(init, cond, body);
  return {res[1], res[2], res[3]};
}

std::vector<Value> emit_lu_permutation(Builder& b, const std::vector<Value>& in,
                                       const graph::Attrs& attrs,
                                       const std::vector<TensorType>& outs) {
  const ElementType i32 = ElementType::I32;
  const std::vector<int64_t> dims = outs[0].dims;
  const int64_t rank = static_cast<int64_t>(dims.size()), m = attrs.ints.at(0);
  const int64_t k_max = in[0].type.dims.back();
  const std::vector<int64_t> batch(dims.begin(), dims.end() - 1);
  const Value pivots = to_type(b, in[0], i32);
  auto cond = [&](Builder& r, const std::vector<Value>& c) {
    return std::vector<Value>{r.compare(Cmp::LT, c[0], r.constant_int(k_max, i32))};
  };
  auto body = [&](Builder& r, const std::vector<Value>& c) {
    const Value i = c[0], perm = c[1];
    const Value p = expand(
        r, r.binary("subtract", take(r, c[2], rank - 1, i), full(r, 1, i32, batch)), dims, {});
    const Value pos = r.iota({i32, dims}, rank - 1);
    const Value at_p = r.compare(Cmp::EQ, pos, p),
                at_i = r.compare(Cmp::EQ, pos, scalar_to(r, i, dims));
    const Value from_p = reduce_sum(r, r.select(at_p, perm, full(r, 0, i32, dims)), {rank - 1});
    const Value from_i = take(r, perm, rank - 1, i);
    Value next = r.select(at_p, expand(r, from_i, dims, {}), perm);
    next = r.select(at_i, expand(r, from_p, dims, {}), next);
    return std::vector<Value>{r.binary("add", i, r.constant_int(1, i32)), next, c[2]};
  };
  const Value start = b.iota({i32, dims}, rank - 1);
  // No pivots (a matrix with no columns): the identity, without a loop whose body reads one.
  const Value perm =
      k_max == 0 ? start : b.while_loop({b.constant_int(0, i32), start, pivots}, cond, body)[1];
  // inverse[perm[j]] = j.
  std::vector<int64_t> square = dims;
  square.push_back(m);
  const Value j = b.iota({i32, square}, rank);
  const Value hit =
      b.compare(Cmp::EQ, expand(b, perm, square, {rank}), b.iota({i32, square}, rank - 1));
  const Value inverse = reduce_sum(b, b.select(hit, j, full(b, 0, i32, square)), {rank});
  return {perm, inverse};
}

// Column i of the packed reflectors `v` [..., m, k] as a full vector: 0 above i, 1 at i.
Value reflector(Builder& r, Value v, Value i) {
  const std::vector<int64_t>& dims = v.type.dims;
  const int64_t rank = static_cast<int64_t>(dims.size());
  std::vector<int64_t> col_dims(dims.begin(), dims.end() - 1);
  const Value col = take(r, v, rank - 1, i);
  const Value rows = r.iota({ElementType::I32, col_dims}, rank - 2);
  const Value ii = scalar_to(r, i, col_dims);
  const ElementType t = v.type.dtype;
  return r.select(
      r.compare(Cmp::GT, rows, ii), col,
      r.select(r.compare(Cmp::EQ, rows, ii), full(r, 1, t, col_dims), full(r, 0, t, col_dims)));
}

std::vector<Value> emit_householder_qr(Builder& b, const std::vector<Value>& in,
                                       const graph::Attrs&, const std::vector<TensorType>& outs) {
  const std::vector<int64_t> dims = outs[0].dims;
  const int64_t rank = static_cast<int64_t>(dims.size()), m = dims[rank - 2];
  const int64_t k_max = outs[1].dims.back();
  const std::vector<int64_t> batch(dims.begin(), dims.end() - 2);
  const ElementType t = outs[0].dtype, i32 = ElementType::I32;
  const Value a0 = to_type(b, in[0], t);
  if (k_max == 0) return {a0, full(b, 0, t, outs[1].dims)};
  std::vector<int64_t> col_dims = batch;
  col_dims.push_back(m);
  auto cond = [&](Builder& r, const std::vector<Value>& c) {
    return std::vector<Value>{r.compare(Cmp::LT, c[0], r.constant_int(k_max, i32))};
  };
  auto body = [&](Builder& r, const std::vector<Value>& c) {
    const Value j = c[0], a = c[1];
    const bool complex = runtime::is_complex(t);
    const Value rows = r.iota({i32, dims}, rank - 2), cols = r.iota({i32, dims}, rank - 1);
    const Value jj = scalar_to(r, j, dims);
    const Value col = take(r, a, rank - 1, j);
    const Value col_rows = r.iota({i32, col_dims}, rank - 2);
    const Value under = r.compare(Cmp::GT, col_rows, scalar_to(r, j, col_dims));
    const Value x = r.select(under, col, full(r, 0, t, col_dims));
    const Value alpha = take(r, col, rank - 2, j);
    const Value mag = complex ? r.unary("abs", x) : x;
    const ElementType real = mag.type.dtype;
    const Value xnorm2 = reduce_sum(r, r.binary("multiply", mag, mag), {rank - 2});
    const Value re = complex ? r.unary("real", alpha) : alpha;
    const Value im = complex ? r.unary("imag", alpha) : full(r, 0, real, batch);
    const Value zero = full(r, 0, real, batch);
    const Value nothing =
        r.binary("and", r.compare(Cmp::EQ, xnorm2, zero), r.compare(Cmp::EQ, im, zero));
    const Value norm = r.unary(
        "sqrt",
        r.binary("add", r.binary("add", r.binary("multiply", re, re), r.binary("multiply", im, im)),
                 xnorm2));
    // beta = -sign(re alpha) * norm, +norm's sign taken as positive for re alpha = 0.
    Value beta = r.select(r.compare(Cmp::LT, re, zero), norm, r.unary("negate", norm));
    beta = r.select(nothing, re, beta);
    const Value beta_t = complex ? r.complex(beta, zero) : beta;
    const Value one = full(r, 1, t, batch);
    Value tau = r.binary("divide", r.binary("subtract", beta_t, alpha), beta_t);
    tau = r.select(nothing, full(r, 0, t, batch), tau);
    const Value scale =
        r.select(nothing, one, r.binary("divide", one, r.binary("subtract", alpha, beta_t)));
    // v: 1 at j, x * scale below.
    const Value v = r.select(under, r.binary("multiply", x, expand(r, scale, col_dims, {})),
                             r.select(r.compare(Cmp::EQ, col_rows, scalar_to(r, j, col_dims)),
                                      full(r, 1, t, col_dims), full(r, 0, t, col_dims)));
    // H^H applied to the columns right of j: a -= conj(tau) v (v^H a).
    const Value vv = expand(r, v, dims, {rank - 2});
    const Value w = reduce_sum(r, r.binary("multiply", conj(r, vv), a), {rank - 2});
    const Value update = r.binary("multiply", expand(r, conj(r, tau), dims, {}),
                                  r.binary("multiply", vv, expand(r, w, dims, {rank - 1})));
    Value next = r.select(r.compare(Cmp::GT, cols, jj), r.binary("subtract", a, update), a);
    const Value at_col = r.compare(Cmp::EQ, cols, jj);
    next = r.select(r.binary("and", at_col, r.compare(Cmp::GT, rows, jj)), vv, next);
    next = r.select(r.binary("and", at_col, r.compare(Cmp::EQ, rows, jj)),
                    expand(r, beta_t, dims, {}), next);
    std::vector<int64_t> one_dims = batch;
    one_dims.push_back(1);
    std::vector<Value> start(batch.size(), r.constant_int(0, i32));
    start.push_back(j);
    const Value taus = r.dynamic_update_slice(c[2], r.reshape(tau, one_dims), start);
    return std::vector<Value>{r.binary("add", j, r.constant_int(1, i32)), next, taus};
  };
  const std::vector<Value> res =
      b.while_loop({b.constant_int(0, i32), a0, full(b, 0, t, outs[1].dims)}, cond, body);
  return {res[1], res[2]};
}

std::vector<Value> emit_apply_householder(Builder& b, const std::vector<Value>& in,
                                          const graph::Attrs& attrs,
                                          const std::vector<TensorType>& outs) {
  const ElementType t = outs[0].dtype, i32 = ElementType::I32;
  const std::vector<int64_t> dims = outs[0].dims;
  const int64_t rank = static_cast<int64_t>(dims.size());
  const bool left = attrs.ints.at(0) != 0, adjoint = attrs.ints.at(1) != 0;
  const int64_t k_max = in[1].type.dims.back();
  const Value c0 = to_type(b, in[2], t);
  if (k_max == 0) return {c0};
  // Q c = H_0 (H_1 (... c)) applies the last reflector first; Q^H c the first.
  const bool descending = left != adjoint;
  auto cond = [&](Builder& r, const std::vector<Value>& c) {
    return std::vector<Value>{r.compare(Cmp::LT, c[0], r.constant_int(k_max, i32))};
  };
  auto body = [&](Builder& r, const std::vector<Value>& c) {
    const Value i = descending ? r.binary("subtract", r.constant_int(k_max - 1, i32), c[0]) : c[0];
    const Value v = reflector(r, c[1], i);
    Value tau = take(r, c[2], rank - 2, i);
    if (adjoint) tau = conj(r, tau);
    const Value tt = expand(r, tau, dims, {});
    Value next;
    if (left) {  // c -= tau v (v^H c)
      const Value vv = expand(r, v, dims, {rank - 2});
      const Value w = reduce_sum(r, r.binary("multiply", conj(r, vv), c[3]), {rank - 2});
      next = r.binary(
          "subtract", c[3],
          r.binary("multiply", tt, r.binary("multiply", vv, expand(r, w, dims, {rank - 1}))));
    } else {  // c -= tau (c v) v^H
      const Value vv = expand(r, v, dims, {rank - 1});
      const Value w = reduce_sum(r, r.binary("multiply", c[3], vv), {rank - 1});
      next = r.binary("subtract", c[3],
                      r.binary("multiply", tt,
                               r.binary("multiply", expand(r, w, dims, {rank - 2}), conj(r, vv))));
    }
    return std::vector<Value>{r.binary("add", c[0], r.constant_int(1, i32)), c[1], c[2], next};
  };
  const Value v = to_type(b, in[0], t), tau = to_type(b, in[1], t);
  return {b.while_loop({b.constant_int(0, i32), v, tau, c0}, cond, body)[3]};
}

}  // namespace

const graph::OpDef kLuFactor{"lu_factor", emit_lu_factor};
const graph::OpDef kLuPermutation{"lu_permutation", emit_lu_permutation};

}  // namespace torch_pjrt::lowering

namespace torch_pjrt::lowering {
const graph::OpDef kHouseholderQr{"householder_qr", emit_householder_qr};
const graph::OpDef kApplyHouseholder{"apply_householder", emit_apply_householder};
}  // namespace torch_pjrt::lowering
