// Max, average, adaptive average and adaptive max pooling (2d and 3d) with their backward ops,
// checked with PyTorch's own shape checks from ATen/native/Pool.h.
#include "lowering/pooling.h"

#include <ATen/ATen.h>
#include <ATen/native/Pool.h>
#include <torch/library.h>

#include "aten/op_result.h"
#include "aten/tensor_bridge.h"

namespace torch_pjrt::aten {
namespace {

using at::IntArrayRef;
using at::Tensor;

struct Pool {
  int64_t nd;
  std::vector<int64_t> kernel, stride, padding, dilation, out;
};

const char* count_word(int64_t nd) { return nd == 2 ? "two" : "three"; }

// Expands one pooling parameter list as PyTorch's meta functions do: one value for every spatial
// dimension, or `fallback` when the list is empty and that is allowed.
std::vector<int64_t> expand(const char* op, const char* what, IntArrayRef v, int64_t nd,
                            const std::vector<int64_t>* fallback) {
  if (fallback != nullptr) {
    TORCH_CHECK(v.empty() || v.size() == 1 || static_cast<int64_t>(v.size()) == nd, op, ": ", what,
                " must either be omitted, a single int, or a tuple of ", count_word(nd), " ints");
    if (v.empty()) return *fallback;
  } else {
    TORCH_CHECK(v.size() == 1 || static_cast<int64_t>(v.size()) == nd, op, ": ", what,
                " must either be a single int, or a tuple of ", count_word(nd), " ints");
  }
  return v.size() == 1 ? std::vector<int64_t>(nd, v[0]) : v.vec();
}

Pool pool_params(const char* op, const Tensor& input, int64_t nd, IntArrayRef kernel_size,
                 IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation, bool ceil_mode) {
  Pool p{nd, expand(op, "kernel_size", kernel_size, nd, nullptr), {}, {}, {}, {}};
  p.stride = expand(op, "stride", stride, nd, &p.kernel);
  p.padding = expand(op, "padding", padding, nd, nullptr);
  p.dilation = expand(op, "dilation", dilation, nd, nullptr);
  TORCH_CHECK(input.dim() == nd + 1 || input.dim() == nd + 2, "non-empty ", nd + 1, "D or ", nd + 2,
              "D (batch mode) tensor expected for input");
  for (int64_t i = 0; i < nd; ++i) {
    p.out.push_back(at::native::pooling_output_shape<int64_t>(
        input.size(-nd + i), p.kernel[i], p.padding[i], p.stride[i], p.dilation[i], ceil_mode));
  }
  const int64_t planes = input.size(-nd - 1);
  if (nd == 2) {
    at::native::pool2d_shape_check(input, p.kernel[0], p.kernel[1], p.stride[0], p.stride[1],
                                   p.padding[0], p.padding[1], p.dilation[0], p.dilation[1], planes,
                                   input.size(-2), input.size(-1), p.out[0], p.out[1],
                                   at::MemoryFormat::Contiguous);
  } else {
    at::native::pool3d_shape_check(
        input, planes, p.kernel[0], p.kernel[1], p.kernel[2], p.stride[0], p.stride[1], p.stride[2],
        p.padding[0], p.padding[1], p.padding[2], p.dilation[0], p.dilation[1], p.dilation[2],
        input.size(-3), input.size(-2), input.size(-1), p.out[0], p.out[1], p.out[2], op, true);
  }
  return p;
}

graph::Attrs pool_attrs(const Pool& p, bool dilated) {
  graph::Attrs attrs;
  attrs.ints.push_back(p.nd);
  for (const auto* list : {&p.kernel, &p.stride, &p.padding}) {
    attrs.ints.insert(attrs.ints.end(), list->begin(), list->end());
  }
  if (dilated) attrs.ints.insert(attrs.ints.end(), p.dilation.begin(), p.dilation.end());
  return attrs;
}

std::vector<int64_t> pooled_sizes(const Tensor& input, const std::vector<int64_t>& out) {
  std::vector<int64_t> sizes(input.sizes().begin(), input.sizes().end() - out.size());
  sizes.insert(sizes.end(), out.begin(), out.end());
  return sizes;
}

// Checks that `t` has the pooled output's sizes, with PyTorch's message.
void check_pooled(const Tensor& t, const std::vector<int64_t>& sizes) {
  TORCH_CHECK(t.dim() == static_cast<int64_t>(sizes.size()), "Need ", "gradOutput",
              " of dimension ", sizes.size(), ", but got ", "gradOutput", ".dim() = ", t.dim());
  for (size_t i = 0; i < sizes.size(); ++i) {
    TORCH_CHECK(t.size(i) == sizes[i], "Expected ", "gradOutput", " to have size ", sizes[i],
                " at dimension ", i, ", but got size ", t.size(i));
  }
}

std::pair<OpResult, OpResult> max_pool(int64_t nd, const Tensor& input, IntArrayRef kernel_size,
                                       IntArrayRef stride, IntArrayRef padding,
                                       IntArrayRef dilation, bool ceil_mode) {
  const Pool p = pool_params(nd == 2 ? "max_pool2d" : "max_pool3d", input, nd, kernel_size, stride,
                             padding, dilation, ceil_mode);
  const int device = common_device("max_pool", {&input});
  const auto sizes = pooled_sizes(input, p.out);
  auto values = graph::record(
      lowering::kMaxPool, {read(input)}, pool_attrs(p, true),
      {tensor_type(input.scalar_type(), sizes), tensor_type(at::kLong, sizes)}, device);
  return {OpResult{values[0], input.scalar_type(), sizes, device},
          OpResult{values[1], at::kLong, sizes, device}};
}

OpResult max_pool_backward(int64_t nd, const Tensor& grad, const Tensor& input,
                           IntArrayRef kernel_size, IntArrayRef stride, IntArrayRef padding,
                           IntArrayRef dilation, bool ceil_mode, const Tensor& indices) {
  const Pool p = pool_params(nd == 2 ? "max_pool2d" : "max_pool3d", input, nd, kernel_size, stride,
                             padding, dilation, ceil_mode);
  const auto sizes = pooled_sizes(input, p.out);
  check_pooled(grad, sizes);
  check_pooled(indices, sizes);
  TORCH_CHECK(grad.scalar_type() == input.scalar_type(), "expected dtype ", input.scalar_type(),
              " for `gradOutput` but got dtype ", grad.scalar_type());
  const int device = common_device("max_pool_backward", {&grad, &input, &indices});
  graph::Attrs attrs;
  attrs.ints = {nd};
  auto value =
      graph::record1(lowering::kMaxPoolBackward, {read(grad), read(indices)}, std::move(attrs),
                     tensor_type(input.scalar_type(), input.sizes()), device);
  return {value, input.scalar_type(), value->type.dims, device};
}

graph::Attrs avg_attrs(const Pool& p, bool count_include_pad, std::optional<int64_t> divisor) {
  TORCH_CHECK(!divisor.has_value() || *divisor != 0, "divisor must be not zero");
  graph::Attrs attrs = pool_attrs(p, false);
  attrs.ints.push_back(count_include_pad ? 1 : 0);
  attrs.ints.push_back(divisor.value_or(0));
  return attrs;
}

OpResult avg_pool(int64_t nd, const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride,
                  IntArrayRef padding, bool ceil_mode, bool count_include_pad,
                  std::optional<int64_t> divisor) {
  const Pool p = pool_params(nd == 2 ? "avg_pool2d" : "avg_pool3d", input, nd, kernel_size, stride,
                             padding, IntArrayRef{1}, ceil_mode);
  const int device = common_device("avg_pool", {&input});
  auto value =
      graph::record1(lowering::kAvgPool, {read(input)}, avg_attrs(p, count_include_pad, divisor),
                     tensor_type(input.scalar_type(), pooled_sizes(input, p.out)), device);
  return {value, input.scalar_type(), value->type.dims, device};
}

OpResult avg_pool_backward(int64_t nd, const Tensor& grad, const Tensor& input,
                           IntArrayRef kernel_size, IntArrayRef stride, IntArrayRef padding,
                           bool ceil_mode, bool count_include_pad, std::optional<int64_t> divisor) {
  const Pool p = pool_params(nd == 2 ? "avg_pool2d" : "avg_pool3d", input, nd, kernel_size, stride,
                             padding, IntArrayRef{1}, ceil_mode);
  check_pooled(grad, pooled_sizes(input, p.out));
  const int device = common_device("avg_pool_backward", {&grad, &input});
  auto value = graph::record1(lowering::kAvgPoolBackward, {read(grad)},
                              avg_attrs(p, count_include_pad, divisor),
                              tensor_type(input.scalar_type(), input.sizes()), device);
  return {value, input.scalar_type(), value->type.dims, device};
}

OpResult adaptive_avg_pool(int64_t nd, const Tensor& input, IntArrayRef output_size) {
  const char* op = nd == 2 ? "adaptive_avg_pool2d" : "adaptive_avg_pool3d";
  TORCH_CHECK(static_cast<int64_t>(output_size.size()) == nd, op, ": output_size must be ", nd);
  TORCH_CHECK(input.dim() == nd + 1 || input.dim() == nd + 2, op, "(): Expected ", nd + 1, "D or ",
              nd + 2, "D tensor, but got ", input.sizes());
  for (int64_t i = 1; i < input.dim(); ++i) {
    TORCH_CHECK(input.size(i) > 0, op,
                "(): Expected input to have non-zero size for non-batch dimensions, but input "
                "has sizes ",
                input.sizes(), " with dimension ", i, " being empty");
  }
  TORCH_CHECK(at::isFloatingType(input.scalar_type()), "\"", op, "\" not implemented for '",
              input.scalar_type(), "'");
  for (int64_t s : output_size) {
    TORCH_CHECK(s >= 0, op, ": elements of output_size must be greater than or equal to 0 ",
                "but received {", output_size, "}");
  }
  const int device = common_device(op, {&input});
  graph::Attrs attrs;
  attrs.ints = {nd};
  auto value = graph::record1(
      lowering::kAdaptiveAvgPool, {read(input)}, std::move(attrs),
      tensor_type(input.scalar_type(), pooled_sizes(input, output_size.vec())), device);
  return {value, input.scalar_type(), value->type.dims, device};
}

OpResult adaptive_avg_pool_backward(int64_t nd, const Tensor& grad, const Tensor& input) {
  TORCH_CHECK(grad.dim() == input.dim(), "adaptive_avg_pool", nd,
              "d_backward(): Expected grad_output and input to have the same number of dimensions");
  TORCH_CHECK(grad.scalar_type() == input.scalar_type(), "expected dtype ", input.scalar_type(),
              " for `grad_output` but got dtype ", grad.scalar_type());
  const int device = common_device("adaptive_avg_pool_backward", {&grad, &input});
  graph::Attrs attrs;
  attrs.ints = {nd};
  auto value = graph::record1(lowering::kAdaptiveAvgPoolBackward, {read(grad)}, std::move(attrs),
                              tensor_type(input.scalar_type(), input.sizes()), device);
  return {value, input.scalar_type(), value->type.dims, device};
}

// The CPU's memory format of pooling results and gradients: the one the input suggests
// (channels_last in, channels_last out), except that its 3-d average and adaptive pooling keep
// contiguous (only max_pool3d has a channels_last_3d kernel).
c10::MemoryFormat pool_format(const Tensor& x, bool follows_3d) {
  const c10::MemoryFormat f = x.suggest_memory_format();
  return f == c10::MemoryFormat::ChannelsLast3d && !follows_3d ? c10::MemoryFormat::Contiguous : f;
}

template <int64_t ND>
std::tuple<Tensor, Tensor> max_pool_nd(const Tensor& x, IntArrayRef k, IntArrayRef s, IntArrayRef p,
                                       IntArrayRef d, bool ceil) {
  auto [o, i] = max_pool(ND, x, k, s, p, d, ceil);
  Tensor out = make_result(o, pool_format(x, true));
  Tensor indices = make_result(i, pool_format(x, true));
  finish_op();
  return {out, indices};
}

template <int64_t ND>
std::tuple<Tensor&, Tensor&> max_pool_nd_out(const Tensor& x, IntArrayRef k, IntArrayRef s,
                                             IntArrayRef p, IntArrayRef d, bool ceil, Tensor& out,
                                             Tensor& indices) {
  auto [o, i] = max_pool(ND, x, k, s, p, d, ceil);
  to_out(out, o);
  to_out(indices, i);
  return {out, indices};
}

template <int64_t ND>
Tensor max_pool_nd_backward(const Tensor& g, const Tensor& x, IntArrayRef k, IntArrayRef s,
                            IntArrayRef p, IntArrayRef d, bool ceil, const Tensor& i) {
  return to_new(max_pool_backward(ND, g, x, k, s, p, d, ceil, i), pool_format(x, true));
}

template <int64_t ND>
Tensor& max_pool_nd_backward_out(const Tensor& g, const Tensor& x, IntArrayRef k, IntArrayRef s,
                                 IntArrayRef p, IntArrayRef d, bool ceil, const Tensor& i,
                                 Tensor& out) {
  return to_out(out, max_pool_backward(ND, g, x, k, s, p, d, ceil, i));
}

template <int64_t ND>
Tensor avg_pool_nd(const Tensor& x, IntArrayRef k, IntArrayRef s, IntArrayRef p, bool ceil,
                   bool include, std::optional<int64_t> div) {
  return to_new(avg_pool(ND, x, k, s, p, ceil, include, div), pool_format(x, false));
}

template <int64_t ND>
Tensor& avg_pool_nd_out(const Tensor& x, IntArrayRef k, IntArrayRef s, IntArrayRef p, bool ceil,
                        bool include, std::optional<int64_t> div, Tensor& out) {
  return to_out(out, avg_pool(ND, x, k, s, p, ceil, include, div));
}

template <int64_t ND>
Tensor avg_pool_nd_backward(const Tensor& g, const Tensor& x, IntArrayRef k, IntArrayRef s,
                            IntArrayRef p, bool ceil, bool include, std::optional<int64_t> div) {
  return to_new(avg_pool_backward(ND, g, x, k, s, p, ceil, include, div), pool_format(x, false));
}

template <int64_t ND>
Tensor& avg_pool_nd_backward_out(const Tensor& g, const Tensor& x, IntArrayRef k, IntArrayRef s,
                                 IntArrayRef p, bool ceil, bool include, std::optional<int64_t> div,
                                 Tensor& out) {
  return to_out(out, avg_pool_backward(ND, g, x, k, s, p, ceil, include, div));
}

template <int64_t ND>
Tensor adaptive_avg_pool_nd(const Tensor& x, c10::SymIntArrayRef size) {
  return to_new(adaptive_avg_pool(ND, x, C10_AS_INTARRAYREF_SLOW(size)), pool_format(x, false));
}

template <int64_t ND>
Tensor adaptive_avg_pool_nd_backward(const Tensor& g, const Tensor& x) {
  return to_new(adaptive_avg_pool_backward(ND, g, x), pool_format(x, false));
}

std::pair<OpResult, OpResult> adaptive_max_pool(int64_t nd, const Tensor& input,
                                                IntArrayRef output_size) {
  const std::string op = "adaptive_max_pool" + std::to_string(nd) + "d";
  TORCH_CHECK(input.dim() == nd + 1 || input.dim() == nd + 2, op, "(): Expected ", nd + 1, "D or ",
              nd + 2, "D tensor, but got: ", input.sizes());
  for (int64_t i = 1; i < input.dim(); ++i) {
    TORCH_CHECK(input.size(i) > 0, op,
                "(): Expected input to have non-zero size for non-batch dimensions, but input "
                "has sizes ",
                input.sizes(), " with dimension ", i, " being empty");
  }
  TORCH_CHECK(static_cast<int64_t>(output_size.size()) == nd, op,
              "(): internal error: output_size.size() must be ", nd);
  const int device = common_device(op.c_str(), {&input});
  const auto sizes = pooled_sizes(input, output_size.vec());
  graph::Attrs attrs;
  attrs.ints = {nd};
  auto values = graph::record(
      lowering::kAdaptiveMaxPool, {read(input)}, std::move(attrs),
      {tensor_type(input.scalar_type(), sizes), tensor_type(at::kLong, sizes)}, device);
  return {OpResult{values[0], input.scalar_type(), sizes, device},
          OpResult{values[1], at::kLong, sizes, device}};
}

// The gradient of max pooling of any kind: grad_output summed into the positions `indices` name.
OpResult indexed_backward(int64_t nd, const Tensor& grad, const Tensor& input,
                          const Tensor& indices) {
  TORCH_CHECK(grad.sizes() == indices.sizes(), "expected sizes of grad_output ", grad.sizes(),
              " and indices ", indices.sizes(), " to match");
  TORCH_CHECK(grad.scalar_type() == input.scalar_type(), "expected dtype ", input.scalar_type(),
              " for `gradOutput` but got dtype ", grad.scalar_type());
  const int device = common_device("adaptive_max_pool_backward", {&grad, &input, &indices});
  graph::Attrs attrs;
  attrs.ints = {nd};
  auto value =
      graph::record1(lowering::kMaxPoolBackward, {read(grad), read(indices)}, std::move(attrs),
                     tensor_type(input.scalar_type(), input.sizes()), device);
  return {value, input.scalar_type(), input.sizes().vec(), device};
}

template <int64_t ND>
std::tuple<Tensor, Tensor> adaptive_max_pool_nd(const Tensor& x, IntArrayRef size) {
  auto [o, i] = adaptive_max_pool(ND, x, size);
  Tensor out = make_result(o, pool_format(x, false));
  Tensor indices = make_result(i, pool_format(x, false));
  finish_op();
  return {out, indices};
}

template <int64_t ND>
std::tuple<Tensor&, Tensor&> adaptive_max_pool_nd_out(const Tensor& x, IntArrayRef size,
                                                      Tensor& out, Tensor& indices) {
  auto [o, i] = adaptive_max_pool(ND, x, size);
  to_out(out, o);
  to_out(indices, i);
  return {out, indices};
}

template <int64_t ND>
Tensor adaptive_max_pool_nd_backward(const Tensor& g, const Tensor& x, const Tensor& i) {
  return to_new(indexed_backward(ND, g, x, i), pool_format(x, false));
}

template <int64_t ND>
Tensor& adaptive_max_pool_nd_backward_out(const Tensor& g, const Tensor& x, const Tensor& i,
                                          Tensor& out) {
  return to_out(out, indexed_backward(ND, g, x, i));
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("max_pool2d_with_indices", max_pool_nd<2>);
  m.impl("max_pool2d_with_indices.out", max_pool_nd_out<2>);
  m.impl("max_pool2d_with_indices_backward", max_pool_nd_backward<2>);
  m.impl("max_pool2d_with_indices_backward.grad_input", max_pool_nd_backward_out<2>);
  m.impl("max_pool3d_with_indices", max_pool_nd<3>);
  m.impl("max_pool3d_with_indices.out", max_pool_nd_out<3>);
  m.impl("max_pool3d_with_indices_backward", max_pool_nd_backward<3>);
  m.impl("max_pool3d_with_indices_backward.grad_input", max_pool_nd_backward_out<3>);
  m.impl("avg_pool2d", avg_pool_nd<2>);
  m.impl("avg_pool2d.out", avg_pool_nd_out<2>);
  m.impl("avg_pool2d_backward", avg_pool_nd_backward<2>);
  m.impl("avg_pool2d_backward.grad_input", avg_pool_nd_backward_out<2>);
  m.impl("avg_pool3d", avg_pool_nd<3>);
  m.impl("avg_pool3d.out", avg_pool_nd_out<3>);
  m.impl("avg_pool3d_backward", avg_pool_nd_backward<3>);
  m.impl("avg_pool3d_backward.grad_input", avg_pool_nd_backward_out<3>);
  m.impl("adaptive_max_pool2d", adaptive_max_pool_nd<2>);
  m.impl("adaptive_max_pool2d.out", adaptive_max_pool_nd_out<2>);
  m.impl("adaptive_max_pool2d_backward", adaptive_max_pool_nd_backward<2>);
  m.impl("adaptive_max_pool2d_backward.grad_input", adaptive_max_pool_nd_backward_out<2>);
  m.impl("adaptive_max_pool3d", adaptive_max_pool_nd<3>);
  m.impl("adaptive_max_pool3d.out", adaptive_max_pool_nd_out<3>);
  m.impl("adaptive_max_pool3d_backward", adaptive_max_pool_nd_backward<3>);
  m.impl("adaptive_max_pool3d_backward.grad_input", adaptive_max_pool_nd_backward_out<3>);
  m.impl("_adaptive_avg_pool2d", adaptive_avg_pool_nd<2>);
  m.impl("_adaptive_avg_pool2d_backward", adaptive_avg_pool_nd_backward<2>);
  m.impl("_adaptive_avg_pool3d", adaptive_avg_pool_nd<3>);
  m.impl("_adaptive_avg_pool3d_backward", adaptive_avg_pool_nd_backward<3>);
}

}  // namespace torch_pjrt::aten
