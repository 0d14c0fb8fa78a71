// Cholesky (linalg_cholesky_ex, cholesky) and triangular solves (linalg_solve_triangular,
// triangular_solve) on float32/float64 and complex, as StableHLO's own ops (lowering/linalg.h),
// with PyTorch's checks and messages; errors that depend on the values (not positive-definite) are
// read by the same _linalg_check_errors as on the CPU, the one sync those ops need.
#include "lowering/linalg.h"

#include <ATen/ATen.h>
#include <ATen/ExpandUtils.h>
#include <torch/library.h>

#include "aten/op_result.h"
#include "aten/tensor_bridge.h"

namespace torch_pjrt::aten {
namespace {

using at::Tensor;

void check_matrices(const char* name, const char* arg, const Tensor& t) {
  TORCH_CHECK(t.dim() >= 2, name, ": The input tensor ", arg, " must have at least 2 dimensions.");
}

void check_float(const char* kernel, at::ScalarType t) {
  TORCH_CHECK_NOT_IMPLEMENTED(
      t == at::kFloat || t == at::kDouble || t == at::kComplexFloat || t == at::kComplexDouble,
      "\"", kernel, "\" not implemented for '", c10::toString(t), "'");
}

// `name`: "linalg.cholesky" or "cholesky", as PyTorch's messages say.
std::tuple<Tensor, Tensor> cholesky_ex(const Tensor& a, bool upper, bool check_errors,
                                       const char* name = "linalg.cholesky") {
  check_matrices(name, "A", a);
  TORCH_CHECK(a.size(-1) == a.size(-2), name,
              ": A must be batches of square matrices, but they are ", a.size(-2), " by ",
              a.size(-1), " matrices");
  TORCH_CHECK(at::isFloatingType(a.scalar_type()) || at::isComplexType(a.scalar_type()), name,
              ": Expected a floating point or complex tensor as input. Got ", a.scalar_type());
  check_float("cholesky_cpu", a.scalar_type());
  const int device = common_device("linalg_cholesky_ex", {&a});
  const std::vector<int64_t> batch(a.sizes().begin(), a.sizes().end() - 2);
  graph::Attrs attrs;
  attrs.ints = {upper ? 1 : 0};
  auto values = graph::record(
      lowering::kCholesky, {read(a)}, std::move(attrs),
      {tensor_type(a.scalar_type(), a.sizes()), tensor_type(at::kInt, batch)}, device);
  Tensor l = make_tensor(values[0], a.scalar_type(), device);
  Tensor info = make_tensor(values[1], at::kInt, device);
  finish_op();
  if (check_errors) at::_linalg_check_errors(info, "linalg.cholesky_ex", a.dim() == 2);
  return {l, info};
}

// X with A X = B (left) or X A = B, A triangular; batch dims broadcast and dtypes promoted.
Tensor solve_triangular(const char* name, const Tensor& a, const Tensor& b, bool upper, bool left,
                        bool unitriangular, bool transpose) {
  const at::ScalarType dtype = at::result_type(a, b);
  check_float("triangular_solve_cpu", dtype);
  const int device = common_device(name, {&a, &b});
  std::vector<int64_t> batch =
      at::infer_size(a.sizes().slice(0, a.dim() - 2), b.sizes().slice(0, b.dim() - 2));
  std::vector<int64_t> a_sizes = batch, b_sizes = batch;
  a_sizes.insert(a_sizes.end(), {a.size(-2), a.size(-1)});
  b_sizes.insert(b_sizes.end(), {b.size(-2), b.size(-1)});
  const Tensor a_full = a.to(dtype).expand(a_sizes), b_full = b.to(dtype).expand(b_sizes);
  graph::Attrs attrs;
  attrs.ints = {left, !upper, unitriangular, transpose};
  auto value = graph::record1(lowering::kTriangularSolve, {read(a_full), read(b_full)},
                              std::move(attrs), tensor_type(dtype, b_sizes), device);
  return to_new(OpResult{value, dtype, b_sizes, device});
}

Tensor linalg_solve_triangular(const Tensor& a, const Tensor& b, bool upper, bool left,
                               bool unitriangular) {
  check_matrices("linalg.solve_triangular", "A", a);
  check_matrices("linalg.solve_triangular", "B", b);
  const int64_t shared = left ? b.size(-2) : b.size(-1);
  TORCH_CHECK(a.size(-1) == a.size(-2) && a.size(-1) == shared,
              "linalg.solve_triangular: Incompatible shapes of A and B for the equation ",
              left ? "AX = B" : "XA = B", " (", a.size(-2), "x", a.size(-1), " and ", b.size(-2),
              "x", b.size(-1), ")");
  return solve_triangular("linalg_solve_triangular", a, b, upper, left, unitriangular, false);
}

std::tuple<Tensor, Tensor> triangular_solve(const Tensor& b, const Tensor& a, bool upper,
                                            bool transpose, bool unitriangular) {
  TORCH_CHECK(b.dim() >= 2,
              "torch.triangular_solve: Expected b to have at least 2 dimensions, but it has ",
              b.dim(), " dimensions instead");
  TORCH_CHECK(a.dim() >= 2,
              "torch.triangular_solve: Expected A to have at least 2 dimensions, but it has ",
              a.dim(), " dimensions instead");
  TORCH_CHECK(a.size(-1) == a.size(-2) && a.size(-1) == b.size(-2),
              "Incompatible matrix sizes for triangular_solve: each A matrix is ", a.size(-2),
              " by ", a.size(-1), " but each b matrix is ", b.size(-2), " by ", b.size(-1));
  TORCH_CHECK(a.scalar_type() == b.scalar_type(),
              "Expected b and A to have the same dtype, but found b of type ", b.scalar_type(),
              " and A of type ", a.scalar_type(), " instead.");
  Tensor x = solve_triangular("triangular_solve", a, b, upper, true, unitriangular, transpose);
  std::vector<int64_t> a_sizes(x.sizes().begin(), x.sizes().end() - 2);
  a_sizes.insert(a_sizes.end(), {a.size(-2), a.size(-1)});
  return {x, a.expand(a_sizes).clone()};
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("linalg_cholesky_ex", [](const Tensor& a, bool upper, bool check_errors) {
    return cholesky_ex(a, upper, check_errors);
  });
  m.impl("cholesky", [](const Tensor& a, bool upper) {
    auto [l, info] = cholesky_ex(a, upper, false, "cholesky");
    at::_linalg_check_errors(info, "cholesky", a.dim() == 2);
    return l;
  });
  m.impl("linalg_solve_triangular", linalg_solve_triangular);
  m.impl("triangular_solve", triangular_solve);
}

}  // namespace torch_pjrt::aten
