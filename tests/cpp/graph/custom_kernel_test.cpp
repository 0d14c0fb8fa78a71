// Tests of custom kernels: registration, and kernel nodes lowered as calls inside graph programs.
#include "lowering/custom_kernel.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "lowering/elementwise.h"
#include "runtime/metrics.h"
#include "test_support.h"

namespace torch_pjrt::graph {
namespace {

// (a * 2 + b, sum(a)) through a helper function, in the pretty syntax a user or JAX writes.
const char* kFunctions = R"(
  func.func private @kt_main(%a: tensor<3xf32>, %b: tensor<3xf32>) -> (tensor<3xf32>, tensor<f32>) {
    %two = stablehlo.constant dense<2.0> : tensor<3xf32>
    %0 = stablehlo.multiply %a, %two : tensor<3xf32>
    %1 = call @kt_add(%0, %b) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    %z = stablehlo.constant dense<0.0> : tensor<f32>
    %2 = stablehlo.reduce(%a init: %z) applies stablehlo.add across dimensions = [0] : (tensor<3xf32>, tensor<f32>) -> tensor<f32>
    return %1, %2 : tensor<3xf32>, tensor<f32>
  }
  func.func private @kt_add(%x: tensor<3xf32>, %y: tensor<3xf32>) -> tensor<3xf32> {
    %0 = stablehlo.add %x, %y : tensor<3xf32>
    return %0 : tensor<3xf32>
  }
)";

lo::CustomKernel test_kernel() {
  return {"test::kt", kFunctions, "kt_main", {{kF32, {3}}, {kF32, {3}}}, {{kF32, {3}}, {kF32, {}}}};
}

class CustomKernel : public ::testing::Test {
 protected:
  void SetUp() override {
    test_client();
    synchronize();
  }
};

TEST_F(CustomKernel, RegistrationDeduplicatesAndValidates) {
  const int64_t id = lo::register_kernel(test_kernel());
  EXPECT_EQ(lo::register_kernel(test_kernel()), id);
  EXPECT_STREQ(lo::kernel_op(id).name, "test::kt");
  EXPECT_EQ(lo::kernel(id).entry, "kt_main");
  EXPECT_THROW(lo::kernel(-1), std::out_of_range);
  EXPECT_THROW(lo::kernel_op(1 << 30), std::out_of_range);

  auto bad = test_kernel();
  bad.entry = "missing";
  EXPECT_THROW(lo::register_kernel(bad), std::invalid_argument);
  bad = test_kernel();
  bad.outputs.clear();
  EXPECT_THROW(lo::register_kernel(bad), std::invalid_argument);
  bad = test_kernel();
  bad.name.clear();
  EXPECT_THROW(lo::register_kernel(bad), std::invalid_argument);
  bad = test_kernel();  // the same entry name over other functions would collide in a program
  bad.functions += " ";
  EXPECT_THROW(lo::register_kernel(bad), std::invalid_argument);
}

TEST_F(CustomKernel, RunsInsideOneProgramWithOtherOps) {
  const int64_t id = lo::register_kernel(test_kernel());
  DataPtr a = upload(std::vector<float>{1, 2, 3}, kF32, {3});
  DataPtr b = upload(std::vector<float>{10, 20, 30}, kF32, {3});
  const int64_t executions = runtime::counters().executions;
  auto first = record(lo::kernel_op(id), {a, b}, Attrs{{id}, {}}, lo::kernel(id).outputs, 0);
  // The kernel again on its own output, then an ordinary op: one program, the functions once.
  auto second =
      record(lo::kernel_op(id), {first[0], b}, Attrs{{id}, {}}, lo::kernel(id).outputs, 0);
  DataPtr sum = record1(lo::kAdd, {second[0], a}, {}, {kF32, {3}}, 0);
  const std::string text = program_text({sum, first[1]});
  EXPECT_NE(text.find("callee = @kt_main"), std::string::npos) << text;
  EXPECT_EQ(text.find("func.func private @kt_main"), text.rfind("func.func private @kt_main"));
  materialize({sum, first[1]});
  EXPECT_EQ(runtime::counters().executions - executions, 1);
  // first = (2a + b, 6); second = 2 * first + b; sum = second + a.
  EXPECT_EQ(read<float>(sum), (std::vector<float>{1 * 4 + 30 + 1, 2 * 4 + 60 + 2, 3 * 4 + 90 + 3}));
  EXPECT_EQ(read<float>(first[1]), (std::vector<float>{6}));
}

TEST_F(CustomKernel, LoweringRejectsOperandsOfOtherTypes) {
  const int64_t id = lo::register_kernel(test_kernel());
  DataPtr a = upload(std::vector<float>{1, 2, 3, 4}, kF32, {4});
  auto outs = record(lo::kernel_op(id), {a, a}, Attrs{{id}, {}}, lo::kernel(id).outputs, 0);
  EXPECT_THROW(program_text({outs[0]}), std::invalid_argument);
}

}  // namespace
}  // namespace torch_pjrt::graph
