// linalg_lstsq (and its out=) on float32/64 and complex64/128 through the device's SVD: the
// solution is V S^+ U^H B with the singular values above rcond * max(S) inverted (all of them
// for 'gels', which assumes full rank). The other fields are filled as CPU PyTorch fills them for
// each LAPACK driver: rank for all but 'gels', singular values for 'gelsd'/'gelss', residuals
// (squared column norms of B - A X) for all but 'gelsy' when m > n and every matrix has full rank.
#include <ATen/ATen.h>
#include <ATen/ExpandUtils.h>
#include <torch/library.h>

#include <limits>

#include "aten/op_result.h"

namespace torch_pjrt::aten {
namespace {

using at::Tensor;

std::tuple<Tensor, Tensor, Tensor, Tensor> lstsq(const Tensor& a, const Tensor& b,
                                                 std::optional<double> rcond,
                                                 std::optional<c10::string_view> driver_name) {
  TORCH_CHECK(a.dim() >= 2, "torch.linalg.lstsq: input must have at least 2 dimensions.");
  TORCH_CHECK(b.dim() >= 1, "torch.linalg.lstsq: other must have at least 1 dimension.");
  TORCH_CHECK(a.scalar_type() == b.scalar_type(),
              "torch.linalg.lstsq: Expected input and other to have the same dtype, but got "
              "input's dtype ",
              a.scalar_type(), " and other's dtype ", b.scalar_type());
  const int64_t dim_diff = a.dim() - b.dim();
  TORCH_CHECK(0 <= dim_diff && dim_diff <= 1,
              "torch.linalg.lstsq: input.dim() must be greater or equal to other.dim() and "
              "(input.dim() - other.dim()) <= 1");
  const bool vector = dim_diff == 1;
  const Tensor b2 = vector ? b.unsqueeze(-1) : b;
  TORCH_CHECK(a.size(-2) == b2.size(-2),
              vector ? "torch.linalg.lstsq: input.size(-2) should match other.size(-1)"
                     : "torch.linalg.lstsq: input.size(-2) should match other.size(-2)");
  const std::string driver = driver_name.has_value() ? std::string(*driver_name) : "gelsy";
  TORCH_CHECK(driver == "gels" || driver == "gelsy" || driver == "gelsd" || driver == "gelss",
              "torch.linalg.lstsq: parameter `driver` should be one of (gels, gelsy, gelsd, "
              "gelss)");
  const at::ScalarType t = a.scalar_type();
  TORCH_CHECK(
      t == at::kFloat || t == at::kDouble || t == at::kComplexFloat || t == at::kComplexDouble,
      "This function doesn't handle types other than float and double");
  const at::ScalarType real = c10::toRealValueType(t);
  const int64_t m = a.size(-2), n = a.size(-1);
  // Batch dims broadcast as the CPU's solvers do.
  std::vector<int64_t> batch =
      at::infer_size(a.sizes().slice(0, a.dim() - 2), b2.sizes().slice(0, b2.dim() - 2));
  auto batched = [&](const Tensor& x) {
    std::vector<int64_t> dims = batch;
    dims.push_back(x.size(-2));
    dims.push_back(x.size(-1));
    return x.expand(dims);
  };
  const Tensor ab = batched(a), bb = batched(b2);
  auto [u, s, vh] = at::linalg_svd(ab, /*full_matrices=*/false);
  // CPU PyTorch's default rcond: the dtype's epsilon times max(m, n).
  const double eps = real == at::kFloat ? std::numeric_limits<float>::epsilon()
                                        : std::numeric_limits<double>::epsilon();
  const double ratio = rcond.has_value() ? *rcond : eps * static_cast<double>(std::max(m, n));
  // s is descending: its first entry is the largest.
  const Tensor largest = s.size(-1) ? s.narrow(-1, 0, 1) : s;
  const Tensor kept = s > largest * ratio;
  const Tensor inverse =
      driver == "gels" ? s.reciprocal() : at::where(kept, s.reciprocal(), at::zeros_like(s));
  Tensor x = at::matmul(vh.mH(), inverse.to(t).unsqueeze(-1) * at::matmul(u.mH(), bb));
  const Tensor rank = kept.sum(-1);
  Tensor residuals = at::empty({0}, a.options().dtype(real));
  if (m > n && driver != "gelsy") {
    const bool full = driver == "gels" || rank.eq(n).all().item<bool>();
    if (full) residuals = (bb - at::matmul(ab, x)).abs().pow(2).sum(-2);
  }
  if (vector) x = x.squeeze(-1);
  const Tensor rank_out = driver == "gels" ? at::empty({0}, a.options().dtype(at::kLong)) : rank;
  const Tensor values =
      driver == "gelsd" || driver == "gelss" ? s : at::empty({0}, a.options().dtype(real));
  return {x, residuals, rank_out, values};
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("linalg_lstsq", lstsq);
  m.impl("linalg_lstsq.out",
         [](const Tensor& a, const Tensor& b, std::optional<double> rcond,
            std::optional<c10::string_view> driver, Tensor& solution, Tensor& residuals,
            Tensor& rank, Tensor& values) -> std::tuple<Tensor&, Tensor&, Tensor&, Tensor&> {
           auto [x, r, k, s] = lstsq(a, b, rcond, driver);
           copy_to_out(solution, x);
           copy_to_out(residuals, r);
           copy_to_out(rank, k);
           copy_to_out(values, s);
           return {solution, residuals, rank, values};
         });
}

}  // namespace torch_pjrt::aten
