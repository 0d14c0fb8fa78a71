// The matrix exponential by scaling and squaring (matrix_functions.h).
#include "lowering/matrix_functions.h"

#include <cmath>
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

// x y for batched square matrices.
Value matmul(Builder& b, Value x, Value y) {
  const int64_t rank = x.type.rank();
  std::vector<int64_t> batch(rank - 2);
  for (int64_t d = 0; d < rank - 2; ++d) batch[d] = d;
  return b.dot_general(x, y, batch, batch, {rank - 1}, {rank - 2}, hlo::Precision::kHighest);
}

std::vector<Value> emit_matrix_exp(Builder& b, const std::vector<Value>& in, const graph::Attrs&,
                                   const std::vector<TensorType>& outs) {
  const ElementType t = opmath_type(outs[0].dtype), i32 = ElementType::I32;
  const std::vector<int64_t> dims = outs[0].dims;
  const int64_t rank = static_cast<int64_t>(dims.size()), n = dims[rank - 1];
  const Value a = to_type(b, in[0], t);
  if (n == 0) return {to_type(b, a, outs[0].dtype)};
  const std::vector<int64_t> batch(dims.begin(), dims.end() - 2);
  const ElementType real = runtime::real_part_type(t);
  const bool wide = real == ElementType::F64;
  const int degree = wide ? 18 : 10;
  // Squarings beyond the exponent range only happen for infinite norms (the result is inf/nan).
  const double max_squarings = wide ? 1100 : 160;
  const Value norm = b.reduce(reduce_sum(b, b.unary("abs", a), {rank - 2}),
                              b.constant_float(0, real), {rank - 2}, hlo::ReduceKind::Max);
  // s = ceil(log2 |a|_1) for |a|_1 > 1, else 0 (also for NaN).
  const Value log2 = b.binary("divide", b.unary("log", norm), full(b, std::log(2.0), real, batch));
  Value s = b.select(b.compare(Cmp::GT, norm, full(b, 1, real, batch)), b.unary("ceil", log2),
                     full(b, 0, real, batch));
  s = b.binary("minimum", s, full(b, max_squarings, real, batch));
  const Value scale = b.binary("power", full(b, 2, real, batch), b.unary("negate", s));
  Value scale_t = scale;
  if (runtime::is_complex(t)) scale_t = b.complex(scale, full(b, 0, real, batch));
  const Value x = b.binary("multiply", a, expand(b, scale_t, dims, {}));
  const Value rows = b.iota({i32, dims}, rank - 2), columns = b.iota({i32, dims}, rank - 1);
  const Value eye =
      b.select(b.compare(Cmp::EQ, rows, columns), full(b, 1, t, dims), full(b, 0, t, dims));
  // Horner: p_k = I + x p_{k+1} / k from p = I gives sum_j x^j / j!.
  Value p = eye;
  for (int k = degree; k >= 1; --k)
    p = b.binary("add", eye, b.binary("divide", matmul(b, x, p), full(b, k, t, dims)));
  const Value squarings = b.convert(s, i32);
  std::vector<int64_t> batch_dims(batch.size());
  for (size_t d = 0; d < batch.size(); ++d) batch_dims[d] = static_cast<int64_t>(d);
  const Value most =
      batch.empty() ? squarings
                    : b.reduce(squarings, b.constant_int(0, i32), batch_dims, hlo::ReduceKind::Max);
  auto cond = [&](Builder& r, const std::vector<Value>& c) {
    return std::vector<Value>{r.compare(Cmp::LT, c[0], most)};
  };
  auto body = [&](Builder& r, const std::vector<Value>& c) {
    const Value more = r.compare(Cmp::LT, scalar_to(r, c[0], dims), expand(r, squarings, dims, {}));
    return std::vector<Value>{r.binary("add", c[0], r.constant_int(1, i32)),
                              r.select(more, matmul(r, c[1], c[1]), c[1])};
  };
  p = b.while_loop({b.constant_int(0, i32), p}, cond, body)[1];
  return {to_type(b, p, outs[0].dtype)};
}

}  // namespace

const graph::OpDef kMatrixExp{"matrix_exp", emit_matrix_exp};

}  // namespace torch_pjrt::lowering
