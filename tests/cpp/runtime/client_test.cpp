// Tests of Client, Buffer and Executable against the XLA CPU plugin: transfers, compile, execute.
#include "runtime/client.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <iostream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "runtime/buffer.h"
#include "runtime/error.h"
#include "runtime/event.h"
#include "runtime/executable.h"
#include "runtime/fault.h"
#include "runtime/host_lease.h"
#include "runtime/metrics.h"
#include "test_plugin.h"

namespace torch_pjrt::runtime {
namespace {

constexpr char kAdd[] = R"(module {
  func.func public @main(%a: tensor<3xf32>, %b: tensor<3xf32>) -> tensor<3xf32> {
    %0 = stablehlo.add %a, %b : tensor<3xf32>
    return %0 : tensor<3xf32>
  }
})";

std::shared_ptr<Client> make_client(int64_t devices = 2) {
  return Client::create(Plugin::load(test_plugin_path()), {{"cpu_device_count", devices}});
}

template <typename T>
std::vector<T> read(const Buffer& buffer) {
  std::vector<T> out(buffer.num_elements());
  buffer.to_host(out.data(), out.size() * sizeof(T));
  return out;
}

template <typename T>
void expect_round_trip(Client& client, ElementType type, const std::vector<T>& values,
                       const std::vector<int64_t>& dims) {
  auto buffer = client.buffer_from_host(values.data(), type, dims, 0);
  EXPECT_EQ(buffer->element_type(), type);
  EXPECT_EQ(buffer->dims(), dims);
  EXPECT_EQ(buffer->byte_size(), values.size() * sizeof(T));
  EXPECT_EQ(read<T>(*buffer), values) << element_name(type);
}

TEST(Client, DefaultClientReportsPlatformAndDevices) {
  auto client = Client::create(Plugin::load(test_plugin_path()));
  std::cout << "platform " << client->platform_name() << " " << client->platform_version() << ", "
            << client->device_count() << " devices of kind " << client->device_kind(0) << "\n";
  EXPECT_EQ(client->platform_name(), "cpu");
  EXPECT_GE(client->device_count(), 1);
  EXPECT_FALSE(client->device_kind(0).empty());
}

TEST(Client, DeviceCountOptionAndIndexChecks) {
  auto client = make_client(3);
  EXPECT_EQ(client->device_count(), 3);
  EXPECT_NE(client->device(2), nullptr);
  EXPECT_THROW(client->device(99), std::out_of_range);
  EXPECT_THROW(client->device(-1), std::out_of_range);
  EXPECT_THROW(client->device_kind(3), std::out_of_range);
}

TEST(Client, OneDevicePlacedAtItsLocalRank) {
  auto client = make_client(1);
  client->place_device_at(2, 4);  // local rank 2 of 4 processes on the host
  EXPECT_EQ(client->device_count(), 4);
  EXPECT_TRUE(client->has_device(2));
  EXPECT_FALSE(client->has_device(0));
  EXPECT_FALSE(client->has_device(4));
  try {
    client->device(1);
    FAIL() << "another process's index was accepted";
  } catch (const std::out_of_range& e) {
    EXPECT_NE(std::string(e.what()).find("belongs to another process of this job; this process "
                                         "drives device 2"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(client->device_index(client->device(2)), 2);
  const std::vector<float> a = {1, 2, 3}, b = {10, 20, 30};
  auto x = client->buffer_from_host(a.data(), ElementType::F32, {3}, 2);
  auto y = client->buffer_from_host(b.data(), ElementType::F32, {3}, 2);
  auto outputs = client->compile(kAdd)->execute({x.get(), y.get()}, 2);
  EXPECT_EQ(outputs[0]->device(), 2);
  EXPECT_EQ(read<float>(*outputs[0]), (std::vector<float>{11, 22, 33}));
  EXPECT_GT(client->memory().get(2).bytes.current, 0);
  EXPECT_THROW(client->buffer_from_host(a.data(), ElementType::F32, {3}, 0), std::out_of_range);
  EXPECT_THROW(make_client(2)->place_device_at(0, 2), std::logic_error);  // two devices
  EXPECT_THROW(make_client(1)->place_device_at(3, 3), std::logic_error);  // index >= count
}

TEST(Client, CacheOnlyRefusesToCompile) {
  auto client = make_client(1);
  set_cache_only(true);
  EXPECT_TRUE(cache_only());
  try {
    client->compile(kAdd);
    set_cache_only(false);
    FAIL() << "compiled while cache-only";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("no more compilation should happen"), std::string::npos);
  }
  set_cache_only(false);
  EXPECT_EQ(client->compile(kAdd)->num_outputs(), 1u);
}

TEST(Buffer, RoundTrips) {
  auto client = make_client();
  expect_round_trip<float>(*client, ElementType::F32, {1.5f, -2.0f, 3.25f, 0.0f, 1e30f, -0.0f},
                           {2, 3});
  expect_round_trip<int64_t>(*client, ElementType::I64, {INT64_MIN, -1, 0, INT64_MAX}, {4});
  // bool as bytes; bf16 as bit patterns (1.0, -2.0, 0.5, smallest subnormal).
  expect_round_trip<uint8_t>(*client, ElementType::Bool, {1, 0, 0, 1}, {2, 2});
  expect_round_trip<uint16_t>(*client, ElementType::BF16, {0x3F80, 0xC000, 0x3F00, 0x0001}, {4});
  expect_round_trip<double>(*client, ElementType::F64, {42.0}, {});
  expect_round_trip<int32_t>(*client, ElementType::I32, {}, {0, 5});
}

TEST(Buffer, ValidatesArguments) {
  auto client = make_client();
  const float data[4] = {};
  EXPECT_THROW(client->buffer_from_host(data, ElementType::F32, {-1}, 0), std::invalid_argument);
  EXPECT_THROW(client->buffer_from_host(data, ElementType::F32, {INT64_MAX, INT64_MAX}, 0),
               std::invalid_argument);
  EXPECT_THROW(client->buffer_from_host(nullptr, ElementType::F32, {4}, 0), std::invalid_argument);
  EXPECT_THROW(client->buffer_from_host(data, static_cast<ElementType>(99), {4}, 0),
               std::invalid_argument);
  EXPECT_THROW(client->buffer_from_host(data, ElementType::F32, {4}, 7), std::out_of_range);

  auto buffer = client->buffer_from_host(data, ElementType::F32, {4}, 1);
  EXPECT_EQ(buffer->device(), 1);
  float out[4];
  EXPECT_THROW(buffer->to_host(out, 8), std::invalid_argument);
  EXPECT_THROW(buffer->to_host(nullptr, sizeof(out)), std::invalid_argument);
  buffer->await_ready();
}

TEST(Buffer, SharingHostMemoryHoldsTheLeaseUntilTheBufferIsFreed) {
  auto client = make_client();
  alignas(64) float data[16];
  std::vector<float> values;
  for (int i = 0; i < 16; ++i) values.push_back(data[i] = 0.5f * i);
  HostLease lease(client->api());
  auto buffer = client->buffer_sharing_host(data, ElementType::F32, {4, 4}, 0, lease);
  EXPECT_EQ(read<float>(*buffer), values);
  // The CPU plugins alias aligned memory: the plugin uses it for as long as the buffer lives.
  EXPECT_FALSE(lease.released());
  buffer.reset();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!lease.released() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_TRUE(lease.released());

  HostLease unused(client->api());
  EXPECT_THROW(client->buffer_sharing_host(data, ElementType::F32, {-1}, 0, unused),
               std::invalid_argument);
  EXPECT_FALSE(unused.released());
}

TEST(Event, AwaitsBufferReadiness) {
  auto client = make_client();
  const int32_t value = 7;
  auto buffer = client->buffer_from_host(&value, ElementType::I32, {}, 0);
  PJRT_Buffer_ReadyEvent_Args ready{};
  ready.struct_size = PJRT_Buffer_ReadyEvent_Args_STRUCT_SIZE;
  ready.buffer = buffer->raw();
  check(client->api(), client->api()->PJRT_Buffer_ReadyEvent(&ready), "PJRT_Buffer_ReadyEvent");
  Event event(client->api(), ready.event);
  event.await("ready");
  EXPECT_TRUE(event.ready());
}

TEST(Executable, CompilesAndRunsOnEachDevice) {
  auto client = make_client();
  auto executable = client->compile(kAdd);
  EXPECT_EQ(executable->num_outputs(), 1u);
  const std::vector<float> a = {1, 2, 3}, b = {10, 20, 30};
  // One portable executable serves every device.
  for (int device = 0; device < client->device_count(); ++device) {
    auto x = client->buffer_from_host(a.data(), ElementType::F32, {3}, device);
    auto y = client->buffer_from_host(b.data(), ElementType::F32, {3}, device);
    auto outputs = executable->execute({x.get(), y.get()}, device);
    ASSERT_EQ(outputs.size(), 1u);
    EXPECT_EQ(outputs[0]->device(), device);
    EXPECT_EQ(outputs[0]->element_type(), ElementType::F32);
    EXPECT_EQ(outputs[0]->dims(), std::vector<int64_t>{3});
    EXPECT_EQ(read<float>(*outputs[0]), (std::vector<float>{11, 22, 33})) << "device " << device;
  }
}

TEST(Executable, ArmedFaultsFailTheirCallOnceAsPluginErrors) {
  auto client = make_client();
  const std::vector<float> a = {1, 2, 3};
  auto x = client->buffer_from_host(a.data(), ElementType::F32, {3}, 0);
  arm_fault("compile", 1);
  EXPECT_THROW(client->compile(kAdd), PjrtError);
  auto executable = client->compile(kAdd);
  arm_fault("execute", 2);  // the second execute from now
  EXPECT_NO_THROW(executable->execute({x.get(), x.get()}, 0));
  EXPECT_THROW(executable->execute({x.get(), x.get()}, 0), PjrtError);
  auto sum = executable->execute({x.get(), x.get()}, 0);
  arm_fault("to_host", 1);
  std::vector<float> out(3);
  EXPECT_THROW(sum[0]->to_host(out.data(), 12), PjrtError);
  EXPECT_EQ(read<float>(*sum[0]), (std::vector<float>{2, 4, 6}));
  arm_fault("from_host", 1);
  EXPECT_THROW(client->buffer_from_host(a.data(), ElementType::F32, {3}, 0), PjrtError);
  arm_fault("allocate", 2);  // an execute, then a transfer: each allocates
  EXPECT_NO_THROW(executable->execute({x.get(), x.get()}, 0));
  const int64_t ooms = client->memory().get(0).ooms;
  try {
    client->buffer_from_host(a.data(), ElementType::F32, {3}, 0);
    ADD_FAILURE() << "the armed allocation did not fail";
  } catch (const PjrtError& e) {
    EXPECT_EQ(e.code(), PJRT_Error_Code_RESOURCE_EXHAUSTED);
  }
  EXPECT_EQ(client->memory().get(0).ooms, ooms + 1);  // counted as the device's out of memory
  client->memory().reset_accumulated(0);
  EXPECT_EQ(client->memory().get(0).ooms, 0);
  EXPECT_THROW(arm_fault("alloc", 1), std::invalid_argument);
  EXPECT_THROW(arm_fault("execute", 0), std::invalid_argument);
}

TEST(Executable, MultipleOutputsOfMixedTypes) {
  auto client = make_client();
  auto executable = client->compile(R"(module {
    func.func public @main(%a: tensor<2xbf16>, %b: tensor<2xi64>) -> (tensor<2xbf16>, tensor<2xi1>) {
      %0 = stablehlo.add %a, %a : tensor<2xbf16>
      %1 = stablehlo.compare GT, %b, %b : (tensor<2xi64>, tensor<2xi64>) -> tensor<2xi1>
      return %0, %1 : tensor<2xbf16>, tensor<2xi1>
    }
  })");
  ASSERT_EQ(executable->num_outputs(), 2u);
  const std::vector<uint16_t> a = {0x3F80, 0xC000};  // 1.0, -2.0
  const std::vector<int64_t> b = {5, 6};
  auto x = client->buffer_from_host(a.data(), ElementType::BF16, {2}, 0);
  auto y = client->buffer_from_host(b.data(), ElementType::I64, {2}, 0);
  auto outputs = executable->execute({x.get(), y.get()}, 0);
  ASSERT_EQ(outputs.size(), 2u);
  EXPECT_EQ(read<uint16_t>(*outputs[0]), (std::vector<uint16_t>{0x4000, 0xC080}));  // 2.0, -4.0
  EXPECT_EQ(outputs[1]->element_type(), ElementType::Bool);
  EXPECT_EQ(read<uint8_t>(*outputs[1]), (std::vector<uint8_t>{0, 0}));
}

TEST(Executable, UnsupportedOutputTypeThrowsAndFreesOutputs) {
  auto client = make_client();
  auto executable = client->compile(R"(module {
    func.func public @main(%a: tensor<2xf32>) -> (tensor<2xf32>, tensor<2xi4>, tensor<2xf32>) {
      %0 = stablehlo.convert %a : (tensor<2xf32>) -> tensor<2xi4>
      return %a, %0, %a : tensor<2xf32>, tensor<2xi4>, tensor<2xf32>
    }
  })");
  const std::vector<float> a = {1, 2};
  auto x = client->buffer_from_host(a.data(), ElementType::F32, {2}, 0);
  EXPECT_THROW(executable->execute({x.get()}, 0), std::invalid_argument);
}

TEST(Executable, CompileErrorsCarryPluginMessage) {
  auto client = make_client();
  EXPECT_THROW(client->compile(""), std::invalid_argument);
  try {
    client->compile("module { this is not stablehlo }");
    FAIL() << "syntax error compiled";
  } catch (const PjrtError& e) {
    const std::string message = e.what();
    EXPECT_EQ(message.rfind("PJRT_Client_Compile: ", 0), 0u) << message;
    EXPECT_NE(message.find("error:"), std::string::npos) << message;
    EXPECT_NE(e.code(), PJRT_Error_Code_OK);
  }
}

TEST(Executable, ExecuteValidatesArguments) {
  auto client = make_client();
  auto executable = client->compile(kAdd);
  const std::vector<float> a = {1, 2, 3};
  auto on0 = client->buffer_from_host(a.data(), ElementType::F32, {3}, 0);
  auto on1 = client->buffer_from_host(a.data(), ElementType::F32, {3}, 1);
  EXPECT_THROW(executable->execute({on0.get(), nullptr}, 0), std::invalid_argument);
  EXPECT_THROW(executable->execute({on0.get(), on1.get()}, 0), std::invalid_argument);
  EXPECT_THROW(executable->execute({on0.get(), on0.get()}, 99), std::out_of_range);
  // Argument count and size mismatches are the plugin's to report.
  EXPECT_THROW(executable->execute({on0.get()}, 0), PjrtError);
  const std::vector<float> four = {1, 2, 3, 4};
  auto wrong = client->buffer_from_host(four.data(), ElementType::F32, {4}, 0);
  EXPECT_THROW(executable->execute({on0.get(), wrong.get()}, 0), PjrtError);
}

TEST(Counters, AdvanceWithTraffic) {
  auto client = make_client();
  counters().reset();
  auto executable = client->compile(kAdd);
  const std::vector<float> a = {1, 2, 3};
  auto x = client->buffer_from_host(a.data(), ElementType::F32, {3}, 0);
  auto outputs = executable->execute({x.get(), x.get()}, 0);
  EXPECT_EQ(read<float>(*outputs[0]), (std::vector<float>{2, 4, 6}));
  EXPECT_EQ(counters().compiles.load(), 1);
  EXPECT_GT(counters().compile_nanoseconds.load(), 0);
  EXPECT_EQ(counters().executions.load(), 1);
  EXPECT_EQ(counters().host_to_device_bytes.load(), 12);
  EXPECT_EQ(counters().device_to_host_bytes.load(), 12);
}

}  // namespace
}  // namespace torch_pjrt::runtime
