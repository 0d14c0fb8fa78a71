// Scans: cumsum and cumprod (functional, in-place and out=), the helpers behind cummax/cummin
// (PyTorch's composite allocates the outputs and handles 0-dim and empty inputs), and
// _logcumsumexp.
#include "lowering/scans.h"

#include <ATen/ATen.h>
#include <torch/library.h>

#include "aten/fallback.h"
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
  TORCH_CHECK_NOT_IMPLEMENTED(dtype != at::kBool, "\"", op.name, "_out_cpu\" not implemented for '",
                              c10::toString(dtype), "'");
  const int64_t d = at::maybe_wrap_dim(dim, self.dim());
  auto value =
      graph::record1(op, {read(self)}, {{d}, {}}, tensor_type(dtype, self.sizes()), device);
  return {value, dtype, self.sizes().vec(), device};
}

// The in-place form: a dtype given must be self's (the CPU's structured-kernel message).
OpResult scan_in_place(const graph::OpDef& op, Tensor& self, int64_t dim,
                       std::optional<at::ScalarType> dtype) {
  at::maybe_wrap_dim(dim, self.dim());
  TORCH_CHECK(!dtype || *dtype == self.scalar_type(), "Bad in-place call: input tensor dtype ",
              self.dtype(), " and output tensor dtype ", c10::scalarTypeToTypeMeta(*dtype),
              " should match");
  return scan(op, self, dim, self.scalar_type());
}

// The out= form: the result has out's dtype, or the dtype given, which out must then have.
OpResult scan_out(const graph::OpDef& op, const Tensor& self, int64_t dim,
                  std::optional<at::ScalarType> dtype, const Tensor& out) {
  at::maybe_wrap_dim(dim, self.dim());
  if (dtype) check_out_dtype(out, *dtype);
  return scan(op, self, dim, dtype.value_or(out.scalar_type()));
}

// Writes the running extreme of `self` along `dim` into the allocated `values` and `indices`.
void cumextreme(const graph::OpDef& op, const char* name, const Tensor& self, Tensor& values,
                Tensor& indices, int64_t dim) {
  const int device = common_device(name, {&self, &values, &indices});
  TORCH_CHECK_NOT_IMPLEMENTED(!self.is_complex(), "\"", name, "\" not implemented for '",
                              c10::toString(self.scalar_type()), "'");
  const int64_t d = at::maybe_wrap_dim(dim, self.dim());
  auto r = graph::record(
      op, {read(self)}, {{d}, {}},
      {tensor_type(self.scalar_type(), self.sizes()), tensor_type(at::kLong, self.sizes())},
      device);
  write(values, r[0]);
  write(indices, r[1]);
  finish_op();
}

OpResult log_cum_sum_exp(const Tensor& self, int64_t dim) {
  common_device("logcumsumexp", {&self});
  TORCH_CHECK_NOT_IMPLEMENTED(at::isFloatingType(self.scalar_type()),
                              "\"logcumsumexp_out_cpu\" not implemented for '",
                              c10::toString(self.scalar_type()), "'");
  return scan(lowering::kLogcumsumexp, self, dim, self.scalar_type());
}

// Complex inputs have no lowering: the counted CPU fallback computes them.
Tensor complex_log_cum_sum_exp(const Tensor& self, int64_t dim) {
  static const c10::OperatorHandle op =
      c10::Dispatcher::singleton().findSchemaOrThrow("aten::_logcumsumexp", "");
  torch::jit::Stack stack{self, dim};
  cpu_fallback(op, &stack);
  return stack[0].toTensor();
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
#define TP_SCAN(NAME, OP)                                                                      \
  m.impl(#NAME, [](const Tensor& self, int64_t dim, std::optional<at::ScalarType> dtype) {     \
    return to_new(scan(OP, self, dim, scan_dtype(self, dtype)));                               \
  });                                                                                          \
  m.impl(#NAME "_",                                                                            \
         [](Tensor& self, int64_t dim, std::optional<at::ScalarType> dtype) -> Tensor& {       \
           return to_self(self, scan_in_place(OP, self, dim, dtype), SelfOverlap::kAsResized); \
         });                                                                                   \
  m.impl(#NAME ".out",                                                                         \
         [](const Tensor& self, int64_t dim, std::optional<at::ScalarType> dtype,              \
            Tensor& out) -> Tensor& {                                                          \
           return to_out(out, scan_out(OP, self, dim, dtype, out), SelfOverlap::kAsResized);   \
         });
  TP_SCAN(cumsum, lowering::kCumsum)
  TP_SCAN(cumprod, lowering::kCumprod)
#undef TP_SCAN
  m.impl("_cummax_helper", [](const Tensor& self, Tensor& values, Tensor& indices, int64_t dim) {
    cumextreme(lowering::kCummax, "cummax_cpu", self, values, indices, dim);
  });
  m.impl("_cummin_helper", [](const Tensor& self, Tensor& values, Tensor& indices, int64_t dim) {
    cumextreme(lowering::kCummin, "cummin_cpu", self, values, indices, dim);
  });
  m.impl("_logcumsumexp", [](const Tensor& self, int64_t dim) {
    if (self.is_complex()) return complex_log_cum_sum_exp(self, dim);
    return to_new(log_cum_sum_exp(self, dim));
  });
  m.impl("_logcumsumexp.out", [](const Tensor& self, int64_t dim, Tensor& out) -> Tensor& {
    if (self.is_complex()) return copy_to_out(out, complex_log_cum_sum_exp(self, dim));
    return to_out(out, log_cum_sum_exp(self, dim), SelfOverlap::kAsResized);
  });
}

}  // namespace torch_pjrt::aten
