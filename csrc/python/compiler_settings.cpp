// Precision and compile-option bindings. Changing compile options is a sync point: pending work
// was recorded under the old options and is compiled with them.
#include "python/compiler_settings.h"

#include <pybind11/stl.h>

#include "aten/precision.h"
#include "graph/graph.h"
#include "runtime/compile_options.h"

namespace py = pybind11;

namespace torch_pjrt::python {
namespace {

hlo::Precision to_precision(int value) {
  if (value < 0 || value > static_cast<int>(hlo::Precision::kHighest)) {
    throw py::value_error("precision must be 0 (DEFAULT), 1 (HIGH) or 2 (HIGHEST), got " +
                          std::to_string(value));
  }
  return static_cast<hlo::Precision>(value);
}

runtime::CompileOptions::Value option_value(const std::string& name, const py::handle& value) {
  if (py::isinstance<py::bool_>(value)) return value.cast<bool>();
  if (py::isinstance<py::int_>(value)) return value.cast<int64_t>();
  if (py::isinstance<py::float_>(value)) return value.cast<double>();
  if (py::isinstance<py::str>(value)) return value.cast<std::string>();
  throw py::type_error("compiler option \"" + name + "\" must be a bool, int, float or str, got " +
                       std::string(py::str(py::type::handle_of(value).attr("__name__"))));
}

void set_compile_options(const py::dict& overrides, const std::string& optimization_level,
                         const std::string& memory_fitting_level) {
  runtime::CompileOptions options;
  for (const auto& [key, value] : overrides) {
    const auto name = key.cast<std::string>();
    options.overrides[name] = option_value(name, value);
  }
  try {
    if (!optimization_level.empty()) {
      options.optimization_level = runtime::effort_level(optimization_level);
    }
    if (!memory_fitting_level.empty()) {
      options.memory_fitting_level = runtime::effort_level(memory_fitting_level);
    }
  } catch (const std::invalid_argument& e) {
    throw py::value_error(e.what());
  }
  {
    py::gil_scoped_release no_gil;
    graph::materialize();
  }
  graph::set_compile_options(std::move(options));
}

}  // namespace

void register_compiler_settings(py::module_& m) {
  m.def("_matmul_precision", [] { return static_cast<int>(aten::matmul_precision()); });
  m.def("_push_precision", [](int value) { aten::push_matmul_precision(to_precision(value)); });
  m.def("_pop_precision", [] { aten::pop_matmul_precision(); });
  m.def("_set_compile_options", set_compile_options, py::arg("overrides"),
        py::arg("optimization_level") = "", py::arg("memory_fitting_level") = "");
  m.def("_compile_options_key", [] { return py::bytes(graph::compile_options().serialize()); });
}

}  // namespace torch_pjrt::python
