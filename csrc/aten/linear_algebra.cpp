// Matrix products: mm, bmm, addmm, baddbmm, with PyTorch's argument checks and messages.
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

// beta or alpha of addmm/baddbmm, recorded as a float attribute: complex ones must be real.
double real_factor(const char* op, const at::Scalar& s) {
  if (!s.isComplex()) return s.toDouble();
  const c10::complex<double> z = s.toComplexDouble();
  TORCH_CHECK_NOT_IMPLEMENTED(z.imag() == 0, op,
                              ": complex alpha or beta with an imaginary part is not supported on "
                              "tpu");
  return z.real();
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
  at::infer_size(self.sizes(), sizes);  // self must broadcast to the product
  const int device = common_device("addmm", {&self, &m1, &m2});
  graph::Attrs attrs;
  attrs.floats = {real_factor("addmm", beta), real_factor("addmm", alpha)};
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
  graph::Attrs attrs;
  attrs.floats = {real_factor("baddbmm", beta), real_factor("baddbmm", alpha)};
  add_precision(attrs, b1.scalar_type());
  auto value = graph::record1(lowering::kAddmm, {read(self), read(b1), read(b2)}, attrs,
                              tensor_type(b1.scalar_type(), sizes), device);
  return {value, b1.scalar_type(), sizes, device};
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
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
            const at::Scalar& alpha,
            Tensor& out) -> Tensor& { return to_out(out, baddbmm_result(s, a, b, beta, alpha)); });
  m.impl("mm", [](const Tensor& a, const Tensor& b) { return to_new(mm_result(a, b)); });
  m.impl("mm.out", [](const Tensor& a, const Tensor& b, Tensor& out) -> Tensor& {
    return to_out(out, mm_result(a, b));
  });
  m.impl("bmm", [](const Tensor& a, const Tensor& b) { return to_new(bmm_result(a, b)); });
  m.impl("bmm.out", [](const Tensor& a, const Tensor& b, Tensor& out) -> Tensor& {
    return to_out(out, bmm_result(a, b));
  });
  m.impl("addmm",
         [](const Tensor& s, const Tensor& a, const Tensor& b, const at::Scalar& beta,
            const at::Scalar& alpha) { return to_new(addmm_result(s, a, b, beta, alpha)); });
  m.impl("addmm_",
         [](Tensor& s, const Tensor& a, const Tensor& b, const at::Scalar& beta,
            const at::Scalar& alpha) -> Tensor& {
           return to_self(s, addmm_result(s, a, b, beta, alpha));
         });
  m.impl("addmm.out",
         [](const Tensor& s, const Tensor& a, const Tensor& b, const at::Scalar& beta,
            const at::Scalar& alpha,
            Tensor& out) -> Tensor& { return to_out(out, addmm_result(s, a, b, beta, alpha)); });
}

}  // namespace torch_pjrt::aten
