// multi_margin_loss and multilabel_margin_loss with their backward ops, composed of native ops
// over the [frames, classes] input, with PyTorch's checks. Targets out of range are reported by a
// device-side check (device_checks.h) instead of a host read.
#include <ATen/ATen.h>
#include <torch/library.h>

#include "aten/device_checks.h"
#include "aten/op_result.h"
#include "aten/tensor_bridge.h"
#include "lowering/losses.h"

namespace torch_pjrt::aten {
namespace {

using at::Scalar;
using at::Tensor;

// The input as [frames, classes] after PyTorch's shape check (a vector is one frame).
Tensor frames(const Tensor& input) {
  const int64_t n = input.dim();
  const bool valid = (n == 2 && input.size(1) != 0) || (n == 1 && input.size(0) != 0) || n == 0;
  TORCH_CHECK(valid,
              "Expected non-empty vector or matrix with optional 0-dim batch size, but got: ",
              input.sizes());
  return n == 2 ? input : input.reshape({1, -1});
}

void check_dtypes(const char* kernel, const Tensor& input, const Tensor& target) {
  TORCH_CHECK(target.scalar_type() == at::kLong, "expected scalar type Long but found ",
              target.scalar_type());
  TORCH_CHECK_NOT_IMPLEMENTED(
      input.scalar_type() == at::kFloat || input.scalar_type() == at::kDouble, "\"", kernel,
      "\" not implemented for '", input.scalar_type(), "'");
}

// The result reads as invalid until the device confirms every target lies in [lo, dim).
Tensor checked(const Tensor& result, const char* op, const Tensor& target, int64_t lo, int64_t dim,
               const char* message) {
  graph::depends_on(read(result), check_in_range(op, target, lo, dim,
                                                 {graph::CheckKind::Runtime, message, "", false}));
  return result;
}

// Per-frame losses [frames] reduced as `reduction`; `keep_frames` keeps the none-reduced frame dim.
Tensor reduce(const Tensor& per_frame, int64_t reduction, bool keep_frames) {
  if (reduction == lowering::kReduceMean) return per_frame.mean();
  if (reduction == lowering::kReduceSum) return per_frame.sum();
  return keep_frames ? per_frame : per_frame.reshape({});
}

// The gradient of a frame-wise loss scaled by grad_output as PyTorch's kernels do.
Tensor scale_grad(const Tensor& grad, const Tensor& grad_output, int64_t reduction,
                  const Tensor& input) {
  const bool scalar = reduction != lowering::kReduceNone || grad_output.dim() == 0;
  return (grad * (scalar ? grad_output.reshape({}) : grad_output.reshape({-1, 1})))
      .reshape(input.sizes());
}

// multi_margin_loss's terms: {h, active, target mask} over [frames, classes], where h is
// margin - x[y] + x[j] (p = 1) or its square, and active marks its positive non-target terms.
struct MultiMargin {
  Tensor z, active, is_target, weight_of_target;
  int64_t dim;
};

MultiMargin multi_margin(const Tensor& input, const Tensor& target, const Scalar& p,
                         const Scalar& margin, const std::optional<Tensor>& weight,
                         const char* kernel) {
  TORCH_CHECK(p.toInt() == 1 || p.toInt() == 2, "only p == 1 and p == 2 supported");
  const Tensor x = frames(input);
  TORCH_CHECK(target.dim() <= 1 && target.numel() == x.size(0),
              "inconsistent target size, got: ", target.sizes());
  check_dtypes(kernel, input, target);
  const Tensor y = target.reshape({-1, 1});
  const int64_t dim = x.size(1);
  const Tensor z = margin.toDouble() - x.gather(1, y.clamp(0, dim - 1)) + x;
  const Tensor is_target = at::arange(dim, y.options()).unsqueeze(0) == y;
  const Tensor active = (z > 0).logical_and_(is_target.logical_not());
  Tensor w;
  if (weight && weight->defined())
    w = weight->reshape({-1}).index_select(0, y.reshape({-1}).clamp(0, dim - 1)).unsqueeze(1);
  return {z, active, is_target, w, dim};
}

Tensor multi_margin_loss_tensor(const Tensor& input, const Tensor& target, const Scalar& p,
                                const Scalar& margin, const std::optional<Tensor>& weight,
                                int64_t reduction) {
  OneOp op;
  const MultiMargin m =
      multi_margin(input, target, p, margin, weight, "multi_margin_loss_cpu_kernel");
  Tensor h = p.toInt() == 1 ? m.z : m.z * m.z;
  if (m.weight_of_target.defined()) h = h * m.weight_of_target;
  const Tensor per_frame = at::where(m.active, h, 0).sum(1) / m.dim;
  Tensor r = checked(reduce(per_frame, reduction, target.dim() > 0), "multi_margin_loss", target, 0,
                     m.dim, "target out of range");
  op.finish();
  return r;
}

Tensor multi_margin_loss_backward_tensor(const Tensor& grad_output, const Tensor& input,
                                         const Tensor& target, const Scalar& p,
                                         const Scalar& margin, const std::optional<Tensor>& weight,
                                         int64_t reduction) {
  OneOp op;
  const MultiMargin m =
      multi_margin(input, target, p, margin, weight, "multi_margin_loss_backward_cpu_kernel");
  const double g =
      1.0 / static_cast<double>(reduction == lowering::kReduceMean ? frames(input).size(0) * m.dim
                                                                   : m.dim);
  Tensor h = p.toInt() == 1 ? at::full_like(m.z, g) : 2 * g * m.z;
  if (m.weight_of_target.defined()) h = h * m.weight_of_target;
  h = at::where(m.active, h, 0);
  const Tensor grad = h - m.is_target * h.sum(1, true);
  Tensor r = checked(scale_grad(grad, grad_output, reduction, input), "multi_margin_loss_backward",
                     target, 0, m.dim, "target out of range");
  op.finish();
  return r;
}

// multilabel_margin_loss's terms over [frames, target positions, classes]: z = 1 - x[y_k] + x[i],
// active where positive, y_k precedes the row's first negative target and class i is no target.
struct MultiLabel {
  Tensor z, active, is_target;  // is_target [frames, classes], of the input's dtype
  int64_t dim;
};

MultiLabel multilabel(const Tensor& input, const Tensor& target, const char* kernel) {
  const Tensor x = frames(input);
  const int64_t dim = x.size(1);
  if (input.dim() <= 1) {
    TORCH_CHECK(target.dim() <= 1 && target.numel() == dim, "inconsistent size ", target.sizes(),
                " for argument #2 'target'");
  } else {
    TORCH_CHECK(target.dim() == 2 && target.size(0) == x.size(0) && target.size(1) == dim,
                "inconsistent size ", target.sizes(), " for argument #2 'target'");
  }
  check_dtypes(kernel, input, target);
  const Tensor y = target.reshape({x.size(0), dim});
  const Tensor listed = (y < 0).cumsum(1).eq(0);  // before the first negative target
  const Tensor classes = at::arange(dim, y.options()).view({1, 1, dim});
  const Tensor is_target =
      ((y.unsqueeze(2) == classes).logical_and_(listed.unsqueeze(2))).any(1);  // [frames, classes]
  const Tensor xy = x.gather(1, y.clamp(0, dim - 1));  // [frames, positions]
  const Tensor z = 1 - xy.unsqueeze(2) + x.unsqueeze(1);
  const Tensor active =
      (z > 0).logical_and_(listed.unsqueeze(2)).logical_and_(is_target.logical_not().unsqueeze(1));
  return {z, active, is_target.to(input.scalar_type()).reshape(target.sizes()), dim};
}

std::tuple<Tensor, Tensor> multilabel_margin_loss_forward_tensor(const Tensor& input,
                                                                 const Tensor& target,
                                                                 int64_t reduction) {
  OneOp op;
  const MultiLabel m = multilabel(input, target, "multilabel_margin_loss_forward_out_frame");
  const Tensor per_frame = at::where(m.active, m.z, 0).sum({1, 2}) / m.dim;
  const Tensor output =
      checked(reduce(per_frame, reduction, target.dim() > 1), "multilabel_margin_loss", target, -1,
              m.dim, "argument #2 'target' is out of range");
  op.finish();
  return {output, m.is_target};
}

Tensor multilabel_margin_loss_backward_tensor(const Tensor& grad_output, const Tensor& input,
                                              const Tensor& target, int64_t reduction,
                                              const Tensor& is_target) {
  OneOp op;
  const MultiLabel m = multilabel(input, target, "multilabel_margin_loss_backward_out_frame");
  TORCH_CHECK(is_target.sizes() == target.sizes(), "Expected tensor for argument #5 'is_target' ",
              "to have the same size as tensor for argument #3 'target'");
  const int64_t n = frames(input).size(0);
  const double g =
      1.0 / static_cast<double>(reduction == lowering::kReduceMean ? n * m.dim : m.dim);
  // Each active term adds g to class i and subtracts g from its target class y_k.
  const Tensor counts = m.active.to(input.scalar_type());
  const Tensor per_class = counts.sum(1), per_target = counts.sum(2);
  const Tensor y = target.reshape({n, m.dim}).clamp(0, m.dim - 1);
  const Tensor grad = (per_class - at::zeros_like(per_class).scatter_add(1, y, per_target)) * g;
  Tensor r =
      checked(scale_grad(grad, grad_output, reduction, input), "multilabel_margin_loss_backward",
              target, -1, m.dim, "argument #3 'target' is out of range");
  op.finish();
  return r;
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("multi_margin_loss", multi_margin_loss_tensor);
  m.impl("multi_margin_loss.out",
         [](const Tensor& input, const Tensor& target, const Scalar& p, const Scalar& margin,
            const std::optional<Tensor>& weight, int64_t reduction, Tensor& out) -> Tensor& {
           return copy_to_out(
               out, multi_margin_loss_tensor(input, target, p, margin, weight, reduction));
         });
  m.impl("multi_margin_loss_backward", multi_margin_loss_backward_tensor);
  m.impl("multi_margin_loss_backward.grad_input",
         [](const Tensor& grad, const Tensor& input, const Tensor& target, const Scalar& p,
            const Scalar& margin, const std::optional<Tensor>& weight, int64_t reduction,
            Tensor& out) -> Tensor& {
           return copy_to_out(out, multi_margin_loss_backward_tensor(grad, input, target, p, margin,
                                                                     weight, reduction));
         });
  m.impl("multilabel_margin_loss_forward", multilabel_margin_loss_forward_tensor);
  m.impl("multilabel_margin_loss_forward.output",
         [](const Tensor& input, const Tensor& target, int64_t reduction, Tensor& output,
            Tensor& is_target) -> std::tuple<Tensor&, Tensor&> {
           auto [o, t] = multilabel_margin_loss_forward_tensor(input, target, reduction);
           copy_to_out(output, o);
           copy_to_out(is_target, t);
           return {output, is_target};
         });
  m.impl("multilabel_margin_loss_backward", multilabel_margin_loss_backward_tensor);
  m.impl("multilabel_margin_loss_backward.grad_input",
         [](const Tensor& grad, const Tensor& input, const Tensor& target, int64_t reduction,
            const Tensor& is_target, Tensor& out) -> Tensor& {
           return copy_to_out(out, multilabel_margin_loss_backward_tensor(grad, input, target,
                                                                          reduction, is_target));
         });
}

}  // namespace torch_pjrt::aten
