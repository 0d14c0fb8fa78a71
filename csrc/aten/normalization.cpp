// Normalization kernels: batch norm (training with running-stat updates, and evaluation), layer
// norm, group norm and the fused RMS norm, each with its backward.
#include "lowering/normalization.h"

#include <ATen/ATen.h>
#include <torch/library.h>

#include <sstream>

#include "aten/op_result.h"
#include "aten/tensor_bridge.h"

namespace torch_pjrt::aten {
namespace {

using at::Tensor;
using Tensors3 = std::tuple<Tensor, Tensor, Tensor>;

Tensor value_or_undefined(const std::optional<Tensor>& t) { return t.value_or(Tensor()); }

// The common device of the defined tensors among `tensors`.
int device_of(const char* name, std::initializer_list<const Tensor*> tensors) {
  std::vector<const Tensor*> defined;
  for (const Tensor* t : tensors)
    if (t->defined()) defined.push_back(t);
  return common_device(name, defined);
}

// Tensors for `values` (dtypes from their types), undefined where `mask` is false; the first (the
// normalized input, or its gradient) in `format`, as the CPU's batch and group norm allocate it in
// the memory format their input suggests.
std::vector<Tensor> deliver(const std::vector<graph::DataPtr>& values,
                            const std::vector<at::ScalarType>& dtypes, int device,
                            std::vector<bool> mask = {},
                            c10::MemoryFormat format = c10::MemoryFormat::Contiguous) {
  std::vector<Tensor> out;
  for (size_t i = 0; i < values.size(); ++i) {
    if (!mask.empty() && !mask[i]) {
      out.emplace_back();
    } else if (i == 0) {
      out.push_back(make_result({values[0], dtypes[0], values[0]->type.dims, device}, format));
    } else {
      out.push_back(make_tensor(values[i], dtypes[i], device));
    }
  }
  return out;
}

// The dtype of batch norm's saved statistics: the parameters' (running stats, else weight), else
// the input's.
at::ScalarType stat_dtype(const Tensor& input, const Tensor& weight, const Tensor& running_mean) {
  if (running_mean.defined()) return running_mean.scalar_type();
  return weight.defined() ? weight.scalar_type() : input.scalar_type();
}

void check_channels(const char* what, const Tensor& t, int64_t channels) {
  TORCH_CHECK(!t.defined() || t.numel() == channels, what, " should contain ", channels,
              " elements not ", t.defined() ? t.numel() : 0);
}

Tensors3 bn_forward(const Tensor& input, const Tensor& weight, const Tensor& bias,
                    const Tensor& running_mean, const Tensor& running_var, bool training,
                    double momentum, double eps) {
  TORCH_CHECK(input.dim() >= 2, "batch_norm: expected input with at least 2 dims, got ",
              input.dim());
  const int64_t channels = input.size(1);
  check_channels("weight", weight, channels);
  check_channels("bias", bias, channels);
  check_channels("running_mean", running_mean, channels);
  check_channels("running_var", running_var, channels);
  TORCH_CHECK(running_mean.defined() == running_var.defined(),
              "running_mean and running_var must either both be None or neither be None");
  const int device =
      device_of("native_batch_norm", {&input, &weight, &bias, &running_mean, &running_var});
  const at::ScalarType stat = stat_dtype(input, weight, running_mean);
  const hlo::TensorType out_type = tensor_type(input.scalar_type(), input.sizes());
  graph::Attrs attrs;
  std::vector<graph::DataPtr> inputs{read(input)};
  if (!training) {
    TORCH_CHECK(running_mean.defined(),
                "running_mean and running_var must be defined in evaluation mode");
    attrs.ints = {weight.defined(), bias.defined()};
    attrs.floats = {eps};
    inputs.push_back(read(running_mean));
    inputs.push_back(read(running_var));
    for (const Tensor* t : {&weight, &bias})
      if (t->defined()) inputs.push_back(read(*t));
    auto value = graph::record1(lowering::kBatchNormEval, inputs, attrs, out_type, device);
    Tensor out = make_result({value, input.scalar_type(), input.sizes().vec(), device},
                             input.suggest_memory_format());
    finish_op();
    const auto empty = input.options().dtype(stat);
    return {out, at::empty({0}, empty), at::empty({0}, empty)};
  }
  const bool has_running = running_mean.defined();
  attrs.ints = {weight.defined(), bias.defined(), has_running};
  attrs.floats = {eps, momentum};
  for (const Tensor* t : {&weight, &bias, &running_mean, &running_var})
    if (t->defined()) inputs.push_back(read(*t));
  std::vector<hlo::TensorType> types{out_type, tensor_type(stat, {channels}),
                                     tensor_type(stat, {channels})};
  if (has_running) {
    types.push_back(tensor_type(running_mean.scalar_type(), {channels}));
    types.push_back(tensor_type(running_var.scalar_type(), {channels}));
  }
  auto values = graph::record(lowering::kBatchNormTrain, inputs, attrs, types, device);
  auto out = deliver({values[0], values[1], values[2]}, {input.scalar_type(), stat, stat}, device,
                     {}, input.suggest_memory_format());
  if (has_running) {
    write(running_mean, values[3]);
    write(running_var, values[4]);
  }
  finish_op();
  return {out[0], out[1], out[2]};
}

// `mean` and `invstd` are the saved statistics in training, the running ones otherwise.
Tensors3 bn_backward(const Tensor& grad_out, const Tensor& input, const Tensor& weight,
                     const Tensor& mean, const Tensor& invstd_or_var, bool train, double eps,
                     std::array<bool, 3> mask) {
  TORCH_CHECK(mean.defined() && invstd_or_var.defined(), "batch_norm_backward: ",
              train ? "save_mean and save_invstd" : "running_mean and running_var",
              " must be defined");
  const int device =
      device_of("native_batch_norm_backward", {&grad_out, &input, &weight, &mean, &invstd_or_var});
  const int64_t channels = input.size(1);
  const at::ScalarType param = weight.defined() ? weight.scalar_type() : mean.scalar_type();
  graph::Attrs attrs;
  attrs.ints = {weight.defined(), train};
  attrs.floats = {eps};
  std::vector<graph::DataPtr> inputs{read(grad_out), read(input), read(mean), read(invstd_or_var)};
  if (weight.defined()) inputs.push_back(read(weight));
  auto values = graph::record(lowering::kBatchNormBackward, inputs, attrs,
                              {tensor_type(input.scalar_type(), input.sizes()),
                               tensor_type(param, {channels}), tensor_type(param, {channels})},
                              device);
  auto out = deliver(values, {input.scalar_type(), param, param}, device,
                     {mask[0], mask[1], mask[2]}, input.suggest_memory_format());
  finish_op();
  return {out[0], out[1], out[2]};
}

Tensors3 bn_backward_optional(const Tensor& grad_out, const Tensor& input,
                              const std::optional<Tensor>& weight,
                              const std::optional<Tensor>& running_mean,
                              const std::optional<Tensor>& running_var,
                              const std::optional<Tensor>& save_mean,
                              const std::optional<Tensor>& save_invstd, bool train, double eps,
                              std::array<bool, 3> mask) {
  const auto& mean = train ? save_mean : running_mean;
  const auto& stat = train ? save_invstd : running_var;
  return bn_backward(grad_out, input, value_or_undefined(weight), value_or_undefined(mean),
                     value_or_undefined(stat), train, eps, mask);
}

// native_layer_norm's axis: the first normalized dim, after PyTorch's shape checks.
int64_t layer_norm_axis(const Tensor& input, at::IntArrayRef normalized_shape, const Tensor& weight,
                        const Tensor& bias) {
  const int64_t norm_ndim = static_cast<int64_t>(normalized_shape.size());
  TORCH_CHECK(norm_ndim >= 1,
              "Expected normalized_shape to be at least 1-dimensional, i.e., containing at least "
              "one element, but got normalized_shape = ",
              normalized_shape);
  TORCH_CHECK(!weight.defined() || weight.sizes().equals(normalized_shape),
              "Expected weight to be of same shape as normalized_shape, but got weight of shape ",
              weight.sizes(), " and normalized_shape = ", normalized_shape);
  TORCH_CHECK(!bias.defined() || bias.sizes().equals(normalized_shape),
              "Expected bias to be of same shape as normalized_shape, but got bias of shape ",
              bias.sizes(), " and normalized_shape = ", normalized_shape);
  const int64_t axis = input.dim() - norm_ndim;
  if (axis < 0 || !input.sizes().slice(axis).equals(normalized_shape)) {
    std::stringstream ss;
    ss << "Given normalized_shape=" << normalized_shape << ", expected input with shape [*";
    for (int64_t size : normalized_shape) ss << ", " << size;
    ss << "], but got input of size" << input.sizes();
    TORCH_CHECK(false, ss.str());
  }
  return axis;
}

// Statistics shape of layer and RMS norm: the input's dims before `axis`, then 1s.
std::vector<int64_t> stat_sizes(const Tensor& input, int64_t axis) {
  std::vector<int64_t> sizes = input.sizes().vec();
  for (size_t d = axis; d < sizes.size(); ++d) sizes[d] = 1;
  return sizes;
}

Tensors3 ln_forward(const Tensor& input, c10::SymIntArrayRef shape,
                    const std::optional<Tensor>& weight_opt, const std::optional<Tensor>& bias_opt,
                    double eps) {
  const Tensor weight = value_or_undefined(weight_opt), bias = value_or_undefined(bias_opt);
  const int64_t axis = layer_norm_axis(input, C10_AS_INTARRAYREF_SLOW(shape), weight, bias);
  const int device = device_of("native_layer_norm", {&input, &weight, &bias});
  const at::ScalarType dtype = input.scalar_type();
  graph::Attrs attrs;
  attrs.ints = {axis, weight.defined(), bias.defined()};
  attrs.floats = {eps};
  std::vector<graph::DataPtr> inputs{read(input)};
  for (const Tensor* t : {&weight, &bias})
    if (t->defined()) inputs.push_back(read(*t));
  const auto stats = tensor_type(dtype, stat_sizes(input, axis));
  auto values = graph::record(lowering::kLayerNorm, inputs, attrs,
                              {tensor_type(dtype, input.sizes()), stats, stats}, device);
  auto out = deliver(values, {dtype, dtype, dtype}, device);
  finish_op();
  return {out[0], out[1], out[2]};
}

Tensors3 ln_backward(const Tensor& grad_out, const Tensor& input, c10::SymIntArrayRef shape,
                     const Tensor& mean, const Tensor& rstd,
                     const std::optional<Tensor>& weight_opt, const std::optional<Tensor>& bias_opt,
                     std::array<bool, 3> mask) {
  const Tensor weight = value_or_undefined(weight_opt), bias = value_or_undefined(bias_opt);
  const at::IntArrayRef normalized = C10_AS_INTARRAYREF_SLOW(shape);
  const int64_t axis = layer_norm_axis(input, normalized, weight, bias);
  const int device =
      device_of("native_layer_norm_backward", {&grad_out, &input, &mean, &rstd, &weight});
  graph::Attrs attrs;
  attrs.ints = {axis, weight.defined()};
  std::vector<graph::DataPtr> inputs{read(grad_out), read(input), read(mean), read(rstd)};
  if (weight.defined()) inputs.push_back(read(weight));
  const at::ScalarType wt = weight.defined() ? weight.scalar_type() : input.scalar_type();
  const at::ScalarType bt = bias.defined() ? bias.scalar_type() : wt;
  auto values = graph::record(lowering::kLayerNormBackward, inputs, attrs,
                              {tensor_type(input.scalar_type(), input.sizes()),
                               tensor_type(wt, normalized), tensor_type(bt, normalized)},
                              device);
  auto out = deliver(values, {input.scalar_type(), wt, bt}, device, {mask[0], mask[1], mask[2]});
  finish_op();
  return {out[0], out[1], out[2]};
}

void check_group_norm(const Tensor& input, const Tensor& weight, const Tensor& bias, int64_t n,
                      int64_t c, int64_t hxw, int64_t group) {
  TORCH_CHECK(group > 0 && c % group == 0, "Expected number of channels in input to be divisible ",
              "by num_groups, but got input of shape ", input.sizes(), " and num_groups=", group);
  TORCH_CHECK(
      input.numel() == n * c * hxw && input.dim() >= 2 && input.size(0) == n && input.size(1) == c,
      "Expected input of shape [", n, ", ", c, ", *] with ", n * c * hxw,
      " elements, but got input of shape ", input.sizes());
  check_channels("weight", weight, c);
  check_channels("bias", bias, c);
}

Tensors3 gn_forward(const Tensor& input, const std::optional<Tensor>& weight_opt,
                    const std::optional<Tensor>& bias_opt, c10::SymInt n, c10::SymInt c,
                    c10::SymInt hxw, int64_t group, double eps) {
  const Tensor weight = value_or_undefined(weight_opt), bias = value_or_undefined(bias_opt);
  const int64_t batch = n.expect_int();
  check_group_norm(input, weight, bias, batch, c.expect_int(), hxw.expect_int(), group);
  const int device = device_of("native_group_norm", {&input, &weight, &bias});
  const at::ScalarType dtype = input.scalar_type();
  graph::Attrs attrs;
  attrs.ints = {group, weight.defined(), bias.defined()};
  attrs.floats = {eps};
  std::vector<graph::DataPtr> inputs{read(input)};
  for (const Tensor* t : {&weight, &bias})
    if (t->defined()) inputs.push_back(read(*t));
  const auto stats = tensor_type(dtype, {batch, group});
  auto values = graph::record(lowering::kGroupNorm, inputs, attrs,
                              {tensor_type(dtype, input.sizes()), stats, stats}, device);
  auto out = deliver(values, {dtype, dtype, dtype}, device, {}, input.suggest_memory_format());
  finish_op();
  return {out[0], out[1], out[2]};
}

Tensors3 gn_backward(const Tensor& grad_out, const Tensor& input, const Tensor& mean,
                     const Tensor& rstd, const std::optional<Tensor>& weight_opt, c10::SymInt n,
                     c10::SymInt c, c10::SymInt hxw, int64_t group, std::array<bool, 3> mask) {
  const Tensor weight = value_or_undefined(weight_opt);
  const int64_t channels = c.expect_int();
  check_group_norm(input, weight, Tensor(), n.expect_int(), channels, hxw.expect_int(), group);
  const int device =
      device_of("native_group_norm_backward", {&grad_out, &input, &mean, &rstd, &weight});
  graph::Attrs attrs;
  attrs.ints = {group, weight.defined()};
  std::vector<graph::DataPtr> inputs{read(grad_out), read(input), read(mean), read(rstd)};
  if (weight.defined()) inputs.push_back(read(weight));
  const at::ScalarType wt = weight.defined() ? weight.scalar_type() : input.scalar_type();
  auto values = graph::record(lowering::kGroupNormBackward, inputs, attrs,
                              {tensor_type(input.scalar_type(), input.sizes()),
                               tensor_type(wt, {channels}), tensor_type(wt, {channels})},
                              device);
  // (autograd's formula hands devices other than the CPU a contiguous input, so the gradient is
  // contiguous there, as on CUDA)
  auto out = deliver(values, {input.scalar_type(), wt, wt}, device, {mask[0], mask[1], mask[2]},
                     input.suggest_memory_format());
  finish_op();
  return {out[0], out[1], out[2]};
}

// Float16/bfloat16 compute (and keep rstd) in float32.
at::ScalarType opmath(at::ScalarType t) {
  return t == at::kHalf || t == at::kBFloat16 ? at::kFloat : t;
}

std::tuple<Tensor, Tensor> rms_forward(const Tensor& input, at::IntArrayRef normalized_shape,
                                       const std::optional<Tensor>& weight_opt,
                                       std::optional<double> eps) {
  const Tensor weight = value_or_undefined(weight_opt);
  const int64_t axis = layer_norm_axis(input, normalized_shape, weight, Tensor());
  const int device = device_of("_fused_rms_norm", {&input, &weight});
  const at::ScalarType ct = opmath(input.scalar_type());
  graph::Attrs attrs;
  attrs.ints = {axis, weight.defined()};
  attrs.floats = {eps.value_or(ct == at::kDouble ? std::numeric_limits<double>::epsilon()
                                                 : std::numeric_limits<float>::epsilon())};
  std::vector<graph::DataPtr> inputs{read(input)};
  if (weight.defined()) inputs.push_back(read(weight));
  auto values = graph::record(
      lowering::kRmsNorm, inputs, attrs,
      {tensor_type(input.scalar_type(), input.sizes()), tensor_type(ct, stat_sizes(input, axis))},
      device);
  auto out = deliver(values, {input.scalar_type(), ct}, device);
  finish_op();
  return {out[0], out[1]};
}

std::tuple<Tensor, Tensor> rms_backward(const Tensor& grad_out, const Tensor& input,
                                        at::IntArrayRef normalized_shape, const Tensor& rstd,
                                        const std::optional<Tensor>& weight_opt,
                                        std::array<bool, 2> mask) {
  const Tensor weight = value_or_undefined(weight_opt);
  const int64_t axis = layer_norm_axis(input, normalized_shape, weight, Tensor());
  const int device = device_of("_fused_rms_norm_backward", {&grad_out, &input, &rstd, &weight});
  graph::Attrs attrs;
  attrs.ints = {axis, weight.defined()};
  std::vector<graph::DataPtr> inputs{read(grad_out), read(input), read(rstd)};
  if (weight.defined()) inputs.push_back(read(weight));
  const at::ScalarType wt = weight.defined() ? weight.scalar_type() : input.scalar_type();
  auto values = graph::record(
      lowering::kRmsNormBackward, inputs, attrs,
      {tensor_type(input.scalar_type(), input.sizes()), tensor_type(wt, normalized_shape)}, device);
  auto out = deliver(values, {input.scalar_type(), wt}, device, {mask[0], mask[1]});
  finish_op();
  return {out[0], out[1]};
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("native_batch_norm",
         [](const Tensor& input, const std::optional<Tensor>& weight,
            const std::optional<Tensor>& bias, const std::optional<Tensor>& running_mean,
            const std::optional<Tensor>& running_var, bool training, double momentum, double eps) {
           return bn_forward(input, value_or_undefined(weight), value_or_undefined(bias),
                             value_or_undefined(running_mean), value_or_undefined(running_var),
                             training, momentum, eps);
         });
  m.impl("_native_batch_norm_legit",
         [](const Tensor& input, const std::optional<Tensor>& weight,
            const std::optional<Tensor>& bias, Tensor& running_mean, Tensor& running_var,
            bool training, double momentum, double eps) {
           return bn_forward(input, value_or_undefined(weight), value_or_undefined(bias),
                             running_mean, running_var, training, momentum, eps);
         });
  m.impl("_native_batch_norm_legit.no_stats",
         [](const Tensor& input, const std::optional<Tensor>& weight,
            const std::optional<Tensor>& bias, bool training, double momentum, double eps) {
           return bn_forward(input, value_or_undefined(weight), value_or_undefined(bias), Tensor(),
                             Tensor(), training, momentum, eps);
         });
  m.impl("_batch_norm_with_update", [](const Tensor& input, const std::optional<Tensor>& weight,
                                       const std::optional<Tensor>& bias, Tensor& running_mean,
                                       Tensor& running_var, double momentum, double eps) {
    auto [out, mean, invstd] =
        bn_forward(input, value_or_undefined(weight), value_or_undefined(bias), running_mean,
                   running_var, true, momentum, eps);
    return std::make_tuple(out, mean, invstd, at::empty({0}, input.options().dtype(at::kByte)));
  });
  m.impl("_batch_norm_no_update", [](const Tensor& input, const std::optional<Tensor>& weight,
                                     const std::optional<Tensor>& bias,
                                     const std::optional<Tensor>& running_mean,
                                     const std::optional<Tensor>& running_var, double momentum,
                                     double eps) {
    auto [out, mean, invstd] = bn_forward(
        input, value_or_undefined(weight), value_or_undefined(bias),
        value_or_undefined(running_mean), value_or_undefined(running_var), false, momentum, eps);
    return std::make_tuple(out, mean, invstd, at::empty({0}, input.options().dtype(at::kByte)));
  });
  m.impl("native_batch_norm_backward", bn_backward_optional);
  m.impl("batch_norm_backward",
         [](const Tensor& grad_out, const Tensor& input, const Tensor& weight,
            const std::optional<Tensor>& running_mean, const std::optional<Tensor>& running_var,
            const std::optional<Tensor>& save_mean, const std::optional<Tensor>& save_var,
            bool update, double eps, std::array<bool, 3> mask, const Tensor&) {
           return bn_backward_optional(grad_out, input, weight, running_mean, running_var,
                                       save_mean, save_var, update, eps, mask);
         });
  m.impl("native_layer_norm", ln_forward);
  m.impl("native_layer_norm_backward", ln_backward);
  m.impl("native_group_norm", gn_forward);
  m.impl("native_group_norm_backward", gn_backward);
  m.impl("_fused_rms_norm", rms_forward);
  m.impl("_fused_rms_norm_backward", rms_backward);
}

}  // namespace torch_pjrt::aten
