// Tests of Executable::serialize and Client::deserialize on the XLA CPU plugin: a round trip runs
// the same program, and corrupt or truncated bytes raise PjrtError instead of crashing.
#include <gtest/gtest.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "runtime/buffer.h"
#include "runtime/client.h"
#include "runtime/error.h"
#include "runtime/executable.h"
#include "test_plugin.h"

namespace torch_pjrt::runtime {
namespace {

constexpr char kMul[] = R"(module {
  func.func public @main(%a: tensor<3xf32>, %b: tensor<3xf32>) -> tensor<3xf32> {
    %0 = stablehlo.multiply %a, %b : tensor<3xf32>
    return %0 : tensor<3xf32>
  }
})";

std::shared_ptr<Client> make_client() {
  return Client::create(Plugin::load(test_plugin_path()), {{"cpu_device_count", int64_t{2}}});
}

std::vector<float> run(Client& client, const Executable& exe, int device) {
  const std::vector<float> a = {1, 2, 3}, b = {4, 5, 6};
  auto x = client.buffer_from_host(a.data(), ElementType::F32, {3}, device);
  auto y = client.buffer_from_host(b.data(), ElementType::F32, {3}, device);
  auto out = exe.execute({x.get(), y.get()}, device);
  std::vector<float> host(3);
  out.at(0)->to_host(host.data(), host.size() * sizeof(float));
  return host;
}

TEST(Serialize, RoundTripRunsTheSameProgramOnEveryDevice) {
  auto client = make_client();
  auto exe = client->compile(kMul);
  const std::string bytes = exe->serialize();
  ASSERT_FALSE(bytes.empty());
  auto loaded = client->deserialize(bytes);
  EXPECT_EQ(loaded->num_outputs(), 1u);
  for (int device = 0; device < client->device_count(); ++device) {
    EXPECT_EQ(run(*client, *loaded, device), (std::vector<float>{4, 10, 18}));
  }
}

TEST(Serialize, CorruptOrTruncatedBytesThrow) {
  auto client = make_client();
  const std::string bytes = client->compile(kMul)->serialize();
  EXPECT_THROW(client->deserialize(""), std::invalid_argument);
  EXPECT_THROW(client->deserialize(bytes.substr(0, bytes.size() / 2)), PjrtError);
  EXPECT_THROW(client->deserialize(std::string(64, '\x7f')), PjrtError);
}

}  // namespace
}  // namespace torch_pjrt::runtime
