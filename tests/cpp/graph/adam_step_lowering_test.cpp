// The fused Adam/AdamW step of one parameter (lowering/optimizers): AdamW with weight decay against
// the update written as a host loop, and found_inf != 0 leaving every result at its old value.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "graph/graph.h"
#include "lowering/optimizers.h"
#include "test_support.h"

namespace torch_pjrt::graph {
namespace {

constexpr float kLr = 0.01f, kDecay = 0.1f, kBeta1 = 0.9f, kBeta2 = 0.999f, kEps = 1e-8f;
constexpr float kStep = 3;

struct State {
  std::vector<float> param{0.5f, -1.0f, 2.0f, 0.0f}, grad{0.1f, -0.2f, 0.3f, 1.0f},
      exp_avg{0.01f, 0.02f, -0.03f, 0.0f}, exp_avg_sq{1e-4f, 2e-4f, 3e-4f, 0.0f};
};

// AdamW (decoupled decay) with grad_scale 2, in the lowering's operand order; found_inf last.
std::vector<DataPtr> run(const State& s, float found_inf) {
  const std::vector<int64_t> dims{4};
  std::vector<DataPtr> in{upload(s.param, kF32, dims), upload(s.grad, kF32, dims),
                          upload(s.exp_avg, kF32, dims), upload(s.exp_avg_sq, kF32, dims),
                          upload(std::vector<float>{kStep}, kF32, {})};
  for (float v :
       {kLr, 1 - kLr * kDecay, kBeta1, kBeta2, 1 - kBeta1, 1 - kBeta2, kEps, 2.0f, found_inf}) {
    in.push_back(upload(std::vector<float>{v}, kF32, {}));
  }
  const hlo::TensorType type{kF32, dims};
  std::vector<DataPtr> out = record(lowering::kAdamStep, std::move(in), {{0, 0, 1, 1, 1, 1}, {}},
                                    {type, type, type, type}, 0);
  materialize(out);  // all four at once: the program takes the inputs' buffers
  return out;
}

TEST(AdamStepLowering, AdamWMatchesTheHostLoop) {
  test_client();
  const State s;
  const std::vector<DataPtr> out = run(s, 0);
  const float correction1 = 1 - std::pow(kBeta1, kStep);
  const float correction2_sqrt = std::sqrt(1 - std::pow(kBeta2, kStep));
  const std::vector<float> param = read<float>(out[0]), exp_avg = read<float>(out[1]),
                           exp_avg_sq = read<float>(out[2]), grad = read<float>(out[3]);
  for (size_t i = 0; i < s.param.size(); ++i) {
    const float g = s.grad[i] / 2;
    const float m = s.exp_avg[i] * kBeta1 + g * (1 - kBeta1);
    const float v = s.exp_avg_sq[i] * kBeta2 + g * g * (1 - kBeta2);
    const float denom = std::sqrt(v) / correction2_sqrt + kEps;
    const float p = s.param[i] * (1 - kLr * kDecay) - (kLr / correction1) * m / denom;
    EXPECT_NEAR(grad[i], g, 1e-7) << i;
    EXPECT_NEAR(exp_avg[i], m, 1e-7) << i;
    EXPECT_NEAR(exp_avg_sq[i], v, 1e-9) << i;
    EXPECT_NEAR(param[i], p, 1e-6) << i;
  }
}

TEST(AdamStepLowering, FoundInfKeepsEveryOldValue) {
  test_client();
  const State s;
  const std::vector<DataPtr> out = run(s, 1);
  EXPECT_EQ(read<float>(out[0]), s.param);
  EXPECT_EQ(read<float>(out[1]), s.exp_avg);
  EXPECT_EQ(read<float>(out[2]), s.exp_avg_sq);
  EXPECT_EQ(read<float>(out[3]), s.grad);
}

}  // namespace
}  // namespace torch_pjrt::graph
