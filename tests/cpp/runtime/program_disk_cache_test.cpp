// Tests of ProgramDiskCache on the test plugin: a stored program loads and runs, another text or
// compile-options identity is a miss, a damaged file is deleted and missed, the folder stays
// within TORCH_PJRT_CACHE_MAX_MB by deleting the least recently used files, and the cache is off
// unless TORCH_PJRT_EAGER_DISK_CACHE=1.
#include "runtime/program_disk_cache.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "runtime/buffer.h"
#include "runtime/metrics.h"
#include "test_support.h"

namespace torch_pjrt::runtime {
namespace {

class DiskCache : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("torch_pjrt_disk_cache_test_" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir_);
    setenv("TORCH_PJRT_CACHE_DIR", dir_.c_str(), 1);
    setenv("TORCH_PJRT_EAGER_DISK_CACHE", "1", 1);
    client_ = testing::cpu_client(1);
  }
  void TearDown() override {
    unsetenv("TORCH_PJRT_EAGER_DISK_CACHE");
    unsetenv("TORCH_PJRT_CACHE_DIR");
    unsetenv("TORCH_PJRT_CACHE_MAX_MB");
    std::filesystem::remove_all(dir_);
  }
  std::vector<float> run(const Executable& exe) {
    const std::vector<float> a = {1, 2, 3}, b = {4, 5, 6};
    auto x = client_->buffer_from_host(a.data(), ElementType::F32, {3}, 0);
    auto y = client_->buffer_from_host(b.data(), ElementType::F32, {3}, 0);
    std::vector<float> host(3);
    exe.execute({x.get(), y.get()}, 0).at(0)->to_host(host.data(), host.size() * sizeof(float));
    return host;
  }
  std::filesystem::path dir_;
  std::shared_ptr<Client> client_;
  const std::string add_ = testing::add_program(3, /*donate=*/false);
};

TEST_F(DiskCache, StoredProgramLoadsAndRuns) {
  const auto cache = ProgramDiskCache::from_environment(*client_, "options");
  ASSERT_TRUE(cache.enabled());
  EXPECT_EQ(cache.load(*client_, add_, {}), nullptr);
  ASSERT_TRUE(cache.store(add_, *client_->compile(add_)));
  const int64_t hits = counters().disk_hits;
  auto loaded = cache.load(*client_, add_, {});
  ASSERT_NE(loaded, nullptr);
  EXPECT_EQ(counters().disk_hits, hits + 1);
  EXPECT_EQ(run(*loaded), (std::vector<float>{5, 7, 9}));
}

TEST_F(DiskCache, OtherTextOrOptionsMiss) {
  ProgramDiskCache::from_environment(*client_, "options").store(add_, *client_->compile(add_));
  const auto other = ProgramDiskCache::from_environment(*client_, "other options");
  EXPECT_EQ(other.load(*client_, add_, {}), nullptr);
  const auto same = ProgramDiskCache::from_environment(*client_, "options");
  EXPECT_EQ(same.load(*client_, add_ + " ", {}), nullptr);
}

TEST_F(DiskCache, DamagedFileIsDeletedAndMissed) {
  const auto cache = ProgramDiskCache::from_environment(*client_, "options");
  cache.store(add_, *client_->compile(add_));
  const auto file = std::filesystem::directory_iterator(dir_ / "eager")->path();
  std::filesystem::resize_file(file, std::filesystem::file_size(file) / 2);
  EXPECT_EQ(cache.load(*client_, add_, {}), nullptr);
  EXPECT_FALSE(std::filesystem::exists(file));
}

TEST_F(DiskCache, SizeCapDeletesLeastRecentlyUsed) {
  // Three programs of about the same size under a cap that holds two of them.
  const std::string a = add_, b = testing::add_program(4, false),
                    c = testing::add_program(5, false);
  ProgramDiskCache::from_environment(*client_, "options").store(a, *client_->compile(a));
  const auto file_size = std::filesystem::directory_iterator(dir_ / "eager")->file_size();
  const double cap_mb = 2.5 * static_cast<double>(file_size) / (1 << 20);
  setenv("TORCH_PJRT_CACHE_MAX_MB", std::to_string(cap_mb).c_str(), 1);
  const auto cache = ProgramDiskCache::from_environment(*client_, "options");
  // File times have the file system's resolution: keep the uses apart.
  const auto later = [] { std::this_thread::sleep_for(std::chrono::milliseconds(20)); };
  later();
  ASSERT_TRUE(cache.store(b, *client_->compile(b)));
  later();
  ASSERT_NE(cache.load(*client_, a, {}), nullptr);  // a is now used more recently than b
  later();
  ASSERT_TRUE(cache.store(c, *client_->compile(c)));
  EXPECT_NE(cache.load(*client_, a, {}), nullptr);
  EXPECT_EQ(cache.load(*client_, b, {}), nullptr);
  EXPECT_NE(cache.load(*client_, c, {}), nullptr);
}

TEST_F(DiskCache, OffUnlessAskedFor) {
  unsetenv("TORCH_PJRT_EAGER_DISK_CACHE");
  EXPECT_FALSE(ProgramDiskCache::from_environment(*client_, "options").enabled());
  setenv("TORCH_PJRT_EAGER_DISK_CACHE", "1", 1);
  setenv("TORCH_PJRT_CACHE_DIR", "off", 1);
  EXPECT_FALSE(ProgramDiskCache::from_environment(*client_, "options").enabled());
}

}  // namespace
}  // namespace torch_pjrt::runtime
