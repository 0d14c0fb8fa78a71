// Registering custom kernels and calling them on "tpu" tensors.
#include "python/custom_kernel.h"

#include <pybind11/stl.h>
#include <torch/csrc/utils/pybind.h>

#include <set>

#include "aten/tensor_bridge.h"
#include "device/allocator.h"
#include "graph/trace_mode.h"
#include "lowering/custom_kernel.h"

namespace py = pybind11;

namespace torch_pjrt::python {
namespace {

using TypeSpec = std::pair<at::ScalarType, std::vector<int64_t>>;

std::vector<hlo::TensorType> tensor_types(const std::vector<TypeSpec>& specs) {
  std::vector<hlo::TensorType> out;
  for (const auto& [dtype, sizes] : specs) out.push_back(aten::tensor_type(dtype, sizes));
  return out;
}

int64_t register_kernel(const std::string& name, const std::string& functions,
                        const std::string& entry, const std::vector<TypeSpec>& inputs,
                        const std::vector<TypeSpec>& outputs) {
  try {
    return lowering::register_kernel(
        {name, functions, entry, tensor_types(inputs), tensor_types(outputs)});
  } catch (const std::invalid_argument& e) {
    TORCH_CHECK_VALUE(false, e.what());
  }
}

// The storage of `t` no longer holds a value: using it raises `message`. Its old value, now held
// only by the kernel's node, is donated to the program's outputs when nothing else holds it.
void invalidate(const at::Tensor& t, const std::string& message) {
  const graph::SlotPtr& slot = device::writable_slot(t.storage());
  auto failed = std::make_shared<graph::Data>();
  failed->type = slot->data ? slot->data->type : aten::tensor_type(t.scalar_type(), t.sizes());
  failed->device = slot->device;
  failed->error = std::make_shared<const std::string>(message);
  graph::bind_slot(slot, std::move(failed));
}

std::vector<at::Tensor> call_kernel(int64_t id, const std::vector<at::Tensor>& inputs,
                                    const std::vector<int64_t>& donate) {
  const lowering::CustomKernel& k = lowering::kernel(id);
  const char* name = k.name.c_str();
  TORCH_CHECK(inputs.size() == k.inputs.size(), name, ": expected ", k.inputs.size(),
              " tensor inputs, got ", inputs.size());
  std::vector<const at::Tensor*> pointers;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const at::Tensor& t = inputs[i];
    TORCH_CHECK(t.defined(), name, ": tensor input ", i, " is undefined");
    const hlo::TensorType want = k.inputs[i];
    TORCH_CHECK_TYPE(aten::element_type(t.scalar_type()) == want.dtype, name, ": tensor input ", i,
                     " has dtype ", t.scalar_type(), " but the kernel was lowered for ",
                     aten::scalar_type(want.dtype));
    TORCH_CHECK(t.sizes().vec() == want.dims, name, ": tensor input ", i, " has shape ", t.sizes(),
                " but the kernel was lowered for ", c10::IntArrayRef(want.dims));
    pointers.push_back(&t);
  }
  const int device = aten::common_device(name, pointers);
  std::set<int64_t> donated;
  for (int64_t i : donate) {
    TORCH_CHECK_INDEX(i >= 0 && i < static_cast<int64_t>(inputs.size()), name,
                      ": donate_argnums index ", i, " is out of range for ", inputs.size(),
                      " tensor inputs");
    TORCH_CHECK(inputs[i].is_privateuseone(), name, ": donated input ", i,
                " must be a tpu tensor, got one on ", inputs[i].device());
    donated.insert(i);
  }
  std::vector<graph::DataPtr> values;
  for (const at::Tensor& t : inputs) values.push_back(aten::operand(t, t.scalar_type(), device));
  std::vector<graph::DataPtr> outs = graph::record(lowering::kernel_op(id), std::move(values),
                                                   graph::Attrs{{id}, {}}, k.outputs, device);
  // A compiled graph cannot express an invalidated input: donation applies to eager calls.
  if (!graph::trace_active()) {
    for (int64_t i : donated) {
      invalidate(inputs[i], std::string(name) + ": this tensor was donated to the kernel " +
                                "(donate_argnums) and holds no value any more");
    }
  }
  std::vector<at::Tensor> results;
  for (size_t i = 0; i < outs.size(); ++i) {
    results.push_back(
        aten::make_tensor(std::move(outs[i]), aten::scalar_type(k.outputs[i].dtype), device));
  }
  aten::finish_op();
  return results;
}

}  // namespace

void register_custom_kernels(py::module_& m) {
  m.def("_register_custom_kernel", register_kernel, py::arg("name"), py::arg("functions"),
        py::arg("entry"), py::arg("inputs"), py::arg("outputs"));
  m.def("_call_custom_kernel", call_kernel, py::arg("id"), py::arg("inputs"),
        py::arg("donate") = std::vector<int64_t>{});
  m.def("_registered_custom_kernels", [] { return lowering::registered_kernels(); });
}

}  // namespace torch_pjrt::python
