// Matrix products: mm, bmm, addmm, baddbmm, addbmm, mv, addmv, dot, vdot, with
// PyTorch's argument checks and messages.
#include <ATen/ATen.h>
#include <torch/library.h>

#include "aten/op_result.h"
#include "aten/precision.h"
#include "aten/tensor_bridge.h"
#include "lowering/matmul.h"

namespace torch_pjrt::aten {
namespace {

using at::Tensor;

void check_same_dtype(const Tensor& a, const Tensor& b) {
  TORCH_CHECK(a.scalar_type() == b.scalar_type(),
              "expected m1 and m2 to have the same dtype, but got: ", a.scalar_type(),
              " != ", b.scalar_type());
}

// addmm's check of its written tensor: none when the product is empty (mat1 has no columns) and
// beta is 0, where the CPU only zeroes it.
SelfOverlap product_overlap(const Tensor& mat1, const at::Scalar& beta) {
  const bool zeroed = mat1.dim() == 2 && mat1.size(1) == 0 && beta.toComplexDouble() == 0.0;
  return zeroed ? SelfOverlap::kAllowed : SelfOverlap::kAsResized;
}

// addmv's (and mv.out's) check that self, mat and vec share a dtype.
void check_addmv_dtypes(at::ScalarType self, const Tensor& mat, const Tensor& vec) {
  TORCH_CHECK(mat.scalar_type() == self && vec.scalar_type() == self, "addmv",
              " input tensors must have the same dtype, but got ", self, ", ", mat.scalar_type(),
              ", and ", vec.scalar_type());
}

// beta or alpha of addmm/baddbmm/addbmm/addmv, recorded as a float attribute when it is real.
bool has_imaginary_part(const at::Scalar& s, const Tensor& like) {
  const bool imaginary = s.isComplex() && s.toComplexDouble().imag() != 0;
  TORCH_CHECK(!imaginary || like.is_complex(), "value cannot be converted to type ",
              like.scalar_type() == at::kDouble ? "double" : "float", " without overflow");
  return imaginary;
}
double real_factor(const at::Scalar& s) {
  return s.isComplex() ? s.toComplexDouble().real() : s.toDouble();
}

// beta * self + alpha * product for complex alpha or beta, composed of tensor ops (beta == 0
// ignores self, NaN included, as PyTorch does).
OpResult complex_factors(const Tensor& self, const Tensor& product, const at::Scalar& beta,
                         const at::Scalar& alpha, at::IntArrayRef sizes) {
  OneOp one;
  Tensor r = product * alpha;
  if (beta.toComplexDouble() != c10::complex<double>(0, 0)) r = r + self * beta;
  r = r.expand(sizes).contiguous();
  one.finish();
  return result_of(r);
}

OpResult mm_result(const Tensor& a, const Tensor& b) {
  TORCH_CHECK(a.dim() == 2, "self must be a matrix");
  TORCH_CHECK(b.dim() == 2, "mat2 must be a matrix");
  TORCH_CHECK(a.size(1) == b.size(0), "mat1 and mat2 shapes cannot be multiplied (", a.size(0), "x",
              a.size(1), " and ", b.size(0), "x", b.size(1), ")");
  check_same_dtype(a, b);
  const int device = common_device("mm", {&a, &b});
  std::vector<int64_t> sizes{a.size(0), b.size(1)};
  graph::Attrs attrs;
  add_precision(attrs, a.scalar_type());
  auto value = graph::record1(lowering::kMatmul, {read(a), read(b)}, std::move(attrs),
                              tensor_type(a.scalar_type(), sizes), device);
  return {value, a.scalar_type(), sizes, device};
}

OpResult bmm_result(const Tensor& a, const Tensor& b) {
  TORCH_CHECK(a.dim() == 3, "batch1 must be a 3D tensor");
  TORCH_CHECK(b.dim() == 3, "batch2 must be a 3D tensor");
  TORCH_CHECK(a.size(0) == b.size(0) && a.size(2) == b.size(1),
              "Expected size for first two dimensions of batch2 tensor to be: [", a.size(0), ", ",
              a.size(2), "] but got: [", b.size(0), ", ", b.size(1), "].");
  check_same_dtype(a, b);
  const int device = common_device("bmm", {&a, &b});
  std::vector<int64_t> sizes{a.size(0), a.size(1), b.size(2)};
  graph::Attrs attrs;
  add_precision(attrs, a.scalar_type());
  auto value = graph::record1(lowering::kMatmul, {read(a), read(b)}, std::move(attrs),
                              tensor_type(a.scalar_type(), sizes), device);
  return {value, a.scalar_type(), sizes, device};
}

OpResult addmm_result(const Tensor& self, const Tensor& m1, const Tensor& m2,
                      const at::Scalar& beta, const at::Scalar& alpha) {
  TORCH_CHECK(m1.dim() == 2, "mat1 must be a matrix, got ", m1.dim(), "-D tensor");
  TORCH_CHECK(m2.dim() == 2, "mat2 must be a matrix, got ", m2.dim(), "-D tensor");
  TORCH_CHECK(m1.size(1) == m2.size(0), "mat1 and mat2 shapes cannot be multiplied (", m1.size(0),
              "x", m1.size(1), " and ", m2.size(0), "x", m2.size(1), ")");
  check_same_dtype(m1, m2);
  TORCH_CHECK(self.scalar_type() == m1.scalar_type(),
              "self and mat2 must have the same dtype, but got ", self.scalar_type(), " and ",
              m1.scalar_type());
  std::vector<int64_t> sizes{m1.size(0), m2.size(1)};
  self.expand(sizes);  // self must expand to the product (PyTorch's expand errors)
  const int device = common_device("addmm", {&self, &m1, &m2});
  if (has_imaginary_part(beta, m1) || has_imaginary_part(alpha, m1)) {
    return complex_factors(self, at::mm(m1, m2), beta, alpha, sizes);
  }
  graph::Attrs attrs;
  attrs.floats = {real_factor(beta), real_factor(alpha)};
  add_precision(attrs, m1.scalar_type());
  auto value = graph::record1(lowering::kAddmm, {read(self), read(m1), read(m2)}, attrs,
                              tensor_type(m1.scalar_type(), sizes), device);
  return {value, m1.scalar_type(), sizes, device};
}

// beta * self + alpha * (batch1 @ batch2): the addmm lowering, whose product is batched.
OpResult baddbmm_result(const Tensor& self, const Tensor& b1, const Tensor& b2,
                        const at::Scalar& beta, const at::Scalar& alpha) {
  TORCH_CHECK(b1.dim() == 3, "batch1 must be a 3D tensor");
  TORCH_CHECK(b2.dim() == 3, "batch2 must be a 3D tensor");
  TORCH_CHECK(b1.size(0) == b2.size(0) && b1.size(2) == b2.size(1),
              "Expected size for first two dimensions of batch2 tensor to be: [", b1.size(0), ", ",
              b1.size(2), "] but got: [", b2.size(0), ", ", b2.size(1), "].");
  check_same_dtype(b1, b2);
  TORCH_CHECK(self.scalar_type() == b1.scalar_type(), "Input dtypes must be the same, got: input ",
              self.scalar_type(), ", batch1: ", b1.scalar_type(), ", batch2: ", b2.scalar_type());
  std::vector<int64_t> sizes{b1.size(0), b1.size(1), b2.size(2)};
  at::infer_size(self.sizes(), sizes);
  const int device = common_device("baddbmm", {&self, &b1, &b2});
  if (has_imaginary_part(beta, b1) || has_imaginary_part(alpha, b1)) {
    return complex_factors(self, at::bmm(b1, b2), beta, alpha, sizes);
  }
  graph::Attrs attrs;
  attrs.floats = {real_factor(beta), real_factor(alpha)};
  add_precision(attrs, b1.scalar_type());
  auto value = graph::record1(lowering::kAddmm, {read(self), read(b1), read(b2)}, attrs,
                              tensor_type(b1.scalar_type(), sizes), device);
  return {value, b1.scalar_type(), sizes, device};
}

// A product recorded as `op` (kMatmul: {a, b}; kAddmm: {self, a, b} with floats {beta, alpha}).
OpResult product(const graph::OpDef& op, const char* name, const std::vector<const Tensor*>& in,
                 std::vector<double> scalars, at::ScalarType dtype, std::vector<int64_t> sizes) {
  const int device = common_device(name, in);
  std::vector<graph::DataPtr> values;
  for (const Tensor* t : in) values.push_back(read(*t));
  graph::Attrs attrs;
  attrs.floats = std::move(scalars);
  add_precision(attrs, dtype);
  auto value =
      graph::record1(op, std::move(values), std::move(attrs), tensor_type(dtype, sizes), device);
  return {value, dtype, std::move(sizes), device};
}

OpResult dot_result(const Tensor& a, const Tensor& b) {
  TORCH_CHECK(a.dim() == 1 && b.dim() == 1, "1D tensors expected, but got ", a.dim(), "D and ",
              b.dim(), "D tensors");
  TORCH_CHECK(a.scalar_type() == b.scalar_type(),
              "dot : expected both vectors to have same dtype, but found ", a.scalar_type(),
              " and ", b.scalar_type());
  TORCH_CHECK(a.numel() == b.numel(), "inconsistent tensor size, expected tensor [", a.numel(),
              "] and src [", b.numel(), "] to have the same number of elements, but got ",
              a.numel(), " and ", b.numel(), " elements respectively");
  TORCH_CHECK_NOT_IMPLEMENTED(a.scalar_type() != at::kBool, "\"dot\" not implemented for 'Bool'");
  return product(lowering::kMatmul, "dot", {&a, &b}, {}, a.scalar_type(), {});
}

// beta * self + alpha * (mat @ vec); mv is beta = 0 without a self.
OpResult addmv_result(const Tensor* self, const Tensor& mat, const Tensor& vec,
                      const at::Scalar& beta, const at::Scalar& alpha) {
  const int64_t self_dim = self ? self->dim() : 1;
  TORCH_CHECK(mat.dim() == 2 && vec.dim() == 1 && self_dim <= 1,
              "vector + matrix @ vector expected, got ", self_dim, ", ", mat.dim(), ", ",
              vec.dim());
  const std::vector<int64_t> sizes{mat.size(0)};
  const bool self_ok =
      !self || self->numel() == 1 || (self->dim() == 1 && self->size(0) == sizes[0]);
  TORCH_CHECK(mat.size(1) == vec.size(0) && self_ok, "size mismatch, got input (",
              self ? (self->dim() ? self->size(0) : 1) : sizes[0], "), mat (", mat.size(0), "x",
              mat.size(1), "), vec (", vec.size(0), ")");
  const at::ScalarType dtype = self ? self->scalar_type() : vec.scalar_type();
  check_addmv_dtypes(dtype, mat, vec);
  TORCH_CHECK_NOT_IMPLEMENTED(dtype != at::kBool, "\"addmv_impl_cpu\" not implemented for 'Bool'");
  if (!self) return product(lowering::kMatmul, "mv", {&mat, &vec}, {}, dtype, sizes);
  if (has_imaginary_part(beta, mat) || has_imaginary_part(alpha, mat)) {
    common_device("addmv", {self, &mat, &vec});
    return complex_factors(*self, at::mv(mat, vec), beta, alpha, sizes);
  }
  return product(lowering::kAddmm, "addmv", {self, &mat, &vec},
                 {real_factor(beta), real_factor(alpha)}, dtype, sizes);
}

// beta * self + alpha * sum over the batch of batch1 @ batch2.
OpResult addbmm_result(const Tensor& self, const Tensor& b1, const Tensor& b2,
                       const at::Scalar& beta, const at::Scalar& alpha) {
  TORCH_CHECK(b1.dim() == 3, "batch1 must be a 3D tensor");
  TORCH_CHECK(b2.dim() == 3, "batch2 must be a 3D tensor");
  TORCH_CHECK(b1.size(0) == b2.size(0), "batch1 and batch2 must have same number of batches, got ",
              b1.size(0), " and ", b2.size(0));
  TORCH_CHECK(b1.size(2) == b2.size(1), "Incompatible matrix sizes for bmm (", b1.size(1), "x",
              b1.size(2), " and ", b2.size(1), "x", b2.size(2), ")");
  std::vector<int64_t> sizes{b1.size(1), b2.size(2)};
  (void)self.expand(sizes);  // PyTorch's message when self does not broadcast to the product
  check_same_dtype(b1, b2);
  TORCH_CHECK(self.scalar_type() == b1.scalar_type(),
              "self and mat2 must have the same dtype, but got ", self.scalar_type(), " and ",
              b1.scalar_type());
  if (has_imaginary_part(beta, b1) || has_imaginary_part(alpha, b1)) {
    common_device("addbmm", {&self, &b1, &b2});
    return complex_factors(self, at::bmm(b1, b2).sum(0), beta, alpha, sizes);
  }
  return product(lowering::kAddmm, "addbmm", {&self, &b1, &b2},
                 {real_factor(beta), real_factor(alpha)}, self.scalar_type(), sizes);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("dot", [](const Tensor& a, const Tensor& b) { return to_new(dot_result(a, b)); });
  // vdot conjugates its first operand (a lazy conjugate, which reading applies).
  m.impl("vdot", [](const Tensor& a, const Tensor& b) { return to_new(dot_result(a.conj(), b)); });
  m.impl("mv", [](const Tensor& a, const Tensor& v) {
    return to_new(addmv_result(nullptr, a, v, 0, 1));
  });
  // PyTorch's mv.out is addmv.out with out as self: out's dtype must match the operands'.
  m.impl("mv.out", [](const Tensor& a, const Tensor& v, Tensor& out) -> Tensor& {
    check_addmv_dtypes(out.scalar_type(), a, v);
    return to_out(out, addmv_result(nullptr, a, v, 0, 1));
  });
  m.impl("addmv",
         [](const Tensor& s, const Tensor& a, const Tensor& v, const at::Scalar& beta,
            const at::Scalar& alpha) { return to_new(addmv_result(&s, a, v, beta, alpha)); });
  m.impl("addmv_",
         [](Tensor& s, const Tensor& a, const Tensor& v, const at::Scalar& beta,
            const at::Scalar& alpha) -> Tensor& {
           return to_self(s, addmv_result(&s, a, v, beta, alpha));
         });
  m.impl("addmv.out",
         [](const Tensor& s, const Tensor& a, const Tensor& v, const at::Scalar& beta,
            const at::Scalar& alpha, Tensor& out) -> Tensor& {
           return to_structured_out(out, addmv_result(&s, a, v, beta, alpha));
         });
  m.impl("addbmm",
         [](const Tensor& s, const Tensor& a, const Tensor& b, const at::Scalar& beta,
            const at::Scalar& alpha) { return to_new(addbmm_result(s, a, b, beta, alpha)); });
  m.impl("addbmm_",
         [](Tensor& s, const Tensor& a, const Tensor& b, const at::Scalar& beta,
            const at::Scalar& alpha) -> Tensor& {
           return to_self(s, addbmm_result(s, a, b, beta, alpha), SelfOverlap::kAsResized);
         });
  m.impl("addbmm.out",
         [](const Tensor& s, const Tensor& a, const Tensor& b, const at::Scalar& beta,
            const at::Scalar& alpha, Tensor& out) -> Tensor& {
           // PyTorch accumulates into out as addmm's self, with addmm's dtype message.
           TORCH_CHECK(out.scalar_type() == a.scalar_type(),
                       "self and mat2 must have the same dtype, but got ", out.scalar_type(),
                       " and ", a.scalar_type());
           return to_out(out, addbmm_result(s, a, b, beta, alpha), SelfOverlap::kAsResized);
         });
  m.impl("baddbmm",
         [](const Tensor& s, const Tensor& a, const Tensor& b, const at::Scalar& beta,
            const at::Scalar& alpha) { return to_new(baddbmm_result(s, a, b, beta, alpha)); });
  m.impl("baddbmm_",
         [](Tensor& s, const Tensor& a, const Tensor& b, const at::Scalar& beta,
            const at::Scalar& alpha) -> Tensor& {
           return to_self(s, baddbmm_result(s, a, b, beta, alpha));
         });
  m.impl("baddbmm.out",
         [](const Tensor& s, const Tensor& a, const Tensor& b, const at::Scalar& beta,
            const at::Scalar& alpha, Tensor& out) -> Tensor& {
           return to_structured_out(out, baddbmm_result(s, a, b, beta, alpha),
                                    SelfOverlap::kAsResized);
         });
  m.impl("mm", [](const Tensor& a, const Tensor& b) { return to_new(mm_result(a, b)); });
  m.impl("mm.out", [](const Tensor& a, const Tensor& b, Tensor& out) -> Tensor& {
    return to_structured_out(out, mm_result(a, b), product_overlap(a, 0));
  });
  m.impl("bmm", [](const Tensor& a, const Tensor& b) { return to_new(bmm_result(a, b)); });
  m.impl("bmm.out", [](const Tensor& a, const Tensor& b, Tensor& out) -> Tensor& {
    return to_structured_out(out, bmm_result(a, b));
  });
  m.impl("addmm",
         [](const Tensor& s, const Tensor& a, const Tensor& b, const at::Scalar& beta,
            const at::Scalar& alpha) { return to_new(addmm_result(s, a, b, beta, alpha)); });
  m.impl("addmm_",
         [](Tensor& s, const Tensor& a, const Tensor& b, const at::Scalar& beta,
            const at::Scalar& alpha) -> Tensor& {
           return to_self(s, addmm_result(s, a, b, beta, alpha), product_overlap(a, beta));
         });
  m.impl("addmm.out",
         [](const Tensor& s, const Tensor& a, const Tensor& b, const at::Scalar& beta,
            const at::Scalar& alpha, Tensor& out) -> Tensor& {
           return to_structured_out(out, addmm_result(s, a, b, beta, alpha),
                                    product_overlap(a, beta));
         });
}

}  // namespace torch_pjrt::aten
