// cumsum and cumprod: functional, in-place and out= forms.
#include "lowering/scans.h"

#include <ATen/ATen.h>
#include <torch/library.h>

#include "aten/op_result.h"
#include "aten/tensor_bridge.h"

namespace torch_pjrt::aten {
namespace {

using at::Tensor;

// Integral and bool inputs accumulate in int64 unless a dtype is given.
at::ScalarType scan_dtype(const Tensor& self, std::optional<at::ScalarType> dtype) {
  if (dtype) return *dtype;
  return at::isIntegralType(self.scalar_type(), /*includeBool=*/true) ? at::kLong
                                                                      : self.scalar_type();
}

OpResult scan(const graph::OpDef& op, const Tensor& self, int64_t dim, at::ScalarType dtype) {
  const int device = common_device(op.name, {&self});
  const int64_t d = at::maybe_wrap_dim(dim, self.dim());
  auto value =
      graph::record1(op, {read(self)}, {{d}, {}}, tensor_type(dtype, self.sizes()), device);
  return {value, dtype, self.sizes().vec(), device};
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
#define TP_SCAN(NAME, OP)                                                                  \
  m.impl(#NAME, [](const Tensor& self, int64_t dim, std::optional<at::ScalarType> dtype) { \
    return to_new(scan(OP, self, dim, scan_dtype(self, dtype)));                           \
  });                                                                                      \
  m.impl(#NAME "_",                                                                        \
         [](Tensor& self, int64_t dim, std::optional<at::ScalarType> dtype) -> Tensor& {   \
           return to_self(self, scan(OP, self, dim, dtype.value_or(self.scalar_type())));  \
         });                                                                               \
  m.impl(#NAME ".out",                                                                     \
         [](const Tensor& self, int64_t dim, std::optional<at::ScalarType> dtype,          \
            Tensor& out) -> Tensor& {                                                      \
           return to_out(out, scan(OP, self, dim, dtype.value_or(out.scalar_type())));     \
         });
  TP_SCAN(cumsum, lowering::kCumsum)
  TP_SCAN(cumprod, lowering::kCumprod)
#undef TP_SCAN
}

}  // namespace torch_pjrt::aten
