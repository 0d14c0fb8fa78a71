// Tests of the MLIR spelling of element and tensor types.
#include "hlo/types.h"

#include <gtest/gtest.h>

namespace torch_pjrt::hlo {
namespace {

TEST(HloTypes, MlirElementNames) {
  EXPECT_STREQ(mlir_element(ElementType::Bool), "i1");
  EXPECT_STREQ(mlir_element(ElementType::U8), "ui8");
  EXPECT_STREQ(mlir_element(ElementType::U64), "ui64");
  EXPECT_STREQ(mlir_element(ElementType::I8), "i8");
  EXPECT_STREQ(mlir_element(ElementType::I16), "i16");
  EXPECT_STREQ(mlir_element(ElementType::I32), "i32");
  EXPECT_STREQ(mlir_element(ElementType::I64), "i64");
  EXPECT_STREQ(mlir_element(ElementType::F16), "f16");
  EXPECT_STREQ(mlir_element(ElementType::BF16), "bf16");
  EXPECT_STREQ(mlir_element(ElementType::F32), "f32");
  EXPECT_STREQ(mlir_element(ElementType::F64), "f64");
  EXPECT_STREQ(mlir_element(ElementType::F8E5M2), "f8E5M2");
  EXPECT_STREQ(mlir_element(ElementType::F8E4M3FNUZ), "f8E4M3FNUZ");
  EXPECT_THROW(mlir_element(static_cast<ElementType>(200)), std::invalid_argument);
}

TEST(HloTypes, TensorTypeStr) {
  EXPECT_EQ((TensorType{ElementType::F32, {3, 4}}).str(), "tensor<3x4xf32>");
  EXPECT_EQ((TensorType{ElementType::F32, {}}).str(), "tensor<f32>");
  EXPECT_EQ((TensorType{ElementType::Bool, {0, 2}}).str(), "tensor<0x2xi1>");
  EXPECT_EQ((TensorType{ElementType::U8, {7}}).str(), "tensor<7xui8>");
}

TEST(HloTypes, NumElementsAndEquality) {
  EXPECT_EQ((TensorType{ElementType::F32, {}}).num_elements(), 1);
  EXPECT_EQ((TensorType{ElementType::F32, {2, 3, 4}}).num_elements(), 24);
  EXPECT_EQ((TensorType{ElementType::F32, {2, 0}}).num_elements(), 0);
  EXPECT_EQ((TensorType{ElementType::I64, {2, 3}}).rank(), 2);
  EXPECT_TRUE((TensorType{ElementType::F32, {2}}) == (TensorType{ElementType::F32, {2}}));
  EXPECT_FALSE((TensorType{ElementType::F32, {2}}) == (TensorType{ElementType::F64, {2}}));
  EXPECT_FALSE((TensorType{ElementType::F32, {2}}) == (TensorType{ElementType::F32, {2, 1}}));
}

}  // namespace
}  // namespace torch_pjrt::hlo
