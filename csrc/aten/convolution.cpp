// Convolution forward and backward through the overrideable hooks: PyTorch's convolution checks
// the arguments and reaches these for a "tpu" tensor.
#include "lowering/convolution.h"

#include <ATen/ATen.h>
#include <torch/library.h>

#include <sstream>

#include "aten/op_result.h"
#include "aten/precision.h"
#include "aten/tensor_bridge.h"

namespace torch_pjrt::aten {
namespace {

using at::IntArrayRef;
using at::Tensor;

graph::Attrs conv_attrs(int64_t nd, bool transposed, int64_t groups, IntArrayRef stride,
                        IntArrayRef padding, IntArrayRef dilation) {
  graph::Attrs attrs;
  attrs.ints = {transposed ? 1 : 0, groups};
  for (IntArrayRef list : {stride, padding, dilation}) {
    TORCH_CHECK(static_cast<int64_t>(list.size()) == nd, "expected ", nd,
                " convolution parameters per list, got ", list);
    attrs.ints.insert(attrs.ints.end(), list.begin(), list.end());
  }
  return attrs;
}

// The CPU's layout of a convolution's result and gradients: channels_last (3d) when the input or
// the weight suggests it (its oneDNN and slow 2-d backends' rule), else contiguous.
c10::MemoryFormat conv_memory_format(const Tensor& input, const Tensor& weight) {
  const c10::MemoryFormat cl =
      input.dim() == 5 ? c10::MemoryFormat::ChannelsLast3d : c10::MemoryFormat::ChannelsLast;
  return input.suggest_memory_format() == cl || weight.suggest_memory_format() == cl
             ? cl
             : c10::MemoryFormat::Contiguous;
}

void check_types(const Tensor& input, const Tensor& weight, const Tensor* bias) {
  TORCH_CHECK(input.scalar_type() == weight.scalar_type(), "expected scalar type ",
              input.scalar_type(), " but found ", weight.scalar_type());
  TORCH_CHECK(bias == nullptr || bias->scalar_type() == input.scalar_type(), "Input type (",
              c10::toString(input.scalar_type()), ") and bias type (",
              c10::toString(bias->scalar_type()), ") should be the same");
  TORCH_CHECK(!at::isComplexType(input.scalar_type()) && input.scalar_type() != at::kBool,
              "\"convolution\" not implemented for '", input.scalar_type(), "'");
}

// PyTorch checks this in its transposed convolution kernels rather than in convolution().
void check_output_padding(int64_t nd, IntArrayRef output_padding, IntArrayRef stride,
                          IntArrayRef dilation) {
  static const char* axis[] = {"depth", "height", "width"};
  bool ok = true;
  for (int64_t i = 0; i < nd; ++i) {
    ok &= output_padding[i] < stride[i] || output_padding[i] < dilation[i];
  }
  if (ok) return;
  std::ostringstream msg;
  msg << "output padding must be smaller than either stride or dilation, but got";
  const std::pair<const char*, IntArrayRef> lists[] = {
      {"output_padding", output_padding}, {"stride", stride}, {"dilation", dilation}};
  for (const auto& [name, list] : lists) {
    for (int64_t i = 0; i < nd; ++i)
      msg << " " << name << "_" << axis[3 - nd + i] << ": " << list[i];
  }
  TORCH_CHECK(false, msg.str());
}

Tensor convolution(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                   IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation, bool transposed,
                   IntArrayRef output_padding, int64_t groups) {
  const bool has_bias = bias.has_value() && bias->defined();
  check_types(input, weight, has_bias ? &*bias : nullptr);
  const int64_t nd = input.dim() - 2;
  TORCH_CHECK(nd >= 1 && weight.dim() == input.dim(), "Expected ", input.dim(),
              "-dimensional weight for ", input.dim(),
              "-dimensional input, but got weight of size ", weight.sizes());
  if (transposed) check_output_padding(nd, output_padding, stride, dilation);
  std::vector<int64_t> sizes{input.size(0), transposed ? weight.size(1) * groups : weight.size(0)};
  for (int64_t i = 0; i < nd; ++i) {
    const int64_t in = input.size(2 + i), k = weight.size(2 + i);
    const int64_t span = dilation[i] * (k - 1);
    sizes.push_back(transposed
                        ? (in - 1) * stride[i] - 2 * padding[i] + span + output_padding[i] + 1
                        : (in + 2 * padding[i] - span - 1) / stride[i] + 1);
  }
  std::vector<const Tensor*> tensors{&input, &weight};
  std::vector<graph::DataPtr> inputs{read(input), read(weight)};
  if (has_bias) {
    tensors.push_back(&*bias);
    inputs.push_back(read(*bias));
  }
  const int device = common_device("convolution", tensors);
  graph::Attrs attrs = conv_attrs(nd, transposed, groups, stride, padding, dilation);
  add_precision(attrs, input.scalar_type());
  auto value = graph::record1(lowering::kConvolution, std::move(inputs), std::move(attrs),
                              tensor_type(input.scalar_type(), sizes), device);
  return to_new({value, input.scalar_type(), sizes, device}, conv_memory_format(input, weight));
}

std::tuple<Tensor, Tensor, Tensor> convolution_backward(
    const Tensor& grad_output, const Tensor& input, const Tensor& weight_in, IntArrayRef stride,
    IntArrayRef padding, IntArrayRef dilation, bool transposed, IntArrayRef output_padding,
    int64_t groups, std::array<bool, 3> output_mask) {
  // A floating weight of another dtype (a parameter whose storage was cast to float8 after the
  // forward, as Diffusers' layerwise casting does) is converted to the input's dtype, as the CPU's
  // oneDNN backward reorders it; the gradients are in the input's dtype.
  const bool convert = weight_in.scalar_type() != input.scalar_type() &&
                       at::isFloatingType(weight_in.scalar_type()) &&
                       at::isFloatingType(input.scalar_type());
  const Tensor weight = convert ? weight_in.to(input.scalar_type()) : weight_in;
  check_types(input, weight, nullptr);
  TORCH_CHECK(grad_output.scalar_type() == input.scalar_type(), "expected scalar type ",
              input.scalar_type(), " but found ", grad_output.scalar_type());
  const int64_t nd = input.dim() - 2;
  const int device = common_device("convolution_backward", {&grad_output, &input, &weight});
  graph::Attrs attrs = conv_attrs(nd, transposed, groups, stride, padding, dilation);
  std::vector<hlo::TensorType> types;
  const at::ScalarType dtype = input.scalar_type();
  if (output_mask[0]) types.push_back(tensor_type(dtype, input.sizes()));
  if (output_mask[1]) types.push_back(tensor_type(dtype, weight.sizes()));
  if (output_mask[2]) types.push_back(tensor_type(dtype, {grad_output.size(1)}));
  for (bool m : output_mask) attrs.ints.push_back(m ? 1 : 0);
  add_precision(attrs, dtype);
  std::array<Tensor, 3> grads;
  if (!types.empty()) {
    auto values = graph::record(lowering::kConvolutionBackward,
                                {read(grad_output), read(input), read(weight)}, std::move(attrs),
                                std::move(types), device);
    size_t next = 0;
    for (int i = 0; i < 3; ++i) {
      if (!output_mask[i]) continue;
      const graph::DataPtr& v = values[next++];
      grads[i] =
          i < 2 ? make_result({v, dtype, v->type.dims, device}, conv_memory_format(input, weight))
                : make_tensor(v, dtype, device);
    }
  }
  finish_op();
  return {grads[0], grads[1], grads[2]};
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("convolution_overrideable", convolution);
  m.impl("convolution_backward_overrideable", convolution_backward);
}

}  // namespace torch_pjrt::aten
