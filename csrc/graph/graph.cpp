// Deferred graph: recording, pending-slot tracking and materialization through the program cache.
#include "graph/graph.h"

#include <algorithm>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <unordered_map>

#include "graph/program_key.h"
#include "runtime/executable.h"
#include "runtime/metrics.h"

namespace torch_pjrt::graph {
namespace {

struct State {
  std::recursive_mutex mutex;
  std::shared_ptr<runtime::Client> client;
  std::vector<std::weak_ptr<Slot>> dirty_slots;
  std::unordered_map<std::string, std::shared_ptr<runtime::Executable>> programs;
  // Outputs of programs launched since the last synchronize(); awaiting them waits for the work.
  std::vector<std::weak_ptr<runtime::Buffer>> in_flight;
  size_t in_flight_live = 0;  // entries left after the last pruning
};

// Never destroyed: tensors freed during interpreter shutdown may still reach it.
State& state() {
  static State* s = new State;
  return *s;
}

// The pending subgraph reachable from some targets, in topological order.
struct Subgraph {
  std::vector<Node*> nodes;
  std::vector<DataPtr> leaves;
  std::unordered_map<const Node*, int> node_index;
  std::unordered_map<const Data*, int> leaf_index;
};

Subgraph collect(const std::vector<DataPtr>& targets) {
  Subgraph g;
  // Iterative post-order DFS: fused graphs can be long chains.
  std::vector<std::pair<Node*, size_t>> stack;
  auto visit_input = [&](const DataPtr& d) {
    if (!d->pending()) {
      if (g.leaf_index.emplace(d.get(), static_cast<int>(g.leaves.size())).second) {
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
      stack.pop_back();
    }
  }
  return g;
}

std::string structural_key(const Subgraph& g, const std::vector<DataPtr>& targets) {
  ProgramKey key;
  key.add_int(static_cast<int64_t>(g.leaves.size()));
  for (const DataPtr& leaf : g.leaves) key.add_type(leaf->type);
  for (const Node* n : g.nodes) {
    key.add_pointer(n->op);
    key.add_attrs(n->attrs);
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
  return key.take();
}

std::string lower(const Subgraph& g, const std::vector<DataPtr>& targets) {
  hlo::Builder b;
  std::vector<hlo::Value> leaf_values;
  for (const DataPtr& leaf : g.leaves) leaf_values.push_back(b.parameter(leaf->type));
  std::vector<std::vector<hlo::Value>> node_values(g.nodes.size());
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node* n = g.nodes[i];
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

// Names of the ops in a subgraph, for error messages.
std::string op_names(const Subgraph& g) {
  std::string names;
  for (const Node* n : g.nodes) {
    if (names.find(n->op->name) != std::string::npos) continue;
    if (!names.empty()) names += ", ";
    names += n->op->name;
  }
  return names;
}

void run(const std::vector<DataPtr>& targets, int device) {
  State& s = state();
  Subgraph g = collect(targets);
  std::string key = structural_key(g, targets);
  std::shared_ptr<runtime::Executable> exe;
  auto it = s.programs.find(key);
  if (it != s.programs.end()) {
    exe = it->second;
    runtime::counters().cache_hits++;
  } else {
    std::string text;
    try {
      text = lower(g, targets);
      exe = client().compile(text);
    } catch (const std::exception& e) {
      throw std::runtime_error("torch_pjrt: compiling the program for [" + op_names(g) +
                               "] failed: " + e.what());
    }
    s.programs.emplace(std::move(key), exe);
  }
  std::vector<const runtime::Buffer*> args;
  args.reserve(g.leaves.size());
  for (const DataPtr& leaf : g.leaves) args.push_back(leaf->buffer.get());
  auto outputs = exe->execute(args, device);
  // Forget outputs already freed, amortized, so loops that never synchronize stay bounded.
  if (s.in_flight.size() >= 2 * s.in_flight_live + 64) {
    s.in_flight.erase(std::remove_if(s.in_flight.begin(), s.in_flight.end(),
                                     [](const auto& w) { return w.expired(); }),
                      s.in_flight.end());
    s.in_flight_live = s.in_flight.size();
  }
  for (size_t i = 0; i < targets.size(); ++i) {
    s.in_flight.push_back(outputs[i]);
    targets[i]->buffer = std::move(outputs[i]);
    targets[i]->producer.reset();
  }
}

}  // namespace

void set_client(std::shared_ptr<runtime::Client> c) {
  std::lock_guard<std::recursive_mutex> lock(state().mutex);
  state().client = std::move(c);
}

runtime::Client& client() {
  if (!state().client) throw std::runtime_error("torch_pjrt: no PJRT client has been created");
  return *state().client;
}

DataPtr from_buffer(std::shared_ptr<runtime::Buffer> buffer) {
  auto d = std::make_shared<Data>();
  d->type = hlo::TensorType{buffer->element_type(), buffer->dims()};
  d->device = buffer->device();
  d->buffer = std::move(buffer);
  return d;
}

std::vector<DataPtr> record(const OpDef& op, std::vector<DataPtr> inputs, Attrs attrs,
                            std::vector<hlo::TensorType> out_types, int device) {
  for (const DataPtr& in : inputs) {
    if (in->device != device) {
      throw std::invalid_argument(std::string(op.name) + ": operand on device " +
                                  std::to_string(in->device) + ", expected " +
                                  std::to_string(device));
    }
  }
  auto node =
      std::make_shared<Node>(Node{&op, std::move(attrs), std::move(inputs), std::move(out_types)});
  std::vector<DataPtr> outs;
  for (size_t i = 0; i < node->out_types.size(); ++i) {
    auto d = std::make_shared<Data>();
    d->type = node->out_types[i];
    d->device = device;
    d->producer = node;
    d->output_index = static_cast<int>(i);
    outs.push_back(std::move(d));
  }
  return outs;
}

DataPtr record1(const OpDef& op, std::vector<DataPtr> inputs, Attrs attrs, hlo::TensorType out_type,
                int device) {
  return record(op, std::move(inputs), std::move(attrs), {std::move(out_type)}, device)[0];
}

void bind_slot(const SlotPtr& slot, DataPtr data) {
  std::lock_guard<std::recursive_mutex> lock(state().mutex);
  slot->data = std::move(data);
  if (slot->data && slot->data->pending()) state().dirty_slots.push_back(slot);
}

void materialize(const std::vector<DataPtr>& values) {
  State& s = state();
  std::lock_guard<std::recursive_mutex> lock(s.mutex);
  std::vector<DataPtr> targets;
  std::unordered_map<const Data*, bool> seen;
  auto add = [&](const DataPtr& d) {
    if (d && d->pending() && seen.emplace(d.get(), true).second) targets.push_back(d);
  };
  for (const DataPtr& v : values) add(v);
  std::vector<std::weak_ptr<Slot>> slots;
  slots.swap(s.dirty_slots);
  for (const auto& weak : slots) {
    if (SlotPtr slot = weak.lock()) add(slot->data);
  }
  // One program per device, in the order the devices first appear.
  while (!targets.empty()) {
    int device = targets.front()->device;
    std::vector<DataPtr> mine, rest;
    for (DataPtr& t : targets) (t->device == device ? mine : rest).push_back(std::move(t));
    try {
      run(mine, device);
    } catch (...) {
      // The failed program's values stay pending (reading them raises again); slots waiting on
      // other devices' programs stay listed for the next materialization.
      for (const auto& weak : slots) {
        SlotPtr slot = weak.lock();
        if (slot && slot->data && slot->data->pending() && slot->data->device != device) {
          s.dirty_slots.push_back(slot);
        }
      }
      throw;
    }
    targets = std::move(rest);
  }
}

void synchronize() {
  std::vector<std::weak_ptr<runtime::Buffer>> launched;
  {
    std::lock_guard<std::recursive_mutex> lock(state().mutex);
    materialize();
    launched.swap(state().in_flight);
    state().in_flight_live = 0;
  }
  for (const auto& weak : launched) {
    if (auto buffer = weak.lock()) buffer->await_ready();
  }
}

size_t cached_programs() {
  std::lock_guard<std::recursive_mutex> lock(state().mutex);
  return state().programs.size();
}

}  // namespace torch_pjrt::graph
