// embedding_renorm_ (nn.Embedding's max_norm) on "tpu": the weight's rows selected by `indices`
// whose norm_type-norm exceeds max_norm scaled in place by max_norm / (norm + 1e-7), as the CPU.
#include <ATen/ATen.h>
#include <ATen/OpMathType.h>
#include <ATen/TensorUtils.h>
#include <torch/library.h>

#include "aten/tensor_bridge.h"

namespace torch_pjrt::aten {
namespace {

using at::Tensor;

Tensor& embedding_renorm_(Tensor& self, const Tensor& indices, double max_norm, double norm_type) {
  at::checkDim("embedding_renorm_", at::TensorArg(self, "self", 1), 2);
  at::checkScalarTypes("embedding_renorm_", at::TensorArg(indices, "indices", 2),
                       {at::kLong, at::kInt});
  if (indices.numel() == 0) return self;
  TORCH_CHECK(at::isFloatingType(self.scalar_type()) || self.is_complex(),
              "norm(): input dtype should be either floating point or complex. Got ",
              self.scalar_type(), " instead.");
  OneOp op;
  // The CPU selects each row as self[i], so negative indices count from the end.
  Tensor index = indices.reshape({-1}).to(at::kLong);
  index = at::where(index < 0, index + self.size(0), index);
  const Tensor rows = self.index_select(0, index);
  // The CPU reads each row's norm as a double, compares and divides in double, and multiplies
  // the row by that factor in the row's op-math type.
  const Tensor norm =
      at::linalg_vector_norm(rows, norm_type, {1}, /*keepdim=*/true).to(at::kDouble);
  const Tensor scale = at::where(norm > max_norm, max_norm / (norm + 1e-7), 1.0);
  const at::ScalarType math = at::toOpMathType(self.scalar_type());
  const Tensor scaled = (rows.to(math) * scale.to(math)).to(self.scalar_type());
  // A repeated index writes the same row (computed from the same original values) again, so each
  // selected row is scaled once.
  self.index_copy_(0, index, scaled);
  op.finish();
  return self;
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) { m.impl("embedding_renorm_", embedding_renorm_); }

}  // namespace torch_pjrt::aten
