// Tests of find_plugin() and Plugin::load() against the installed XLA CPU plugin.
#include "runtime/plugin.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <stdexcept>
#include <string>

namespace torch_pjrt::runtime {
namespace {

namespace fs = std::filesystem;

// The discovery tests need xla-cpu-pjrt's layout below site-packages: the build's default plugin.
const std::string kPlugin = TORCH_PJRT_DEFAULT_TEST_PLUGIN;

// The site-packages directory holding xla_plugins/xla_cpu_pjrt/xla_cpu_pjrt.so.
std::string site_packages() {
  return fs::path(kPlugin).parent_path().parent_path().parent_path().string();
}

std::string error_of(const std::string& request, const std::vector<std::string>& dirs) {
  try {
    find_plugin(request, dirs);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  ADD_FAILURE() << "find_plugin(\"" << request << "\") did not throw";
  return {};
}

TEST(FindPlugin, ExplicitPath) { EXPECT_EQ(find_plugin(kPlugin, {}), kPlugin); }

// The CPU plugin find_plugin prefers in site_packages(): lammps-jax-pjrt-cpu when installed.
std::string preferred_cpu_plugin() {
  const fs::path newer = fs::path(site_packages()) / "lammps_jax_pjrt_cpu/pjrt_c_api_cpu_plugin.so";
  return fs::exists(newer) ? newer.string() : kPlugin;
}

TEST(FindPlugin, CpuUnderSearchDir) {
  EXPECT_EQ(find_plugin("cpu", {"/nonexistent", site_packages()}), preferred_cpu_plugin());
}

TEST(FindPlugin, CpuPrefersTheNewerPlugin) {
  const fs::path dir = fs::temp_directory_path() / ("torch_pjrt_sp_" + std::to_string(getpid()));
  for (const char* file : {"xla_plugins/xla_cpu_pjrt/xla_cpu_pjrt.so",
                           "lammps_jax_pjrt_cpu/pjrt_c_api_cpu_plugin.so"}) {
    fs::create_directories((dir / file).parent_path());
    std::ofstream(dir / file) << "";
  }
  EXPECT_EQ(find_plugin("cpu", {dir.string()}),
            (dir / "lammps_jax_pjrt_cpu/pjrt_c_api_cpu_plugin.so").string());
  fs::remove(dir / "lammps_jax_pjrt_cpu/pjrt_c_api_cpu_plugin.so");
  EXPECT_EQ(find_plugin("cpu", {dir.string()}),
            (dir / "xla_plugins/xla_cpu_pjrt/xla_cpu_pjrt.so").string());
  fs::remove_all(dir);
}

TEST(FindPlugin, AutoFindsCpuWhenNoAcceleratorPluginInstalled) {
  if (std::getenv("TPU_LIBRARY_PATH") != nullptr) GTEST_SKIP() << "TPU_LIBRARY_PATH is set";
  EXPECT_EQ(find_plugin("", {site_packages()}), preferred_cpu_plugin());
}

TEST(FindPlugin, UnknownNameListsSearchedPaths) {
  const std::string message = error_of("bogus", {"/some/dir"});
  EXPECT_NE(message.find("'bogus'"), std::string::npos) << message;
  EXPECT_NE(message.find("/some/dir/libtpu/libtpu.so"), std::string::npos) << message;
  EXPECT_NE(message.find("/some/dir/jax_plugins/xla_cuda12/xla_cuda_plugin.so"), std::string::npos)
      << message;
  EXPECT_NE(message.find("/some/dir/xla_plugins/xla_cpu_pjrt/xla_cpu_pjrt.so"), std::string::npos)
      << message;
}

TEST(FindPlugin, NothingFoundListsSearchedPaths) {
  const std::string message = error_of("cuda", {"/a", "/b"});
  EXPECT_NE(message.find("'cuda'"), std::string::npos) << message;
  for (const char* path : {"/a/jax_plugins/xla_cuda13/xla_cuda_plugin.so",
                           "/a/jax_plugins/xla_cuda12/xla_cuda_plugin.so",
                           "/b/jax_plugins/xla_cuda13/xla_cuda_plugin.so",
                           "/b/jax_plugins/xla_cuda12/xla_cuda_plugin.so"}) {
    EXPECT_NE(message.find(path), std::string::npos) << message;
  }
}

TEST(FindPlugin, MissingPathThrows) {
  EXPECT_NE(error_of("/nonexistent/libfoo.so", {}).find("/nonexistent/libfoo.so"),
            std::string::npos);
  EXPECT_NE(error_of("libfoo.so", {}).find("libfoo.so"), std::string::npos);
}

TEST(Plugin, LoadReportsVersionAndAttributes) {
  auto plugin = Plugin::load(kPlugin);
  ASSERT_NE(plugin->api(), nullptr);
  EXPECT_EQ(plugin->api_major(), PJRT_API_MAJOR);
  std::cout << "PJRT API " << plugin->api_major() << "." << plugin->api_minor() << " (header "
            << PJRT_API_MAJOR << "." << PJRT_API_MINOR << ")\n";
  for (const auto& [name, value] : plugin->attributes()) {
    std::cout << "  " << name << " = " << value << "\n";
  }
  EXPECT_TRUE(plugin->attributes().count("xla_version") ||
              plugin->attributes().count("stablehlo_current_version"));
  // A second spelling of the same file yields the same, already initialized plugin.
  const std::string other = (fs::path(kPlugin).parent_path() / "." / "xla_cpu_pjrt.so").string();
  EXPECT_EQ(Plugin::load(other), plugin);
  EXPECT_EQ(Plugin::load(kPlugin), plugin);
}

TEST(Plugin, LoadRejectsLibraryWithoutGetPjrtApi) {
  try {
    Plugin::load("libm.so.6");
    FAIL() << "libm loaded as a PJRT plugin";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("GetPjrtApi"), std::string::npos) << e.what();
  }
}

TEST(Plugin, LoadMissingFileThrows) {
  try {
    Plugin::load("/nonexistent/plugin.so");
    FAIL() << "missing file loaded";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/plugin.so"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace torch_pjrt::runtime
