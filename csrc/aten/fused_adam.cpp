// aten::_fused_adam_ / _fused_adamw_ (torch.optim.Adam/AdamW(fused=True), which Transformers'
// Trainer picks by default): the math of PyTorch's fused kernels, per tensor in float32 (or
// double), one recorded operation per parameter and the whole list one program. grad_scale unscales
// the gradients (written back, as the CUDA kernel does); found_inf != 0 leaves every tensor
// unchanged. No value is read back to the host.
#include <ATen/ATen.h>
#include <ATen/OpMathType.h>
#include <torch/library.h>

#include <optional>
#include <type_traits>
#include <vector>

#include "aten/tensor_bridge.h"
#include "graph/graph.h"
#include "lowering/optimizers.h"

namespace torch_pjrt::aten {
namespace {

using at::Tensor;
using at::TensorList;
using OptTensor = std::optional<Tensor>;

struct Hyper {
  double beta1, beta2, weight_decay, eps;
  bool amsgrad, maximize, decoupled;  // decoupled: AdamW's weight decay
};

// The learning rate as a program operand.
graph::DataPtr lr_value(double lr, at::ScalarType acc, int device) {
  return scalar(lr, acc, device);
}
graph::DataPtr lr_value(const Tensor& lr, at::ScalarType, int) { return read(lr.reshape({})); }

// `lr` is a double or a tensor on the device. Each parameter's update is one recorded operation
// (lowering::kAdamStep) whose results are written back in place; equal scalars are one program
// argument.
template <typename Lr>
void fused_adam(const char* name, TensorList params, TensorList grads, TensorList exp_avgs,
                TensorList exp_avg_sqs, TensorList max_exp_avg_sqs, TensorList steps, const Lr& lr,
                const Hyper& h, const OptTensor& grad_scale, const OptTensor& found_inf) {
  const size_t n = params.size();
  TORCH_CHECK(grads.size() == n && exp_avgs.size() == n && exp_avg_sqs.size() == n &&
                  steps.size() == n && (!h.amsgrad || max_exp_avg_sqs.size() == n),
              name, ": all tensor lists must have the same length");
  if (n == 0) return;
  OneOp op;
  SharedScalars shared;
  // AdamW's decay factor 1 - lr * weight_decay: in double on the host for a double lr, on the
  // device (once) for a tensor one.
  std::optional<Tensor> decay_tensor;
  if constexpr (std::is_same_v<Lr, Tensor>) {
    if (h.decoupled && h.weight_decay != 0) decay_tensor = (1 - lr * h.weight_decay).reshape({});
  }
  const auto decay_value = [&](at::ScalarType acc, int device) {
    if (decay_tensor) return read(*decay_tensor);
    double decay = h.weight_decay;
    if constexpr (std::is_same_v<Lr, double>) {
      if (h.decoupled) decay = 1 - lr * h.weight_decay;
    }
    return scalar(decay, acc, device);
  };
  for (size_t i = 0; i < n; ++i) {
    const Tensor& param = params[i];
    TORCH_CHECK(param.is_privateuseone(), name, ": expected tensors on tpu, got ", param.device());
    std::vector<const Tensor*> written{&param, &exp_avgs[i], &exp_avg_sqs[i]};
    if (h.amsgrad) written.push_back(&max_exp_avg_sqs[i]);
    if (grad_scale) written.push_back(&grads[i]);
    for (const Tensor* t : {&grads[i], &exp_avgs[i], &exp_avg_sqs[i]}) {
      TORCH_CHECK(t->sizes() == param.sizes(), name, ": a gradient or state of size ", t->sizes(),
                  " for a parameter of size ", param.sizes());
    }
    std::vector<const Tensor*> all(written);
    all.push_back(&grads[i]);
    all.push_back(&steps[i]);
    if (found_inf) all.push_back(&*found_inf);
    if constexpr (std::is_same_v<Lr, Tensor>) all.push_back(&lr);
    const int device = common_device(name, all);
    const auto acc = at::toOpMathType(param.scalar_type());
    std::vector<graph::DataPtr> in{read(param),
                                   read(grads[i]),
                                   read(exp_avgs[i]),
                                   read(exp_avg_sqs[i]),
                                   read(steps[i].reshape({})),
                                   lr_value(lr, acc, device)};
    if (h.weight_decay != 0) in.push_back(decay_value(acc, device));
    for (double v : {h.beta1, h.beta2, 1 - h.beta1, 1 - h.beta2, h.eps}) {
      in.push_back(scalar(v, acc, device));
    }
    if (h.amsgrad) in.push_back(read(max_exp_avg_sqs[i]));
    if (grad_scale) in.push_back(read(grad_scale->reshape({})));
    if (found_inf) in.push_back(read(found_inf->reshape({})));
    std::vector<hlo::TensorType> types;
    for (const Tensor* t : written) types.push_back(tensor_type(t->scalar_type(), t->sizes()));
    const graph::Attrs attrs{{h.amsgrad, h.maximize, h.decoupled, h.weight_decay != 0,
                              grad_scale.has_value(), found_inf.has_value()},
                             {}};
    const std::vector<graph::DataPtr> outs =
        graph::record(lowering::kAdamStep, std::move(in), attrs, std::move(types), device);
    for (size_t j = 0; j < written.size(); ++j) write(*written[j], outs[j]);
  }
  op.finish();
}

template <bool Decoupled>
void with_double_lr(TensorList params, TensorList grads, TensorList exp_avgs,
                    TensorList exp_avg_sqs, TensorList max_exp_avg_sqs, TensorList steps, double lr,
                    double beta1, double beta2, double weight_decay, double eps, bool amsgrad,
                    bool maximize, const OptTensor& grad_scale, const OptTensor& found_inf) {
  fused_adam(Decoupled ? "_fused_adamw_" : "_fused_adam_", params, grads, exp_avgs, exp_avg_sqs,
             max_exp_avg_sqs, steps, lr,
             Hyper{beta1, beta2, weight_decay, eps, amsgrad, maximize, Decoupled}, grad_scale,
             found_inf);
}

template <bool Decoupled>
void with_tensor_lr(TensorList params, TensorList grads, TensorList exp_avgs,
                    TensorList exp_avg_sqs, TensorList max_exp_avg_sqs, TensorList steps,
                    const Tensor& lr, double beta1, double beta2, double weight_decay, double eps,
                    bool amsgrad, bool maximize, const OptTensor& grad_scale,
                    const OptTensor& found_inf) {
  if (lr.is_cpu()) {  // a CPU scalar, as the CPU kernel accepts: its value
    with_double_lr<Decoupled>(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, steps,
                              lr.item<double>(), beta1, beta2, weight_decay, eps, amsgrad, maximize,
                              grad_scale, found_inf);
    return;
  }
  fused_adam(Decoupled ? "_fused_adamw_" : "_fused_adam_", params, grads, exp_avgs, exp_avg_sqs,
             max_exp_avg_sqs, steps, lr,
             Hyper{beta1, beta2, weight_decay, eps, amsgrad, maximize, Decoupled}, grad_scale,
             found_inf);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_fused_adam_", with_double_lr<false>);
  m.impl("_fused_adam_.tensor_lr", with_tensor_lr<false>);
  m.impl("_fused_adamw_", with_double_lr<true>);
  m.impl("_fused_adamw_.tensor_lr", with_tensor_lr<true>);
}

}  // namespace torch_pjrt::aten
