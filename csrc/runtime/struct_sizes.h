// Argument structs whose size grew after the PJRT header this project builds with, and the size to
// send to a given plugin. A plugin rejects a struct_size smaller than the one it was built with
// ("Unexpected <struct> size: expected N, got M") and reads defaults from a zeroed tail when the
// caller's struct is larger than its own, so each call sends a zero-padded struct sized for the
// plugin's version.
#pragma once

#include <pjrt_c_api.h>

#include <cstddef>
#include <new>
#include <optional>
#include <string>

namespace torch_pjrt::runtime {

enum class GrownStruct {
  kExecuteOptions,
  kDeserializeAndLoadArgs,
  kCompiledMemoryStatsArgs,
  kDeviceMemoryStatsArgs,
};
constexpr int kGrownStructCount = 4;

struct GrownStructInfo {
  const char* name;    // as plugins spell it in their size errors
  size_t header_size;  // STRUCT_SIZE in the header we build with
  size_t known_size;   // the largest size we know a plugin may require
  int known_minor;     // the PJRT API minor version `known_size` was taken from
};

const GrownStructInfo& grown_struct_info(GrownStruct s);

// The struct_size to send to a plugin of API minor version `plugin_minor`: the header's size for
// plugins no newer than the header, at least `known_size` for newer ones.
size_t initial_struct_size(GrownStruct s, int plugin_minor);

// Every argument struct is sent in a buffer this large, so a size learnt from a plugin's error
// message (a plugin newer than anything in the table) still fits.
constexpr size_t kPaddedStructCapacity = 512;

// A zero-initialized T at the start of a kPaddedStructCapacity-byte zeroed buffer.
template <typename T>
class Padded {
  static_assert(sizeof(T) <= kPaddedStructCapacity, "struct larger than the padded capacity");

 public:
  explicit Padded(size_t struct_size) {
    value_ = new (storage_) T{};
    value_->struct_size = struct_size;
  }
  Padded(const Padded&) = delete;
  Padded& operator=(const Padded&) = delete;
  T* get() { return value_; }
  T* operator->() { return value_; }

 private:
  alignas(std::max_align_t) unsigned char storage_[kPaddedStructCapacity] = {};
  T* value_;
};

// A plugin's rejection of a struct size, parsed from its error message.
struct SizeRejection {
  std::string struct_name;
  size_t expected;
};
std::optional<SizeRejection> parse_size_rejection(const std::string& message);

}  // namespace torch_pjrt::runtime
