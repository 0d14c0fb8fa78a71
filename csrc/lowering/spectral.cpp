// Jacobi eigendecomposition of Hermitian matrices and one-sided Jacobi SVD (spectral.h).
//
// Both annihilate the off-diagonal entry b of a Hermitian 2x2 block [[a, b], [conj(b), d]] (the
// block itself, or the Gram block of columns p and q). With b = g e (g = |b|, |e| = 1) the unitary
// J = [[c, s e], [-s conj(e), c]] diagonalizes it when t = s / c is the smaller root of
// t^2 + 2 theta t - 1 = 0, theta = (d - a) / (2 g); the new diagonal is (a - t g, d + t g).
#include "lowering/spectral.h"

#include <functional>
#include <utility>
#include <vector>

#include "lowering/batched_matrix.h"
#include "lowering/common.h"
#include "runtime/element_type.h"

namespace torch_pjrt::lowering {
namespace {

using hlo::Builder;
using hlo::Cmp;
using hlo::ElementType;
using hlo::TensorType;
using hlo::Value;

double epsilon(ElementType t) {
  return runtime::real_part_type(t) == ElementType::F32 ? 0x1p-23 : 0x1p-52;
}

// The rotation of one pair, per matrix of the batch ([batch] values).
struct Rotation {
  Value rotate;   // bool: whether the pair is turned (else c = 1, s = 0, t = 0)
  Value c;        // of the matrix type
  Value se, sec;  // s e and s conj(e), of the matrix type
  Value tg;       // t g, real
};

Value real_part(Builder& r, Value x) {
  return runtime::is_complex(x.type.dtype) ? r.unary("real", x) : x;
}

// A real [batch] value as the matrix type `t`.
Value as_type(Builder& r, Value x, ElementType t) {
  if (!runtime::is_complex(t)) return x;
  return r.complex(x, full(r, 0, x.type.dtype, x.type.dims));
}

// The rotation annihilating b in [[a, b], [conj(b), d]] (a, d real); pairs with
// |b| <= threshold are left alone.
Rotation rotation(Builder& r, Value a, Value d, Value b, Value threshold, ElementType t) {
  const std::vector<int64_t> dims = a.type.dims;
  const ElementType real = a.type.dtype;
  const Value zero = full(r, 0, real, dims), one = full(r, 1, real, dims);
  const Value g = r.unary("abs", b);
  const Value rotate = r.compare(Cmp::GT, g, threshold);
  const Value g_safe = r.select(rotate, g, one);
  const Value theta = r.binary("divide", r.binary("subtract", d, a),
                               r.binary("multiply", full(r, 2, real, dims), g_safe));
  // sqrt(theta^2 + 1) overflows to inf for huge theta, giving t = 0 as it should.
  const Value root = r.unary("sqrt", r.binary("add", r.binary("multiply", theta, theta), one));
  const Value sign = r.select(r.compare(Cmp::LT, theta, zero), full(r, -1, real, dims), one);
  Value tan = r.binary("divide", sign, r.binary("add", r.unary("abs", theta), root));
  tan = r.select(rotate, tan, zero);
  const Value c = r.unary("rsqrt", r.binary("add", r.binary("multiply", tan, tan), one));
  const Value s = r.binary("multiply", tan, c);
  Value e = r.binary("divide", b, as_type(r, g_safe, t));
  e = r.select(rotate, e, as_type(r, one, t));
  const Value st = as_type(r, s, t);
  return {rotate, as_type(r, c, t), r.binary("multiply", st, e),
          r.binary("multiply", st, conj(r, e)), r.binary("multiply", tan, g)};
}

// x with its columns (`dim` = rank - 1) or rows (rank - 2) p and q replaced by
// (c x_p - y x_q, z x_p + c x_q), y and z [batch] factors.
Value turn(Builder& r, Value x, int64_t dim, Value p, Value q, Value c, Value y, Value z) {
  const std::vector<int64_t>& dims = x.type.dims;
  const int64_t rank = static_cast<int64_t>(dims.size());
  const int64_t other = dim == rank - 1 ? rank - 2 : rank - 1;
  const Value xp = take(r, x, dim, p), xq = take(r, x, dim, q);
  const std::vector<int64_t> line = xp.type.dims;
  auto times = [&](Value f, Value v) { return r.binary("multiply", expand(r, f, line, {}), v); };
  const Value np = r.binary("subtract", times(c, xp), times(y, xq));
  const Value nq = r.binary("add", times(z, xp), times(c, xq));
  const Value at = r.iota({ElementType::I32, dims}, dim);
  return r.select(
      r.compare(Cmp::EQ, at, scalar_to(r, p, dims)), expand(r, np, dims, {other}),
      r.select(r.compare(Cmp::EQ, at, scalar_to(r, q, dims)), expand(r, nq, dims, {other}), x));
}

// x[..., i, j] as a [batch] value.
Value entry(Builder& r, Value x, Value i, Value j) {
  const int64_t rank = x.type.rank();
  return take(r, take(r, x, rank - 1, j), rank - 2, i);
}

// Sweeps over the pairs (p < q) of n indices: `step` turns pair (p, q) of the carried matrices
// and returns them with a bool [batch] saying which matrices turned. Stops after a sweep in which
// no matrix turned, or after `max_sweeps`.
using StepFn = std::function<std::pair<std::vector<Value>, Value>(Builder&, Value, Value,
                                                                  const std::vector<Value>&)>;

std::vector<Value> sweeps(Builder& b, int64_t n, std::vector<Value> mats, int64_t max_sweeps,
                          const StepFn& step) {
  const ElementType i32 = ElementType::I32;
  const size_t k = mats.size();
  std::vector<Value> init = {b.constant_int(0, i32), b.constant_int(1, ElementType::Bool)};
  init.insert(init.end(), mats.begin(), mats.end());
  auto outer_cond = [&](Builder& r, const std::vector<Value>& c) {
    return std::vector<Value>{
        r.binary("and", r.compare(Cmp::LT, c[0], r.constant_int(max_sweeps, i32)), c[1])};
  };
  auto outer_body = [&](Builder& r, const std::vector<Value>& c) {
    // Inner state: p, q, turned anything, matrices.
    std::vector<Value> inner = {r.constant_int(0, i32), r.constant_int(1, i32),
                                r.constant_int(0, ElementType::Bool)};
    inner.insert(inner.end(), c.begin() + 2, c.end());
    auto cond = [&](Builder& s, const std::vector<Value>& v) {
      return std::vector<Value>{s.compare(Cmp::LT, v[0], s.constant_int(n - 1, i32))};
    };
    auto body = [&](Builder& s, const std::vector<Value>& v) {
      const Value p = v[0], q = v[1];
      auto [next, turned] = step(s, p, q, std::vector<Value>(v.begin() + 3, v.end()));
      std::vector<int64_t> all(turned.type.rank());
      for (size_t d = 0; d < all.size(); ++d) all[d] = static_cast<int64_t>(d);
      const Value any = all.empty() ? turned
                                    : s.reduce(turned, s.constant_int(0, ElementType::Bool), all,
                                               hlo::ReduceKind::Or);
      const Value one = s.constant_int(1, i32);
      const Value q1 = s.binary("add", q, one);
      const Value wrap = s.compare(Cmp::EQ, q1, s.constant_int(n, i32));
      const Value p1 = s.binary("add", p, one);
      std::vector<Value> out = {s.select(wrap, p1, p), s.select(wrap, s.binary("add", p1, one), q1),
                                s.binary("or", v[2], any)};
      out.insert(out.end(), next.begin(), next.end());
      return out;
    };
    const std::vector<Value> done = r.while_loop(inner, cond, body);
    std::vector<Value> out = {r.binary("add", c[0], r.constant_int(1, i32)), done[2]};
    out.insert(out.end(), done.begin() + 3, done.end());
    return out;
  };
  const std::vector<Value> res = b.while_loop(init, outer_cond, outer_body);
  return std::vector<Value>(res.begin() + 2, res.begin() + 2 + k);
}

// Enough sweeps for the quadratic convergence of cyclic Jacobi; only pathological input reaches it.
constexpr int64_t kMaxSweeps = 40;

std::vector<Value> emit_jacobi_eigh(Builder& b, const std::vector<Value>& in, const graph::Attrs&,
                                    const std::vector<TensorType>& outs) {
  const std::vector<int64_t> dims = outs[1].dims;
  const int64_t rank = static_cast<int64_t>(dims.size()), n = dims[rank - 1];
  const ElementType t = outs[1].dtype, real = outs[0].dtype;
  const Value a0 = to_type(b, in[0], t);
  const Value rows = b.iota({ElementType::I32, dims}, rank - 2);
  const Value cols = b.iota({ElementType::I32, dims}, rank - 1);
  const Value eye =
      b.select(b.compare(Cmp::EQ, rows, cols), full(b, 1, t, dims), full(b, 0, t, dims));
  std::vector<Value> res = {a0, eye};
  if (n > 1) {
    const std::vector<int64_t> batch(dims.begin(), dims.end() - 2);
    // Entries below eps^2 |A|_F are noise at working precision whatever the diagonal.
    const Value mag = b.unary("abs", a0);
    const Value fro =
        b.unary("sqrt", reduce_sum(b, b.binary("multiply", mag, mag), {rank - 2, rank - 1}));
    const double eps = epsilon(t);
    const Value noise = b.binary("multiply", fro, full(b, eps * eps, real, batch));
    auto step = [&](Builder& r, Value p, Value q, const std::vector<Value>& m) {
      const Value a = m[0], v = m[1];
      const Value app = real_part(r, entry(r, a, p, p));
      const Value aqq = real_part(r, entry(r, a, q, q));
      const Value apq = entry(r, a, p, q);
      const Value rel = r.binary("multiply", full(r, eps, real, batch),
                                 r.unary("sqrt", r.unary("abs", r.binary("multiply", app, aqq))));
      const Value threshold = r.binary("maximum", rel, noise);
      const Rotation rot = rotation(r, app, aqq, apq, threshold, t);
      // A <- J^H A J, V <- V J.
      Value next = turn(r, a, rank - 2, p, q, rot.c, rot.se, rot.sec);
      next = turn(r, next, rank - 1, p, q, rot.c, rot.sec, rot.se);
      // The turned block is exactly diagonal with a real diagonal.
      const Value rr = r.iota({ElementType::I32, dims}, rank - 2);
      const Value cc = r.iota({ElementType::I32, dims}, rank - 1);
      auto at = [&](Value i, Value j) {
        return r.binary("and",
                        r.binary("and", r.compare(Cmp::EQ, rr, scalar_to(r, i, dims)),
                                 r.compare(Cmp::EQ, cc, scalar_to(r, j, dims))),
                        expand(r, rot.rotate, dims, {}));
      };
      const Value new_p = as_type(r, r.binary("subtract", app, rot.tg), t);
      const Value new_q = as_type(r, r.binary("add", aqq, rot.tg), t);
      const Value zero = full(r, 0, t, dims);
      next = r.select(at(p, p), expand(r, new_p, dims, {}), next);
      next = r.select(at(q, q), expand(r, new_q, dims, {}), next);
      next = r.select(at(p, q), zero, r.select(at(q, p), zero, next));
      const Value vnext = turn(r, v, rank - 1, p, q, rot.c, rot.sec, rot.se);
      return std::make_pair(std::vector<Value>{next, vnext}, rot.rotate);
    };
    res = sweeps(b, n, {a0, eye}, kMaxSweeps, step);
  }
  const Value diag = reduce_sum(
      b, b.select(b.compare(Cmp::EQ, rows, cols), res[0], full(b, 0, t, dims)), {rank - 1});
  return {real_part(b, diag), res[1]};
}

std::vector<Value> emit_jacobi_svd(Builder& b, const std::vector<Value>& in, const graph::Attrs&,
                                   const std::vector<TensorType>& outs) {
  const std::vector<int64_t> vdims = outs[1].dims;
  const int64_t rank = static_cast<int64_t>(vdims.size()), n = vdims[rank - 1];
  const ElementType t = outs[0].dtype, real = runtime::real_part_type(t);
  const Value a0 = to_type(b, in[0], t);
  const Value rows = b.iota({ElementType::I32, vdims}, rank - 2);
  const Value cols = b.iota({ElementType::I32, vdims}, rank - 1);
  const Value eye =
      b.select(b.compare(Cmp::EQ, rows, cols), full(b, 1, t, vdims), full(b, 0, t, vdims));
  if (n < 2) return {a0, eye};
  const double eps = epsilon(t);
  auto step = [&](Builder& r, Value p, Value q, const std::vector<Value>& m) {
    const Value w = m[0], v = m[1];
    const Value wp = take(r, w, rank - 1, p), wq = take(r, w, rank - 1, q);
    auto norm2 = [&](Value x) {
      const Value mag = r.unary("abs", x);
      return reduce_sum(r, r.binary("multiply", mag, mag), {rank - 2});
    };
    const Value alpha = norm2(wp), beta = norm2(wq);
    const Value gamma = reduce_sum(r, r.binary("multiply", conj(r, wp), wq), {rank - 2});
    const Value threshold = r.binary("multiply", full(r, eps, real, alpha.type.dims),
                                     r.unary("sqrt", r.binary("multiply", alpha, beta)));
    const Rotation rot = rotation(r, alpha, beta, gamma, threshold, t);
    // W <- W J, V <- V J.
    return std::make_pair(std::vector<Value>{turn(r, w, rank - 1, p, q, rot.c, rot.sec, rot.se),
                                             turn(r, v, rank - 1, p, q, rot.c, rot.sec, rot.se)},
                          rot.rotate);
  };
  return sweeps(b, n, {a0, eye}, kMaxSweeps, step);
}

}  // namespace

const graph::OpDef kJacobiEigh{"jacobi_eigh", emit_jacobi_eigh};
const graph::OpDef kJacobiSvd{"jacobi_svd", emit_jacobi_svd};

}  // namespace torch_pjrt::lowering
