// Tests of ElementType sizes, names, classes and the PJRT buffer-type mapping.
#include "runtime/element_type.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

namespace torch_pjrt::runtime {
namespace {

constexpr ElementType kAll[] = {
    ElementType::Bool,      ElementType::I8,     ElementType::I16,      ElementType::I32,
    ElementType::I64,       ElementType::U8,     ElementType::F16,      ElementType::BF16,
    ElementType::F32,       ElementType::F64,    ElementType::U16,      ElementType::U32,
    ElementType::U64,       ElementType::F8E5M2, ElementType::F8E4M3FN, ElementType::F8E5M2FNUZ,
    ElementType::F8E4M3FNUZ};

TEST(ElementType, SizesAndNames) {
  EXPECT_EQ(element_size(ElementType::Bool), 1u);
  EXPECT_EQ(element_size(ElementType::BF16), 2u);
  EXPECT_EQ(element_size(ElementType::I32), 4u);
  EXPECT_EQ(element_size(ElementType::F64), 8u);
  std::string names;
  for (ElementType t : kAll) names += std::string(element_name(t)) + " ";
  EXPECT_EQ(names,
            "bool i8 i16 i32 i64 u8 f16 bf16 f32 f64 u16 u32 u64 f8e5m2 f8e4m3fn f8e5m2fnuz "
            "f8e4m3fnuz ");
  EXPECT_EQ(element_size(ElementType::F8E4M3FN), 1u);
  EXPECT_TRUE(is_floating(ElementType::F8E5M2) && is_float8(ElementType::F8E5M2));
  EXPECT_FALSE(is_float8(ElementType::F16));
  EXPECT_EQ(element_size(ElementType::U64), 8u);
  EXPECT_TRUE(is_floating(ElementType::BF16));
  EXPECT_FALSE(is_floating(ElementType::I64));
  EXPECT_TRUE(is_unsigned(ElementType::U32));
  EXPECT_FALSE(is_unsigned(ElementType::Bool));
  EXPECT_FALSE(is_unsigned(ElementType::I8));
}

TEST(ElementType, PjrtMappingRoundTrips) {
  EXPECT_EQ(to_pjrt(ElementType::Bool), PJRT_Buffer_Type_PRED);
  EXPECT_EQ(to_pjrt(ElementType::BF16), PJRT_Buffer_Type_BF16);
  EXPECT_EQ(to_pjrt(ElementType::I64), PJRT_Buffer_Type_S64);
  for (ElementType t : kAll) EXPECT_EQ(from_pjrt(to_pjrt(t)), t) << element_name(t);
}

TEST(ElementType, RejectsUnsupportedAndInvalidValues) {
  EXPECT_THROW(from_pjrt(PJRT_Buffer_Type_S4), std::invalid_argument);
  EXPECT_THROW(from_pjrt(PJRT_Buffer_Type_INVALID), std::invalid_argument);
  const auto bogus = static_cast<ElementType>(99);
  EXPECT_THROW(to_pjrt(bogus), std::invalid_argument);
  EXPECT_THROW(element_size(bogus), std::invalid_argument);
  EXPECT_THROW(element_name(bogus), std::invalid_argument);
}

}  // namespace
}  // namespace torch_pjrt::runtime
