// Tensor types of StableHLO programs and their MLIR spelling.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/element_type.h"

namespace torch_pjrt::hlo {

using runtime::ElementType;

// MLIR element type: "f32", "bf16", "i64", "ui8", "i1" (bool), "complex<f32>".
const char* mlir_element(ElementType t);

// `array<i64: 1, 2>` (a DenseI64ArrayAttr value), `array<i64>` when empty.
std::string i64_array(const std::vector<int64_t>& values);

struct TensorType {
  ElementType dtype;
  std::vector<int64_t> dims;

  int64_t rank() const { return static_cast<int64_t>(dims.size()); }
  int64_t num_elements() const;
  // "tensor<3x4xf32>", "tensor<f32>" for rank 0.
  std::string str() const;
  bool operator==(const TensorType& o) const { return dtype == o.dtype && dims == o.dims; }
};

}  // namespace torch_pjrt::hlo
