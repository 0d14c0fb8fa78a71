// CTC loss's recursions (lowering/ctc): the while loops over time against the recursions written
// as plain host loops, for a batch of two entries of different lengths and a label allowed to skip.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "graph/graph.h"
#include "lowering/ctc.h"
#include "test_support.h"

namespace torch_pjrt::graph {
namespace {

constexpr int64_t kT = 4, kB = 2, kS = 5;  // extended targets: blank, a, blank, b, blank
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

float logsumexp(std::vector<float> v) {
  const float m = *std::max_element(v.begin(), v.end());
  if (m == kNegInf) return kNegInf;
  float sum = 0;
  for (float x : v) sum += std::exp(x - m);
  return m + std::log(sum);
}

struct Inputs {
  std::vector<float> lp;                                // [T, B, S]
  std::vector<uint8_t> skip, start, ahead, last_start;  // [B, S]
  std::vector<int64_t> lengths{4, 3};
  float at(int64_t t, int64_t b, int64_t s) const { return lp[(t * kB + b) * kS + s]; }
};

void expect_log_values(const std::vector<float>& got, const std::vector<float>& expected) {
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i) {
    if (expected[i] == kNegInf) {
      EXPECT_EQ(got[i], kNegInf) << "at " << i;
    } else {
      EXPECT_NEAR(got[i], expected[i], 1e-5) << "at " << i;
    }
  }
}

Inputs inputs() {
  Inputs in;
  for (int64_t i = 0; i < kT * kB * kS; ++i) in.lp.push_back(-0.1f * static_cast<float>(i % 7 + 1));
  // Entry 0: labels a, b (b may be reached from a by skipping the blank); entry 1: a, a (no skip).
  in.skip = {0, 1, 0, 1, 0, 0, 1, 0, 0, 0};
  in.start = {1, 1, 0, 0, 0, 1, 1, 0, 0, 0};
  in.ahead = {0, 1, 0, 0, 0, 0, 0, 0, 0, 0};  // skip at s + 2
  in.last_start = {0, 0, 0, 1, 1, 0, 0, 0, 1, 1};
  return in;
}

TEST(CtcLowering, AlphaMatchesTheHostRecursion) {
  test_client();
  const Inputs in = inputs();
  std::vector<float> expected(kT * kB * kS, kNegInf);
  for (int64_t b = 0; b < kB; ++b) {
    for (int64_t s = 0; s < kS; ++s) {
      if (in.start[b * kS + s]) expected[b * kS + s] = in.at(0, b, s);
    }
    for (int64_t t = 1; t < kT; ++t) {
      for (int64_t s = 0; s < kS; ++s) {
        const auto prev = [&](int64_t j) {
          return j < 0 ? kNegInf : expected[((t - 1) * kB + b) * kS + j];
        };
        const float two = in.skip[b * kS + s] ? prev(s - 2) : kNegInf;
        expected[(t * kB + b) * kS + s] = in.at(t, b, s) + logsumexp({prev(s), prev(s - 1), two});
      }
    }
  }
  const DataPtr alpha =
      record1(lowering::kCtcAlpha,
              {upload(in.lp, kF32, {kT, kB, kS}), upload(in.skip, kBool, {kB, kS}),
               upload(in.start, kBool, {kB, kS})},
              {}, {kF32, {kT, kB, kS}}, 0);
  expect_log_values(fetch<float>(alpha), expected);
}

TEST(CtcLowering, BetaStartsAtEachEntrysLastStep) {
  test_client();
  const Inputs in = inputs();
  std::vector<float> expected(kT * kB * kS, kNegInf);
  for (int64_t b = 0; b < kB; ++b) {
    const int64_t last = in.lengths[static_cast<size_t>(b)] - 1;
    for (int64_t s = 0; s < kS; ++s) {
      if (in.last_start[b * kS + s]) expected[(last * kB + b) * kS + s] = in.at(last, b, s);
    }
    for (int64_t t = last - 1; t >= 0; --t) {
      for (int64_t s = 0; s < kS; ++s) {
        const auto next = [&](int64_t j) {
          return j >= kS ? kNegInf : expected[((t + 1) * kB + b) * kS + j];
        };
        const float two = in.ahead[b * kS + s] ? next(s + 2) : kNegInf;
        expected[(t * kB + b) * kS + s] = in.at(t, b, s) + logsumexp({next(s), next(s + 1), two});
      }
    }
  }
  const DataPtr beta =
      record1(lowering::kCtcBeta,
              {upload(in.lp, kF32, {kT, kB, kS}), upload(in.ahead, kBool, {kB, kS}),
               upload(in.last_start, kBool, {kB, kS}), upload(in.lengths, kI64, {kB})},
              {}, {kF32, {kT, kB, kS}}, 0);
  expect_log_values(fetch<float>(beta), expected);
}

}  // namespace
}  // namespace torch_pjrt::graph
