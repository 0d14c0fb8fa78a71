// libFuzzer target on the StableHLO builder's validation (scripts/fuzz_builder.sh): the input
// bytes decode into a sequence of Builder calls with arbitrary element types, dims, dimension
// numbers and op names on values the builder made. Each call must either succeed or throw
// std::invalid_argument, and emit() on what was built must succeed; any other exception, a crash
// or a sanitizer report is a finding.
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "hlo/builder.h"

namespace {

using torch_pjrt::hlo::Builder;
using torch_pjrt::hlo::Cmp;
using torch_pjrt::hlo::ElementType;
using torch_pjrt::hlo::ReduceKind;
using torch_pjrt::hlo::TensorType;
using torch_pjrt::hlo::Value;

constexpr int kElementTypes = 19;  // Bool .. F8E4M3FNUZ
const char* const kBinary[] = {"add",   "subtract", "multiply",   "divide", "maximum",
                               "power", "and",      "shift_left", "atan2",  "no_such_op"};
const char* const kUnary[] = {"negate", "abs",  "exponential", "sqrt",
                              "not",    "real", "is_finite",   "no_such_op"};

// Reads the fuzzer's bytes; zeros once they run out.
class Input {
 public:
  Input(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  bool empty() const { return size_ == 0; }
  uint8_t byte() {
    if (size_ == 0) return 0;
    --size_;
    return *data_++;
  }
  int64_t small() { return static_cast<int64_t>(byte() % 10) - 2; }  // -2..7: bad ones too
  std::vector<int64_t> list() {
    std::vector<int64_t> v(byte() % 5);
    for (int64_t& x : v) x = small();
    return v;
  }
  ElementType type() { return static_cast<ElementType>(byte() % kElementTypes); }
  TensorType tensor_type() {
    TensorType t{type(), {}};
    for (int64_t d : list()) t.dims.push_back(d < 0 ? d : d % 4);  // small shapes
    return t;
  }

 private:
  const uint8_t* data_;
  size_t size_;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Input in(data, size);
  Builder b;
  std::vector<Value> values;
  auto pick = [&]() { return values[in.byte() % values.size()]; };
  while (!in.empty() && values.size() < 64) {
    try {
      const int call = values.empty() ? 0 : in.byte() % 16;
      switch (call) {
        case 0:
          values.push_back(b.parameter(in.tensor_type()));
          break;
        case 1:
          values.push_back(b.splat(static_cast<double>(in.small()) / 2, in.tensor_type()));
          break;
        case 2:
          values.push_back(b.constant_int(in.small(), in.type()));
          break;
        case 3:
          values.push_back(b.iota(in.tensor_type(), in.small()));
          break;
        case 4:
          values.push_back(b.binary(kBinary[in.byte() % 10], pick(), pick()));
          break;
        case 5:
          values.push_back(b.unary(kUnary[in.byte() % 8], pick()));
          break;
        case 6:
          values.push_back(b.compare(static_cast<Cmp>(in.byte() % 6), pick(), pick()));
          break;
        case 7:
          values.push_back(b.select(pick(), pick(), pick()));
          break;
        case 8:
          values.push_back(b.convert(pick(), in.type()));
          break;
        case 9:
          values.push_back(b.bitcast_convert(pick(), in.type()));
          break;
        case 10:
          values.push_back(b.reshape(pick(), in.list()));
          break;
        case 11:
          values.push_back(b.broadcast_in_dim(pick(), in.list(), in.list()));
          break;
        case 12:
          values.push_back(b.transpose(pick(), in.list()));
          break;
        case 13:
          values.push_back(b.slice(pick(), in.list(), in.list(), in.list()));
          break;
        case 14:
          values.push_back(b.concatenate({pick(), pick()}, in.small()));
          break;
        case 15:
          values.push_back(
              b.reduce(pick(), pick(), in.list(), static_cast<ReduceKind>(in.byte() % 7)));
          break;
      }
    } catch (const std::invalid_argument&) {
      // The validation refused the call: what it is for.
    }
  }
  if (!values.empty()) {
    const std::string text = b.emit({values.back()});
    if (text.find("func.func public @main") == std::string::npos) __builtin_trap();
  }
  return 0;
}
