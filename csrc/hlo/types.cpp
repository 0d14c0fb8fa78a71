// MLIR spelling of element and tensor types.
#include "hlo/types.h"

#include <stdexcept>

namespace torch_pjrt::hlo {

const char* mlir_element(ElementType t) {
  switch (t) {
    case ElementType::Bool:
      return "i1";
    case ElementType::I8:
      return "i8";
    case ElementType::I16:
      return "i16";
    case ElementType::I32:
      return "i32";
    case ElementType::I64:
      return "i64";
    case ElementType::U8:
      return "ui8";
    case ElementType::F16:
      return "f16";
    case ElementType::BF16:
      return "bf16";
    case ElementType::F32:
      return "f32";
    case ElementType::F64:
      return "f64";
    case ElementType::U16:
      return "ui16";
    case ElementType::U32:
      return "ui32";
    case ElementType::U64:
      return "ui64";
    case ElementType::C64:
      return "complex<f32>";
    case ElementType::C128:
      return "complex<f64>";
    case ElementType::F8E5M2:
      return "f8E5M2";
    case ElementType::F8E4M3FN:
      return "f8E4M3FN";
    case ElementType::F8E5M2FNUZ:
      return "f8E5M2FNUZ";
    case ElementType::F8E4M3FNUZ:
      return "f8E4M3FNUZ";
  }
  throw std::invalid_argument("hlo::mlir_element: unknown element type " +
                              std::to_string(static_cast<int>(t)));
}

int64_t TensorType::num_elements() const {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

std::string TensorType::str() const {
  std::string s = "tensor<";
  for (int64_t d : dims) s += std::to_string(d) + "x";
  return s + mlir_element(dtype) + ">";
}

std::string i64_array(const std::vector<int64_t>& values) {
  std::string s = "array<i64";
  for (size_t i = 0; i < values.size(); ++i) s += (i ? ", " : ": ") + std::to_string(values[i]);
  return s + ">";
}

}  // namespace torch_pjrt::hlo
