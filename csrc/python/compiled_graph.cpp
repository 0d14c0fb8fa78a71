// Compiled graphs for torch.compile(backend="tpu"). A _TraceSession runs an FX graph's ATen ops on
// the real "tpu" inputs while finish_op() defers and trace mode is on, so the graph is only
// recorded. finish() classifies every argument of the resulting program (a graph input's storage,
// a random op's (seed, offset) operand to re-draw per call, or a captured constant; host scalars
// are constants in the program's text) and every output (a view of a program result, of an input,
// or of a constant), and returns a _CompiledGraph. Its first_run() launches the program with the
// traced arguments; run() launches it on new inputs with no per-op work. Anything that cannot be
// replayed faithfully is reported as a reason string, and Python then runs the graph eagerly
// instead.
#include "python/compiled_graph.h"

#include <pybind11/stl.h>
#include <torch/csrc/autograd/python_variable.h>
#include <torch/csrc/utils/pybind.h>

#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <variant>

#include "aten/tensor_bridge.h"
#include "aten/trace.h"
#include "device/allocator.h"
#include "device/generator.h"
#include "device/runtime_state.h"
#include "graph/checks.h"
#include "graph/subgraph.h"
#include "runtime/executable.h"
#include "runtime/metrics.h"

namespace torch_pjrt::python {
namespace py = pybind11;
namespace {

const graph::SlotPtr& slot_of(const at::Tensor& t) {
  return device::slot_of(t.storage().data_ptr());
}

// The "tpu" tensor at `h`, or nullopt for anything else (CPU tensors, ints, None).
std::optional<at::Tensor> tpu_tensor(const py::handle& h) {
  if (!THPVariable_Check(h.ptr())) return std::nullopt;
  const at::Tensor& t = THPVariable_Unpack(h.ptr());
  if (!t.defined() || !t.is_privateuseone()) return std::nullopt;
  return t;
}

at::Tensor input_tensor(const py::list& inputs, int j) {
  auto t = tpu_tensor(inputs[j]);
  TORCH_CHECK(t.has_value(), "torch_pjrt compiled graph: input ", j, " is no longer a tpu tensor");
  return *t;
}

enum class Source { Input, Random, Constant, Output };

struct Arg {
  Source kind;
  int input = -1;
  hlo::TensorType type;
  int64_t words = 0;
  std::shared_ptr<runtime::Buffer> buffer;
};

struct Storage {
  Source kind;
  int index = -1;  // program output (Output) or graph input (Input)
  std::shared_ptr<runtime::Buffer> buffer;
  at::ScalarType dtype;
};

struct Output {
  int storage = -1;  // index into storages, or
  int input = -1;    // a view of this graph input's storage
  std::vector<int64_t> sizes, strides;
  int64_t offset = 0;
  at::ScalarType dtype;  // may differ from the storage's (a dtype view)
};

class CompiledGraph {
 public:
  std::string key;
  int device = 0;
  std::vector<Arg> args;
  std::vector<Storage> storages;
  std::vector<Output> outputs;
  std::vector<std::pair<int, int>> mutations;  // (graph input, program output)
  // Per program leaf, the output it is donated to (its input's new value) or -1: an input the
  // graph updates in place is written in place. Each call donates the old buffer only when nothing
  // else holds it (see donatable()).
  std::vector<int> donated;
  // The device checks the program computes (their errors and offsets), in program output
  // check_output; each call registers them anew on its own output.
  std::vector<graph::CheckPtr> checks;
  int check_output = -1;
  size_t num_program_outputs = 0;
  size_t num_random = 0;
  // Trace-time state, dropped by first_run().
  std::optional<graph::Subgraph> g;
  std::vector<graph::DataPtr> targets;
  std::vector<std::shared_ptr<runtime::Buffer>> trace_arguments;
  std::shared_ptr<runtime::Executable> exe;

  std::string stablehlo() const {
    TORCH_CHECK(g.has_value(), "torch_pjrt compiled graph: the trace has already been released");
    return graph::lower(*g, targets, donated, graph::Scalars::kConstant);
  }

  // Launches the program on the traced arguments; the traced output tensors receive the results.
  void first_run(std::shared_ptr<runtime::Executable> executable) {
    TORCH_CHECK(g.has_value(), "torch_pjrt compiled graph: first_run called twice");
    exe = std::move(executable);
    if (num_program_outputs > 0) {
      TORCH_CHECK(exe && exe->num_outputs() == num_program_outputs,
                  "torch_pjrt compiled graph: the executable has ", exe ? exe->num_outputs() : 0,
                  " outputs, expected ", num_program_outputs);
      std::vector<const runtime::Buffer*> argv;
      for (const auto& b : trace_arguments) argv.push_back(b.get());
      // The traced inputs' old values are still held by the trace: nothing is donated.
      std::vector<int64_t> keep;
      for (size_t i = 0; i < donated.size(); ++i)
        if (donated[i] >= 0) keep.push_back(static_cast<int64_t>(i));
      auto outs = exe->execute(argv, device, keep);
      for (size_t i = 0; i < targets.size(); ++i) {
        targets[i]->buffer = std::move(outs[i]);
        targets[i]->producer.reset();
      }
    }
    // The traced results already depend on the traced checks, which are now computed.
    graph::register_checks(checks);
    g.reset();
    targets.clear();
    trace_arguments.clear();
  }

  std::vector<at::Tensor> run(const py::list& inputs) {
    TORCH_CHECK(!g.has_value(), "torch_pjrt compiled graph: run before first_run");
    std::vector<std::shared_ptr<runtime::Buffer>> outs;
    // The results depend on the unread checks of the inputs (as record() would make them) and on
    // this call's own checks.
    std::vector<graph::CheckPtr> call_checks;
    {
      std::vector<graph::DataPtr> input_values;
      for (const Arg& a : args) {
        if (a.kind != Source::Input) continue;
        const graph::DataPtr& data = slot_of(input_tensor(inputs, a.input))->data;
        if (data) input_values.push_back(data);
      }
      if (const graph::CheckList inherited = graph::inherited_checks(input_values))
        call_checks = *inherited;
    }
    if (num_program_outputs > 0) {
      std::vector<std::shared_ptr<runtime::Buffer>> holders;
      holders.reserve(args.size());
      for (const Arg& a : args) holders.push_back(argument(a, inputs));
      std::vector<const runtime::Buffer*> argv;
      for (const auto& b : holders) argv.push_back(b.get());
      std::vector<int64_t> keep;
      for (size_t i = 0; i < donated.size(); ++i) {
        if (donated[i] >= 0 && !donatable(args[i], holders[i], inputs)) {
          keep.push_back(static_cast<int64_t>(i));
        }
      }
      outs = exe->execute(argv, device, keep);
    }
    if (check_output >= 0) {
      graph::DataPtr computed = graph::from_buffer(outs[check_output]);
      for (const auto& c : checks) call_checks.push_back(graph::add_check_like(*c, computed));
    }
    // Every result shares one list of them.
    const graph::CheckList call_list =
        call_checks.empty()
            ? nullptr
            : std::make_shared<const std::vector<graph::CheckPtr>>(std::move(call_checks));
    auto result = [&](int k) {
      graph::DataPtr value = graph::from_buffer(outs[k]);
      value->checks = call_list;
      return value;
    };
    for (const auto& [j, k] : mutations) {
      graph::bind_slot(device::writable_slot(input_tensor(inputs, j).storage()), result(k));
    }
    std::vector<at::Tensor> bases;
    for (const Storage& s : storages) {
      graph::DataPtr value;
      if (s.kind == Source::Output) {
        value = result(s.index);
      } else if (s.kind == Source::Input) {
        value = graph::from_buffer(graph::buffer_of(slot_of(input_tensor(inputs, s.index))->data));
      } else {
        value = graph::from_buffer(s.buffer);
      }
      bases.push_back(aten::make_tensor(std::move(value), s.dtype, device));
    }
    std::vector<at::Tensor> results;
    for (const Output& o : outputs) {
      const at::Tensor base = o.input >= 0 ? input_tensor(inputs, o.input) : bases[o.storage];
      if (base.scalar_type() != o.dtype) {  // the storage's bytes seen as another dtype
        results.push_back(at::empty({0}, base.options().dtype(o.dtype))
                              .set_(base.storage(), o.offset, o.sizes, o.strides));
        continue;
      }
      const bool whole = o.input < 0 && o.offset == 0 && base.sizes().equals(o.sizes) &&
                         base.strides().equals(o.strides);
      results.push_back(whole ? base : base.as_strided(o.sizes, o.strides, o.offset));
    }
    return results;
  }

 private:
  // Whether input leaf `a`'s old buffer, `held` for this call, may be donated: only its storage's
  // slot holds the value and only that value (and `held`) holds the buffer, so no pending work,
  // other tensor or saved value reads it after the call rebinds the slot to the result.
  bool donatable(const Arg& a, const std::shared_ptr<runtime::Buffer>& held,
                 const py::list& inputs) const {
    const graph::DataPtr& data = slot_of(input_tensor(inputs, a.input))->data;
    return data.use_count() == 1 && data->buffer == held && held.use_count() == 2;
  }

  std::shared_ptr<runtime::Buffer> argument(const Arg& a, const py::list& inputs) const {
    if (a.kind == Source::Constant) return a.buffer;
    if (a.kind == Source::Random) {
      auto* gen = at::check_generator<device::Generator>(
          device::default_generator(static_cast<c10::DeviceIndex>(device)));
      int64_t state[2];
      aten::trace::draw_random_state(gen, a.words, state);
      return graph::client().buffer_from_host(state, hlo::ElementType::I64, {2}, device);
    }
    const at::Tensor t = input_tensor(inputs, a.input);
    const graph::SlotPtr& slot = slot_of(t);
    TORCH_CHECK(slot->data, "torch_pjrt compiled graph: input ", a.input, " was never written");
    if (slot->data->type == a.type) return graph::buffer_of(slot->data);
    // The storage holds its bytes as an array of another shape or element type: view it as the
    // traced one.
    at::Tensor flat = at::empty({0}, t.options().dtype(aten::scalar_type(a.type.dtype)))
                          .set_(t.storage(), 0, a.type.dims);
    return graph::buffer_of(aten::read(flat));
  }
};

class TraceSession {
 public:
  explicit TraceSession(const py::list& inputs) {
    for (const auto& h : inputs) {
      if (auto t = tpu_tensor(h)) aten::adopt_dtype(*t);
    }
    graph::materialize();
    for (const auto& h : inputs) {
      auto t = tpu_tensor(h);
      before_.push_back(t ? slot_of(*t)->data : nullptr);
    }
    executions_ = runtime::counters().executions.load();
    check_marker_ = graph::check_marker();
    one_op_ = std::make_unique<aten::OneOp>();
    aten::trace::begin();
  }
  TraceSession(const TraceSession&) = delete;
  TraceSession& operator=(const TraceSession&) = delete;
  ~TraceSession() { close(); }

  void close() {
    if (!one_op_) return;
    randoms_ = aten::trace::end();
    one_op_.reset();
  }

  // A _CompiledGraph, or a string saying why the graph cannot be replayed.
  py::object finish(const py::list& inputs, const std::vector<at::Tensor>& outs, int device) {
    close();
    auto r = build(inputs, outs, device);
    if (auto* reason = std::get_if<std::string>(&r)) return py::str(*reason);
    return py::cast(std::get<std::shared_ptr<CompiledGraph>>(r));
  }

 private:
  std::variant<std::string, std::shared_ptr<CompiledGraph>> build(
      const py::list& inputs, const std::vector<at::Tensor>& outs, int device) {
    if (runtime::counters().executions.load() != executions_) {
      return std::string(
          "the graph reads device values on the host while it runs (a data-dependent op such as "
          "nonzero, masked_select, boolean indexing or .item())");
    }
    std::unordered_map<const graph::Data*, int64_t> random_words;
    for (const auto& r : randoms_) {
      if (!r.default_generator) return std::string("a random op uses an explicit generator");
      random_words[r.leaf.get()] = r.words;
    }
    auto cg = std::make_shared<CompiledGraph>();
    cg->device = device;
    std::unordered_map<const graph::Slot*, int> input_of_slot;
    std::unordered_map<const graph::Data*, int> input_of_data;
    std::unordered_set<int> mutated;
    std::unordered_map<const graph::Data*, int> target_index;
    auto add_target = [&](const graph::DataPtr& d) {
      auto [it, added] = target_index.emplace(d.get(), static_cast<int>(cg->targets.size()));
      if (added) cg->targets.push_back(d);
      return it->second;
    };
    for (int j = 0; j < static_cast<int>(before_.size()); ++j) {
      auto t = tpu_tensor(inputs[j]);
      if (!t) continue;
      if (!before_[j]) return "input " + std::to_string(j) + " was never written";
      if (t->device().index() != device) return std::string("inputs are on several devices");
      const graph::SlotPtr& slot = slot_of(*t);
      if (!input_of_slot.emplace(slot.get(), j).second) continue;  // an alias of an earlier input
      input_of_data.emplace(before_[j].get(), j);
      if (slot->data == before_[j]) continue;
      if (!slot->data || !slot->data->pending()) {
        return "input " + std::to_string(j) + " is rebound to an existing value";
      }
      mutated.insert(j);
      cg->mutations.emplace_back(j, add_target(slot->data));
    }
    std::unordered_map<const graph::Slot*, int> storage_of_slot;
    for (const at::Tensor& out : outs) {
      if (!out.is_privateuseone() || out.device().index() != device) {
        return std::string("an output is not a tensor on the graph's device");
      }
      Output o;
      o.sizes = out.sizes().vec();
      o.strides = out.strides().vec();
      o.offset = out.storage_offset();
      o.dtype = out.scalar_type();
      const graph::SlotPtr& slot = slot_of(out);
      if (auto it = input_of_slot.find(slot.get()); it != input_of_slot.end()) {
        o.input = it->second;
        cg->outputs.push_back(std::move(o));
        continue;
      }
      auto [it, added] = storage_of_slot.emplace(slot.get(), static_cast<int>(cg->storages.size()));
      o.storage = it->second;
      if (added) {
        const graph::DataPtr& d = slot->data;
        if (!d) return std::string("an output's storage was never written");
        if (d->error) return "an output failed: " + *d->error;
        if (d->device != device) return std::string("an output is on another device");
        Storage s{Source::Constant, -1, nullptr, aten::scalar_type(d->type.dtype)};
        if (d->pending()) {
          s.kind = Source::Output;
          s.index = add_target(d);
        } else if (auto in = input_of_data.find(d.get()); in != input_of_data.end()) {
          if (mutated.count(in->second)) return std::string("an output holds an input's old value");
          s.kind = Source::Input;
          s.index = in->second;
        } else if (random_words.count(d.get())) {
          return std::string("an output is a random op's state");
        } else {
          s.buffer = d->buffer;
        }
        cg->storages.push_back(std::move(s));
      }
      cg->outputs.push_back(std::move(o));
    }
    // The device checks recorded while tracing become an output of the program.
    cg->checks = graph::take_checks_since(check_marker_);
    auto give_back = [&](std::string reason) {  // the graph runs eagerly: so do its checks
      graph::register_checks(cg->checks);
      return reason;
    };
    if (!cg->checks.empty()) {
      for (const auto& c : cg->checks) {
        if (c->value->device != device) return give_back("the graph spans several devices");
      }
      cg->check_output = add_target(graph::combine_checks(cg->checks));
    }
    cg->num_program_outputs = cg->targets.size();
    if (cg->targets.empty()) {
      cg->g.emplace();
      return cg;
    }
    for (const graph::DataPtr& t : cg->targets) {
      if (t->device != device) return give_back("the graph spans several devices");
    }
    cg->g.emplace(graph::collect(cg->targets));
    const graph::Subgraph& g = *cg->g;
    for (const graph::DataPtr& leaf : g.leaves) {
      if (leaf->error) return give_back("a captured value failed: " + *leaf->error);
      if (leaf->device != device) return give_back("the graph spans several devices");
      Arg a{Source::Constant, -1, leaf->type, 0, leaf->buffer};
      if (auto in = input_of_data.find(leaf.get()); in != input_of_data.end()) {
        a.kind = Source::Input;
        a.input = in->second;
        a.buffer = nullptr;
      } else if (auto r = random_words.find(leaf.get()); r != random_words.end()) {
        a.kind = Source::Random;
        a.words = r->second;
        a.buffer = nullptr;
        cg->num_random++;
      }
      cg->trace_arguments.push_back(leaf->buffer);
      cg->args.push_back(std::move(a));
    }
    cg->donated = donations(*cg, g);
    // The graph's host scalars are fixed: constants in the program, and so in its key.
    cg->key = graph::structural_key(g, cg->targets, cg->donated, graph::Scalars::kConstant);
    return cg;
  }

  // Per leaf of `g`, the program output a mutated input's old value is donated to, or -1. Plugins
  // before PJRT API 0.39 cannot be told not to donate, so they get no aliases.
  static std::vector<int> donations(const CompiledGraph& cg, const graph::Subgraph& g) {
    std::vector<int> donated(g.leaves.size(), -1);
    if (graph::client().plugin().api_minor() < 39) return donated;
    std::unordered_map<int, int> new_value;  // graph input -> program output
    for (const auto& [j, k] : cg.mutations) new_value.emplace(j, k);
    std::unordered_set<int> taken;
    for (size_t i = 0; i < g.leaves.size(); ++i) {
      const Arg& a = cg.args[i];
      if (a.kind != Source::Input) continue;
      auto it = new_value.find(a.input);
      if (it == new_value.end() || !(g.leaves[i]->type == cg.targets[it->second]->type)) continue;
      if (taken.insert(it->second).second) donated[i] = it->second;
    }
    return donated;
  }

  std::unique_ptr<aten::OneOp> one_op_;
  std::vector<graph::DataPtr> before_;
  std::vector<aten::trace::RandomOperand> randoms_;
  int64_t executions_ = 0;
  uint64_t check_marker_ = 0;
};

// `with _FusedScope():` records everything inside as one program, launched on a normal exit.
class FusedScope {
 public:
  void enter() { one_op_ = std::make_unique<aten::OneOp>(); }
  void exit(bool ok) {
    if (!one_op_) return;
    auto scope = std::move(one_op_);
    if (ok) scope->finish();
  }

 private:
  std::unique_ptr<aten::OneOp> one_op_;
};

// `with _OpHostReads():` copies to the host inside are a graph's own (its CPU outputs), counted
// as host round trips.
class OpHostReads {
 public:
  void enter() { scope_.emplace(false); }
  void exit() { scope_.reset(); }

 private:
  std::optional<aten::HostReadScope> scope_;
};

}  // namespace

void register_compiled_graph(py::module_& m) {
  py::class_<runtime::Executable, std::shared_ptr<runtime::Executable>>(m, "_Executable")
      .def_property_readonly("num_outputs", &runtime::Executable::num_outputs)
      .def_property("name", &runtime::Executable::name, &runtime::Executable::set_name)
      .def("serialize", [](const runtime::Executable& e) { return py::bytes(e.serialize()); });
  // Both use the current compile options (graph::compile_options), as eager programs do.
  m.def("_compile_stablehlo", [](const std::string& text) {
    return graph::client().compile(text, graph::compile_options());
  });
  m.def("_load_executable", [](const py::bytes& bytes) {
    return graph::client().deserialize(std::string(bytes), graph::compile_options());
  });

  py::class_<CompiledGraph, std::shared_ptr<CompiledGraph>>(m, "_CompiledGraph")
      .def_property_readonly("key", [](const CompiledGraph& g) { return py::bytes(g.key); })
      .def_property_readonly("num_program_outputs",
                             [](const CompiledGraph& g) { return g.num_program_outputs; })
      .def_property_readonly("num_random", [](const CompiledGraph& g) { return g.num_random; })
      .def_property_readonly("num_arguments", [](const CompiledGraph& g) { return g.args.size(); })
      .def_property_readonly("mutated_inputs",
                             [](const CompiledGraph& g) {
                               std::vector<int> inputs;
                               for (const auto& [j, k] : g.mutations) inputs.push_back(j);
                               return inputs;
                             })
      .def("stablehlo", &CompiledGraph::stablehlo)
      .def("first_run", &CompiledGraph::first_run, py::arg("executable").none(true))
      .def("run", &CompiledGraph::run);

  py::class_<TraceSession>(m, "_TraceSession")
      .def(py::init<const py::list&>())
      .def("close", &TraceSession::close)
      .def("finish", &TraceSession::finish, py::arg("inputs"), py::arg("outputs"),
           py::arg("device"));

  py::class_<OpHostReads>(m, "_OpHostReads")
      .def(py::init<>())
      .def("__enter__", [](OpHostReads& s) { s.enter(); })
      .def("__exit__", [](OpHostReads& s, const py::object&, const py::object&, const py::object&) {
        s.exit();
      });

  py::class_<FusedScope>(m, "_FusedScope")
      .def(py::init<>())
      .def("__enter__", [](FusedScope& s) { s.enter(); })
      .def("__exit__", [](FusedScope& s, const py::object& type, const py::object&,
                          const py::object&) { s.exit(type.is_none()); });
}

}  // namespace torch_pjrt::python
