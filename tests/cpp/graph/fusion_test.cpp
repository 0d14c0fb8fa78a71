// FusionPolicy: the size cap, recognizing a repeating op sequence, and cutting every repetition at
// the same place.
#include "graph/fusion.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace torch_pjrt::graph {
namespace {

// Feeds `ops` to the policy; returns the positions (1-based op counts) after which it cut.
std::vector<size_t> cuts(FusionPolicy& policy, const std::vector<uint64_t>& ops) {
  std::vector<size_t> at;
  for (size_t i = 0; i < ops.size(); ++i) {
    if (policy.after_op(ops[i])) {
      at.push_back(i + 1);
      policy.segment_done();
    }
  }
  return at;
}

// `prefix` distinct ops, then `repeats` copies of a body of `body` ops (1..body).
std::vector<uint64_t> loop(size_t prefix, size_t body, size_t repeats) {
  std::vector<uint64_t> ops;
  for (size_t i = 0; i < prefix; ++i) ops.push_back(1000 + i);
  for (size_t r = 0; r < repeats; ++r) {
    for (size_t i = 0; i < body; ++i) ops.push_back(1 + i);
  }
  return ops;
}

TEST(FusionPolicy, CapCutsWhenNothingRepeatsGrowingUpToFourCaps) {
  FusionPolicy policy(8);
  std::vector<uint64_t> ops;
  for (uint64_t i = 0; i < 150; ++i) ops.push_back(i + 1);
  EXPECT_EQ(cuts(policy, ops), (std::vector<size_t>{8, 24, 56, 88, 120}));
  EXPECT_EQ(policy.segment_ops(), 0u);
}

TEST(FusionPolicy, LoopBodyBecomesTheSegment) {
  // Body of 30 ops after 10 others, cap 64: the first history holds the prefix and no period,
  // the next (twice as long) is all loop: the period is found at 128 ops, and the first cut falls
  // whole bodies after the previous cut (150); from then on every cut lands exactly one body
  // apart, at the same position inside the body.
  FusionPolicy policy(64);
  const auto at = cuts(policy, loop(10, 30, 16));
  ASSERT_GE(at.size(), 5u);
  EXPECT_EQ(at[0], 64u);
  EXPECT_EQ(at[1], 64u + 150u);
  EXPECT_EQ(policy.segment_ops(), 30u);
  for (size_t i = 2; i < at.size(); ++i) EXPECT_EQ(at[i] - at[i - 1], 30u);
}

TEST(FusionPolicy, ShortBodiesAreGroupedToASixtyFourthOfTheCap) {
  FusionPolicy policy(4096);
  const auto at = cuts(policy, loop(0, 7, 300));
  EXPECT_EQ(at[0], 63u * 5);  // found at the first early look (256 ops), cut at whole groups
  EXPECT_EQ(policy.segment_ops(), 7u * (64 / 7));
  for (size_t i = 1; i < at.size(); ++i) EXPECT_EQ(at[i] - at[i - 1], 7u * (64 / 7));
}

TEST(FusionPolicy, InnerRepetitionIsNotMistakenForTheLoop) {
  // A step = 3 identical "layers" of 10 ops followed by 20 other ops: the layer repeats inside
  // the step, but only the whole step (50 ops) repeats across the history.
  std::vector<uint64_t> step;
  for (int layer = 0; layer < 3; ++layer) {
    for (uint64_t i = 0; i < 10; ++i) step.push_back(1 + i);
  }
  for (uint64_t i = 0; i < 20; ++i) step.push_back(100 + i);
  std::vector<uint64_t> ops;
  for (int r = 0; r < 20; ++r) ops.insert(ops.end(), step.begin(), step.end());
  FusionPolicy policy(160);
  const auto at = cuts(policy, ops);
  EXPECT_EQ(policy.segment_ops(), 50u);
  for (size_t i = 2; i < at.size(); ++i) EXPECT_EQ(at[i] - at[i - 1], 50u);
}

TEST(FusionPolicy, BrokenRepetitionIsLearnedAgain) {
  FusionPolicy policy(64);
  auto ops = loop(0, 20, 10);
  ops.insert(ops.end(), 5, 777);  // something else happens once
  const auto tail = loop(0, 20, 12);
  ops.insert(ops.end(), tail.begin(), tail.end());
  const auto at = cuts(policy, ops);
  EXPECT_EQ(policy.segment_ops(), 20u);
  for (size_t i = at.size() - 3; i < at.size(); ++i) EXPECT_EQ(at[i] - at[i - 1], 20u);
}

TEST(FusionPolicy, StepsShorterThanTheCapAreFoundBeforeIt) {
  // A first step of 450 ops, then steps of 400 (a training loop whose first optimizer step
  // differs): with a cap of 4096 the period is found when the history reaches 2048 ops; the
  // cuts fall whole periods from the start (2400, 2800, ...), one step per program.
  FusionPolicy policy(4096);
  const auto at = cuts(policy, loop(450, 400, 20));
  ASSERT_GE(at.size(), 3u);
  EXPECT_EQ(at[0], 2400u);
  EXPECT_EQ(policy.segment_ops(), 400u);
  for (size_t i = 1; i < at.size(); ++i) EXPECT_EQ(at[i] - at[i - 1], 400u);
}

TEST(FusionPolicy, CutsStayAtStepEndsAcrossSyncs) {
  // Steps of 166 ops synced at odd step counts (after steps 1, 10, 11 and 20, as a loop reading
  // its loss every 10 steps): once the period is found, every cut is at a step end, so each
  // program is one step and the syncs do not shift them.
  FusionPolicy policy(4096);
  std::vector<size_t> ends;  // ops since the last cut or sync at each cut
  size_t since = 0;
  for (int step = 1; step <= 40; ++step) {
    for (uint64_t i = 0; i < 166; ++i) {
      ++since;
      if (policy.after_op(i + 1)) {
        ends.push_back(since);
        since = 0;
        policy.segment_done();
      }
    }
    if (step == 1 || step % 10 == 0 || step % 10 == 1) {
      since = 0;
      policy.segment_done();
    }
  }
  EXPECT_EQ(policy.segment_ops(), 166u);
  ASSERT_GE(ends.size(), 20u);
  for (size_t e : ends) EXPECT_EQ(e % 166, 0u);
  for (size_t i = 2; i < ends.size(); ++i) EXPECT_EQ(ends[i], 166u);
}

TEST(FusionPolicy, LargeCapsGroupAtMostHalfTheHistory) {
  // A cap of a million ops would group 7-op bodies into 15,624-op programs; found at 256 ops, the
  // group is at most half of what was seen (126 ops).
  FusionPolicy policy(1000000);
  const auto at = cuts(policy, loop(0, 7, 200));
  EXPECT_EQ(policy.segment_ops(), 7u * (128 / 7));
  ASSERT_GE(at.size(), 2u);
  for (size_t i = 1; i < at.size(); ++i) EXPECT_EQ(at[i] - at[i - 1], 7u * (128 / 7));
}

TEST(FusionPolicy, ACapOfZeroNeverCuts) {
  FusionPolicy policy(16);
  policy.set_max_ops(0);
  EXPECT_TRUE(cuts(policy, loop(0, 7, 2000)).empty());
  policy.set_max_ops(16);  // and on again
  EXPECT_FALSE(cuts(policy, loop(0, 7, 200)).empty());
}

TEST(FusionPolicy, SyncPointsStartNewSegments) {
  FusionPolicy policy(16);
  for (int step = 0; step < 10; ++step) {
    for (uint64_t i = 0; i < 10; ++i) EXPECT_FALSE(policy.after_op(i + 1));
    policy.segment_done();  // a .item() every 10 ops: the cap is never reached
  }
}

}  // namespace
}  // namespace torch_pjrt::graph
