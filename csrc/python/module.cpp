// torch_pjrt._C: configuration, device queries, generators, synchronization and counters.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <torch/csrc/Generator.h>
#include <torch/csrc/utils/pybind.h>

#include "aten/eager_mode.h"
#include "aten/tensor_bridge.h"
#include "device/generator.h"
#include "device/host_allocator.h"
#include "device/marker.h"
#include "device/runtime_state.h"
#include "graph/graph.h"
#include "python/compiled_graph.h"
#include "python/compiler_settings.h"
#include "python/custom_kernel.h"
#include "python/custom_program.h"
#include "python/distributed.h"
#include "python/graph_signature.h"
#include "runtime/fault.h"
#include "runtime/memory.h"
#include "runtime/metrics.h"
#include "runtime/plugin.h"

namespace py = pybind11;
using namespace torch_pjrt;

namespace {

py::dict counters() {
  const auto& c = runtime::counters();
  py::dict d;
  d["compiles"] = c.compiles.load();
  d["cache_hits"] = c.cache_hits.load();
  d["disk_hits"] = c.disk_hits.load();
  d["program_evictions"] = c.program_evictions.load();
  d["executions"] = c.executions.load();
  d["output_buffers"] = c.output_buffers.load();
  d["host_to_device_bytes"] = c.host_to_device_bytes.load();
  d["device_to_host_bytes"] = c.device_to_host_bytes.load();
  d["compile_seconds"] = static_cast<double>(c.compile_nanoseconds.load()) * 1e-9;
  d["host_round_trips"] = c.host_round_trips.load();
  d["check_reads"] = c.check_reads.load();
  d["check_read_bytes"] = c.check_read_bytes.load();
  d["cpu_fallbacks"] = c.fallbacks();
  return d;
}

// An operation whose lowering always fails, for tests of how each eager mode reports errors.
const graph::OpDef kTestFailingOp{
    "test_failing_op",
    [](hlo::Builder&, const std::vector<hlo::Value>&, const graph::Attrs&,
       const std::vector<hlo::TensorType>&) -> std::vector<hlo::Value> {
      throw std::invalid_argument("test_failing_op: this lowering always fails");
    }};

at::Tensor test_failing_op(const at::Tensor& t) {
  const int device = aten::common_device("_test_failing_op", {&t});
  at::Tensor out =
      aten::make_tensor(graph::record1(kTestFailingOp, {aten::read(t)}, {},
                                       aten::tensor_type(t.scalar_type(), t.sizes()), device),
                        t.scalar_type(), device);
  aten::finish_op();
  return out;
}

// (name, value, optional) from torch_pjrt.plugins; the value is a bool, int, float, str or a list
// of ints.
runtime::CreateOption create_option(const py::tuple& option) {
  TORCH_CHECK(option.size() == 3, "create option must be (name, value, optional)");
  runtime::CreateOption out{option[0].cast<std::string>(), int64_t{0}, option[2].cast<bool>()};
  const py::handle value = option[1];
  if (py::isinstance<py::bool_>(value)) {
    out.value = value.cast<bool>();
  } else if (py::isinstance<py::int_>(value)) {
    out.value = value.cast<int64_t>();
  } else if (py::isinstance<py::float_>(value)) {
    out.value = value.cast<float>();
  } else if (py::isinstance<py::str>(value)) {
    out.value = value.cast<std::string>();
  } else {
    out.value = value.cast<std::vector<int64_t>>();
  }
  return out;
}

// What the runtime negotiated with the plugin, for torch_pjrt.info.
py::dict negotiation() {
  const runtime::Client& client = device::client();
  const runtime::Plugin& plugin = client.plugin();
  py::dict d;
  d["header_api"] = py::make_tuple(PJRT_API_MAJOR, PJRT_API_MINOR);
  py::dict sizes;
  for (int i = 0; i < runtime::kGrownStructCount; ++i) {
    const auto s = static_cast<runtime::GrownStruct>(i);
    sizes[runtime::grown_struct_info(s).name] =
        py::make_tuple(plugin.struct_size(s), runtime::grown_struct_info(s).header_size);
  }
  d["struct_sizes"] = sizes;
  py::list extensions;
  for (const auto& ext : plugin.extensions()) {
    extensions.append(py::make_tuple(runtime::extension_name(ext.type), ext.type, ext.struct_size));
  }
  d["extensions"] = extensions;
  py::list sent;
  for (const auto& option : client.options_sent()) sent.append(runtime::describe(option));
  d["options_sent"] = sent;
  d["options_dropped"] = client.options_dropped();
  return d;
}

}  // namespace

PYBIND11_MODULE(_C, m) {
  m.doc() = "torch_pjrt native core";
  m.def(
      "_configure",
      [](const std::string& request, const std::vector<std::string>& dirs, const py::list& opts) {
        std::vector<runtime::CreateOption> options;
        for (const auto& o : opts) options.push_back(create_option(o.cast<py::tuple>()));
        device::configure(request, dirs, options);
      },
      py::arg("plugin"), py::arg("search_dirs"), py::arg("options") = py::list());
  m.def("_find_plugin", &runtime::find_plugin, py::arg("request"), py::arg("search_dirs"));
  m.def("_plugin_kind", &runtime::plugin_kind, py::arg("path"));
  m.def("_negotiation", negotiation);
  m.def("_init", [] { device::client(); });
  m.def("_runtime_started", [] { return device::client_started() && !device::in_bad_fork(); });
  m.def("_device_count", [] { return device::device_count(); });
  m.def("_current_device", [] { return device::current_device(); });
  m.def("_set_device", [](int index) { device::set_current_device(index); });
  m.def("_plugin_path", [] { return device::client().plugin().path(); });
  m.def("_api_version", [] {
    const auto& p = device::client().plugin();
    return py::make_tuple(p.api_major(), p.api_minor());
  });
  m.def("_plugin_attributes", [] { return device::client().plugin().attributes(); });
  m.def("_platform_name", [] { return device::client().platform_name(); });
  m.def("_pinned_dma_mapped", [] { return device::pinned_dma_mapped(); });
  m.def("_platform_version", [] { return device::client().platform_version(); });
  m.def("_device_kind", [](int index) {
    device::check_device_index(index);
    return device::client().device_kind(index);
  });
  m.def("_plugin_memory_stats", [](int index) {
    device::check_device_index(index);
    return runtime::plugin_memory_stats(device::client(), index)
        .value_or(std::map<std::string, int64_t>{});
  });
  m.def("_mem_get_info", [](int index) {
    device::check_device_index(index);
    return runtime::device_memory_info(device::client(), index);
  });
  // torch.Event.elapsed_time accepts only exact torch.Event objects; torch.tpu.Event calls this
  // with the events' event_id (the EventState a recorded event holds, 0 before recording).
  m.def("_event_elapsed_time", [](uintptr_t start, uintptr_t end) {
    return device::elapsed_ms(reinterpret_cast<const device::EventState*>(start),
                              reinterpret_cast<const device::EventState*>(end));
  });
  m.def("_set_configure_hook", [](py::function fn) {
    // Never destroyed: it may run at any first device use, and at exit the interpreter is gone.
    auto* held = new py::function(std::move(fn));
    device::set_configure_hook([held] {
      py::gil_scoped_acquire gil;
      (*held)();
    });
  });
  m.def("_local_rank", [] { return device::local_rank(); });
  m.def("_synchronize", [] {
    py::gil_scoped_release no_gil;
    device::synchronize_all();
  });
  m.def("_default_generator", [](int index) {
    return py::reinterpret_steal<py::object>(THPGenerator_initDefaultGenerator(
        device::default_generator(static_cast<c10::DeviceIndex>(index))));
  });
  m.def("_counters", counters);
  m.def("_reset_counters", [] { runtime::counters().reset(); });
  m.def("_cached_programs", [] { return graph::cached_programs(); });
  m.def("_last_program", [] { return graph::last_program(); });
  m.def("_program_cache_misses", [] { return graph::program_cache_misses(); });
  m.def("_set_dump_dir", [](const std::string& dir) { graph::set_dump_dir(dir); });
  m.def("_dump_dir", [] { return graph::dump_dir(); });
  m.def("_clear_program_cache", [] { graph::clear_program_cache(); });
  m.def("_set_cache_only", [](bool on) { runtime::set_cache_only(on); });
  m.def("_cache_only", [] { return runtime::cache_only(); });
  m.def("_get_eager_mode", [] { return aten::eager_mode_name(aten::eager_mode()); });
  m.def("_get_default_eager_mode",
        [] { return aten::eager_mode_name(aten::default_eager_mode()); });
  m.def("_set_eager_mode", [](const std::string& mode) {
    aten::set_default_eager_mode(aten::parse_eager_mode(mode));
  });
  m.def("_push_eager_mode",
        [](const std::string& mode) { aten::push_eager_mode(aten::parse_eager_mode(mode)); });
  m.def("_pop_eager_mode", [] { aten::pop_eager_mode(); });
  m.def("_launch_pending", [] { graph::materialize(); });
  m.def("_inject_fault", &runtime::arm_fault);  // tests only (runtime/fault.h)
  m.def("_set_fusion_max_ops", [](size_t n) { graph::set_fusion_max_ops(n); });
  m.def("_set_program_cache_capacity", [](size_t n) { graph::set_program_cache_capacity(n); });
  m.def("_program_cache_capacity", [] { return graph::program_cache_capacity(); });
  m.def("_fusion_max_ops", [] { return graph::fusion_max_ops(); });
  m.def("_fusion_segment_ops", [] { return graph::fusion_segment_ops(); });
  m.def("_test_failing_op", test_failing_op);
  m.def("_stablehlo_of", [](const std::vector<at::Tensor>& tensors) {
    std::vector<graph::DataPtr> values;
    for (const at::Tensor& t : tensors) values.push_back(aten::read(t));
    return graph::program_text(values);
  });
  m.def("_run_stablehlo", python::run_stablehlo, py::arg("program"), py::arg("inputs"));
  python::register_compiled_graph(m);
  python::register_graph_signature(m);
  python::register_custom_kernels(m);
  python::register_compiler_settings(m);
  python::register_distributed(m);
}
