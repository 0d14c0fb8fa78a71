// Activation kernels and their backward ops (gelu, silu, softplus, elu, leaky_relu, hardswish,
// hardsigmoid, hardtanh, log_sigmoid, mish, threshold, softshrink, hardshrink, glu, prelu), in
// functional, in-place and out= form.
#include "lowering/activations.h"

#include <ATen/ATen.h>
#include <torch/library.h>

#include "aten/op_result.h"
#include "aten/tensor_bridge.h"
#include "lowering/elementwise.h"

namespace torch_pjrt::aten {
namespace {

using at::Scalar;
using at::Tensor;

void check_floating(const char* kernel, at::ScalarType t) {
  TORCH_CHECK_NOT_IMPLEMENTED(at::isFloatingType(t), "\"", kernel, "\" not implemented for '",
                              c10::toString(t), "'");
}

graph::Attrs floats(std::vector<double> values, std::vector<int64_t> ints = {}) {
  graph::Attrs attrs;
  attrs.floats = std::move(values);
  attrs.ints = std::move(ints);
  return attrs;
}

// Forward activations keep the input's (floating) dtype.
OpResult forward(const graph::OpDef& op, const char* kernel, const Tensor& x,
                 graph::Attrs attrs = {}) {
  check_floating(kernel, x.scalar_type());
  return elementwise(op, op.name, {&x}, x.scalar_type(), std::move(attrs));
}

// Backward ops: grad and the saved tensor(s) in their promoted dtype.
OpResult backward(const graph::OpDef& op, const char* kernel, std::vector<const Tensor*> inputs,
                  graph::Attrs attrs = {}) {
  const at::ScalarType dtype = at::result_type(*inputs[0], *inputs[1]);
  check_floating(kernel, dtype);
  return elementwise(op, op.name, std::move(inputs), dtype, std::move(attrs));
}

bool complex_operands(const Tensor& g, const Tensor& y) {
  return at::isComplexType(at::result_type(g, y));
}

// The derivative of sigmoid (y (1 - y)) or tanh (1 - y^2) from the result y. For complex
// operands the CPU's kernels multiply the gradient by its conjugate.
Tensor derivative_from_result(const Tensor& y, bool sigmoid) {
  return sigmoid ? at::mul(at::rsub(y, 1), y) : at::rsub(at::mul(y, y), 1);
}

int64_t gelu_tanh(c10::string_view approximate) {
  TORCH_CHECK(approximate == "none" || approximate == "tanh",
              "approximate argument must be either none or tanh.");
  return approximate == "tanh";
}

OpResult gelu_result(const Tensor& x, c10::string_view approximate) {
  return forward(lowering::kGelu, "GeluKernelImpl", x, floats({}, {gelu_tanh(approximate)}));
}

OpResult gelu_backward_result(const Tensor& g, const Tensor& x, c10::string_view approximate) {
  return backward(lowering::kGeluBackward, "GeluBackwardKernelImpl", {&g, &x},
                  floats({}, {gelu_tanh(approximate)}));
}

// Complex silu is x * sigmoid(x), as on the CPU.
OpResult silu_result(const Tensor& x) {
  if (!x.is_complex()) return forward(lowering::kSilu, "silu_cpu", x);
  OneOp one;
  const Tensor r = x * at::sigmoid(x);
  one.finish();
  return result_of(r);
}
OpResult hardswish_result(const Tensor& x) {
  return forward(lowering::kHardswish, "hardswish_cpu", x);
}
OpResult hardsigmoid_result(const Tensor& x) {
  return forward(lowering::kHardsigmoid, "hardsigmoid_cpu", x);
}
OpResult mish_result(const Tensor& x) { return forward(lowering::kMish, "mish_cpu", x); }

OpResult softplus_result(const Tensor& x, const Scalar& beta, const Scalar& threshold) {
  return forward(lowering::kSoftplus, "softplus_cpu", x,
                 floats({beta.toDouble(), threshold.toDouble()}));
}

OpResult softplus_backward_result(const Tensor& g, const Tensor& x, const Scalar& beta,
                                  const Scalar& threshold) {
  return backward(lowering::kSoftplusBackward, "softplus_backward_cpu", {&g, &x},
                  floats({beta.toDouble(), threshold.toDouble()}));
}

OpResult elu_result(const Tensor& x, const Scalar& alpha, const Scalar& scale,
                    const Scalar& in_scale) {
  return forward(lowering::kElu, "elu_cpu", x,
                 floats({alpha.toDouble(), scale.toDouble(), in_scale.toDouble()}));
}

OpResult elu_backward_result(const Tensor& g, const Scalar& alpha, const Scalar& scale,
                             const Scalar& in_scale, bool is_result, const Tensor& self_or_result) {
  return backward(lowering::kEluBackward, "elu_backward_cpu", {&g, &self_or_result},
                  floats({alpha.toDouble(), scale.toDouble(), in_scale.toDouble()},
                         {static_cast<int64_t>(is_result)}));
}

OpResult leaky_relu_result(const Tensor& x, const Scalar& slope) {
  return forward(lowering::kLeakyRelu, "leaky_relu_cpu", x, floats({slope.toDouble()}));
}

OpResult leaky_relu_backward_result(const Tensor& g, const Tensor& x, const Scalar& slope) {
  return backward(lowering::kLeakyReluBackward, "leaky_relu_backward_cpu", {&g, &x},
                  floats({slope.toDouble()}));
}

// hardtanh is clamp to [min, max], so NaN propagates. Integer inputs take the bounds truncated to
// integers (PyTorch's legacy behaviour: the bounds do not promote).
OpResult hardtanh_result(const Tensor& x, const Scalar& min, const Scalar& max) {
  TORCH_CHECK(x.scalar_type() != at::kBool, "Bool inputs not supported for hardtanh");
  const bool integral = at::isIntegralType(x.scalar_type(), false);
  const Scalar lo = integral ? Scalar(min.toLong()) : min;
  const Scalar hi = integral ? Scalar(max.toLong()) : max;
  TORCH_CHECK(x.scalar_type() != at::kByte || (lo.toLong() >= 0 && hi.toLong() >= 0),
              "cannot do hardtanh on an unsigned type with negative limits");
  const Tensor lo_t = at::native::wrapped_scalar_tensor(lo);
  const Tensor hi_t = at::native::wrapped_scalar_tensor(hi);
  return elementwise(lowering::kClamp, "hardtanh", {&x, &lo_t, &hi_t}, x.scalar_type(), {});
}

OpResult hardtanh_backward_result(const Tensor& g, const Tensor& x, const Scalar& lo,
                                  const Scalar& hi) {
  return backward(lowering::kHardtanhBackward, "hardtanh_backward_cpu", {&g, &x},
                  floats({lo.toDouble(), hi.toDouble()}));
}

OpResult threshold_result(const Tensor& x, const Scalar& threshold, const Scalar& value) {
  TORCH_CHECK(x.scalar_type() != at::kBool, "\"threshold_cpu\" not implemented for 'Bool'");
  OpResult r = elementwise(lowering::kThreshold, "threshold", {&x}, x.scalar_type(),
                           floats({threshold.toDouble(), value.toDouble()}));
  r.overlap_allowed = true;  // the CPU's threshold skips the overlap checks: it is idempotent
  return r;
}

std::tuple<Tensor, Tensor> log_sigmoid_forward(const Tensor& x) {
  check_floating("log_sigmoid_cpu", x.scalar_type());
  const int device = common_device("log_sigmoid_forward", {&x});
  const hlo::TensorType type = tensor_type(x.scalar_type(), x.sizes());
  std::vector<graph::DataPtr> outs =
      graph::record(lowering::kLogSigmoidForward, {read(x)}, {}, {type, type}, device);
  Tensor output = make_tensor(outs[0], x.scalar_type(), device);
  Tensor buffer = make_tensor(outs[1], x.scalar_type(), device);
  finish_op();
  return {output, buffer};
}

OpResult log_sigmoid_backward_result(const Tensor& g, const Tensor& x, const Tensor& buffer) {
  return backward(lowering::kLogSigmoidBackward, "log_sigmoid_backward_cpu", {&g, &x, &buffer});
}

OpResult softshrink_result(const Tensor& x, const Scalar& lambd) {
  TORCH_CHECK(lambd.toDouble() >= 0, "lambda must be greater or equal to 0, but found to be ",
              lambd, ".");
  return forward(lowering::kSoftshrink, "softshrink_cpu", x, floats({lambd.toDouble()}));
}

OpResult hardshrink_result(const Tensor& x, const Scalar& lambd) {
  return forward(lowering::kShrink, "hardshrink_cpu", x, floats({lambd.toDouble()}));
}

OpResult shrink_backward_result(const Tensor& g, const Tensor& x, const Scalar& lambd) {
  return backward(lowering::kShrink, "shrink_backward_cpu", {&g, &x}, floats({lambd.toDouble()}));
}

// glu's halves along `dim`, after PyTorch's checks.
std::vector<Tensor> glu_halves(const Tensor& x, int64_t dim, const char* kernel) {
  TORCH_CHECK(x.dim() > 0, "glu does not support scalars because halving size must be even");
  const int64_t wrap = at::maybe_wrap_dim(dim, x.dim());
  TORCH_CHECK(x.size(wrap) % 2 == 0, "Halving dimension must be even, but dimension ", wrap,
              " is size ", x.size(wrap));
  check_floating(kernel, x.scalar_type());
  return x.chunk(2, wrap);
}

// glu(x) = a * sigmoid(b) for x's halves a, b.
Tensor glu_tensor(const Tensor& x, int64_t dim) {
  const auto h = glu_halves(x, dim, "glu_cpu");
  OneOp op;
  Tensor r = h[0] * h[1].sigmoid();
  op.finish();
  return r;
}

// The gradient of glu: (g * sigmoid(b), g * a * sigmoid(b) * (1 - sigmoid(b))) joined along dim.
Tensor glu_backward_tensor(const Tensor& g, const Tensor& x, int64_t dim) {
  const auto h = glu_halves(x, dim, "glu_backward_cpu");
  OneOp op;
  const Tensor s = h[1].sigmoid();
  const Tensor ga = g * s;
  Tensor r = at::cat({ga, ga * h[0] * (1 - s)}, at::maybe_wrap_dim(dim, x.dim()));
  op.finish();
  return r;
}

void check_prelu(const Tensor& x, const Tensor& w, const char* kernel) {
  check_floating(kernel, at::result_type(x, w));
}

// prelu's kernel: the composite op has already shaped `w` to broadcast against x.
Tensor prelu_kernel(const Tensor& x, const Tensor& w) {
  check_prelu(x, w, "prelu_cpu");
  OneOp op;
  Tensor r = at::where(x > 0, x, w * x);
  op.finish();
  return r;
}

// Gradients of x and of the (broadcast) weight; the composite op reduces the latter.
std::tuple<Tensor, Tensor> prelu_kernel_backward(const Tensor& g, const Tensor& x,
                                                 const Tensor& w) {
  check_prelu(x, w, "prelu_backward_cpu");
  OneOp op;
  const Tensor positive = x > 0;
  std::tuple<Tensor, Tensor> r{at::where(positive, g, w * g),
                               at::where(positive, at::zeros({}, g.options()), x * g)};
  op.finish();
  return r;
}

}  // namespace

// Functional, in-place and out= forms of a forward activation `NAME` computed by RESULT(x, ...).
#define TP_ACTIVATION(NAME, RESULT, PARAMS, ARGS)                                            \
  m.impl(#NAME, [](const Tensor& x PARAMS) { return to_new(RESULT(x ARGS)); });              \
  m.impl(#NAME "_", [](Tensor& x PARAMS) -> Tensor& { return to_self(x, RESULT(x ARGS)); }); \
  m.impl(#NAME ".out", [](const Tensor& x PARAMS, Tensor& out) -> Tensor& {                  \
    return to_out(out, RESULT(x ARGS));                                                      \
  });

#define TP_COMMA ,

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  TP_ACTIVATION(gelu, gelu_result, TP_COMMA c10::string_view a, TP_COMMA a)
  m.impl("gelu_backward", [](const Tensor& g, const Tensor& x, c10::string_view a) {
    return to_new(gelu_backward_result(g, x, a));
  });
  m.impl("gelu_backward.grad_input",
         [](const Tensor& g, const Tensor& x, c10::string_view a, Tensor& out) -> Tensor& {
           return to_out(out, gelu_backward_result(g, x, a));
         });
  TP_ACTIVATION(silu, silu_result, , )
  m.impl("sigmoid_backward", [](const Tensor& g, const Tensor& y) {
    if (complex_operands(g, y)) return at::mul(g, derivative_from_result(y, true).conj());
    return to_new(backward(lowering::kSigmoidBackward, "sigmoid_backward_cpu", {&g, &y}));
  });
  m.impl(
      "sigmoid_backward.grad_input", [](const Tensor& g, const Tensor& y, Tensor& out) -> Tensor& {
        if (complex_operands(g, y)) {
          return at::mul_out(out, g, derivative_from_result(y, true).conj());
        }
        return to_out(out, backward(lowering::kSigmoidBackward, "sigmoid_backward_cpu", {&g, &y}));
      });
  m.impl("tanh_backward", [](const Tensor& g, const Tensor& y) {
    if (complex_operands(g, y)) return at::mul(g, derivative_from_result(y, false).conj());
    return to_new(backward(lowering::kTanhBackward, "tanh_backward_cpu", {&g, &y}));
  });
  m.impl("tanh_backward.grad_input", [](const Tensor& g, const Tensor& y, Tensor& out) -> Tensor& {
    if (complex_operands(g, y)) return at::mul_out(out, g, derivative_from_result(y, false).conj());
    return to_out(out, backward(lowering::kTanhBackward, "tanh_backward_cpu", {&g, &y}));
  });
  m.impl("softplus", [](const Tensor& x, const Scalar& b, const Scalar& t) {
    return to_new(softplus_result(x, b, t));
  });
  m.impl("softplus.out",
         [](const Tensor& x, const Scalar& b, const Scalar& t, Tensor& out) -> Tensor& {
           return to_out(out, softplus_result(x, b, t));
         });
  m.impl("softplus_backward",
         [](const Tensor& g, const Tensor& x, const Scalar& b, const Scalar& t) {
           return to_new(softplus_backward_result(g, x, b, t));
         });
  m.impl("softplus_backward.grad_input",
         [](const Tensor& g, const Tensor& x, const Scalar& b, const Scalar& t,
            Tensor& out) -> Tensor& { return to_out(out, softplus_backward_result(g, x, b, t)); });
  TP_ACTIVATION(elu, elu_result,
                TP_COMMA const Scalar& a TP_COMMA const Scalar& s TP_COMMA const Scalar& i,
                TP_COMMA a TP_COMMA s TP_COMMA i)
  m.impl("elu_backward",
         [](const Tensor& g, const Scalar& a, const Scalar& s, const Scalar& i, bool is_result,
            const Tensor& x) { return to_new(elu_backward_result(g, a, s, i, is_result, x)); });
  m.impl("elu_backward.grad_input",
         [](const Tensor& g, const Scalar& a, const Scalar& s, const Scalar& i, bool is_result,
            const Tensor& x, Tensor& out) -> Tensor& {
           return to_out(out, elu_backward_result(g, a, s, i, is_result, x));
         });
  TP_ACTIVATION(leaky_relu, leaky_relu_result, TP_COMMA const Scalar& s, TP_COMMA s)
  m.impl("leaky_relu_backward", [](const Tensor& g, const Tensor& x, const Scalar& s, bool) {
    return to_new(leaky_relu_backward_result(g, x, s));
  });
  m.impl("leaky_relu_backward.grad_input",
         [](const Tensor& g, const Tensor& x, const Scalar& s, bool, Tensor& out) -> Tensor& {
           return to_out(out, leaky_relu_backward_result(g, x, s));
         });
  TP_ACTIVATION(hardswish, hardswish_result, , )
  m.impl("hardswish_backward", [](const Tensor& g, const Tensor& x) {
    return to_new(backward(lowering::kHardswishBackward, "hardswish_backward_cpu", {&g, &x}));
  });
  TP_ACTIVATION(hardsigmoid, hardsigmoid_result, , )
  m.impl("hardsigmoid_backward", [](const Tensor& g, const Tensor& x) {
    return to_new(backward(lowering::kHardsigmoidBackward, "hardsigmoid_backward_cpu", {&g, &x}));
  });
  m.impl("hardsigmoid_backward.grad_input",
         [](const Tensor& g, const Tensor& x, Tensor& out) -> Tensor& {
           return to_out(
               out, backward(lowering::kHardsigmoidBackward, "hardsigmoid_backward_cpu", {&g, &x}));
         });
  // hardtanh.out is clamp.out on the CPU: out must have the input's dtype.
  m.impl("hardtanh", [](const Tensor& x, const Scalar& lo, const Scalar& hi) {
    return to_new(hardtanh_result(x, lo, hi));
  });
  m.impl("hardtanh_", [](Tensor& x, const Scalar& lo, const Scalar& hi) -> Tensor& {
    return to_self(x, hardtanh_result(x, lo, hi));
  });
  m.impl("hardtanh.out",
         [](const Tensor& x, const Scalar& lo, const Scalar& hi, Tensor& out) -> Tensor& {
           return to_same_dtype_out(out, hardtanh_result(x, lo, hi));
         });
  m.impl("hardtanh_backward",
         [](const Tensor& g, const Tensor& x, const Scalar& lo, const Scalar& hi) {
           return to_new(hardtanh_backward_result(g, x, lo, hi));
         });
  m.impl(
      "hardtanh_backward.grad_input",
      [](const Tensor& g, const Tensor& x, const Scalar& lo, const Scalar& hi,
         Tensor& out) -> Tensor& { return to_out(out, hardtanh_backward_result(g, x, lo, hi)); });
  m.impl("log_sigmoid_forward", log_sigmoid_forward);
  m.impl("log_sigmoid_backward", [](const Tensor& g, const Tensor& x, const Tensor& buffer) {
    return to_new(log_sigmoid_backward_result(g, x, buffer));
  });
  m.impl("log_sigmoid_backward.grad_input",
         [](const Tensor& g, const Tensor& x, const Tensor& buffer, Tensor& out) -> Tensor& {
           return to_out(out, log_sigmoid_backward_result(g, x, buffer));
         });
  TP_ACTIVATION(mish, mish_result, , )
  TP_ACTIVATION(threshold, threshold_result, TP_COMMA const Scalar& t TP_COMMA const Scalar& v,
                TP_COMMA t TP_COMMA v)
  m.impl("softshrink",
         [](const Tensor& x, const Scalar& l) { return to_new(softshrink_result(x, l)); });
  m.impl("softshrink.out", [](const Tensor& x, const Scalar& l, Tensor& out) -> Tensor& {
    return to_out(out, softshrink_result(x, l));
  });
  m.impl("hardshrink",
         [](const Tensor& x, const Scalar& l) { return to_new(hardshrink_result(x, l)); });
  m.impl("hardshrink.out", [](const Tensor& x, const Scalar& l, Tensor& out) -> Tensor& {
    return to_out(out, hardshrink_result(x, l));
  });
  for (const char* name : {"softshrink_backward", "hardshrink_backward"}) {
    m.impl(name, [](const Tensor& g, const Tensor& x, const Scalar& l) {
      return to_new(shrink_backward_result(g, x, l));
    });
    m.impl((std::string(name) + ".grad_input").c_str(),
           [](const Tensor& g, const Tensor& x, const Scalar& l, Tensor& out) -> Tensor& {
             return to_out(out, shrink_backward_result(g, x, l));
           });
  }
  m.impl("glu", glu_tensor);
  m.impl("glu.out", [](const Tensor& x, int64_t dim, Tensor& out) -> Tensor& {
    return copy_to_out(out, glu_tensor(x, dim));
  });
  m.impl("glu_backward", glu_backward_tensor);
  m.impl("glu_backward.grad_input",
         [](const Tensor& g, const Tensor& x, int64_t dim, Tensor& out) -> Tensor& {
           return copy_to_out(out, glu_backward_tensor(g, x, dim));
         });
  m.impl("_prelu_kernel", prelu_kernel);
  m.impl("_prelu_kernel_backward", prelu_kernel_backward);
}

}  // namespace torch_pjrt::aten
