// Collecting, keying and lowering the pending subgraph behind a set of target values.
#include "graph/subgraph.h"

#include <optional>
#include <stdexcept>
#include <unordered_map>
#include <unordered_set>

#include "graph/program_key.h"

namespace torch_pjrt::graph {

namespace {
std::vector<hlo::Value> never_emitted(hlo::Builder&, const std::vector<hlo::Value>&, const Attrs&,
                                      const std::vector<hlo::TensorType>&) {
  throw std::logic_error("host_scalar is lowered from its pack");
}

bool is_float_scalar(const Node* n) { return !n->attrs.floats.empty(); }
}  // namespace

const OpDef kHostScalar{"host_scalar", never_emitted};

Subgraph collect(const std::vector<DataPtr>& targets) {
  Subgraph g;
  // Iterative post-order DFS: fused graphs can be long chains. The stack keeps its capacity.
  thread_local std::vector<std::pair<Node*, size_t>> stack;
  stack.clear();
  g.nodes.reserve(8);  // an eager op's program has a few of each
  g.leaves.reserve(8);
  auto visit_input = [&](const DataPtr& d) {
    if (!d->pending()) {
      if (g.leaf_index.emplace(d.get(), static_cast<int>(g.leaves.size()))) {
        g.leaves.push_back(d);
      }
      return;
    }
    Node* n = d->producer.get();
    if (!g.node_index.count(n)) stack.emplace_back(n, 0);
  };
  for (const DataPtr& t : targets) {
    visit_input(t);
    while (!stack.empty()) {
      auto& [node, next] = stack.back();
      if (g.node_index.count(node)) {
        stack.pop_back();
        continue;
      }
      if (next < node->inputs.size()) {
        visit_input(node->inputs[next++]);
        continue;
      }
      g.node_index.emplace(node, static_cast<int>(g.nodes.size()));
      g.nodes.push_back(node);
      if (node->op == &kHostScalar) {
        (is_float_scalar(node) ? g.float_scalars : g.int_scalars).push_back(node);
      }
      stack.pop_back();
    }
  }
  return g;
}

std::vector<int> donations(const Subgraph& g, const std::vector<DataPtr>& targets) {
  std::vector<int> donated(g.leaves.size(), -1);
  // References from the subgraph's nodes per leaf, then per target whether a leaf was donated to
  // it: one allocation.
  std::vector<long> counts(g.leaves.size() + targets.size(), 0);
  long* uses = counts.data();
  long* taken = counts.data() + g.leaves.size();
  for (const Node* n : g.nodes) {
    for (const DataPtr& in : n->inputs)
      if (!in->pending()) uses[g.leaf_index.at(in.get())]++;
  }
  for (size_t i = 0; i < g.leaves.size(); ++i) {
    const DataPtr& leaf = g.leaves[i];
    // Held by the nodes and by g.leaves, by nothing else (no slot, no other node, no caller).
    if (leaf.use_count() != uses[i] + 1 || leaf->buffer.use_count() != 1) continue;
    for (size_t t = 0; t < targets.size(); ++t) {
      if (!taken[t] && targets[t]->type == leaf->type) {
        taken[t] = 1;
        donated[i] = static_cast<int>(t);
        break;
      }
    }
  }
  return donated;
}

std::string structural_key(const Subgraph& g, const std::vector<DataPtr>& targets,
                           const std::vector<int>& donated, Scalars scalars) {
  std::string key;
  append_structural_key(g, targets, donated, key, scalars);
  return key;
}

void append_structural_key(const Subgraph& g, const std::vector<DataPtr>& targets,
                           const std::vector<int>& donated, std::string& bytes, Scalars scalars) {
  ProgramKey key(bytes);
  key.add_int(static_cast<int64_t>(g.leaves.size()));
  for (size_t i = 0; i < g.leaves.size(); ++i) {
    key.add_type(g.leaves[i]->type);
    key.add_int(donated[i]);
  }
  for (const Node* n : g.nodes) {
    key.add_pointer(n->op);
    if (n->op == &kHostScalar && scalars == Scalars::kPacked) {
      key.add_int(is_float_scalar(n));
    } else {
      key.add_attrs(n->attrs);
    }
    key.add_int(static_cast<int64_t>(n->inputs.size()));
    for (const DataPtr& in : n->inputs) {
      if (in->pending()) {
        key.add_int(g.node_index.at(in->producer.get()));
        key.add_int(in->output_index);
      } else {
        key.add_int(-1 - g.leaf_index.at(in.get()));
      }
    }
    key.add_int(static_cast<int64_t>(n->out_types.size()));
    for (const auto& t : n->out_types) key.add_type(t);
  }
  for (const DataPtr& t : targets) {
    key.add_int(g.node_index.at(t->producer.get()));
    key.add_int(t->output_index);
  }
}

std::string lower(const Subgraph& g, const std::vector<DataPtr>& targets,
                  const std::vector<int>& donated, Scalars scalars) {
  hlo::Builder b;
  std::vector<hlo::Value> leaf_values;
  for (size_t i = 0; i < g.leaves.size(); ++i) {
    leaf_values.push_back(b.parameter(g.leaves[i]->type));
    if (donated[i] >= 0) b.alias(static_cast<int>(i), donated[i]);
  }
  // Host scalar k of a kind is element k of that kind's pack (or an f64/i64 constant), converted to
  // the node's type.
  std::unordered_map<const Node*, hlo::Value> scalar_values;
  auto unpack = [&](const std::vector<Node*>& nodes, hlo::ElementType pack_type) {
    if (nodes.empty()) return;
    const int64_t n = static_cast<int64_t>(nodes.size());
    std::optional<hlo::Value> pack;
    if (scalars == Scalars::kPacked) pack = b.parameter(hlo::TensorType{pack_type, {n}});
    for (int64_t k = 0; k < n; ++k) {
      const Attrs& a = nodes[k]->attrs;
      hlo::Value v = pack ? b.reshape(b.slice(*pack, {k}, {k + 1}, {1}), {})
                     : pack_type == hlo::ElementType::F64 ? b.constant_float(a.floats[0], pack_type)
                                                          : b.constant_int(a.ints[0], pack_type);
      scalar_values.emplace(nodes[k], b.convert(v, nodes[k]->out_types[0].dtype));
    }
  };
  unpack(g.float_scalars, hlo::ElementType::F64);
  unpack(g.int_scalars, hlo::ElementType::I64);

  std::vector<std::vector<hlo::Value>> node_values(g.nodes.size());
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node* n = g.nodes[i];
    if (n->op == &kHostScalar) {
      node_values[i] = {scalar_values.at(n)};
      continue;
    }
    std::vector<hlo::Value> inputs;
    for (const DataPtr& in : n->inputs) {
      inputs.push_back(in->pending()
                           ? node_values[g.node_index.at(in->producer.get())][in->output_index]
                           : leaf_values[g.leaf_index.at(in.get())]);
    }
    node_values[i] = n->op->emit(b, inputs, n->attrs, n->out_types);
    if (node_values[i].size() != n->out_types.size()) {
      throw std::logic_error(std::string("lowering of ") + n->op->name + " returned " +
                             std::to_string(node_values[i].size()) + " values, expected " +
                             std::to_string(n->out_types.size()));
    }
    for (size_t k = 0; k < n->out_types.size(); ++k) {
      if (!(node_values[i][k].type == n->out_types[k])) {
        throw std::logic_error(std::string("lowering of ") + n->op->name + " produced " +
                               node_values[i][k].type.str() + ", expected " +
                               n->out_types[k].str());
      }
    }
  }
  std::vector<hlo::Value> results;
  for (const DataPtr& t : targets) {
    results.push_back(node_values[g.node_index.at(t->producer.get())][t->output_index]);
  }
  return b.emit(results);
}

std::vector<double> float_pack(const Subgraph& g) {
  std::vector<double> pack;
  for (const Node* n : g.float_scalars) pack.push_back(n->attrs.floats[0]);
  return pack;
}

std::vector<int64_t> int_pack(const Subgraph& g) {
  std::vector<int64_t> pack;
  for (const Node* n : g.int_scalars) pack.push_back(n->attrs.ints[0]);
  return pack;
}

std::string op_names(const Subgraph& g) {
  std::unordered_set<const OpDef*> seen;
  std::string names;
  for (const Node* n : g.nodes) {
    if (n->op == &kHostScalar || !seen.insert(n->op).second) continue;
    if (!names.empty()) names += ", ";
    names += n->op->name;
  }
  return names;
}

}  // namespace torch_pjrt::graph
