// Tests of the process-wide counters and the fallback map.
#include "runtime/metrics.h"

#include <gtest/gtest.h>

namespace torch_pjrt::runtime {
namespace {

TEST(Counters, FallbacksAndReset) {
  Counters& c = counters();
  EXPECT_EQ(&c, &counters());
  c.reset();
  c.count_fallback("aten::foo");
  c.count_fallback("aten::foo");
  c.count_fallback("aten::bar");
  c.executions += 3;
  const auto fallbacks = c.fallbacks();
  EXPECT_EQ(fallbacks.at("aten::foo"), 2);
  EXPECT_EQ(fallbacks.at("aten::bar"), 1);
  c.reset();
  EXPECT_TRUE(c.fallbacks().empty());
  EXPECT_EQ(c.executions.load(), 0);
}

}  // namespace
}  // namespace torch_pjrt::runtime
