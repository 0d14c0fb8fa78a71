// LU-based linear algebra on float32/64 and complex64/128: linalg_lu_factor_ex (lowering's
// kLuFactor), lu_unpack and linalg_lu, linalg_lu_solve, _linalg_solve_ex, linalg_inv_ex,
// _linalg_det, _linalg_slogdet, and the Cholesky solves (_cholesky_solve_helper,
// cholesky_inverse); Householder QR (geqrf, linalg_householder_product, ormqr, linalg_qr). All
// composed from triangular solves and the device's own kernels. PyTorch's
// composites (linalg.solve, inv, det, tensorinv, ...) and autograd's formulas build on these.
// Errors that depend on the values (singular matrices) are read by the same _linalg_check_errors
// as on the CPU, only in the variants that check them.
#include "lowering/decompositions.h"

#include <ATen/ATen.h>
#include <ATen/native/LinearAlgebraUtils.h>
#include <torch/library.h>

#include "aten/device_checks.h"
#include "aten/dtype_rules.h"
#include "aten/op_result.h"
#include "aten/tensor_bridge.h"
#include "lowering/linalg.h"

namespace torch_pjrt::aten {
namespace {

using at::Tensor;

std::vector<int64_t> batch_of(const Tensor& t, int64_t matrix_dims = 2) {
  return std::vector<int64_t>(t.sizes().begin(), t.sizes().end() - matrix_dims);
}

std::vector<int64_t> with(std::vector<int64_t> dims, std::initializer_list<int64_t> tail) {
  dims.insert(dims.end(), tail);
  return dims;
}

// How op(A) is applied in a triangular solve.
enum class Op { kNone = 0, kTranspose = 1, kAdjoint = 2 };

// X with op(T) X = B, T the lower or upper triangle of `a` (unit diagonal when `unit`); a and b
// share their dtype and batch dims.
Tensor tri_solve(const Tensor& a, const Tensor& b, bool lower, bool unit, Op op) {
  const int device = common_device("triangular_solve", {&a, &b});
  graph::Attrs attrs;
  const bool complex = at::isComplexType(a.scalar_type());
  attrs.ints = {1, lower, unit, op == Op::kAdjoint && !complex ? 1 : static_cast<int64_t>(op)};
  auto value = graph::record1(lowering::kTriangularSolve, {read(a), read(b)}, std::move(attrs),
                              tensor_type(b.scalar_type(), b.sizes()), device);
  Tensor x = make_tensor(value, b.scalar_type(), device);
  finish_op();
  return x;
}

std::tuple<Tensor, Tensor, Tensor> lu_factor_ex(const Tensor& a, bool pivot, bool check_errors) {
  TORCH_CHECK(a.dim() >= 2,
              "torch.lu_factor: Expected tensor with 2 or more dimensions. Got size: ", a.sizes(),
              " instead");
  TORCH_CHECK(pivot, "linalg.lu_factor: LU without pivoting is not implemented on the CPU");
  check_lapack_type("lu_cpu", a.scalar_type());
  const int device = common_device("linalg_lu_factor_ex", {&a});
  const std::vector<int64_t> batch = batch_of(a);
  auto values =
      graph::record(lowering::kLuFactor, {read(a)}, {},
                    {tensor_type(a.scalar_type(), a.sizes()),
                     tensor_type(at::kInt, with(batch, {std::min(a.size(-2), a.size(-1))})),
                     tensor_type(at::kInt, batch)},
                    device);
  Tensor lu = make_tensor(values[0], a.scalar_type(), device);
  Tensor pivots = make_tensor(values[1], at::kInt, device);
  Tensor info = make_tensor(values[2], at::kInt, device);
  finish_op();
  if (check_errors) at::_linalg_check_errors(info, "torch.linalg.lu_factor_ex", a.dim() == 2);
  return {lu, pivots, info};
}

// The row permutation of `pivots` for m rows and its inverse, as int64 for gathers.
std::pair<Tensor, Tensor> permutation(const Tensor& pivots, int64_t m) {
  const int device = common_device("lu_unpack", {&pivots});
  graph::Attrs attrs;
  attrs.ints = {m};
  const auto type = tensor_type(at::kInt, with(batch_of(pivots, 1), {m}));
  auto values = graph::record(lowering::kLuPermutation, {read(pivots)}, std::move(attrs),
                              {type, type}, device);
  Tensor perm = make_tensor(values[0], at::kInt, device);
  Tensor inverse = make_tensor(values[1], at::kInt, device);
  finish_op();
  return {perm.to(at::kLong), inverse.to(at::kLong)};
}

Tensor gather_rows(const Tensor& b, const Tensor& rows) {
  return b.gather(-2, rows.unsqueeze(-1).expand(b.sizes()));
}

// X with A X = B (A^H X = B when `adjoint`), A = P L U given by (lu, pivots); lu and b share their
// dtype and batch dims.
Tensor lu_solve_left(const Tensor& lu, const Tensor& pivots, const Tensor& b, bool adjoint) {
  auto [perm, inverse] = permutation(pivots, lu.size(-1));
  if (!adjoint) {
    const Tensor y = tri_solve(lu, gather_rows(b, perm), true, true, Op::kNone);
    return tri_solve(lu, y, false, false, Op::kNone);
  }
  const Tensor y = tri_solve(lu, b, false, false, Op::kAdjoint);
  return gather_rows(tri_solve(lu, y, true, true, Op::kAdjoint), inverse);
}

// lu and b broadcast to common batch dims, then solved on the left (or on the right: X A = B is
// A^H X^H = B^H).
Tensor lu_solve(const Tensor& lu, const Tensor& pivots, const Tensor& b, bool left, bool adjoint) {
  std::vector<int64_t> batch = at::infer_size(batch_of(lu), batch_of(b));
  const Tensor lu_b = lu.expand(with(batch, {lu.size(-2), lu.size(-1)}));
  const Tensor piv_b = pivots.expand(with(batch, {pivots.size(-1)}));
  const Tensor b_b = b.expand(with(batch, {b.size(-2), b.size(-1)}));
  if (left) return lu_solve_left(lu_b, piv_b, b_b, adjoint);
  return lu_solve_left(lu_b, piv_b, b_b.mH(), !adjoint).mH();
}

Tensor linalg_lu_solve(const Tensor& lu, const Tensor& pivots, const Tensor& b, bool left,
                       bool adjoint) {
  TORCH_CHECK(lu.scalar_type() == b.scalar_type(),
              "linalg.lu_solve: Expected LU and B to have the same dtype, but found LU of type ",
              lu.scalar_type(), " and B of type ", b.scalar_type(), " instead");
  TORCH_CHECK(pivots.scalar_type() == at::kInt,
              "linalg.lu_solve: pivots should be a Tensor of scalar type torch.int32");
  at::native::squareCheckInputs(lu, "torch.linalg.lu_solve", "LU");
  at::native::checkInputsSolver(lu, b, left, "linalg.lu_solve");
  TORCH_CHECK(lu.size(-1) == pivots.size(-1),
              "linalg.lu_solve: Number of pivots per batch should be same as the dimension of the "
              "matrix");
  TORCH_CHECK(lu.sizes().slice(0, lu.dim() - 1).equals(pivots.sizes()),
              "linalg.lu_solve: Expected LU.shape[:-1] and pivots.shape to be the same, but got "
              "pivots with shape ",
              pivots.sizes(), " instead");
  check_lapack_type("lu_solve_cpu", lu.scalar_type());
  return lu_solve(lu, pivots, b, left, adjoint);
}

std::tuple<Tensor, Tensor, Tensor> unpack(const Tensor& lu, const Tensor& pivots, bool unpack_data,
                                          bool unpack_pivots) {
  TORCH_CHECK(lu.dim() >= 2,
              "torch.lu_unpack: Expected tensor with 2 or more dimensions. Got size: ", lu.sizes(),
              " instead");
  if (unpack_pivots) {
    TORCH_CHECK(pivots.scalar_type() == at::kInt,
                "torch.lu_unpack: LU_pivots is expected to be a contiguous tensor of torch.int32 "
                "dtype.\nNote: this function is intended to be used with the output produced by "
                "torch.linalg.lu_factor");
  }
  const int64_t m = lu.size(-2), n = lu.size(-1), k = std::min(m, n);
  Tensor l = at::empty({0}, lu.options()), u = at::empty({0}, lu.options());
  Tensor p = at::empty({0}, lu.options());
  if (unpack_data) {
    l = lu.narrow(-1, 0, k).tril(-1) + at::eye(m, k, lu.options());
    u = lu.narrow(-2, 0, k).triu();
  }
  if (unpack_pivots) {
    const graph::CheckPtr valid = check_in_range(
        "lu_unpack", pivots, 1, m + 1,
        {graph::CheckKind::Runtime,
         "pivots passed to lu_unpack must be between 1 and LU.size(-2) inclusive.Did you "
         "properly pass the result of lu_factor?",
         "", false});
    const Tensor perm = permutation(pivots, m).first;
    // P[r, c] = 1 where row r of A is row c of LU: A = P L U.
    p = at::eq(perm.unsqueeze(-2), at::arange(m, perm.options()).unsqueeze(-1))
            .to(lu.scalar_type());
    if (valid) graph::depends_on(read(p), valid);
  }
  return {p, l, u};
}

std::tuple<Tensor, Tensor, Tensor> linalg_lu(const Tensor& a, bool pivot) {
  TORCH_CHECK(a.dim() >= 2,
              "linalg.lu: Expected tensor with 2 or more dimensions. Got size: ", a.sizes(),
              " instead");
  auto [lu, pivots, info] = lu_factor_ex(a, pivot, false);
  return unpack(lu, pivots, true, true);
}

std::tuple<Tensor, Tensor, Tensor, Tensor> linalg_solve_ex(const Tensor& a, const Tensor& b,
                                                           bool left, bool check_errors) {
  at::native::checkFloatingOrComplex(a, "linalg.solve");
  TORCH_CHECK(a.scalar_type() == b.scalar_type(),
              "linalg.solve: Expected A and B to have the same dtype, but found A of type ",
              a.scalar_type(), " and B of type ", b.scalar_type(), " instead");
  const bool vector_case = at::native::linalg_solve_is_vector_rhs(a, b);
  const Tensor b_ = vector_case ? b.unsqueeze(-1) : b;
  at::native::checkInputsSolver(a, b_, left, "linalg.solve");
  at::native::_linalg_broadcast_batch_dims(b_, a);
  TORCH_CHECK(left || !vector_case,
              "linalg.solve: Vector broadcasting of the left hand side is not supported for "
              "left=False. In this case linalg.solve is equivalent to B / A.squeeze(-1)");
  auto [lu, pivots, info] = lu_factor_ex(a, true, false);
  Tensor x = lu_solve(lu, pivots, b_, left, false);
  if (vector_case) x = x.squeeze(-1);
  if (check_errors) at::_linalg_check_errors(info, "torch.linalg.solve_ex", a.dim() == 2);
  return {x, lu, pivots, info};
}

std::tuple<Tensor, Tensor> linalg_inv_ex(const Tensor& a, bool check_errors) {
  at::native::squareCheckInputs(a, "linalg.inv");
  at::native::checkFloatingOrComplex(a, "linalg.inv", false);
  auto [lu, pivots, info] = lu_factor_ex(a, true, false);
  const Tensor eye = at::eye(a.size(-1), a.options()).expand(a.sizes());
  Tensor inverse = lu_solve(lu, pivots, eye, true, false);
  if (check_errors) at::_linalg_check_errors(info, "linalg.inv_ex", a.dim() == 2);
  return {inverse, info};
}

// (-1)^(number of rows pivots swapped), in `dtype`.
Tensor permutation_sign(const Tensor& pivots, at::ScalarType dtype) {
  const Tensor moved = at::ne(pivots, at::arange(1, pivots.size(-1) + 1, pivots.options()));
  const Tensor odd = at::remainder(moved.sum(-1), 2);
  return (1 - 2 * odd).to(dtype);
}

// The matrix det and slogdet factor: A^T for a contiguous real A, as CPU PyTorch does (its
// backward formulas solve with the saved LU without the adjoint then; factoring A itself gave
// transposed gradients).
Tensor factored(const Tensor& a) { return a.is_contiguous() && !a.is_complex() ? a.mT() : a; }

std::tuple<Tensor, Tensor, Tensor> linalg_det(const Tensor& a) {
  at::native::squareCheckInputs(a, "linalg.det");
  at::native::checkFloatingOrComplex(a, "linalg.det");
  auto [lu, pivots, info] = lu_factor_ex(factored(a), true, false);
  const Tensor det = lu.diagonal(0, -2, -1).prod(-1) * permutation_sign(pivots, a.scalar_type());
  return {det, lu, pivots};
}

std::tuple<Tensor, Tensor, Tensor, Tensor> linalg_slogdet(const Tensor& a) {
  at::native::squareCheckInputs(a, "linalg.slogdet");
  at::native::checkFloatingOrComplex(a, "linalg.slogdet", false);
  auto [lu, pivots, info] = lu_factor_ex(factored(a), true, false);
  const Tensor diagonal = lu.diagonal(0, -2, -1);
  const Tensor sign = diagonal.sgn().prod(-1) * permutation_sign(pivots, a.scalar_type());
  const Tensor logabsdet = diagonal.abs().log().sum(-1);
  return {sign, logabsdet, lu, pivots};
}

// X with A X = B, A = L L^H (U^H U when `upper`) given by its factor `f`; batch dims already
// broadcast by cholesky_solve.
Tensor cholesky_solve_helper(const Tensor& b, const Tensor& f, bool upper) {
  check_lapack_type("cholesky_solve_cpu", b.scalar_type());
  if (upper)
    return tri_solve(f, tri_solve(f, b, false, false, Op::kAdjoint), false, false, Op::kNone);
  return tri_solve(f, tri_solve(f, b, true, false, Op::kNone), true, false, Op::kAdjoint);
}

Tensor cholesky_inverse(const Tensor& f, bool upper) {
  at::native::squareCheckInputs(f, "cholesky_inverse");
  check_lapack_type("cholesky_inverse_out_cpu", f.scalar_type());
  const Tensor eye = at::eye(f.size(-1), f.options()).expand(f.sizes());
  return cholesky_solve_helper(eye.contiguous(), f, upper);
}

// geqrf's packed reflectors and their scalars.
std::tuple<Tensor, Tensor> householder_qr(const Tensor& a) {
  TORCH_CHECK(a.dim() >= 2, "torch.geqrf: input must have at least 2 dimensions.");
  check_lapack_type("geqrf_cpu", a.scalar_type());
  const int device = common_device("geqrf", {&a});
  const std::vector<int64_t> batch = batch_of(a);
  auto values =
      graph::record(lowering::kHouseholderQr, {read(a)}, {},
                    {tensor_type(a.scalar_type(), a.sizes()),
                     tensor_type(a.scalar_type(), with(batch, {std::min(a.size(-2), a.size(-1))}))},
                    device);
  // Column-major matrices, as LAPACK leaves them on the CPU and CUDA (callers check mT's layout).
  Tensor packed = at::empty_strided(
      a.sizes(), at::native::batched_matrix_contiguous_strides(a.sizes(), /*f_contig=*/true),
      a.options());
  write(packed, values[0]);
  Tensor tau = make_tensor(values[1], a.scalar_type(), device);
  finish_op();
  return {packed, tau};
}

// op(Q) c or c op(Q) for the reflectors (v, tau); batch dims already equal.
Tensor apply_householder(const Tensor& v, const Tensor& tau, const Tensor& c, bool left,
                         bool adjoint) {
  const int device = common_device("ormqr", {&v, &tau, &c});
  graph::Attrs attrs;
  attrs.ints = {left, adjoint};
  auto value = graph::record1(lowering::kApplyHouseholder, {read(v), read(tau), read(c)},
                              std::move(attrs), tensor_type(c.scalar_type(), c.sizes()), device);
  Tensor out = make_tensor(value, c.scalar_type(), device);
  finish_op();
  return out;
}

void check_reflectors(const char* name, const Tensor& a, const Tensor& tau) {
  TORCH_CHECK(tau.dim() == a.dim() - 1, name,
              ": Expected tau to have one dimension less than input, but got tau.ndim equal to ",
              tau.dim(), " and input.ndim is equal to ", a.dim());
  if (a.dim() > 2) {
    TORCH_CHECK(a.sizes().slice(0, a.dim() - 2).equals(tau.sizes().slice(0, tau.dim() - 1)), name,
                ": Expected batch dimensions of tau to be equal to input.shape[:-2], but got ",
                tau.sizes().slice(0, tau.dim() - 1));
  }
  TORCH_CHECK(tau.scalar_type() == a.scalar_type(), name, ": tau dtype ", tau.scalar_type(),
              " does not match input dtype ", a.scalar_type());
}

Tensor householder_product(const Tensor& a, const Tensor& tau) {
  const char* name = "torch.linalg.householder_product";
  TORCH_CHECK(a.dim() >= 2, name, ": input must have at least 2 dimensions.");
  TORCH_CHECK(a.size(-2) >= a.size(-1), name,
              ": input.shape[-2] must be greater than or equal to input.shape[-1]");
  TORCH_CHECK(a.size(-1) >= tau.size(-1), name,
              ": input.shape[-1] must be greater than or equal to tau.shape[-1]");
  check_reflectors(name, a, tau);
  check_lapack_type("orgqr_cpu", a.scalar_type());
  const Tensor eye = at::eye(a.size(-2), a.size(-1), a.options()).expand(a.sizes());
  return apply_householder(a, tau, eye.contiguous(), true, false);
}

Tensor ormqr(const Tensor& a, const Tensor& tau, const Tensor& c, bool left, bool transpose) {
  TORCH_CHECK(a.dim() >= 2, "torch.ormqr: input must have at least 2 dimensions.");
  TORCH_CHECK(c.dim() >= 2, "torch.ormqr: other must have at least 2 dimensions.");
  const int64_t side = left ? -2 : -1;
  TORCH_CHECK(c.size(side) >= tau.size(-1), "torch.ormqr: other.shape[", side,
              "] must be greater than or equal to tau.shape[-1]");
  TORCH_CHECK(c.size(side) == a.size(-2), "torch.ormqr: other.shape[", side,
              "] must be equal to input.shape[-2]");
  TORCH_CHECK(tau.size(-1) <= a.size(-1),
              "torch.ormqr: tau.shape[-1] must be less than or equal to input.shape[-1]");
  TORCH_CHECK(a.dim() - tau.dim() == 1,
              "torch.ormqr: Expected tau to have one dimension less than input, but got tau.ndim "
              "equal to ",
              tau.dim(), " and input.ndim is equal to ", a.dim());
  TORCH_CHECK(a.dim() == c.dim(),
              "torch.ormqr: Expected other to have the same number of dimensions as input, but got "
              "other.ndim equal to ",
              c.dim(), " and input.ndim is equal to ", a.dim());
  if (a.dim() > 2) {
    const at::IntArrayRef batch = a.sizes().slice(0, a.dim() - 2);
    TORCH_CHECK(
        tau.sizes().slice(0, tau.dim() - 1).equals(batch),
        "torch.ormqr: Expected batch dimensions of tau to be equal to input.shape[:-2], but "
        "got ",
        tau.sizes().slice(0, tau.dim() - 1));
    TORCH_CHECK(c.sizes().slice(0, c.dim() - 2).equals(batch),
                "torch.ormqr: Expected batch dimensions of other to be equal to input.shape[:-2], "
                "but got ",
                c.sizes().slice(0, c.dim() - 2));
  }
  TORCH_CHECK(tau.scalar_type() == a.scalar_type() && c.scalar_type() == a.scalar_type(),
              "torch.ormqr: Expected input, tau and other to have the same dtype, got ",
              a.scalar_type(), ", ", tau.scalar_type(), " and ", c.scalar_type());
  check_lapack_type("ormqr_cpu", a.scalar_type());
  return apply_householder(a, tau, c, left, transpose);
}

std::tuple<Tensor, Tensor> linalg_qr(const Tensor& a, c10::string_view mode) {
  at::native::checkIsMatrix(a, "linalg.qr");
  at::native::checkFloatingOrComplex(a, "linalg.qr");
  auto [compute_q, reduced] = at::native::_parse_qr_mode(mode);
  const int64_t m = a.size(-2), n = a.size(-1), k = std::min(m, n);
  auto [packed, tau] = householder_qr(a);
  Tensor r = (reduced ? packed.narrow(-2, 0, k) : packed).triu();
  Tensor q = at::empty({0}, a.options());
  if (compute_q) {
    const int64_t cols = reduced ? k : m;
    const Tensor eye = at::eye(m, cols, a.options()).expand(with(batch_of(a), {m, cols}));
    q = apply_householder(packed.narrow(-1, 0, k), tau, eye.contiguous(), true, false);
  }
  return {q, r};
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("linalg_lu_factor_ex", lu_factor_ex);
  m.impl("lu_unpack", unpack);
  m.impl("linalg_lu", linalg_lu);
  m.impl("linalg_lu_solve", linalg_lu_solve);
  m.impl("_linalg_solve_ex", linalg_solve_ex);
  m.impl("linalg_inv_ex", linalg_inv_ex);
  m.impl("_linalg_det", linalg_det);
  m.impl("_linalg_slogdet", linalg_slogdet);
  m.impl("_cholesky_solve_helper", cholesky_solve_helper);
  m.impl("cholesky_inverse", cholesky_inverse);
  m.impl("geqrf", householder_qr);
  m.impl("linalg_householder_product", householder_product);
  m.impl("ormqr", ormqr);
  m.impl("linalg_qr", linalg_qr);
}

}  // namespace torch_pjrt::aten
