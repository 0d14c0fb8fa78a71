// Tests of CompileOptions: its protobuf bytes, and that a plugin compiles with overrides and
// effort levels and rejects an unknown override by name.
#include "runtime/compile_options.h"

#include <gtest/gtest.h>

#include <stdexcept>

#include "runtime/error.h"
#include "test_support.h"

namespace torch_pjrt::runtime {
namespace {

std::string bytes(std::initializer_list<int> values) {
  std::string s;
  for (int v : values) s.push_back(static_cast<char>(v));
  return s;
}

TEST(CompileOptions, DefaultIsOneReplicaOnePartitionPortable) {
  EXPECT_EQ(CompileOptions{}.serialize(), bytes({0x1a, 0x04, 0x20, 0x01, 0x28, 0x01, 0x20, 0x01}));
}

TEST(CompileOptions, OverridesAndEffortLevels) {
  CompileOptions o;
  o.overrides["b"] = true;
  o.overrides["a"] = int64_t{300};
  o.optimization_level = effort_level("O1");
  const std::string s = o.serialize();
  // Build options gain optimization_level (field 24 = tag 0xc0 0x01) = 19.
  EXPECT_EQ(s.substr(0, 11),
            bytes({0x1a, 0x07, 0x20, 0x01, 0x28, 0x01, 0xc0, 0x01, 0x13, 0x20, 0x01}));
  // Map entries in name order: {key "a", value {int_field 300}} then {key "b", {bool_field 1}}.
  EXPECT_EQ(s.substr(11), bytes({0x3a, 0x08, 0x0a, 0x01, 'a', 0x12, 0x03, 0x18, 0xac, 0x02,  //
                                 0x3a, 0x07, 0x0a, 0x01, 'b', 0x12, 0x02, 0x10, 0x01}));
  CompileOptions d;
  d.overrides["x"] = 0.5;  // double_field = 4, fixed64 little-endian
  EXPECT_EQ(d.serialize().substr(8),
            bytes({0x3a, 0x0e, 0x0a, 0x01, 'x', 0x12, 0x09, 0x21, 0, 0, 0, 0, 0, 0, 0xe0, 0x3f}));
}

TEST(CompileOptions, EffortLevelNames) {
  EXPECT_EQ(effort_level("O0"), 9);
  EXPECT_EQ(effort_level("O3"), 39);
  EXPECT_THROW(effort_level("O4"), std::invalid_argument);
}

TEST(CompileOptions, PluginCompilesWithThemAndRejectsUnknownNames) {
  auto client = testing::cpu_client();
  const std::string add = testing::add_program(3, /*donate=*/false);
  CompileOptions o;
  o.overrides["xla_allow_excess_precision"] = false;
  o.optimization_level = effort_level("O1");
  EXPECT_EQ(client->compile(add, o)->num_outputs(), 1u);
  CompileOptions bad;
  bad.overrides["xla_no_such_option"] = true;
  try {
    client->compile(add, bad);
    ADD_FAILURE() << "an unknown option compiled";
  } catch (const PjrtError& e) {
    EXPECT_NE(std::string(e.what()).find("xla_no_such_option"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace torch_pjrt::runtime
