// Structural cache keys: a compact byte string describing a subgraph, built without StableHLO text.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>

#include "graph/node.h"

namespace torch_pjrt::graph {

class ProgramKey {
 public:
  // Appends to `bytes`, at the latest when destroyed: words are gathered in a local buffer, which
  // costs a few instructions each where std::string::append costs dozens.
  explicit ProgramKey(std::string& bytes) : bytes_(bytes) {}
  ProgramKey(const ProgramKey&) = delete;
  ProgramKey& operator=(const ProgramKey&) = delete;
  ~ProgramKey() { flush(); }

  void add_int(int64_t v) { append(&v, sizeof v); }
  void add_pointer(const void* p) { append(&p, sizeof p); }
  void add_type(const hlo::TensorType& t) {
    add_int(static_cast<int64_t>(t.dtype));
    add_int(t.rank());
    for (int64_t d : t.dims) add_int(d);
  }
  void add_attrs(const Attrs& a) {
    add_int(static_cast<int64_t>(a.ints.size()));
    for (int64_t v : a.ints) add_int(v);
    add_int(static_cast<int64_t>(a.floats.size()));
    for (double v : a.floats) append(&v, sizeof v);  // bit pattern: NaN and -0.0 stay distinct
  }

 private:
  void append(const void* p, size_t n) {  // n <= 8
    if (used_ + n > sizeof buffer_) flush();
    std::memcpy(buffer_ + used_, p, n);
    used_ += n;
  }
  void flush() {
    bytes_.append(buffer_, used_);
    used_ = 0;
  }
  std::string& bytes_;
  char buffer_[512];
  size_t used_ = 0;
};

}  // namespace torch_pjrt::graph
