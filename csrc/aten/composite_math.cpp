// Ops that PyTorch implements per backend but that are short compositions of ops the device runs
// natively: nansum, count_nonzero, trace, equal, linalg_cross, norm, dist, rsub, renorm, cdist's
// direct form and its gradient, and autograd's zero tensors. Each checks its arguments as the CPU
// kernel does, then calls the device's own kernels (recorded into the same program).
#include <ATen/ATen.h>
#include <ATen/AccumulateType.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/addr_native.h>
#include <torch/library.h>

#include <cmath>

#include "aten/dtype_rules.h"
#include "aten/op_result.h"

namespace torch_pjrt::aten {
namespace {

using at::Tensor;

// NaN elements count as zero; integer and bool inputs sum as they are.
Tensor without_nan(const Tensor& self) {
  return at::isFloatingType(self.scalar_type()) ? at::where(at::isnan(self), 0, self) : self;
}

Tensor trace(const Tensor& self) {
  TORCH_CHECK_NOT_IMPLEMENTED(self.scalar_type() != at::kBool,
                              "\"trace\" not implemented for 'Bool'");
  TORCH_CHECK(self.dim() == 2, "trace: expected a matrix, but got tensor with dim ", self.dim());
  return at::sum(self.diagonal(), at::OptionalIntArrayRef{}, false, std::nullopt);
}

// Same sizes and equal elements (NaN differs from itself); the one read of the result is the
// sync this op needs.
bool equal(const Tensor& a, const Tensor& b) {
  if (!a.sizes().equals(b.sizes())) return false;
  check_implemented(!is_float4(a), "equal_notnan_cpu", a.scalar_type());  // the CPU's kernel name
  return at::eq(a, b).all().item<bool>();
}

Tensor cross_result(const Tensor& a, const Tensor& b, int64_t dim) {
  TORCH_CHECK(a.dim() == b.dim(), "linalg.cross: inputs must have the same number of dimensions.");
  TORCH_CHECK(a.size(dim) == 3 && b.size(dim) == 3, "linalg.cross: inputs dimension ", dim,
              " must have length 3. Got ", a.size(dim), " and ", b.size(dim));
  TORCH_CHECK(a.scalar_type() == b.scalar_type(), "expected scalar type ", a.scalar_type(),
              " but found ", b.scalar_type());
  TORCH_CHECK_NOT_IMPLEMENTED(a.scalar_type() != at::kBool, "\"cross\" not implemented for 'Bool'");
  auto part = [&](const Tensor& t, int64_t i) { return t.narrow(dim, i, 1); };
  auto term = [&](int64_t i, int64_t j) {
    return part(a, i) * part(b, j) - part(a, j) * part(b, i);
  };
  return at::cat({term(1, 2), term(2, 0), term(0, 1)}, dim);
}

// torch.norm's vector norms (the matrix norms are CompositeImplicit over linalg ops).
Tensor p_norm(const Tensor& self, const std::optional<at::Scalar>& p, at::OptionalIntArrayRef dims,
              bool keepdim, std::optional<at::ScalarType> dtype) {
  TORCH_CHECK(at::isFloatingType(self.scalar_type()) || self.is_complex(),
              "norm(): input dtype should be either floating point or complex. Got ",
              self.scalar_type(), " instead.");
  return at::linalg_vector_norm(self, p.value_or(2), dims, keepdim, dtype);
}

// renorm: the slices along `dim` whose p-norm exceeds maxnorm scaled by maxnorm / (norm + 1e-7),
// as the CPU; norms in float32 for float16/bfloat16, the factor rounded to the input's type.
Tensor renorm_result(const Tensor& self, const at::Scalar& p, int64_t dim,
                     const at::Scalar& maxnorm) {
  TORCH_CHECK(!p.isComplex(), "renorm: p must be real-valued");
  TORCH_CHECK(p.toDouble() > 0.0, "renorm: non-positive-norm not supported");
  TORCH_CHECK(!maxnorm.isComplex(), "renorm: maxnorm must be real-valued");
  const double max = maxnorm.toDouble();
  TORCH_CHECK(max >= 0.0, "renorm: expected maxnorm to be >= 0 but got ", max);
  TORCH_CHECK(self.dim() > 1, "renorm: input needs at least 2 dimensions, got ", self.dim(),
              " dimensions");
  dim = at::maybe_wrap_dim(dim, self.dim());
  std::vector<int64_t> others;
  for (int64_t d = 0; d < self.dim(); ++d) {
    if (d != dim) others.push_back(d);
  }
  const at::ScalarType acc = at::toAccumulateType(self.scalar_type(), /*is_cuda=*/true);
  const Tensor norm = acc != self.scalar_type()
                          ? at::linalg_vector_norm(self, p, others, /*keepdim=*/true, acc)
                          : at::linalg_vector_norm(self, p, others, /*keepdim=*/true);
  const Tensor factor = at::where(norm > max, max / (norm + 1e-7), 1.0);
  return self * factor.to(c10::toRealValueType(self.scalar_type()));
}

// The pairwise differences x1[..., i, :] - x2[..., j, :] as [..., P, R, M].
Tensor pairwise_differences(const Tensor& x1, const Tensor& x2) {
  return x1.unsqueeze(-2) - x2.unsqueeze(-3);
}

// _cdist_forward: p-norms of the pairwise differences (cdist's matrix-product form for p = 2 is
// a separate op, _euclidean_dist, that PyTorch composes itself).
Tensor cdist_forward(const Tensor& x1, const Tensor& x2, double p,
                     std::optional<int64_t> compute_mode) {
  TORCH_CHECK(x1.dim() >= 2, "cdist only supports at least 2D tensors, X1 got: ", x1.dim(), "D");
  TORCH_CHECK(x2.dim() >= 2, "cdist only supports at least 2D tensors, X2 got: ", x2.dim(), "D");
  TORCH_CHECK(x1.size(-1) == x2.size(-1),
              "X1 and X2 must have the same number of columns. X1: ", x1.size(-1),
              " X2: ", x2.size(-1));
  TORCH_CHECK(at::isFloatingType(x1.scalar_type()),
              "cdist only supports floating-point dtypes, X1 got: ", x1.scalar_type());
  TORCH_CHECK(at::isFloatingType(x2.scalar_type()),
              "cdist only supports floating-point dtypes, X2 got: ", x2.scalar_type());
  TORCH_CHECK(p >= 0, "cdist only supports non-negative p values");
  TORCH_CHECK(!compute_mode || (*compute_mode >= 0 && *compute_mode <= 2),
              "possible modes: 0, 1, 2, but was: ", *compute_mode);
  TORCH_CHECK(x1.scalar_type() == x2.scalar_type(), "expected scalar type ", x1.scalar_type(),
              " but found ", x2.scalar_type());
  check_implemented(x1.scalar_type() == at::kFloat || x1.scalar_type() == at::kDouble, "cdist",
                    x1.scalar_type());
  return at::linalg_vector_norm(pairwise_differences(x1, x2), p, {-1}, false, std::nullopt);
}

// _cdist_backward: the gradient for x1 of the distances `cdist` = _cdist_forward(x1, x2, p),
// each distance's derivative sign(d) |d|^(p-1) / dist^(p-1) (p = inf: sign(d) where |d| is the
// distance), zero where the distance is zero.
Tensor cdist_backward(const Tensor& grad, const Tensor& x1, const Tensor& x2, double p,
                      const Tensor& cdist) {
  const Tensor d = pairwise_differences(x1, x2);
  const Tensor dist = cdist.unsqueeze(-1);
  Tensor g;
  if (p == 0) {
    g = at::zeros_like(d);
  } else if (p == 1) {
    g = at::sign(d);
  } else if (p == 2) {
    g = d / dist;
  } else if (std::isinf(p)) {
    g = at::sign(d) * (at::abs(d) == dist);
  } else {
    g = at::sign(d) * at::pow(at::abs(d), p - 1) / at::pow(dist, p - 1);
    if (p < 1) g = at::where(d == 0, 0, g);
  }
  g = at::where(dist == 0, 0, g) * grad.unsqueeze(-1);
  return g.sum(-2).sum_to_size(x1.sizes());
}

}  // namespace

// The CPU's checks of addr's scalars against the result type (PyTorch's math_addr, which the
// device runs, makes none): a bool beta/alpha only for bool results, no float one for integers.
void check_addr_scalars(const Tensor& self, const Tensor& vec1, const Tensor& vec2,
                        const at::Scalar& beta, const at::Scalar& alpha) {
  const at::ScalarType dtype = at::promote_types(
      at::promote_types(self.scalar_type(), vec1.scalar_type()), vec2.scalar_type());
  for (const auto& [scalar, name] : {std::pair{&beta, "beta"}, std::pair{&alpha, "alpha"}}) {
    TORCH_CHECK(!scalar->isBoolean() || dtype == at::kBool, "Boolean ", name,
                " only supported for Boolean results.");
    TORCH_CHECK(at::isFloatingType(dtype) || at::isComplexType(dtype) || scalar->isIntegral(true),
                "For integral input tensors, argument ", name,
                " must not be a floating point number.");
  }
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("addr", [](const Tensor& self, const Tensor& vec1, const Tensor& vec2,
                    const at::Scalar& beta, const at::Scalar& alpha) {
    check_addr_scalars(self, vec1, vec2, beta, alpha);
    return at::native::math_addr(self, vec1, vec2, beta, alpha);
  });
  m.impl("addr.out",
         [](const Tensor& self, const Tensor& vec1, const Tensor& vec2, const at::Scalar& beta,
            const at::Scalar& alpha, Tensor& out) -> Tensor& {
           check_addr_scalars(self, vec1, vec2, beta, alpha);
           return at::native::math_addr_out(self, vec1, vec2, beta, alpha, out);
         });
  m.impl("nansum", [](const Tensor& self, at::OptionalIntArrayRef dims, bool keepdim,
                      std::optional<at::ScalarType> dtype) {
    return at::sum(without_nan(self), dims, keepdim, dtype);
  });
  m.impl("nansum.out",
         [](const Tensor& self, at::OptionalIntArrayRef dims, bool keepdim,
            std::optional<at::ScalarType> dtype, Tensor& out) -> Tensor& {
           if (at::isFloatingType(self.scalar_type())) {
             // The CPU's nansum kernel runs in out's dtype (or the dtype given, which must match).
             TORCH_CHECK(!dtype || *dtype == out.scalar_type(),
                         "nansum: provided dtype must match dtype of result. Got ",
                         out.scalar_type(), " and ", *dtype, ".");
             TORCH_CHECK_NOT_IMPLEMENTED(at::isFloatingType(out.scalar_type()),
                                         "\"nansum_cpu\" not implemented for '",
                                         c10::toString(out.scalar_type()), "'");
           }
           return at::sum_out(out, without_nan(self), dims, keepdim, dtype);
         });
  m.impl("count_nonzero.dim_IntList", [](const Tensor& self, at::IntArrayRef dims) {
    return at::sum(at::ne(self, 0), dims, false, at::kLong);
  });
  m.impl("trace", trace);
  m.impl("norm.Scalar", [](const Tensor& self, const at::Scalar& p) {
    return p_norm(self, p, std::nullopt, false, std::nullopt);
  });
  m.impl("norm.ScalarOpt_dim",
         [](const Tensor& self, const std::optional<at::Scalar>& p, at::IntArrayRef dims,
            bool keepdim) { return p_norm(self, p, dims, keepdim, std::nullopt); });
  m.impl("norm.ScalarOpt_dtype",
         [](const Tensor& self, const std::optional<at::Scalar>& p, at::ScalarType dtype) {
           return p_norm(self, p, std::nullopt, false, dtype);
         });
  m.impl("norm.ScalarOpt_dim_dtype",
         [](const Tensor& self, const std::optional<at::Scalar>& p, at::IntArrayRef dims,
            bool keepdim, at::ScalarType dtype) { return p_norm(self, p, dims, keepdim, dtype); });
  m.impl("dist", [](const Tensor& a, const Tensor& b, const at::Scalar& p) {
    return p_norm(a - b, p, std::nullopt, false, std::nullopt);
  });
  // other - alpha * self, with sub's checks and promotion.
  m.impl("rsub.Tensor", [](const Tensor& self, const Tensor& other, const at::Scalar& alpha) {
    return at::sub(other, self, alpha);
  });
  m.impl("equal", equal);
  m.impl("renorm", renorm_result);
  m.impl("_cdist_forward", cdist_forward);
  m.impl("_cdist_backward", cdist_backward);
  // Autograd's zeros (a CPU ZeroTensor holds no memory; here an ordinary zero tensor).
  m.impl("_efficientzerotensor",
         [](at::IntArrayRef size, std::optional<at::ScalarType> dtype,
            std::optional<at::Layout> layout, std::optional<at::Device> device,
            std::optional<bool> pin_memory) {
           return at::zeros(size, at::TensorOptions().dtype(dtype).device(device));
         });
  m.impl("renorm_",
         [](Tensor& self, const at::Scalar& p, int64_t dim, const at::Scalar& maxnorm) -> Tensor& {
           return self.copy_(renorm_result(self, p, dim, maxnorm));
         });
  m.impl("renorm.out",
         [](const Tensor& self, const at::Scalar& p, int64_t dim, const at::Scalar& maxnorm,
            Tensor& out) -> Tensor& {
           check_out_dtype(out, self.scalar_type());
           const Tensor r = renorm_result(self, p, dim, maxnorm);
           at::native::resize_output(out, r.sizes());
           return out.copy_(r);
         });
  m.impl("linalg_cross", cross_result);
  m.impl("linalg_cross.out",
         [](const Tensor& a, const Tensor& b, int64_t dim, Tensor& out) -> Tensor& {
           const Tensor r = cross_result(a, b, dim);
           at::native::resize_output(out, r.sizes());
           return out.copy_(r);
         });
}

}  // namespace torch_pjrt::aten
