// The two kernels torch.amp.GradScaler calls: unscaling gradients while noting non-finite values,
// and updating the loss scale. Each runs as one program (OneOp) built from lowered ops, so a
// scaler step reads nothing back to the host beyond the found_inf check GradScaler itself makes.
#include <ATen/ATen.h>
#include <torch/library.h>

#include "aten/tensor_bridge.h"

namespace torch_pjrt::aten {
namespace {

using at::Tensor;

void check_one_element(const Tensor& t, const char* name, at::ScalarType dtype,
                       const char* type_name) {
  TORCH_CHECK(t.is_privateuseone(), name, " must be a tpu tensor.");
  TORCH_CHECK(t.numel() == 1, name, " must be a 1-element tensor.");
  TORCH_CHECK(t.scalar_type() == dtype, name, " must be ", type_name, " tensor.");
}

// For each gradient: found_inf becomes 1 where it has an inf or nan, and the gradient is
// multiplied by inv_scale in float32 (as CUDA's kernel computes), then stored in its own dtype.
void non_finite_check_and_unscale(at::TensorList grads, Tensor& found_inf,
                                  const Tensor& inv_scale) {
  check_one_element(inv_scale, "inv_scale", at::kFloat, "a float");
  check_one_element(found_inf, "found_inf", at::kFloat, "a float");
  for (const Tensor& g : grads) {
    TORCH_CHECK(g.is_privateuseone(), "One of scaled_grads was not a tpu tensor.");
    TORCH_CHECK(g.device() == inv_scale.device() && g.device() == found_inf.device(),
                "scaled_grads, inv_scale and found_inf must be on the same device.");
    TORCH_CHECK(at::isFloatingType(g.scalar_type()), "_amp_foreach_non_finite_check_and_unscale_",
                ": scaled_grads must be floating point tensors, got ", g.scalar_type());
    TORCH_CHECK(g.layout() == at::kStrided, "One of scaled_grads was not a strided tensor.");
  }
  if (grads.empty()) return;
  OneOp op;
  std::vector<Tensor> nonfinite;
  nonfinite.reserve(grads.size());
  for (const Tensor& g : grads) {
    nonfinite.push_back(at::logical_not(at::isfinite(g)).any());
    const Tensor scaled =
        at::mul(g.scalar_type() == at::kFloat ? g : g.to(at::kFloat), inv_scale.reshape({}));
    Tensor(g).copy_(scaled);
  }
  const Tensor any = at::stack(nonfinite).any().to(at::kFloat).reshape(found_inf.sizes());
  found_inf.copy_(at::maximum(found_inf, any));
  op.finish();
}

// found_inf: scale *= backoff, tracker = 0. Otherwise tracker += 1, and when it reaches
// growth_interval the scale grows (if the grown scale is finite) and the tracker resets. The
// products are float32 (CUDA's kernel rounds a double product once; the two agree for the usual
// power-of-two factors), so the update also runs on devices without float64.
Tensor& update_scale(Tensor& scale, Tensor& growth_tracker, const Tensor& found_inf,
                     double growth_factor, double backoff_factor, int64_t growth_interval) {
  check_one_element(growth_tracker, "growth_tracker", at::kInt, "an int");
  check_one_element(scale, "current_scale", at::kFloat, "a float");
  check_one_element(found_inf, "found_inf", at::kFloat, "a float");
  TORCH_CHECK(scale.device() == growth_tracker.device() && scale.device() == found_inf.device(),
              "current_scale, growth_tracker and found_inf must be on the same device.");
  OneOp op;
  const Tensor inf = found_inf.ne(0);
  const Tensor successful = growth_tracker + 1;
  const Tensor grown = scale * growth_factor;
  const Tensor grow = at::logical_and(successful.eq(growth_interval), inf.logical_not());
  const Tensor new_scale =
      at::where(inf, scale * backoff_factor,
                at::where(at::logical_and(grow, at::isfinite(grown)), grown, scale));
  const Tensor new_tracker =
      at::where(at::logical_or(inf, grow), at::zeros_like(successful), successful);
  scale.copy_(new_scale);
  growth_tracker.copy_(new_tracker);
  op.finish();
  return scale;
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_amp_foreach_non_finite_check_and_unscale_", non_finite_check_and_unscale);
  m.impl("_amp_update_scale_", update_scale);
}

}  // namespace
}  // namespace torch_pjrt::aten
