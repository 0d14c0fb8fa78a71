// User StableHLO programs over "tpu" tensors.
#include "python/custom_program.h"

#include <mutex>
#include <unordered_map>

#include "aten/tensor_bridge.h"
#include "device/runtime_state.h"
#include "runtime/executable.h"

namespace torch_pjrt::python {
namespace {

std::shared_ptr<runtime::Executable> compiled(const std::string& program) {
  static std::mutex mutex;
  static std::unordered_map<std::string, std::shared_ptr<runtime::Executable>> cache;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = cache.find(program);
  if (it != cache.end()) return it->second;
  auto exe = device::client().compile(program);
  exe->set_name("run_stablehlo");
  cache.emplace(program, exe);
  return exe;
}

}  // namespace

std::vector<at::Tensor> run_stablehlo(const std::string& program,
                                      const std::vector<at::Tensor>& inputs) {
  TORCH_CHECK(!program.empty(), "run_stablehlo: the program text is empty");
  for (const at::Tensor& t : inputs) {
    TORCH_CHECK(t.defined() && t.is_privateuseone(),
                "run_stablehlo: every input must be a tpu "
                "tensor, got one on ",
                t.defined() ? t.device().str() : "(undefined)");
    TORCH_CHECK(t.device() == inputs[0].device(),
                "Expected all tensors to be on the same device, but found at least two devices, ",
                inputs[0].device(), " and ", t.device(), "! (run_stablehlo)");
  }
  const int device = inputs.empty() ? device::current_device() : inputs[0].device().index();
  std::vector<graph::DataPtr> values;
  for (const at::Tensor& t : inputs) values.push_back(aten::read(t));
  graph::materialize(values);
  auto exe = compiled(program);
  std::vector<std::shared_ptr<runtime::Buffer>> buffers;
  for (const auto& v : values) buffers.push_back(graph::buffer_of(v));
  std::vector<const runtime::Buffer*> args;
  for (const auto& b : buffers) args.push_back(b.get());
  std::vector<at::Tensor> outputs;
  for (auto& buffer : exe->execute(args, device)) {
    const at::ScalarType dtype = aten::scalar_type(buffer->element_type());
    outputs.push_back(aten::make_tensor(graph::from_buffer(std::move(buffer)), dtype, device));
  }
  return outputs;
}

}  // namespace torch_pjrt::python
