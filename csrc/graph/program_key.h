// Structural cache keys: a compact byte string describing a subgraph, built without StableHLO text.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>

#include "graph/node.h"

namespace torch_pjrt::graph {

class ProgramKey {
 public:
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
  std::string take() { return std::move(bytes_); }

 private:
  void append(const void* p, size_t n) { bytes_.append(static_cast<const char*>(p), n); }
  std::string bytes_;
};

}  // namespace torch_pjrt::graph
