// Deferred graph: recording, pending-slot tracking and materialization through the program cache.
#include "graph/graph.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <stdexcept>
#include <unordered_map>
#include <utility>

#include "graph/checks.h"
#include "graph/fusion.h"
#include "graph/program_cache.h"
#include "graph/subgraph.h"
#include "runtime/error.h"
#include "runtime/metrics.h"
#include "runtime/program_disk_cache.h"

namespace torch_pjrt::graph {
namespace {

struct State {
  std::recursive_mutex mutex;
  std::shared_ptr<runtime::Client> client;
  std::vector<std::weak_ptr<Slot>> dirty_slots;
  ProgramCache programs{1024};  // TORCH_PJRT_PROGRAM_CACHE_SIZE
  // Uploaded host-scalar packs by content, so constant scalars are uploaded once.
  std::unordered_map<std::string, std::shared_ptr<runtime::Buffer>> packs;
  // Outputs of programs launched since the last synchronize(); awaiting them waits for the work.
  std::vector<std::weak_ptr<runtime::Buffer>> in_flight;
  size_t in_flight_live = 0;  // entries left after the last pruning
  FusionPolicy fusion{4096};
  runtime::CompileOptions compile_options;
  std::string compile_options_key = runtime::CompileOptions{}.serialize();
  std::string key;  // the key prepare() looks up, kept for its capacity
  // The last program prepare() returned: its StableHLO and op names (introspection).
  std::shared_ptr<const std::string> last_text;
  std::string last_ops;
  int64_t misses = 0;  // programs prepare() did not find in the cache
  // Where dump_program() writes ("": nowhere); TORCH_PJRT_DUMP_DIR, or set_dump_dir().
  std::string dump_dir = [] {
    const char* dir = std::getenv("TORCH_PJRT_DUMP_DIR");
    return std::string(dir ? dir : "");
  }();
};

// Signature of the nodes this thread recorded since its last op boundary (what an op did, for the
// fusion policy): op identities, attributes except host-scalar values, and output types.
thread_local uint64_t recorded_signature = 0;

void add_to_signature(const Node& n) {
  uint64_t h = recorded_signature ^ reinterpret_cast<uintptr_t>(n.op);
  auto mix = [&h](uint64_t v) { h = (h ^ v) * 0x100000001b3ull; };
  mix(0x9e3779b97f4a7c15ull);
  if (n.op != &kHostScalar) {
    for (int64_t v : n.attrs.ints) mix(static_cast<uint64_t>(v));
    for (double v : n.attrs.floats) {
      uint64_t bits;
      std::memcpy(&bits, &v, sizeof bits);
      mix(bits);
    }
  }
  for (const auto& t : n.out_types) {
    mix(static_cast<uint64_t>(t.dtype));
    for (int64_t d : t.dims) mix(static_cast<uint64_t>(d));
  }
  recorded_signature = h;
}

// Never destroyed: tensors freed during interpreter shutdown may still reach it.
State& state() {
  static State* s = new State;
  return *s;
}

template <typename T>
std::shared_ptr<runtime::Buffer> upload_pack(const std::vector<T>& values, hlo::ElementType type,
                                             int device) {
  State& s = state();
  std::string key(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T));
  key.append(reinterpret_cast<const char*>(&device), sizeof device);
  key.push_back(static_cast<char>(type));
  auto it = s.packs.find(key);
  if (it != s.packs.end()) return it->second;
  if (s.packs.size() >= 1024) s.packs.clear();  // packs of changing values must not pile up
  auto buffer =
      client().buffer_from_host(values.data(), type, {static_cast<int64_t>(values.size())}, device);
  buffer->mark_cache();
  s.packs.emplace(std::move(key), buffer);
  return buffer;
}

// A program's name in profiles: the names of its operations, shortened for long fused programs.
std::string program_name(const Subgraph& g, const std::string& ops) {
  constexpr size_t kMax = 120;
  if (ops.size() <= kMax) return ops;
  const size_t cut = ops.rfind(", ", kMax);
  const size_t n = g.nodes.size() - g.float_scalars.size() - g.int_scalars.size();
  return ops.substr(0, cut) + ", ... (" + std::to_string(n) + " ops)";
}

void default_out_of_memory_raiser(const std::string& message) { throw OutOfMemory(message); }
std::atomic<OutOfMemoryRaiser> out_of_memory_raiser{&default_out_of_memory_raiser};

// A failure leaving the library: out of memory through the installed raiser.
[[noreturn]] void raise_outward(const std::string& message, bool out_of_memory) {
  if (out_of_memory) out_of_memory_raiser.load()(message);
  throw std::runtime_error(message);
}

// The plugin's out of memory, as it comes (RESOURCE_EXHAUSTED) or wrapped by run().
bool is_out_of_memory(const std::exception& e) {
  if (dynamic_cast<const OutOfMemory*>(&e)) return true;
  const auto* pjrt = dynamic_cast<const runtime::PjrtError*>(&e);
  return pjrt && pjrt->code() == PJRT_Error_Code_RESOURCE_EXHAUSTED;
}

// Inside the library, out of memory stays OutOfMemory so that launch() can tell it apart.
[[noreturn]] void raise_failed(const Data& d) {
  if (d.out_of_memory) throw OutOfMemory(*d.error);
  throw std::runtime_error(*d.error);
}

// The dump directory: every newly compiled eager program's StableHLO, numbered in compile order,
// with the names of its ops in the first line. Called with the state's lock held.
void dump_program(const std::string& text, const std::string& ops) {
  static int count = 0;
  const std::string& dir = state().dump_dir;
  if (dir.empty()) return;
  std::ofstream out(dir + "/eager-" + std::to_string(count++) + ".mlir");
  out << "// ops: " << ops << "\n" << text;
}

void run(const std::vector<DataPtr>& targets, int device, bool donate) {
  State& s = state();
  Program p = prepare(targets, device, donate);
  std::vector<const runtime::Buffer*> args;
  args.reserve(p.arguments.size());
  for (const auto& a : p.arguments) args.push_back(a.get());
  std::vector<std::shared_ptr<runtime::Buffer>> outputs;
  try {
    outputs = p.executable->execute(args, device);
  } catch (const std::exception& e) {
    std::string message = "torch_pjrt: running the program for [" + p.ops + "] failed: " + e.what();
    if (is_out_of_memory(e)) throw OutOfMemory(message);
    throw std::runtime_error(message);
  }
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

DataPtr make_host_scalar(Attrs value, hlo::ElementType type, int device) {
  return record1(kHostScalar, {}, std::move(value), hlo::TensorType{type, {}}, device);
}

// Runs the programs computing the pending ones of `values`: one per device, in the order the
// devices first appear. When a program fails, its values are computed one by one and only those
// whose own program fails are failed (with its error); other devices' programs still run, and
// the first error is raised at the end.
void launch(const std::vector<DataPtr>& values, bool donate) {
  std::vector<DataPtr> targets;
  targets.reserve(values.size());
  IndexMap<Data> seen;
  for (const DataPtr& d : values) {
    if (d && d->pending() && seen.emplace(d.get(), 0)) targets.push_back(d);
  }
  std::exception_ptr first_error;
  while (!targets.empty()) {
    int device = targets.front()->device;
    std::vector<DataPtr> mine, rest;
    if (std::all_of(targets.begin(), targets.end(),
                    [device](const DataPtr& t) { return t->device == device; })) {
      mine.swap(targets);
    } else {
      for (DataPtr& t : targets) (t->device == device ? mine : rest).push_back(std::move(t));
    }
    try {
      run(mine, device, donate);
    } catch (const std::exception& failure) {
      if (!first_error) first_error = std::current_exception();
      const bool out_of_memory = is_out_of_memory(failure);
      // Salvage what does not depend on the failure: each value alone, failing only those whose
      // own program fails. Their error is the batch's: run alone, a value may only find that the
      // failed program had consumed its donated inputs, which would hide the cause.
      const auto cause = std::make_shared<const std::string>(failure.what());
      for (const DataPtr& t : mine) {
        if (!t->pending()) continue;
        try {
          run({t}, device, /*donate=*/false);
        } catch (const std::exception&) {
          t->error = cause;
          t->out_of_memory = out_of_memory;
          t->producer.reset();
        }
      }
    }
    targets = std::move(rest);
  }
  if (!first_error) return;
  try {
    std::rethrow_exception(first_error);
  } catch (const std::exception& e) {
    if (is_out_of_memory(e)) raise_outward(e.what(), true);
    throw;
  }
}

}  // namespace

void set_out_of_memory_raiser(OutOfMemoryRaiser raiser) { out_of_memory_raiser.store(raiser); }

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

namespace {

// The checks of record()'s `inputs` that its outputs depend on, after checking that the inputs
// are on `device` and usable.
CheckList checked_inputs(const OpDef& op, const std::vector<DataPtr>& inputs, int device) {
  for (const DataPtr& in : inputs) {
    if (in->device != device) {
      throw std::invalid_argument(std::string(op.name) + ": operand on device " +
                                  std::to_string(in->device) + ", expected " +
                                  std::to_string(device));
    }
    if (in->error) raise_outward(*in->error, in->out_of_memory);
  }
  return inherited_checks(inputs);
}

std::shared_ptr<Node> new_node(const OpDef& op, std::vector<DataPtr> inputs, Attrs attrs,
                               std::vector<hlo::TensorType> out_types) {
  auto node =
      std::make_shared<Node>(Node{&op, std::move(attrs), std::move(inputs), std::move(out_types)});
  add_to_signature(*node);
  return node;
}

DataPtr output(const std::shared_ptr<Node>& node, size_t i, int device, CheckList checks) {
  auto d = std::make_shared<Data>();
  d->type = node->out_types[i];
  d->device = device;
  d->producer = node;
  d->output_index = static_cast<int>(i);
  d->checks = std::move(checks);
  return d;
}

}  // namespace

std::vector<DataPtr> record(const OpDef& op, std::vector<DataPtr> inputs, Attrs attrs,
                            std::vector<hlo::TensorType> out_types, int device) {
  const CheckList checks = checked_inputs(op, inputs, device);
  const auto node = new_node(op, std::move(inputs), std::move(attrs), std::move(out_types));
  std::vector<DataPtr> outs;
  outs.reserve(node->out_types.size());
  for (size_t i = 0; i < node->out_types.size(); ++i)
    outs.push_back(output(node, i, device, checks));
  return outs;
}

DataPtr record1(const OpDef& op, std::vector<DataPtr> inputs, Attrs attrs, hlo::TensorType out_type,
                int device) {
  CheckList checks = checked_inputs(op, inputs, device);
  std::vector<hlo::TensorType> out_types;
  out_types.push_back(std::move(out_type));
  const auto node = new_node(op, std::move(inputs), std::move(attrs), std::move(out_types));
  return output(node, 0, device, std::move(checks));
}

DataPtr host_scalar(double value, hlo::ElementType type, int device) {
  Attrs a;
  a.floats = {value};
  return make_host_scalar(std::move(a), type, device);
}

DataPtr host_scalar(int64_t value, hlo::ElementType type, int device) {
  Attrs a;
  a.ints = {value};
  return make_host_scalar(std::move(a), type, device);
}

void bind_slot(const SlotPtr& slot, DataPtr data) {
  std::lock_guard<std::recursive_mutex> lock(state().mutex);
  slot->data = std::move(data);
  if (slot->data && slot->data->pending()) state().dirty_slots.push_back(slot);
}

Program prepare(const std::vector<DataPtr>& targets, int device, bool donate) {
  State& s = state();
  std::lock_guard<std::recursive_mutex> lock(s.mutex);
  Subgraph g = collect(targets);
  for (const DataPtr& leaf : g.leaves) {
    if (leaf->error) raise_failed(*leaf);
  }
  Program p;
  const std::vector<int> donated =
      donate ? donations(g, targets) : std::vector<int>(g.leaves.size(), -1);
  s.key.clear();
  append_structural_key(g, targets, donated, s.key);
  s.key += '\0';
  s.key += s.compile_options_key;
  if (const CachedProgram* cached = s.programs.find(s.key)) {
    p.executable = cached->executable;
    p.ops = cached->ops;
    s.last_text = cached->text;
    runtime::counters().cache_hits++;
  } else {
    std::string key = std::move(s.key);  // misses are rare: s.key grows again
    p.ops = op_names(g);
    s.misses++;
    std::shared_ptr<const std::string> text_ptr;
    try {
      text_ptr = std::make_shared<const std::string>(lower(g, targets, donated));
      const std::string& text = *text_ptr;
      const auto disk =
          runtime::ProgramDiskCache::from_environment(client(), s.compile_options_key);
      if (disk.enabled()) p.executable = disk.load(client(), text, s.compile_options);
      if (!p.executable) {
        dump_program(text, p.ops);
        p.executable = client().compile(text, s.compile_options);
        if (disk.enabled()) disk.store(text, *p.executable);
      }
      p.executable->set_name(program_name(g, p.ops));
    } catch (const std::exception& e) {
      throw std::runtime_error("torch_pjrt: compiling the program for [" + p.ops +
                               "] failed: " + e.what());
    }
    runtime::counters().program_evictions +=
        s.programs.insert(std::move(key), CachedProgram{p.executable, p.ops, text_ptr});
    s.last_text = std::move(text_ptr);
  }
  s.last_ops = p.ops;
  p.leaves = std::move(g.leaves);
  p.arguments.reserve(p.leaves.size() + 2);
  for (const DataPtr& leaf : p.leaves) p.arguments.push_back(leaf->buffer);
  if (!g.float_scalars.empty()) {
    p.arguments.push_back(upload_pack(float_pack(g), hlo::ElementType::F64, device));
  }
  if (!g.int_scalars.empty()) {
    p.arguments.push_back(upload_pack(int_pack(g), hlo::ElementType::I64, device));
  }
  return p;
}

void materialize(const std::vector<DataPtr>& values) {
  State& s = state();
  std::lock_guard<std::recursive_mutex> lock(s.mutex);
  s.fusion.segment_done();
  std::vector<DataPtr> targets;
  targets.reserve(values.size() + s.dirty_slots.size());
  targets.insert(targets.end(), values.begin(), values.end());
  for (const auto& weak : s.dirty_slots) {
    if (SlotPtr slot = weak.lock()) targets.push_back(slot->data);
  }
  s.dirty_slots.clear();  // keeps its capacity for the next ops
  read_if_many();         // earlier programs' checks, before this launch adds more
  // The checks' values are outputs too; recording their combination is not part of an op.
  const uint64_t signature = recorded_signature;
  add_check_targets(targets);
  recorded_signature = signature;
  launch(targets, /*donate=*/true);  // every live pending value is a target
}

void compute(const std::vector<DataPtr>& values) {
  std::lock_guard<std::recursive_mutex> lock(state().mutex);
  launch(values, /*donate=*/false);
}

std::string program_text(const std::vector<DataPtr>& values) {
  std::lock_guard<std::recursive_mutex> lock(state().mutex);
  std::vector<DataPtr> pending;
  for (const DataPtr& v : values) {
    if (v->pending()) pending.push_back(v);
  }
  if (pending.empty()) return "";  // computed already: no program
  const Subgraph g = collect(pending);
  return lower(g, pending, std::vector<int>(g.leaves.size(), -1));
}

void set_compile_options(runtime::CompileOptions options) {
  State& s = state();
  std::lock_guard<std::recursive_mutex> lock(s.mutex);
  s.compile_options_key = options.serialize();
  s.compile_options = std::move(options);
}

runtime::CompileOptions compile_options() {
  std::lock_guard<std::recursive_mutex> lock(state().mutex);
  return state().compile_options;
}

void op_boundary() {
  const uint64_t signature = std::exchange(recorded_signature, 0);
  if (signature == 0) return;  // the op only read or reshaped metadata
  std::lock_guard<std::recursive_mutex> lock(state().mutex);
  if (state().fusion.after_op(signature)) materialize();
}

void set_fusion_max_ops(size_t max_ops) {
  std::lock_guard<std::recursive_mutex> lock(state().mutex);
  state().fusion.set_max_ops(max_ops);
}

size_t fusion_max_ops() {
  std::lock_guard<std::recursive_mutex> lock(state().mutex);
  return state().fusion.max_ops();
}

size_t fusion_segment_ops() {
  std::lock_guard<std::recursive_mutex> lock(state().mutex);
  return state().fusion.segment_ops();
}

std::shared_ptr<runtime::Buffer> buffer_of(const DataPtr& value) {
  if (value->pending()) compute({value});
  if (value->error) raise_outward(*value->error, value->out_of_memory);
  raise_if_failed(*value);
  return value->buffer;
}

std::shared_ptr<runtime::Buffer> host_buffer(const DataPtr& value) {
  std::vector<DataPtr> targets{value};
  const std::vector<CheckPtr>& checks = checks_of(*value);
  for (const CheckPtr& c : checks)
    if (c->state.load() == Check::kUnread) targets.push_back(c->value);
  compute(targets);  // the value and its checks in one program
  resolve(checks);
  return buffer_of(value);
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
  check_point();
}

void release_caches() {
  std::lock_guard<std::recursive_mutex> lock(state().mutex);
  state().packs.clear();
}

std::pair<std::string, std::string> last_program() {
  std::lock_guard<std::recursive_mutex> lock(state().mutex);
  if (!state().last_text) return {};
  return {*state().last_text, state().last_ops};
}

int64_t program_cache_misses() {
  std::lock_guard<std::recursive_mutex> lock(state().mutex);
  return state().misses;
}

void set_dump_dir(const std::string& dir) {
  std::lock_guard<std::recursive_mutex> lock(state().mutex);
  state().dump_dir = dir;
}

std::string dump_dir() {
  std::lock_guard<std::recursive_mutex> lock(state().mutex);
  return state().dump_dir;
}

void clear_program_cache() {
  std::lock_guard<std::recursive_mutex> lock(state().mutex);
  const size_t capacity = state().programs.capacity();
  state().programs.set_capacity(0);
  state().programs.set_capacity(capacity);
}

size_t cached_programs() {
  std::lock_guard<std::recursive_mutex> lock(state().mutex);
  return state().programs.size();
}

void set_program_cache_capacity(size_t capacity) {
  std::lock_guard<std::recursive_mutex> lock(state().mutex);
  runtime::counters().program_evictions += state().programs.set_capacity(capacity);
}

size_t program_cache_capacity() {
  std::lock_guard<std::recursive_mutex> lock(state().mutex);
  return state().programs.capacity();
}

}  // namespace torch_pjrt::graph
