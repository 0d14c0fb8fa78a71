// Helpers shared by the sparse COO kernels on "tpu" (sparse_coo.cpp, sparse_matmul.cpp).
#pragma once

#include <ATen/core/Tensor.h>

namespace torch_pjrt::aten {

// The row-major position of each nonzero's sparse coordinates.
at::Tensor linear_indices(const at::Tensor& self);

// self * other for two sparse tensors of one shape: the values at the coordinates both hold
// (sparse_matmul.cpp).
at::Tensor sparse_times_sparse(const at::Tensor& self, const at::Tensor& other);

}  // namespace torch_pjrt::aten
