// IndexMap (graph/index_map.h): positions by address, small and grown past its inline entries.
#include "graph/index_map.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <vector>

namespace torch_pjrt::graph {
namespace {

TEST(IndexMap, KeepsTheFirstIndexOfEachKeyAcrossGrowth) {
  std::vector<int> items(1000);
  IndexMap<int> map;
  for (int i = 0; i < 1000; ++i) {
    EXPECT_TRUE(map.emplace(&items[i], i));
    EXPECT_FALSE(map.emplace(&items[i], -1));  // present: unchanged
    EXPECT_EQ(map.size(), static_cast<size_t>(i + 1));
    // Every key so far, whether still in the inline entries or moved to the table.
    for (int k = 0; k <= i; k += 97) EXPECT_EQ(map.at(&items[k]), k);
  }
  for (int i = 0; i < 1000; ++i) EXPECT_EQ(map.at(&items[i]), i);
}

TEST(IndexMap, AbsentKeys) {
  int a = 0, b = 0;
  IndexMap<int> map;
  EXPECT_FALSE(map.count(&a));
  EXPECT_THROW(map.at(&a), std::out_of_range);
  map.emplace(&a, 3);
  EXPECT_TRUE(map.count(&a));
  EXPECT_FALSE(map.count(&b));
  EXPECT_THROW(map.at(&b), std::out_of_range);
}

}  // namespace
}  // namespace torch_pjrt::graph
