// The deferred-op graph's vocabulary: operations (from lowering/), nodes, and array values that are
// either pending (a node's output) or materialized (a PJRT buffer).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "hlo/builder.h"
#include "runtime/buffer.h"

namespace torch_pjrt::graph {

// Compile-time parameters of one operation; part of the structural cache key.
struct Attrs {
  std::vector<int64_t> ints;
  std::vector<double> floats;
};

// One entry of the lowering table: emits StableHLO for an operation given its operands' values.
struct OpDef {
  using EmitFn = std::vector<hlo::Value> (*)(hlo::Builder& b, const std::vector<hlo::Value>& inputs,
                                             const Attrs& attrs,
                                             const std::vector<hlo::TensorType>& out_types);
  const char* name;
  EmitFn emit;
};

struct Node;
struct Check;  // graph/checks.h
// The device checks a value was computed under: shared by every value that inherits the same
// ones (an op's outputs, and ops whose inputs carry one list), so most ops allocate none. Null
// when there are none.
using CheckList = std::shared_ptr<const std::vector<std::shared_ptr<Check>>>;

// An array value on one device. Pending while `producer` is set; materialized once `buffer` is;
// failed (holding the error of the program that should have computed it) once `error` is.
struct Data {
  hlo::TensorType type;
  int device = 0;
  std::shared_ptr<runtime::Buffer> buffer;
  std::shared_ptr<Node> producer;
  int output_index = 0;
  std::shared_ptr<const std::string> error;
  bool out_of_memory = false;  // the error is the device running out of memory
  // Device checks this value was computed under that were unread or failed when it was recorded
  // (graph/checks.h).
  CheckList checks;

  bool pending() const { return producer != nullptr; }
};
using DataPtr = std::shared_ptr<Data>;

struct Node {
  const OpDef* op;
  Attrs attrs;
  std::vector<DataPtr> inputs;
  std::vector<hlo::TensorType> out_types;
};

// The contents of one device storage (what a tensor's DataPtr context refers to). `data` holds the
// storage's bytes in row-major order as an array of any shape whose byte size is `nbytes`; it is
// null until first written. In-place updates rebind `data`, so every view of the storage sees them.
struct Slot {
  int device = 0;
  int64_t nbytes = 0;
  DataPtr data;
};
using SlotPtr = std::shared_ptr<Slot>;

}  // namespace torch_pjrt::graph
