// The pending subgraph behind some target values: collected in topological order, keyed
// structurally, lowered to StableHLO. Host scalars inside it become runtime arguments.
#pragma once

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "graph/node.h"

namespace torch_pjrt::graph {

// The operation of host-scalar nodes (graph::host_scalar). Its value is in attrs but not in the
// structural key: the program reads it from a packed argument, so a new value never recompiles.
extern const OpDef kHostScalar;

struct Subgraph {
  std::vector<Node*> nodes;                       // topological order
  std::vector<DataPtr> leaves;                    // materialized inputs, in first-use order
  std::vector<Node*> float_scalars, int_scalars;  // host-scalar nodes, by pack position
  std::unordered_map<const Node*, int> node_index;
  std::unordered_map<const Data*, int> leaf_index;
};

Subgraph collect(const std::vector<DataPtr>& targets);

// Op identities, attributes (host-scalar values excepted), wiring, leaf and output types.
std::string structural_key(const Subgraph& g, const std::vector<DataPtr>& targets);

// StableHLO text of @main(leaves..., [f64 pack], [i64 pack]) -> targets.
std::string lower(const Subgraph& g, const std::vector<DataPtr>& targets);

// Host scalars of the subgraph packed as the program expects them: float values as f64 and
// integer values as i64, each empty when the subgraph has none of that kind.
std::vector<double> float_pack(const Subgraph& g);
std::vector<int64_t> int_pack(const Subgraph& g);

// Names of the ops in a subgraph, each once, for error messages.
std::string op_names(const Subgraph& g);

}  // namespace torch_pjrt::graph
