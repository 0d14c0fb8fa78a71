// Dtype rules the elementwise kernels share: the type float math computes in, and PyTorch's
// "not implemented for" error for a dtype an op does not take.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/ScalarType.h>

#include <string>

namespace torch_pjrt::aten {

// Integer and bool types compute in the default float type, as PyTorch's float math does.
at::ScalarType float_type(at::ScalarType t);

// The promoted dtype of a binary op's operands, after PyTorch's broadcast check: the CPU's
// TensorIterator raises a shape error before a kernel's dtype error.
at::ScalarType binary_result_type(const at::Tensor& a, const at::Tensor& b);

// float4_e2m1fn_x2 packs two e2m1 values in each byte and has no compute type: the ops the CPU
// runs on it (data movement, zero_, ==, !=) work on its bytes, which these views give.
bool is_float4(const at::Tensor& t);
at::Tensor float4_bytes(const at::Tensor& t);       // t (float4) viewed as uint8
at::Tensor float4_from_bytes(const at::Tensor& t);  // t (uint8) viewed as float4

// NotImplementedError `"kernel" not implemented for 'T'` unless `ok`.
void check_implemented(bool ok, const std::string& kernel, at::ScalarType t);

// The same error unless `t` is a type LAPACK takes (float, double and their complex types).
void check_lapack_type(const char* kernel, at::ScalarType t);

}  // namespace torch_pjrt::aten
