// erfcx, log_ndtr and ndtri (lowering/normal_functions.h): float32 and float64 as PyTorch's CPU
// kernels (integer and bool inputs compute in the default float type); functional and out=.
#include "lowering/normal_functions.h"

#include <ATen/ATen.h>
#include <torch/library.h>

#include <string>

#include "aten/dtype_rules.h"
#include "aten/op_result.h"

namespace torch_pjrt::aten {
namespace {

using at::Tensor;

OpResult normal_unary(const graph::OpDef& op, const char* name, const Tensor& x) {
  const at::ScalarType dtype = float_type(x.scalar_type());
  check_implemented(dtype == at::kFloat || dtype == at::kDouble, std::string(name) + "_cpu", dtype);
  return elementwise(op, name, {&x}, dtype, {});
}

}  // namespace

#define TP_NORMAL_UNARY(NAME, OP)                                                               \
  m.impl("special_" #NAME, [](const Tensor& x) { return to_new(normal_unary(OP, #NAME, x)); }); \
  m.impl("special_" #NAME ".out", [](const Tensor& x, Tensor& out) -> Tensor& {                 \
    return to_out(out, normal_unary(OP, #NAME, x));                                             \
  });

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  TP_NORMAL_UNARY(erfcx, lowering::kErfcx)
  TP_NORMAL_UNARY(log_ndtr, lowering::kLogNdtr)
  TP_NORMAL_UNARY(ndtri, lowering::kNdtri)
}

}  // namespace torch_pjrt::aten
