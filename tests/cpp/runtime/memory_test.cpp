// Tests of the per-device memory accounting (MemoryLedger fed by Buffer) and the plugin's memory
// figures, on the XLA CPU plugin: figures move by exactly the bytes of the buffers created and
// destroyed, donation does not double count, peaks and totals reset.
#include "runtime/memory.h"

#include <gtest/gtest.h>

#include <stdexcept>

#include "test_support.h"

namespace torch_pjrt::runtime {
namespace {

using testing::add_program;
using testing::cpu_client;
using testing::upload;

TEST(Memory, BuffersCountTheirBytesWhileAlive) {
  auto client = cpu_client();
  MemoryLedger& ledger = client->memory();
  EXPECT_EQ(ledger.get(0).bytes.current, 0);
  {
    auto a = upload(*client, 1000);  // 4000 bytes
    EXPECT_EQ(a->device_bytes(), 4000);
    auto b = upload(*client, 250, 1);
    DeviceMemory m = ledger.get(0);
    EXPECT_EQ(m.bytes.current, 4000);
    EXPECT_EQ(m.buffers.current, 1);
    EXPECT_EQ(m.requested_bytes.current, 4000);
    EXPECT_EQ(m.all_bytes.current, 4000);
    EXPECT_EQ(ledger.get(1).bytes.current, 1000);
  }
  DeviceMemory m = ledger.get(0);
  EXPECT_EQ(m.bytes.current, 0);
  EXPECT_EQ(m.bytes.peak, 4000);
  EXPECT_EQ(m.bytes.allocated, 4000);
  EXPECT_EQ(m.bytes.freed, 4000);
  EXPECT_EQ(m.buffers.allocated, 1);
  EXPECT_EQ(ledger.get(1).bytes.current, 0);
}

TEST(Memory, PeaksAndTotalsReset) {
  auto client = cpu_client();
  MemoryLedger& ledger = client->memory();
  auto keep = upload(*client, 100);
  upload(*client, 1000);  // freed at once
  EXPECT_EQ(ledger.get(0).bytes.peak, 4400);
  ledger.reset_peaks(0);
  EXPECT_EQ(ledger.get(0).bytes.peak, 400);
  EXPECT_EQ(ledger.get(0).bytes.allocated, 4400);
  ledger.reset_accumulated(0);
  DeviceMemory m = ledger.get(0);
  EXPECT_EQ(m.bytes.allocated, 0);
  EXPECT_EQ(m.bytes.freed, 0);
  EXPECT_EQ(m.bytes.current, 400);
  EXPECT_THROW(ledger.get(2), std::out_of_range);
}

TEST(Memory, CacheBuffersCountOnlyAsReserved) {
  auto client = cpu_client();
  MemoryLedger& ledger = client->memory();
  auto pack = upload(*client, 10);
  pack->mark_cache();
  DeviceMemory m = ledger.get(0);
  EXPECT_EQ(m.bytes.current, 0);
  EXPECT_EQ(m.all_bytes.current, 40);
  pack.reset();
  EXPECT_EQ(ledger.get(0).all_bytes.current, 0);
  EXPECT_EQ(ledger.get(0).bytes.current, 0);
}

TEST(Memory, OutputsCountAndDonatedArgumentsStopCounting) {
  auto client = cpu_client();
  MemoryLedger& ledger = client->memory();
  auto plain = client->compile(add_program(256, /*donate=*/false));
  auto donating = client->compile(add_program(256, /*donate=*/true));
  auto a = upload(*client, 256);
  auto b = upload(*client, 256);
  ledger.reset_peaks(0);
  auto out = plain->execute({a.get(), b.get()}, 0);
  out[0]->await_ready();
  EXPECT_EQ(ledger.get(0).bytes.current, 3 * 1024);

  // The output takes over a's memory: a stops counting at the launch, before it is destroyed,
  // so the peak never holds both.
  auto donated = donating->execute({a.get(), b.get()}, 0);
  donated[0]->await_ready();
  EXPECT_EQ(ledger.get(0).bytes.current, 3 * 1024);
  EXPECT_EQ(ledger.get(0).bytes.peak, 3 * 1024);
  a.reset();
  EXPECT_EQ(ledger.get(0).bytes.current, 3 * 1024);
}

TEST(Memory, PluginStatisticsAndMemoryInfo) {
  auto client = cpu_client();
  // The CPU plugin does not implement PJRT_Device_MemoryStats; another plugin reports at least
  // bytes_in_use. Either way the call must not fail.
  const auto stats = plugin_memory_stats(*client, 0);
  if (stats) {
    EXPECT_TRUE(stats->count("bytes_in_use"));
  }
  const auto [free, total] = device_memory_info(*client, 0);
  EXPECT_GT(total, 0);
  EXPECT_GE(free, 0);
  EXPECT_LE(free, total);
  EXPECT_THROW(plugin_memory_stats(*client, 5), std::out_of_range);
}

}  // namespace
}  // namespace torch_pjrt::runtime
