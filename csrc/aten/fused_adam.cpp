// aten::_fused_adam_ / _fused_adamw_ (torch.optim.Adam/AdamW(fused=True), which Transformers'
// Trainer picks by default): the math of PyTorch's fused kernels, per tensor in float32 (or
// double), the whole list recorded as one program. grad_scale unscales the gradients (written back,
// as the CUDA kernel does); found_inf != 0 leaves every tensor unchanged. No value is read back to
// the host.
#include <ATen/ATen.h>
#include <ATen/OpMathType.h>
#include <torch/library.h>

#include "aten/tensor_bridge.h"

namespace torch_pjrt::aten {
namespace {

using at::Tensor;
using at::TensorList;
using OptTensor = std::optional<Tensor>;

struct Hyper {
  double beta1, beta2, weight_decay, eps;
  bool amsgrad, maximize, decoupled;  // decoupled: AdamW's weight decay
};

// Stores `value` into `dst` unless `skip` (found_inf) is set.
void store(const Tensor& dst, const Tensor& value, const OptTensor& skip) {
  dst.copy_(skip ? at::where(*skip, dst, value) : value);
}

// `lr` is a double or a tensor on the device.
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
  const OptTensor skip = found_inf ? OptTensor(found_inf->ne(0)) : std::nullopt;
  for (size_t i = 0; i < n; ++i) {
    const Tensor& param = params[i];
    TORCH_CHECK(param.is_privateuseone(), name, ": expected tensors on tpu, got ", param.device());
    const auto acc = at::toOpMathType(param.scalar_type());
    Tensor grad = grads[i].to(acc);
    if (grad_scale) {
      grad = grad / grad_scale->to(acc);
      store(grads[i], grad, skip);
    }
    if (h.maximize) grad = -grad;
    Tensor p = param.to(acc);
    if (h.weight_decay != 0) {
      if (h.decoupled) {
        p = p * (1 - lr * h.weight_decay);
      } else {
        grad = grad + p * h.weight_decay;
      }
    }
    const Tensor exp_avg = exp_avgs[i].to(acc) * h.beta1 + grad * (1 - h.beta1);
    const Tensor exp_avg_sq = exp_avg_sqs[i].to(acc) * h.beta2 + grad * grad * (1 - h.beta2);
    const Tensor step = steps[i].to(acc);
    const Tensor correction1 = 1 - at::pow(h.beta1, step);
    const Tensor correction2_sqrt = (1 - at::pow(h.beta2, step)).sqrt();
    Tensor second = exp_avg_sq;
    if (h.amsgrad) {
      second = at::maximum(max_exp_avg_sqs[i].to(acc), exp_avg_sq);
      store(max_exp_avg_sqs[i], second, skip);
    }
    const Tensor denom = second.sqrt() / correction2_sqrt + h.eps;
    p = p - (lr / correction1) * exp_avg / denom;
    store(exp_avgs[i], exp_avg, skip);
    store(exp_avg_sqs[i], exp_avg_sq, skip);
    store(param, p, skip);
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
