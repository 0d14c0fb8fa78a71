// Sizes, names and PJRT buffer-type mapping of ElementType.
#include "element_type.h"

#include <stdexcept>

namespace torch_pjrt::runtime {

namespace {

[[noreturn]] void bad_type(ElementType t) {
  throw std::invalid_argument("invalid ElementType value " + std::to_string(static_cast<int>(t)));
}

}  // namespace

size_t element_size(ElementType t) {
  switch (t) {
    case ElementType::Bool:
    case ElementType::I8:
    case ElementType::U8:
    case ElementType::F8E5M2:
    case ElementType::F8E4M3FN:
    case ElementType::F8E5M2FNUZ:
    case ElementType::F8E4M3FNUZ:
      return 1;
    case ElementType::I16:
    case ElementType::U16:
    case ElementType::F16:
    case ElementType::BF16:
      return 2;
    case ElementType::I32:
    case ElementType::U32:
    case ElementType::F32:
      return 4;
    case ElementType::I64:
    case ElementType::U64:
    case ElementType::F64:
    case ElementType::C64:
      return 8;
    case ElementType::C128:
      return 16;
  }
  bad_type(t);
}

const char* element_name(ElementType t) {
  switch (t) {
    case ElementType::Bool:
      return "bool";
    case ElementType::I8:
      return "i8";
    case ElementType::I16:
      return "i16";
    case ElementType::I32:
      return "i32";
    case ElementType::I64:
      return "i64";
    case ElementType::U8:
      return "u8";
    case ElementType::F16:
      return "f16";
    case ElementType::BF16:
      return "bf16";
    case ElementType::F32:
      return "f32";
    case ElementType::F64:
      return "f64";
    case ElementType::U16:
      return "u16";
    case ElementType::U32:
      return "u32";
    case ElementType::U64:
      return "u64";
    case ElementType::C64:
      return "c64";
    case ElementType::C128:
      return "c128";
    case ElementType::F8E5M2:
      return "f8e5m2";
    case ElementType::F8E4M3FN:
      return "f8e4m3fn";
    case ElementType::F8E5M2FNUZ:
      return "f8e5m2fnuz";
    case ElementType::F8E4M3FNUZ:
      return "f8e4m3fnuz";
  }
  bad_type(t);
}

PJRT_Buffer_Type to_pjrt(ElementType t) {
  switch (t) {
    case ElementType::Bool:
      return PJRT_Buffer_Type_PRED;
    case ElementType::I8:
      return PJRT_Buffer_Type_S8;
    case ElementType::I16:
      return PJRT_Buffer_Type_S16;
    case ElementType::I32:
      return PJRT_Buffer_Type_S32;
    case ElementType::I64:
      return PJRT_Buffer_Type_S64;
    case ElementType::U8:
      return PJRT_Buffer_Type_U8;
    case ElementType::F16:
      return PJRT_Buffer_Type_F16;
    case ElementType::BF16:
      return PJRT_Buffer_Type_BF16;
    case ElementType::F32:
      return PJRT_Buffer_Type_F32;
    case ElementType::F64:
      return PJRT_Buffer_Type_F64;
    case ElementType::U16:
      return PJRT_Buffer_Type_U16;
    case ElementType::U32:
      return PJRT_Buffer_Type_U32;
    case ElementType::U64:
      return PJRT_Buffer_Type_U64;
    case ElementType::C64:
      return PJRT_Buffer_Type_C64;
    case ElementType::C128:
      return PJRT_Buffer_Type_C128;
    case ElementType::F8E5M2:
      return PJRT_Buffer_Type_F8E5M2;
    case ElementType::F8E4M3FN:
      return PJRT_Buffer_Type_F8E4M3FN;
    case ElementType::F8E5M2FNUZ:
      return PJRT_Buffer_Type_F8E5M2FNUZ;
    case ElementType::F8E4M3FNUZ:
      return PJRT_Buffer_Type_F8E4M3FNUZ;
  }
  bad_type(t);
}

ElementType from_pjrt(PJRT_Buffer_Type t) {
  switch (t) {
    case PJRT_Buffer_Type_PRED:
      return ElementType::Bool;
    case PJRT_Buffer_Type_S8:
      return ElementType::I8;
    case PJRT_Buffer_Type_S16:
      return ElementType::I16;
    case PJRT_Buffer_Type_S32:
      return ElementType::I32;
    case PJRT_Buffer_Type_S64:
      return ElementType::I64;
    case PJRT_Buffer_Type_U8:
      return ElementType::U8;
    case PJRT_Buffer_Type_F16:
      return ElementType::F16;
    case PJRT_Buffer_Type_BF16:
      return ElementType::BF16;
    case PJRT_Buffer_Type_F32:
      return ElementType::F32;
    case PJRT_Buffer_Type_F64:
      return ElementType::F64;
    case PJRT_Buffer_Type_U16:
      return ElementType::U16;
    case PJRT_Buffer_Type_U32:
      return ElementType::U32;
    case PJRT_Buffer_Type_U64:
      return ElementType::U64;
    case PJRT_Buffer_Type_C64:
      return ElementType::C64;
    case PJRT_Buffer_Type_C128:
      return ElementType::C128;
    case PJRT_Buffer_Type_F8E5M2:
      return ElementType::F8E5M2;
    case PJRT_Buffer_Type_F8E4M3FN:
      return ElementType::F8E4M3FN;
    case PJRT_Buffer_Type_F8E5M2FNUZ:
      return ElementType::F8E5M2FNUZ;
    case PJRT_Buffer_Type_F8E4M3FNUZ:
      return ElementType::F8E4M3FNUZ;
    default:
      throw std::invalid_argument("unsupported PJRT buffer type " +
                                  std::to_string(static_cast<int>(t)));
  }
}

bool is_floating(ElementType t) {
  return t == ElementType::F16 || t == ElementType::BF16 || t == ElementType::F32 ||
         t == ElementType::F64 || is_float8(t);
}

bool is_float8(ElementType t) {
  return t == ElementType::F8E5M2 || t == ElementType::F8E4M3FN || t == ElementType::F8E5M2FNUZ ||
         t == ElementType::F8E4M3FNUZ;
}

bool is_unsigned(ElementType t) {
  return t == ElementType::U8 || t == ElementType::U16 || t == ElementType::U32 ||
         t == ElementType::U64;
}

bool is_complex(ElementType t) { return t == ElementType::C64 || t == ElementType::C128; }

ElementType real_part_type(ElementType t) {
  return t == ElementType::C64 ? ElementType::F32 : t == ElementType::C128 ? ElementType::F64 : t;
}

}  // namespace torch_pjrt::runtime
