// Tests of how the runtime negotiates with plugins of other PJRT API versions, against the fake
// plugin (fake_plugin.cpp): version refusal, required functions, extension chain, struct sizes and
// create options.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstddef>
#include <filesystem>
#include <stdexcept>
#include <string>

#include "runtime/client.h"
#include "runtime/error.h"
#include "runtime/plugin.h"
#include "runtime/struct_sizes.h"

namespace torch_pjrt::runtime {
namespace {

namespace fs = std::filesystem;

struct Fake {
  std::string path;
  void* handle;
  std::string received() const {
    auto fn = reinterpret_cast<const char* (*)()>(dlsym(handle, "FakePjrt_Received"));
    return fn();
  }
};

// A fresh copy of the fake plugin (a separate library with its own state), configured.
Fake configure_fake(int major, int minor, const char* accepted, size_t deserialize_min = 0,
                    size_t drop_function = 0) {
  static std::atomic<int> counter{0};
  const fs::path copy = fs::temp_directory_path() / ("torch_pjrt_fake_" + std::to_string(getpid()) +
                                                     "_" + std::to_string(counter++) + ".so");
  fs::copy_file(TORCH_PJRT_FAKE_PLUGIN, copy, fs::copy_options::overwrite_existing);
  void* handle = dlopen(copy.c_str(), RTLD_NOW | RTLD_LOCAL);
  EXPECT_NE(handle, nullptr) << dlerror();
  using Configure = void (*)(int, int, const char*, size_t, size_t);
  auto configure = reinterpret_cast<Configure>(dlsym(handle, "FakePjrt_Configure"));
  configure(major, minor, accepted, deserialize_min, drop_function);
  return {copy.string(), handle};
}

std::string load_error(const Fake& fake) {
  try {
    Plugin::load(fake.path);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  ADD_FAILURE() << "the fake plugin loaded";
  return {};
}

const std::string kHeader = std::to_string(PJRT_API_MAJOR) + "." + std::to_string(PJRT_API_MINOR);

TEST(Negotiation, MajorVersionMismatchNamesBothVersions) {
  const std::string message = load_error(configure_fake(PJRT_API_MAJOR + 1, 3, nullptr));
  EXPECT_NE(message.find("PJRT C API " + std::to_string(PJRT_API_MAJOR + 1) + ".3"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("built with " + kHeader), std::string::npos) << message;
  EXPECT_NE(message.find("major versions differ"), std::string::npos) << message;
}

TEST(Negotiation, PluginsOlderThanTheFunctionTableLayoutAreRefused) {
  const std::string message = load_error(configure_fake(PJRT_API_MAJOR, 56, nullptr));
  EXPECT_NE(message.find("PJRT C API 0.56"), std::string::npos) << message;
  EXPECT_NE(message.find("older than 0.57"), std::string::npos) << message;
  // 0.57 up loads (the fake provides every function).
  EXPECT_NO_THROW(Plugin::load(configure_fake(PJRT_API_MAJOR, 57, nullptr).path));
}

TEST(Negotiation, MissingFunctionIsNamed) {
  const std::string message = load_error(
      configure_fake(PJRT_API_MAJOR, 115, nullptr, 0, offsetof(PJRT_Api, PJRT_Client_Compile)));
  EXPECT_NE(message.find("does not provide PJRT_Client_Compile"), std::string::npos) << message;
  EXPECT_NE(message.find("0.115"), std::string::npos) << message;
}

TEST(Negotiation, ExtensionChainIsWalked) {
  auto plugin = Plugin::load(configure_fake(PJRT_API_MAJOR, 115, nullptr).path);
  ASSERT_EQ(plugin->extensions().size(), 2u);
  EXPECT_EQ(plugin->extensions()[0].type, 42);
  EXPECT_EQ(extension_name(42), "type 42");
  EXPECT_EQ(extension_name(plugin->extensions()[1].type), "Profiler");
  EXPECT_EQ(plugin->extensions()[1].struct_size, sizeof(PJRT_Extension_Base));
  ASSERT_NE(plugin->find_extension(PJRT_Extension_Type_Profiler), nullptr);
  EXPECT_EQ(plugin->find_extension(PJRT_Extension_Type_Profiler)->type,
            PJRT_Extension_Type_Profiler);
  EXPECT_EQ(plugin->find_extension(PJRT_Extension_Type_Layouts), nullptr);
}

TEST(Negotiation, CyclicExtensionChainIsBounded) {
  PJRT_Extension_Base a{sizeof(PJRT_Extension_Base), PJRT_Extension_Type_FFI, nullptr};
  PJRT_Extension_Base b{sizeof(PJRT_Extension_Base), PJRT_Extension_Type_Layouts, &a};
  a.next = &b;
  EXPECT_EQ(walk_extensions(&b).size(), kMaxExtensions);
  EXPECT_TRUE(walk_extensions(nullptr).empty());
}

TEST(Negotiation, StructSizesFollowThePluginVersion) {
  auto same = Plugin::load(configure_fake(PJRT_API_MAJOR, PJRT_API_MINOR, nullptr).path);
  EXPECT_EQ(same->struct_size(GrownStruct::kExecuteOptions), PJRT_ExecuteOptions_STRUCT_SIZE);
  EXPECT_EQ(same->struct_size(GrownStruct::kDeserializeAndLoadArgs),
            PJRT_Executable_DeserializeAndLoad_Args_STRUCT_SIZE);
  auto newer = Plugin::load(configure_fake(PJRT_API_MAJOR, 115, nullptr).path);
  EXPECT_EQ(newer->struct_size(GrownStruct::kExecuteOptions), 144u);
  EXPECT_EQ(newer->struct_size(GrownStruct::kDeserializeAndLoadArgs), 72u);
  EXPECT_EQ(newer->struct_size(GrownStruct::kCompiledMemoryStatsArgs), 144u);
  EXPECT_EQ(newer->struct_size(GrownStruct::kDeviceMemoryStatsArgs), 201u);
}

TEST(Negotiation, LearnsALargerStructSizeFromTheRejection) {
  Fake fake = configure_fake(PJRT_API_MAJOR, 120, nullptr, /*deserialize_min=*/96);
  auto client = Client::create(Plugin::load(fake.path));
  EXPECT_THROW(client->deserialize("bytes"), PjrtError);
  EXPECT_EQ(fake.received(), "deserialize struct_size 96");
  EXPECT_EQ(client->plugin().struct_size(GrownStruct::kDeserializeAndLoadArgs), 96u);
}

TEST(Negotiation, SizeBeyondThePaddedCapacityIsReported) {
  Fake fake = configure_fake(PJRT_API_MAJOR, 120, nullptr, kPaddedStructCapacity + 8);
  auto client = Client::create(Plugin::load(fake.path));
  try {
    client->deserialize("bytes");
    FAIL() << "deserialize succeeded";
  } catch (const PjrtError& e) {
    EXPECT_NE(std::string(e.what()).find("Unexpected PJRT_Executable_DeserializeAndLoad_Args size"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(client->plugin().struct_size(GrownStruct::kDeserializeAndLoadArgs), 72u);
}

TEST(Negotiation, ParsesSizeRejections) {
  auto parsed = parse_size_rejection(
      "PJRT_LoadedExecutable_Execute: Unexpected PJRT_ExecuteOptions size: expected 152, got 144. "
      "The plugin is likely built with a later version than the framework.");
  ASSERT_TRUE(parsed.has_value());
  EXPECT_EQ(parsed->struct_name, "PJRT_ExecuteOptions");
  EXPECT_EQ(parsed->expected, 152u);
  EXPECT_FALSE(parse_size_rejection("Unexpected option name passed to PJRT_Client_Create: x"));
  EXPECT_FALSE(parse_size_rejection("Unexpected PJRT_ExecuteOptions size: expected many"));
}

TEST(Negotiation, OptionalOptionRejectedByNameIsDropped) {
  Fake fake = configure_fake(PJRT_API_MAJOR, 115, "wanted");
  auto client = Client::create(Plugin::load(fake.path),
                               {{"wanted", int64_t{2}, false}, {"extra", true, true}});
  EXPECT_EQ(fake.received(), "wanted");
  ASSERT_EQ(client->options_dropped().size(), 1u);
  EXPECT_EQ(client->options_dropped()[0], "extra");
  ASSERT_EQ(client->options_sent().size(), 1u);
  EXPECT_EQ(describe(client->options_sent()[0]), "wanted=2");
}

TEST(Negotiation, RequiredOptionRejectedByNameFails) {
  Fake fake = configure_fake(PJRT_API_MAJOR, 115, "wanted");
  try {
    Client::create(Plugin::load(fake.path), {{"extra", 0.5f, false}});
    FAIL() << "client created";
  } catch (const PjrtError& e) {
    EXPECT_NE(std::string(e.what()).find("PJRT_Client_Create: extra"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("requested explicitly"), std::string::npos) << e.what();
  }
}

TEST(Negotiation, NonValidatingPluginReceivesEveryOption) {
  Fake fake = configure_fake(PJRT_API_MAJOR, PJRT_API_MINOR, nullptr);
  auto client = Client::create(
      Plugin::load(fake.path),
      {{"a", std::string("x"), true}, {"visible_devices", std::vector<int64_t>{0, 1}, false}});
  EXPECT_EQ(fake.received(), "a,visible_devices");
  EXPECT_TRUE(client->options_dropped().empty());
  EXPECT_EQ(describe(client->options_sent()[1]), "visible_devices=[0,1]");
}

TEST(Negotiation, PluginKindFromFileName) {
  EXPECT_EQ(plugin_kind("/sp/jax_plugins/xla_cuda13/xla_cuda_plugin.so"), "cuda");
  EXPECT_EQ(plugin_kind("/sp/jax_plugins/xla_cuda12/xla_cuda_plugin.so"), "cuda");
  EXPECT_EQ(plugin_kind("/sp/libtpu/libtpu.so"), "tpu");
  EXPECT_EQ(plugin_kind("/sp/lammps_jax_pjrt_cpu/pjrt_c_api_cpu_plugin.so"), "cpu");
  EXPECT_EQ(plugin_kind("/sp/./xla_plugins/xla_cpu_pjrt/xla_cpu_pjrt.so"), "cpu");
  EXPECT_EQ(plugin_kind("/sp/other/plugin.so"), "");
}

}  // namespace
}  // namespace torch_pjrt::runtime
