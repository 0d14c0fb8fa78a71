// Hermitian eigendecomposition (_linalg_eigh) and SVD (_linalg_svd) on float32/64 and
// complex64/128, by the Jacobi lowerings of lowering/spectral.h, ordered here as LAPACK orders
// them (eigenvalues ascending, singular values descending). PyTorch's composites (eigvalsh,
// svdvals, pinv, matrix_rank, the nuclear and spectral norms, cond) and autograd's formulas build
// on these two.
#include "lowering/spectral.h"

#include <ATen/ATen.h>
#include <ATen/native/LinearAlgebraUtils.h>
#include <torch/library.h>

#include "aten/device_checks.h"
#include "aten/dtype_rules.h"
#include "aten/op_result.h"
#include "aten/tensor_bridge.h"

namespace torch_pjrt::aten {
namespace {

using at::Tensor;

std::vector<int64_t> with(c10::IntArrayRef batch, std::initializer_list<int64_t> tail) {
  std::vector<int64_t> dims(batch.begin(), batch.end());
  dims.insert(dims.end(), tail);
  return dims;
}

// The columns of `x` [..., r, c] in the order `order` [..., c] gives.
Tensor gather_columns(const Tensor& x, const Tensor& order) {
  return x.gather(-1, order.unsqueeze(-2).expand(x.sizes()));
}

// The Hermitian matrix whose lower (or upper) triangle `a` holds; the diagonal's imaginary part
// is ignored, as LAPACK does.
Tensor hermitian_from(const Tensor& a, bool lower) {
  const Tensor strict = lower ? a.tril(-1) : a.triu(1);
  Tensor diagonal = a.diagonal(0, -2, -1);
  if (a.is_complex()) diagonal = at::real(diagonal).to(a.scalar_type());
  return strict + strict.mH() + at::diag_embed(diagonal);
}

void check_eigh_inputs(const Tensor& a, c10::string_view uplo) {
  at::native::squareCheckInputs(a, "linalg.eigh");
  at::native::checkUplo(uplo);
}

std::tuple<Tensor, Tensor> eigh(const Tensor& a, c10::string_view uplo, bool compute_v) {
  check_eigh_inputs(a, uplo);
  check_lapack_type("linalg_eigh_cpu", a.scalar_type());
  const at::ScalarType real = c10::toRealValueType(a.scalar_type());
  const int device = common_device("linalg_eigh", {&a});
  const Tensor h = hermitian_from(a, uplo == "L" || uplo == "l");
  auto values = graph::record(lowering::kJacobiEigh, {read(h)}, {},
                              {tensor_type(real, with(a.sizes().slice(0, a.dim() - 1), {})),
                               tensor_type(a.scalar_type(), a.sizes())},
                              device);
  const Tensor w = make_tensor(values[0], real, device);
  const Tensor v = make_tensor(values[1], a.scalar_type(), device);
  finish_op();
  auto [sorted, order] = w.sort(/*stable=*/true, -1, /*descending=*/false);
  if (!compute_v) return {sorted, at::empty({0}, a.options())};
  return {sorted, gather_columns(v, order)};
}

// `u` [..., r, k] (orthonormal columns where nonzero) as exactly orthonormal columns, completed
// to a unitary r x r matrix when `complete`: Householder QR of [u, I], its Q's first k columns
// turned to the phases of u's.
Tensor orthonormal_basis(const Tensor& u, bool complete) {
  const int64_t r = u.size(-2), k = u.size(-1);
  Tensor m = u;
  if (complete)
    m = at::cat({u, at::eye(r, u.options()).expand(with(u.sizes().slice(0, u.dim() - 2), {r, r}))},
                -1);
  auto [q, rr] = at::linalg_qr(m, complete ? "complete" : "reduced");
  const Tensor d = rr.diagonal(0, -2, -1).narrow(-1, 0, std::min(k, r));
  // The phase d / |d| (1 where d = 0) of each of u's columns in q.
  const Tensor mag = d.abs();
  Tensor phase =
      at::where(mag > 0, d / at::where(mag > 0, mag, at::ones_like(mag)), at::ones_like(d));
  if (complete && r > k)
    phase = at::cat({phase, at::ones({with(phase.sizes().slice(0, phase.dim() - 1), {r - k})},
                                     phase.options())},
                    -1);
  return q * phase.unsqueeze(-2);
}

void check_svd_inputs(const Tensor& a, const std::optional<c10::string_view>& driver) {
  at::native::checkIsMatrix(a, "linalg.svd");
  at::native::checkFloatingOrComplex(a, "linalg.svd");
  TORCH_CHECK(!driver.has_value(),
              "torch.linalg.svd: keyword argument `driver=` is only supported on CUDA inputs with "
              "cuSOLVER backend.");
}

std::tuple<Tensor, Tensor, Tensor> svd(const Tensor& a, bool full_matrices, bool compute_uv,
                                       std::optional<c10::string_view> driver) {
  check_svd_inputs(a, driver);
  check_lapack_type("linalg_svd_cpu", a.scalar_type());
  const int64_t m = a.size(-2), n = a.size(-1), k = std::min(m, n);
  const auto batch = a.sizes().slice(0, a.dim() - 2);
  const int device = common_device("linalg_svd", {&a});
  // One-sided Jacobi needs at least as many rows as columns: A = U S V^H is A^H = V S U^H.
  const bool wide = m < n;
  const Tensor tall = wide ? a.mH() : a;
  const int64_t rows = std::max(m, n);
  auto values = graph::record(lowering::kJacobiSvd, {read(tall)}, {},
                              {tensor_type(a.scalar_type(), with(batch, {rows, k})),
                               tensor_type(a.scalar_type(), with(batch, {k, k}))},
                              device);
  const Tensor w = make_tensor(values[0], a.scalar_type(), device);
  const Tensor v = make_tensor(values[1], a.scalar_type(), device);
  finish_op();
  auto [s, order] = at::linalg_vector_norm(w, 2, at::IntArrayRef{-2}, false, std::nullopt)
                        .sort(/*stable=*/true, -1, /*descending=*/true);
  if (!compute_uv) return {at::empty({0}, a.options()), s, at::empty({0}, a.options())};
  const Tensor ws = gather_columns(w, order), vs = gather_columns(v, order);
  const Tensor safe = at::where(s > 0, s, at::ones_like(s));
  const Tensor left = orthonormal_basis(ws / safe.unsqueeze(-2), full_matrices);
  if (wide) return {vs, s, left.mH()};
  return {left, s, vs.mH()};
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_linalg_eigh", eigh);
  m.impl("_linalg_eigh.eigenvalues",
         [](const Tensor& a, c10::string_view uplo, bool compute_v, Tensor& values,
            Tensor& vectors) -> std::tuple<Tensor&, Tensor&> {
           // The structured CPU kernel's out= checks, after its meta function's input checks.
           check_eigh_inputs(a, uplo);
           check_out_dtype(values, c10::toRealValueType(a.scalar_type()));
           check_out_dtype(vectors, a.scalar_type());
           auto [w, v] = eigh(a, uplo, compute_v);
           copy_to_out(values, w);
           copy_to_out(vectors, v);
           return {values, vectors};
         });
  m.impl("_linalg_svd", svd);
  m.impl("_linalg_svd.U",
         [](const Tensor& a, bool full_matrices, bool compute_uv,
            std::optional<c10::string_view> driver, Tensor& u_out, Tensor& s_out,
            Tensor& vh_out) -> std::tuple<Tensor&, Tensor&, Tensor&> {
           check_svd_inputs(a, driver);
           check_out_dtype(u_out, a.scalar_type());
           check_out_dtype(s_out, c10::toRealValueType(a.scalar_type()));
           check_out_dtype(vh_out, a.scalar_type());
           auto [u, s, vh] = svd(a, full_matrices, compute_uv, driver);
           copy_to_out(u_out, u);
           copy_to_out(s_out, s);
           copy_to_out(vh_out, vh);
           return {u_out, s_out, vh_out};
         });
}

}  // namespace torch_pjrt::aten
