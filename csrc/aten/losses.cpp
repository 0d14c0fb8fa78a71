// Loss kernels: nll_loss (1-D/2-D and spatial), mse, smooth L1, Huber and binary cross entropy,
// forward and backward. nll_loss's forward checks its targets and binary_cross_entropy its input
// and target on the device (device_checks.h); the results computed from invalid values are never
// read.
#include "lowering/losses.h"

#include <ATen/ATen.h>
#include <ATen/ExpandUtils.h>
#include <ATen/native/Resize.h>
#include <torch/library.h>

#include "aten/device_checks.h"
#include "aten/op_result.h"
#include "aten/tensor_bridge.h"

namespace torch_pjrt::aten {
namespace {

using at::Tensor;

Tensor value_or_undefined(const std::optional<Tensor>& t) { return t.value_or(Tensor()); }

void check_reduction(int64_t reduction) {
  TORCH_CHECK(reduction >= 0 && reduction <= 2,
              "reduction must be 0 (none), 1 (mean) or 2 (sum), got ", reduction);
}

void check_floating(const char* name, at::ScalarType t) {
  TORCH_CHECK(at::isFloatingType(t), "\"", name, "\" not implemented for '", t, "'");
}

// Validates nll_loss's operands as PyTorch does and returns the class dim of the input.
int64_t check_nll(const Tensor& self, const Tensor& target, const Tensor& weight, bool spatial) {
  TORCH_CHECK(target.scalar_type() == at::kLong || target.scalar_type() == at::kByte,
              "expected target dtype to be Long or Byte, but got ", target.scalar_type());
  if (spatial) {
    TORCH_CHECK(self.dim() == 4,
                "only batches of spatial inputs supported (4D tensors), but got input of size: ",
                self.sizes());
    TORCH_CHECK(target.dim() == 3,
                "only batches of spatial targets supported (3D tensors) but got targets of size: ",
                target.sizes());
    TORCH_CHECK(self.size(0) == target.size(0) && self.size(2) == target.size(1) &&
                    self.size(3) == target.size(2),
                "input and target batch or spatial sizes don't match: target ", target.sizes(),
                ", input ", self.sizes());
  } else {
    TORCH_CHECK(self.dim() > 0 && self.dim() <= 2, "input tensor should be 1D or 2D");
    TORCH_CHECK(target.dim() <= 1, "0D or 1D target tensor expected, multi-target not supported");
    const bool no_batch_dim = self.dim() == 1 && target.dim() == 0;
    TORCH_CHECK(no_batch_dim || self.size(0) == target.size(0),
                "size mismatch (got input: ", self.sizes(), ", target: ", target.sizes(), ")");
  }
  check_floating(spatial ? "nll_loss2d_forward_out_frame" : "nll_loss_forward_out_frame",
                 self.scalar_type());
  const int64_t class_dim = self.dim() == 1 ? 0 : 1;
  const int64_t classes = self.size(class_dim);
  TORCH_CHECK(!weight.defined() || (weight.dim() == 1 && weight.numel() == classes),
              "weight tensor should be defined either for all ", classes,
              " classes or no classes but got weight tensor of shape: ", weight.sizes());
  return class_dim;
}

graph::Attrs nll_attrs(int64_t class_dim, int64_t reduction, int64_t ignore_index,
                       const Tensor& weight) {
  graph::Attrs attrs;
  attrs.ints = {class_dim, reduction, ignore_index, weight.defined()};
  return attrs;
}

struct NllForward {
  graph::DataPtr output, total_weight;
  std::vector<int64_t> sizes;  // of output
  at::ScalarType dtype;
  int device;
};

NllForward nll_forward(const Tensor& self, const Tensor& target,
                       const std::optional<Tensor>& weight_opt, int64_t reduction,
                       int64_t ignore_index, bool spatial) {
  const Tensor weight = value_or_undefined(weight_opt);
  check_reduction(reduction);
  const int64_t class_dim = check_nll(self, target, weight, spatial);
  const char* name = spatial ? "nll_loss2d" : "nll_loss";
  const int device = weight.defined() ? common_device(name, {&self, &target, &weight})
                                      : common_device(name, {&self, &target});
  std::vector<int64_t> sizes;
  if (reduction == lowering::kReduceNone) sizes = target.sizes().vec();
  std::vector<graph::DataPtr> inputs{read(self), read(target)};
  if (weight.defined()) inputs.push_back(read(weight));
  const at::ScalarType dtype = self.scalar_type();
  auto values = graph::record(lowering::kNllLoss, inputs,
                              nll_attrs(class_dim, reduction, ignore_index, weight),
                              {tensor_type(dtype, sizes), tensor_type(dtype, {})}, device);
  auto check =
      check_in_range(name, target, 0, self.size(class_dim),
                     {graph::CheckKind::Index, "Target ", " is out of bounds."}, {ignore_index});
  for (const graph::DataPtr& v : values) graph::depends_on(v, check);
  return {values[0], values[1], sizes, dtype, device};
}

std::tuple<Tensor, Tensor> nll_new(const NllForward& r) {
  Tensor output = make_tensor(r.output, r.dtype, r.device);
  Tensor total_weight = make_tensor(r.total_weight, r.dtype, r.device);
  finish_op();
  return {output, total_weight};
}

std::tuple<Tensor&, Tensor&> nll_out(const NllForward& r, Tensor& output, Tensor& total_weight) {
  at::native::resize_output(output, r.sizes);
  at::native::resize_output(total_weight, {});
  write(output, convert(r.output, output.scalar_type()));
  write(total_weight, convert(r.total_weight, total_weight.scalar_type()));
  finish_op();
  return {output, total_weight};
}

OpResult nll_backward(const Tensor& grad_output, const Tensor& self, const Tensor& target,
                      const std::optional<Tensor>& weight_opt, int64_t reduction,
                      int64_t ignore_index, const Tensor& total_weight, bool spatial) {
  const Tensor weight = value_or_undefined(weight_opt);
  check_reduction(reduction);
  const int64_t class_dim = check_nll(self, target, weight, spatial);
  TORCH_CHECK(total_weight.numel() == 1, "expected total_weight to be a single element tensor, ",
              "got: ", total_weight.sizes(), " (", total_weight.numel(), " elements)");
  if (reduction == lowering::kReduceNone) {
    TORCH_CHECK(grad_output.sizes() == target.sizes(), "Expected a tensor of size ", target.sizes(),
                " but got ", grad_output.sizes());
  } else {
    TORCH_CHECK(grad_output.numel() == 1,
                "Expected a single element grad_output tensor, but got: ", grad_output.sizes());
  }
  const int device =
      weight.defined()
          ? common_device("nll_loss_backward",
                          {&grad_output, &self, &target, &total_weight, &weight})
          : common_device("nll_loss_backward", {&grad_output, &self, &target, &total_weight});
  std::vector<graph::DataPtr> inputs{
      reduction == lowering::kReduceNone ? read(grad_output) : read(grad_output.reshape({})),
      read(target), read(total_weight.reshape({}))};
  if (weight.defined()) inputs.push_back(read(weight));
  auto value = graph::record1(lowering::kNllLossBackward, inputs,
                              nll_attrs(class_dim, reduction, ignore_index, weight),
                              tensor_type(self.scalar_type(), self.sizes()), device);
  return {value, self.scalar_type(), self.sizes().vec(), device};
}

// A pointwise loss of `self` and `target` (and binary cross entropy's weight) broadcast together.
OpResult pointwise_loss(lowering::PointwiseLoss kind, const char* name, const Tensor& self,
                        const Tensor& target, const Tensor& weight, int64_t reduction,
                        double param) {
  check_reduction(reduction);
  std::vector<const Tensor*> tensors{&self, &target};
  if (weight.defined()) tensors.push_back(&weight);
  const int device = common_device(name, tensors);
  std::vector<int64_t> sizes = at::infer_size(self.sizes(), target.sizes());
  if (weight.defined()) sizes = at::infer_size(sizes, weight.sizes());
  const at::ScalarType dtype = at::result_type(self, target);
  check_floating(name, dtype);
  std::vector<graph::DataPtr> inputs;
  for (const Tensor* t : tensors) inputs.push_back(read(t->expand(sizes)));
  graph::Attrs attrs;
  attrs.ints = {kind, reduction, weight.defined()};
  attrs.floats = {param};
  if (reduction != lowering::kReduceNone) sizes.clear();
  auto value =
      graph::record1(lowering::kPointwiseLoss, inputs, attrs, tensor_type(dtype, sizes), device);
  return {value, dtype, sizes, device};
}

// binary_cross_entropy: input and target must lie in [0, 1] (checked on the device).
OpResult bce_result(const Tensor& self, const Tensor& target, const std::optional<Tensor>& weight,
                    int64_t reduction) {
  OpResult r = pointwise_loss(lowering::kBinaryCrossEntropy, "binary_cross_entropy", self, target,
                              value_or_undefined(weight), reduction, 0);
  for (const auto& [t, name] : {std::pair{&self, "input"}, std::pair{&target, "target"}}) {
    graph::depends_on(
        r.value,
        check_unit_interval(
            "binary_cross_entropy", *t,
            {graph::CheckKind::Runtime,
             std::string("all elements of ") + name + " should be between 0 and 1", "", false}));
  }
  return r;
}

// The gradient of a pointwise loss with respect to `self`.
OpResult pointwise_loss_backward(lowering::PointwiseLoss kind, const char* name,
                                 const Tensor& grad_output, const Tensor& self,
                                 const Tensor& target, const Tensor& weight, int64_t reduction,
                                 double param) {
  check_reduction(reduction);
  check_floating(name, self.scalar_type());
  std::vector<const Tensor*> tensors{&grad_output, &self, &target};
  if (weight.defined()) tensors.push_back(&weight);
  const int device = common_device(name, tensors);
  const auto sizes = self.sizes();
  std::vector<graph::DataPtr> inputs{reduction == lowering::kReduceNone
                                         ? read(grad_output.expand(sizes))
                                         : read(grad_output.reshape({}))};
  for (size_t i = 1; i < tensors.size(); ++i) inputs.push_back(read(tensors[i]->expand(sizes)));
  graph::Attrs attrs;
  attrs.ints = {kind, reduction, weight.defined()};
  attrs.floats = {param};
  auto value = graph::record1(lowering::kPointwiseLossBackward, inputs, attrs,
                              tensor_type(self.scalar_type(), sizes), device);
  return {value, self.scalar_type(), sizes.vec(), device};
}

// smooth_l1_loss's beta and huber_loss's delta.
void check_nonnegative(const char* loss, const char* param, double value) {
  TORCH_CHECK(value >= 0, loss, " does not support negative values for ", param, ".");
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("nll_loss_forward", [](const Tensor& self, const Tensor& target,
                                const std::optional<Tensor>& weight, int64_t reduction,
                                c10::SymInt ignore_index) {
    return nll_new(nll_forward(self, target, weight, reduction, ignore_index.expect_int(), false));
  });
  m.impl("nll_loss_forward.output",
         [](const Tensor& self, const Tensor& target, const std::optional<Tensor>& weight,
            int64_t reduction, c10::SymInt ignore_index, Tensor& output,
            Tensor& total_weight) -> std::tuple<Tensor&, Tensor&> {
           return nll_out(
               nll_forward(self, target, weight, reduction, ignore_index.expect_int(), false),
               output, total_weight);
         });
  m.impl("nll_loss2d_forward", [](const Tensor& self, const Tensor& target,
                                  const std::optional<Tensor>& weight, int64_t reduction,
                                  c10::SymInt ignore_index) {
    return nll_new(nll_forward(self, target, weight, reduction, ignore_index.expect_int(), true));
  });
  m.impl("nll_loss2d_forward.output",
         [](const Tensor& self, const Tensor& target, const std::optional<Tensor>& weight,
            int64_t reduction, c10::SymInt ignore_index, Tensor& output,
            Tensor& total_weight) -> std::tuple<Tensor&, Tensor&> {
           return nll_out(
               nll_forward(self, target, weight, reduction, ignore_index.expect_int(), true),
               output, total_weight);
         });
  m.impl("nll_loss_backward", [](const Tensor& grad, const Tensor& self, const Tensor& target,
                                 const std::optional<Tensor>& weight, int64_t reduction,
                                 c10::SymInt ignore_index, const Tensor& total_weight) {
    return to_new(nll_backward(grad, self, target, weight, reduction, ignore_index.expect_int(),
                               total_weight, false));
  });
  m.impl("nll_loss_backward.grad_input",
         [](const Tensor& grad, const Tensor& self, const Tensor& target,
            const std::optional<Tensor>& weight, int64_t reduction, c10::SymInt ignore_index,
            const Tensor& total_weight, Tensor& grad_input) -> Tensor& {
           return to_out(grad_input, nll_backward(grad, self, target, weight, reduction,
                                                  ignore_index.expect_int(), total_weight, false));
         });
  m.impl("nll_loss2d_backward", [](const Tensor& grad, const Tensor& self, const Tensor& target,
                                   const std::optional<Tensor>& weight, int64_t reduction,
                                   c10::SymInt ignore_index, const Tensor& total_weight) {
    return to_new(nll_backward(grad, self, target, weight, reduction, ignore_index.expect_int(),
                               total_weight, true));
  });
  m.impl("nll_loss2d_backward.grad_input",
         [](const Tensor& grad, const Tensor& self, const Tensor& target,
            const std::optional<Tensor>& weight, int64_t reduction, c10::SymInt ignore_index,
            const Tensor& total_weight, Tensor& grad_input) -> Tensor& {
           return to_out(grad_input, nll_backward(grad, self, target, weight, reduction,
                                                  ignore_index.expect_int(), total_weight, true));
         });

  m.impl("mse_loss", [](const Tensor& self, const Tensor& target, int64_t reduction) {
    return to_new(pointwise_loss(lowering::kMse, "mse_loss", self, target, Tensor(), reduction, 0));
  });
  m.impl("mse_loss.out",
         [](const Tensor& self, const Tensor& target, int64_t reduction, Tensor& out) -> Tensor& {
           return to_out(out, pointwise_loss(lowering::kMse, "mse_loss", self, target, Tensor(),
                                             reduction, 0));
         });
  m.impl("mse_loss_backward",
         [](const Tensor& grad, const Tensor& self, const Tensor& target, int64_t reduction) {
           return to_new(pointwise_loss_backward(lowering::kMse, "mse_loss_backward", grad, self,
                                                 target, Tensor(), reduction, 0));
         });
  m.impl("mse_loss_backward.grad_input",
         [](const Tensor& grad, const Tensor& self, const Tensor& target, int64_t reduction,
            Tensor& grad_input) -> Tensor& {
           return to_out(grad_input,
                         pointwise_loss_backward(lowering::kMse, "mse_loss_backward", grad, self,
                                                 target, Tensor(), reduction, 0));
         });

  m.impl("smooth_l1_loss",
         [](const Tensor& self, const Tensor& target, int64_t reduction, double beta) {
           check_nonnegative("smooth_l1_loss", "beta", beta);
           return to_new(pointwise_loss(lowering::kSmoothL1, "smooth_l1_loss", self, target,
                                        Tensor(), reduction, beta));
         });
  m.impl("smooth_l1_loss.out",
         [](const Tensor& self, const Tensor& target, int64_t reduction, double beta,
            Tensor& out) -> Tensor& {
           check_nonnegative("smooth_l1_loss", "beta", beta);
           return to_out(out, pointwise_loss(lowering::kSmoothL1, "smooth_l1_loss", self, target,
                                             Tensor(), reduction, beta));
         });
  m.impl("smooth_l1_loss_backward", [](const Tensor& grad, const Tensor& self, const Tensor& target,
                                       int64_t reduction, double beta) {
    return to_new(pointwise_loss_backward(lowering::kSmoothL1, "smooth_l1_loss_backward", grad,
                                          self, target, Tensor(), reduction, beta));
  });
  m.impl("smooth_l1_loss_backward.grad_input",
         [](const Tensor& grad, const Tensor& self, const Tensor& target, int64_t reduction,
            double beta, Tensor& grad_input) -> Tensor& {
           return to_out(grad_input,
                         pointwise_loss_backward(lowering::kSmoothL1, "smooth_l1_loss_backward",
                                                 grad, self, target, Tensor(), reduction, beta));
         });

  m.impl("huber_loss",
         [](const Tensor& self, const Tensor& target, int64_t reduction, double delta) {
           check_nonnegative("huber_loss", "delta", delta);
           return to_new(pointwise_loss(lowering::kHuber, "huber_loss", self, target, Tensor(),
                                        reduction, delta));
         });
  m.impl("huber_loss.out",
         [](const Tensor& self, const Tensor& target, int64_t reduction, double delta,
            Tensor& out) -> Tensor& {
           check_nonnegative("huber_loss", "delta", delta);
           return to_out(out, pointwise_loss(lowering::kHuber, "huber_loss", self, target, Tensor(),
                                             reduction, delta));
         });
  m.impl("huber_loss_backward", [](const Tensor& grad, const Tensor& self, const Tensor& target,
                                   int64_t reduction, double delta) {
    return to_new(pointwise_loss_backward(lowering::kHuber, "huber_loss_backward", grad, self,
                                          target, Tensor(), reduction, delta));
  });
  m.impl("huber_loss_backward.out",
         [](const Tensor& grad, const Tensor& self, const Tensor& target, int64_t reduction,
            double delta, Tensor& grad_input) -> Tensor& {
           return to_out(grad_input,
                         pointwise_loss_backward(lowering::kHuber, "huber_loss_backward", grad,
                                                 self, target, Tensor(), reduction, delta));
         });

  m.impl("binary_cross_entropy",
         [](const Tensor& self, const Tensor& target, const std::optional<Tensor>& weight,
            int64_t reduction) { return to_new(bce_result(self, target, weight, reduction)); });
  m.impl("binary_cross_entropy.out",
         [](const Tensor& self, const Tensor& target, const std::optional<Tensor>& weight,
            int64_t reduction, Tensor& out) -> Tensor& {
           return to_out(out, bce_result(self, target, weight, reduction));
         });
  m.impl("binary_cross_entropy_backward",
         [](const Tensor& grad, const Tensor& self, const Tensor& target,
            const std::optional<Tensor>& weight, int64_t reduction) {
           return to_new(pointwise_loss_backward(lowering::kBinaryCrossEntropy,
                                                 "binary_cross_entropy_backward", grad, self,
                                                 target, value_or_undefined(weight), reduction, 0));
         });
  m.impl("binary_cross_entropy_backward.grad_input",
         [](const Tensor& grad, const Tensor& self, const Tensor& target,
            const std::optional<Tensor>& weight, int64_t reduction, Tensor& grad_input) -> Tensor& {
           return to_out(grad_input,
                         pointwise_loss_backward(lowering::kBinaryCrossEntropy,
                                                 "binary_cross_entropy_backward", grad, self,
                                                 target, value_or_undefined(weight), reduction, 0));
         });
}

}  // namespace torch_pjrt::aten
