// CompileOptions: a minimal protobuf encoder for the few CompileOptionsProto fields we send
// (field numbers from xla/pjrt/proto/compile_options.proto).
#include "compile_options.h"

#include <cstring>
#include <stdexcept>

namespace torch_pjrt::runtime {
namespace {

enum WireType { kVarint = 0, kFixed64 = 1, kLengthDelimited = 2 };

void varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

void tag(std::string& out, int field, WireType type) {
  varint(out, (static_cast<uint64_t>(field) << 3) | type);
}

void int_field(std::string& out, int field, int64_t v) {
  tag(out, field, kVarint);
  varint(out, static_cast<uint64_t>(v));
}

void bytes_field(std::string& out, int field, const std::string& bytes) {
  tag(out, field, kLengthDelimited);
  varint(out, bytes.size());
  out += bytes;
}

// xla.OptionOverrideProto: oneof string_field = 1, bool_field = 2, int_field = 3,
// double_field = 4.
std::string option_override(const CompileOptions::Value& value) {
  std::string out;
  if (const auto* s = std::get_if<std::string>(&value)) {
    bytes_field(out, 1, *s);
  } else if (const auto* b = std::get_if<bool>(&value)) {
    int_field(out, 2, *b ? 1 : 0);
  } else if (const auto* i = std::get_if<int64_t>(&value)) {
    int_field(out, 3, *i);
  } else {
    const double d = std::get<double>(value);
    uint64_t bits;
    std::memcpy(&bits, &d, sizeof bits);
    tag(out, 4, kFixed64);
    for (int k = 0; k < 8; ++k) out.push_back(static_cast<char>((bits >> (8 * k)) & 0xff));
  }
  return out;
}

// xla.DeviceAssignmentProto for one computation (partition): replica_count = 1,
// computation_count = 2, computation_devices = 3 { replica_device_ids = 1 (packed) }.
std::string device_assignment(const std::vector<int64_t>& devices) {
  std::string ids;
  for (int64_t id : devices) varint(ids, static_cast<uint64_t>(id));
  std::string computation;
  bytes_field(computation, 1, ids);
  std::string out;
  int_field(out, 1, static_cast<int64_t>(devices.size()));
  int_field(out, 2, 1);
  bytes_field(out, 3, computation);
  return out;
}

}  // namespace

std::string CompileOptions::serialize() const {
  // ExecutableBuildOptionsProto: num_replicas = 4, num_partitions = 5, device_assignment = 9,
  // optimization_level = 24, memory_fitting_level = 25.
  const bool replicated = !replica_devices.empty();
  std::string build;
  int_field(build, 4, replicated ? static_cast<int64_t>(replica_devices.size()) : 1);
  int_field(build, 5, 1);
  if (replicated) bytes_field(build, 9, device_assignment(replica_devices));
  if (optimization_level != 0) int_field(build, 24, optimization_level);
  if (memory_fitting_level != 0) int_field(build, 25, memory_fitting_level);
  // CompileOptionsProto: executable_build_options = 3, compile_portable_executable = 4,
  // env_option_overrides = 7 (a map: entries with key = 1, value = 2), in name order.
  std::string out;
  bytes_field(out, 3, build);
  if (!replicated) int_field(out, 4, 1);
  for (const auto& [name, value] : overrides) {
    std::string entry;
    bytes_field(entry, 1, name);
    bytes_field(entry, 2, option_override(value));
    bytes_field(out, 7, entry);
  }
  return out;
}

int effort_level(const std::string& name) {
  static const std::map<std::string, int> kLevels{{"O0", 9}, {"O1", 19}, {"O2", 29}, {"O3", 39}};
  auto it = kLevels.find(name);
  if (it == kLevels.end()) {
    throw std::invalid_argument("unknown XLA effort level \"" + name +
                                "\": expected one of O0, O1, O2, O3");
  }
  return it->second;
}

}  // namespace torch_pjrt::runtime
