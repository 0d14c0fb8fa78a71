// The pending subgraph behind some target values: collected in topological order, keyed
// structurally, lowered to StableHLO. Host scalars inside it become runtime arguments, or
// constants.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "graph/index_map.h"
#include "graph/node.h"

namespace torch_pjrt::graph {

// The operation of host-scalar nodes (graph::host_scalar). Its value is in attrs but not in the
// structural key: the program reads it from a packed argument, so a new value never recompiles.
extern const OpDef kHostScalar;

// How a program gets its host scalars: from packed arguments (eager programs, whose scalars change
// between launches: an optimizer's step size), or as constants in its text (a compiled graph's,
// fixed when it was traced), which XLA folds: pow(x, 2) becomes x * x, a multiply by 1 goes away.
enum class Scalars { kPacked, kConstant };

struct Subgraph {
  std::vector<Node*> nodes;                       // topological order
  std::vector<DataPtr> leaves;                    // materialized inputs, in first-use order
  std::vector<Node*> float_scalars, int_scalars;  // host-scalar nodes, by pack position
  IndexMap<Node> node_index;
  IndexMap<Data> leaf_index;
};

Subgraph collect(const std::vector<DataPtr>& targets);

// Per leaf, the target it is donated to, or -1. A leaf is donated when nothing but this subgraph
// holds it or its buffer (its old value is dead once the program ran) and a target of the same
// type is free to take its buffer. Only valid when every live pending value is a target (a full
// materialization), or a value left pending could still need the leaf.
std::vector<int> donations(const Subgraph& g, const std::vector<DataPtr>& targets);

// Op identities, attributes (host-scalar values only when they are constants), wiring, leaf and
// output types and donations.
std::string structural_key(const Subgraph& g, const std::vector<DataPtr>& targets,
                           const std::vector<int>& donated, Scalars scalars = Scalars::kPacked);
// The same key appended to `key`, whose capacity a caller keying every launch reuses.
void append_structural_key(const Subgraph& g, const std::vector<DataPtr>& targets,
                           const std::vector<int>& donated, std::string& key,
                           Scalars scalars = Scalars::kPacked);

// StableHLO text of @main(leaves..., [f64 pack], [i64 pack]) -> targets (no packs when the scalars
// are constants), leaf i donated to target donated[i] where that is not -1.
std::string lower(const Subgraph& g, const std::vector<DataPtr>& targets,
                  const std::vector<int>& donated, Scalars scalars = Scalars::kPacked);

// Host scalars of the subgraph packed as the program expects them: float values as f64 and
// integer values as i64, each empty when the subgraph has none of that kind.
std::vector<double> float_pack(const Subgraph& g);
std::vector<int64_t> int_pack(const Subgraph& g);

// Names of the ops in a subgraph, each once, for error messages.
std::string op_names(const Subgraph& g);

}  // namespace torch_pjrt::graph
