// Dtype rules the elementwise kernels share (see dtype_rules.h).
#include "aten/dtype_rules.h"

#include <ATen/ExpandUtils.h>
#include <ATen/native/TypeProperties.h>
#include <c10/util/Exception.h>

namespace torch_pjrt::aten {

at::ScalarType float_type(at::ScalarType t) {
  return at::isIntegralType(t, /*includeBool=*/true)
             ? at::typeMetaToScalarType(at::get_default_dtype())
             : t;
}

at::ScalarType binary_result_type(const at::Tensor& a, const at::Tensor& b) {
  at::infer_size(a.sizes(), b.sizes());
  return at::result_type(a, b);
}

bool is_float4(const at::Tensor& t) {
  return t.defined() && t.scalar_type() == at::kFloat4_e2m1fn_x2;
}

at::Tensor float4_bytes(const at::Tensor& t) { return t.view(at::kByte); }

at::Tensor float4_from_bytes(const at::Tensor& t) { return t.view(at::kFloat4_e2m1fn_x2); }

void check_implemented(bool ok, const std::string& kernel, at::ScalarType t) {
  TORCH_CHECK_NOT_IMPLEMENTED(ok, "\"", kernel, "\" not implemented for '", c10::toString(t), "'");
}

void check_lapack_type(const char* kernel, at::ScalarType t) {
  check_implemented(
      t == at::kFloat || t == at::kDouble || t == at::kComplexFloat || t == at::kComplexDouble,
      kernel, t);
}

}  // namespace torch_pjrt::aten
