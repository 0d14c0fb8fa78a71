// Matrix products: batched matmul and addmm.
#include "lowering/matmul.h"

#include <algorithm>
#include <cmath>

#include "lowering/common.h"

namespace torch_pjrt::lowering {
namespace {

// The product of operands of the op's type `dtype`, in its compute type: float16/bfloat16
// operands stay in their type and accumulate in float32 (as PyTorch's kernels and GPU/TPU matrix
// units do); callers round once at the end. `attrs.ints` = {precision}. A vector operand (rank 1)
// is contracted whole (mv, dot); `out_rank` below the operands' rank sums over their batch
// (addbmm).
hlo::Value matmul(hlo::Builder& b, hlo::Value lhs, hlo::Value rhs, hlo::ElementType dtype,
                  const graph::Attrs& attrs, int64_t out_rank) {
  lhs = to_type(b, lhs, dtype);
  rhs = to_type(b, rhs, dtype);
  const int64_t lhs_rank = lhs.type.rank(), rhs_rank = rhs.type.rank();
  const int64_t batch = std::max<int64_t>(std::min(lhs_rank, rhs_rank) - 2, 0);
  std::vector<int64_t> batch_dims;
  for (int64_t i = 0; i < batch; ++i) batch_dims.push_back(i);
  std::vector<int64_t> lhs_contract{lhs_rank - 1}, rhs_contract{rhs_rank == 1 ? 0 : batch};
  if (batch > 0 && out_rank < lhs_rank) {
    lhs_contract.insert(lhs_contract.begin(), batch_dims.begin(), batch_dims.end());
    rhs_contract.insert(rhs_contract.begin(), batch_dims.begin(), batch_dims.end());
    batch_dims.clear();
  }
  return b.dot_general(lhs, rhs, batch_dims, batch_dims, lhs_contract, rhs_contract,
                       precision_from_attr(attrs.ints.empty() ? -1 : attrs.ints[0]),
                       opmath_type(dtype));
}

std::vector<hlo::Value> emit_matmul(hlo::Builder& b, const std::vector<hlo::Value>& in,
                                    const graph::Attrs& attrs,
                                    const std::vector<hlo::TensorType>& outs) {
  const hlo::ElementType t = outs[0].dtype;
  return {to_type(b, matmul(b, in[0], in[1], t, attrs, outs[0].rank()), t)};
}

std::vector<hlo::Value> emit_addmm(hlo::Builder& b, const std::vector<hlo::Value>& in,
                                   const graph::Attrs& attrs,
                                   const std::vector<hlo::TensorType>& outs) {
  const hlo::TensorType& out = outs[0];
  const hlo::ElementType t = opmath_type(out.dtype);
  // Integer products take the scalars' integer parts, as PyTorch's integer kernels do.
  const bool integral = !runtime::is_floating(t) && !runtime::is_complex(t);
  const double beta = integral ? std::trunc(attrs.floats.at(0)) : attrs.floats.at(0);
  const double alpha = integral ? std::trunc(attrs.floats.at(1)) : attrs.floats.at(1);
  hlo::Value product = matmul(b, in[1], in[2], out.dtype, attrs, out.rank());
  if (alpha != 1) product = b.binary("multiply", product, full(b, alpha, t, out.dims));
  // PyTorch ignores `self` entirely when beta is 0, NaNs included.
  if (beta == 0) return {to_type(b, product, out.dtype)};
  hlo::Value self = broadcast_to(b, to_type(b, in[0], t), out.dims);
  if (beta != 1) self = b.binary("multiply", self, full(b, beta, t, out.dims));
  return {to_type(b, b.binary("add", self, product), out.dtype)};
}

}  // namespace

const graph::OpDef kMatmul{"matmul", emit_matmul};
const graph::OpDef kAddmm{"addmm", emit_addmm};

}  // namespace torch_pjrt::lowering
