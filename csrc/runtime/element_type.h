// Element types shared by the runtime and the StableHLO builder, with their PJRT mapping.
#pragma once

#include <pjrt_c_api.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace torch_pjrt::runtime {

enum class ElementType : uint8_t {
  Bool,
  I8,
  I16,
  I32,
  I64,
  U8,
  F16,
  BF16,
  F32,
  F64,
  U16,
  U32,
  U64,
  C64,
  C128,
  // float8 formats: the bridge stores torch's float8 dtypes in them and computes in F32.
  F8E5M2,
  F8E4M3FN,
  F8E5M2FNUZ,
  F8E4M3FNUZ
};

// Bytes per element.
size_t element_size(ElementType t);
// Short name ("f32", "i64", "bool"), used in messages and cache keys.
const char* element_name(ElementType t);
PJRT_Buffer_Type to_pjrt(ElementType t);
// Throws std::invalid_argument for PJRT types this project does not use.
ElementType from_pjrt(PJRT_Buffer_Type t);
bool is_floating(ElementType t);  // float8 included
bool is_float8(ElementType t);
// U8, U16, U32, U64 (not Bool).
bool is_unsigned(ElementType t);
// complex64 (C64) and complex128 (C128).
bool is_complex(ElementType t);
// The real type of a complex type's parts (F32, F64); `t` itself for other types.
ElementType real_part_type(ElementType t);

}  // namespace torch_pjrt::runtime
