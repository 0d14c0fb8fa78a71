// _pdist_forward and _pdist_backward (torch.pdist and its gradient), composed of native ops over
// the pairs i < j: the rows' differences, their vector norm, and the gradient of each pair added
// back to both rows.
#include <ATen/ATen.h>
#include <torch/library.h>

#include <limits>

#include "aten/tensor_bridge.h"

namespace torch_pjrt::aten {
namespace {

using at::Tensor;

struct Pairs {
  Tensor first, second;  // row indices of each pair, on the input's device
};

Pairs pairs(const Tensor& self, const char* op) {
  TORCH_CHECK(self.is_contiguous(), op, " requires contiguous input");
  TORCH_CHECK(self.dim() == 2, "pdist only supports 2D tensors, got: ", self.dim(), "D");
  TORCH_CHECK_NOT_IMPLEMENTED(at::isFloatingType(self.scalar_type()), "\"", op,
                              "\" not implemented for '", self.scalar_type(), "'");
  const int64_t n = self.size(0);
  const Tensor index = at::triu_indices(n, n, 1, at::TensorOptions(at::kLong)).to(self.device());
  return {index[0], index[1]};
}

Tensor pdist_forward(const Tensor& self, double p) {
  TORCH_CHECK(p >= 0, "pdist only supports non-negative p values");
  const Pairs ij = pairs(self, "_pdist_forward");
  OneOp op;
  const Tensor diff = self.index_select(0, ij.first) - self.index_select(0, ij.second);
  Tensor r = at::linalg_vector_norm(diff, p, {1});
  op.finish();
  return r;
}

// The gradient of each pair's distance with respect to its difference, as PyTorch's CPU kernel.
Tensor pair_gradient(const Tensor& diff, const Tensor& dist, const Tensor& grad, double p) {
  const Tensor d = dist.unsqueeze(1), g = grad.unsqueeze(1);
  const Tensor zero = at::zeros({}, diff.options());
  if (p == 0) return at::zeros_like(diff);
  if (p == 1) return diff.sign() * g;
  if (p == std::numeric_limits<double>::infinity()) return diff.sign() * (diff.abs() == d) * g;
  Tensor r = p == 2 ? diff * g / d : diff.sign() * diff.abs().pow(p - 1) * g / d.pow(p - 1);
  Tensor none = d == 0;
  if (p < 1) none = none.logical_or(diff == 0);
  return at::where(none, zero, r);
}

Tensor pdist_backward(const Tensor& grad, const Tensor& self, double p, const Tensor& pdist) {
  TORCH_CHECK(pdist.is_contiguous(), "_pdist_backward requires pdist to be contiguous");
  const Pairs ij = pairs(self, "_pdist_backward");
  OneOp op;
  const Tensor diff = self.index_select(0, ij.first) - self.index_select(0, ij.second);
  const Tensor pair = pair_gradient(diff, pdist, grad, p);
  Tensor r = at::zeros_like(self).index_add(0, ij.first, pair).index_add(0, ij.second, -pair);
  op.finish();
  return r;
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_pdist_forward", pdist_forward);
  m.impl("_pdist_backward", pdist_backward);
}

}  // namespace torch_pjrt::aten
