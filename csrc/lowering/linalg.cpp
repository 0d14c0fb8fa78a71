// Cholesky and triangular solves as stablehlo.cholesky and stablehlo.triangular_solve (computed in
// f32 for f16/bf16, as the other float math is; complex too).
#include "lowering/linalg.h"

#include <string>

#include "lowering/common.h"
#include "lowering/elementwise.h"
#include "runtime/element_type.h"

namespace torch_pjrt::lowering {
namespace {

using hlo::Value;

// True on the diagonal (Cmp::EQ), below it (Cmp::GT), ... of [..., n, n].
Value triangle_mask(hlo::Builder& b, const std::vector<int64_t>& dims, hlo::Cmp where) {
  const int64_t rank = static_cast<int64_t>(dims.size());
  const hlo::TensorType index{hlo::ElementType::I32, dims};
  return b.compare(where, b.iota(index, rank - 2), b.iota(index, rank - 1));
}

std::vector<Value> emit_cholesky(hlo::Builder& b, const std::vector<Value>& in,
                                 const graph::Attrs& attrs,
                                 const std::vector<hlo::TensorType>& outs) {
  const std::vector<int64_t>& dims = outs[0].dims;
  const int64_t rank = static_cast<int64_t>(dims.size()), n = dims.back();
  const hlo::ElementType t = math_type(outs[0].dtype);
  const Value a = to_type(b, in[0], t);
  Value l = b.op("cholesky", {a}, {a.type}, "lower = true")[0];
  const Value zero = full(b, 0, t, dims);
  l = b.select(triangle_mask(b, dims, hlo::Cmp::GE), l, zero);
  // info: the first diagonal element that is not positive (NaN included), counted from 1.
  Value diagonal =
      reduce_sum(b, b.select(triangle_mask(b, dims, hlo::Cmp::EQ), l, zero), {rank - 1});
  if (runtime::is_complex(t)) diagonal = b.unary("real", diagonal);
  const hlo::TensorType index{hlo::ElementType::I32, diagonal.type.dims};
  const Value bad = b.unary(
      "not", b.compare(hlo::Cmp::GT, diagonal, full(b, 0, diagonal.type.dtype, index.dims)));
  const Value order = b.binary("add", b.iota(index, rank - 2), full(b, 1, index.dtype, index.dims));
  const Value none = full(b, static_cast<double>(n + 1), index.dtype, index.dims);
  Value first = b.reduce(b.select(bad, order, none), b.splat(n + 1.0, {index.dtype, {}}),
                         {rank - 2}, hlo::ReduceKind::Min);
  const hlo::TensorType info{hlo::ElementType::I32, outs[1].dims};
  first = b.select(b.compare(hlo::Cmp::EQ, first, full(b, n + 1.0, info.dtype, info.dims)),
                   full(b, 0, info.dtype, info.dims), first);
  if (!attrs.ints.empty() && attrs.ints[0]) {
    std::vector<int64_t> perm;
    for (int64_t i = 0; i < rank - 2; ++i) perm.push_back(i);
    perm.push_back(rank - 1);
    perm.push_back(rank - 2);
    l = b.transpose(l, perm);
    if (runtime::is_complex(t))
      l = b.complex(b.unary("real", l), b.unary("negate", b.unary("imag", l)));
  }
  return {to_type(b, l, outs[0].dtype), to_type(b, first, outs[1].dtype)};
}

const char* const kTranspose[] = {"NO_TRANSPOSE", "TRANSPOSE", "ADJOINT"};

std::vector<Value> emit_triangular_solve(hlo::Builder& b, const std::vector<Value>& in,
                                         const graph::Attrs& attrs,
                                         const std::vector<hlo::TensorType>& outs) {
  const hlo::ElementType t = math_type(outs[0].dtype);
  const Value a = to_type(b, in[0], t), rhs = to_type(b, in[1], t);
  auto flag = [&](size_t i) { return attrs.ints.at(i) ? std::string("true") : "false"; };
  const std::string options =
      "left_side = " + flag(0) + ", lower = " + flag(1) + ", unit_diagonal = " + flag(2) +
      ", transpose_a = #stablehlo<transpose " + kTranspose[attrs.ints.at(3)] + ">";
  const Value x = b.op("triangular_solve", {a, rhs}, {rhs.type}, options)[0];
  return {to_type(b, x, outs[0].dtype)};
}

}  // namespace

const graph::OpDef kCholesky{"cholesky", emit_cholesky};
const graph::OpDef kTriangularSolve{"triangular_solve", emit_triangular_solve};

}  // namespace torch_pjrt::lowering
