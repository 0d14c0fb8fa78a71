// Reflection and replication padding (1d/2d/3d) and their backward ops, with PyTorch's checks.
#include "lowering/padding.h"

#include <ATen/ATen.h>
#include <torch/library.h>

#include <string>

#include "aten/op_result.h"
#include "aten/tensor_bridge.h"

namespace torch_pjrt::aten {
namespace {

using at::Tensor;
using Pads = c10::SymIntArrayRef;

std::string op_name(int64_t nd, lowering::PadMode mode) {
  return std::string(mode == lowering::kPadReflect ? "reflection_pad" : "replication_pad") +
         std::to_string(nd) + "d";
}

// PyTorch's padding checks; returns the output sizes. `padding` pairs start at the last dim.
std::vector<int64_t> padded_sizes(int64_t nd, lowering::PadMode mode, const Tensor& x,
                                  at::IntArrayRef padding) {
  TORCH_CHECK(static_cast<int64_t>(padding.size()) == 2 * nd, "padding size is expected to be ",
              2 * nd, ", but got: ", padding.size());
  const bool batch = x.dim() == nd + 2;
  bool valid = batch || x.dim() == nd + 1;
  for (int64_t d = batch ? 1 : 0; d < x.dim(); ++d) valid = valid && x.size(d) != 0;
  TORCH_CHECK(valid, "Expected ", nd + 1, "D or ", nd + 2,
              "D (batch mode) tensor with possibly 0 batch size and other non-zero dimensions for "
              "input, but got: ",
              x.sizes());
  TORCH_CHECK_NOT_IMPLEMENTED(x.scalar_type() != at::kBool, "\"", op_name(nd, mode),
                              "\" not implemented for '", x.scalar_type(), "'");
  std::vector<int64_t> sizes = x.sizes().vec();
  std::string in_desc, out_desc;
  bool positive = true;
  for (int64_t i = 0; i < nd; ++i) {
    const int64_t dim = x.dim() - 1 - i, before = padding[2 * i], after = padding[2 * i + 1];
    if (mode == lowering::kPadReflect) {
      TORCH_CHECK(before < x.size(dim) && after < x.size(dim), "Argument #", 4 + 2 * i,
                  ": Padding size should be less than the corresponding input dimension, but got: "
                  "padding (",
                  before, ", ", after, ") at dimension ", dim, " of input ", x.sizes());
    }
    sizes[dim] += before + after;
    positive = positive && sizes[dim] >= 1;
    const std::string axis = std::string(1, "WHD"[i]) + ": ";
    in_desc = axis + std::to_string(x.size(dim)) + (i ? " " : "") + in_desc;
    out_desc = axis + std::to_string(sizes[dim]) + (i ? " " : "") + out_desc;
  }
  TORCH_CHECK(positive, "input (", in_desc, ") is too small. Calculated output ", out_desc);
  return sizes;
}

graph::Attrs pad_attrs(int64_t nd, lowering::PadMode mode, at::IntArrayRef padding) {
  graph::Attrs attrs;
  attrs.ints = {nd, mode};
  for (int64_t i = nd - 1; i >= 0; --i) attrs.ints.push_back(padding[2 * i]);
  return attrs;
}

OpResult pad(int64_t nd, lowering::PadMode mode, const Tensor& x, Pads padding_sym) {
  const auto padding = C10_AS_INTARRAYREF_SLOW(padding_sym);
  const std::vector<int64_t> sizes = padded_sizes(nd, mode, x, padding);
  const int device = common_device(op_name(nd, mode).c_str(), {&x});
  auto value = graph::record1(lowering::kIndexPad, {read(x)}, pad_attrs(nd, mode, padding),
                              tensor_type(x.scalar_type(), sizes), device);
  return {value, x.scalar_type(), sizes, device};
}

OpResult pad_backward(int64_t nd, lowering::PadMode mode, const Tensor& grad, const Tensor& x,
                      Pads padding_sym) {
  const auto padding = C10_AS_INTARRAYREF_SLOW(padding_sym);
  const std::string name = op_name(nd, mode) + "_backward";
  const std::vector<int64_t> sizes = padded_sizes(nd, mode, x, padding);
  TORCH_CHECK(grad.sizes() == at::IntArrayRef(sizes), name, ": expected grad_output of size ",
              at::IntArrayRef(sizes), ", but got ", grad.sizes());
  TORCH_CHECK_NOT_IMPLEMENTED(at::isFloatingType(grad.scalar_type()) || grad.is_complex(), "\"",
                              name, "_cpu\" not implemented for '", grad.scalar_type(), "'");
  const int device = common_device(name.c_str(), {&grad, &x});
  auto value =
      graph::record1(lowering::kIndexPadBackward, {read(grad)}, pad_attrs(nd, mode, padding),
                     tensor_type(grad.scalar_type(), x.sizes()), device);
  return {value, grad.scalar_type(), x.sizes().vec(), device};
}

}  // namespace

// Functional and out= forms of the forward and backward ops of one padding op.
#define TP_PAD(NAME, ND, MODE)                                                        \
  m.impl(#NAME, [](const Tensor& x, Pads p) { return to_new(pad(ND, MODE, x, p)); }); \
  m.impl(#NAME ".out", [](const Tensor& x, Pads p, Tensor& out) -> Tensor& {          \
    return to_out(out, pad(ND, MODE, x, p));                                          \
  });                                                                                 \
  m.impl(#NAME "_backward", [](const Tensor& g, const Tensor& x, Pads p) {            \
    return to_new(pad_backward(ND, MODE, g, x, p));                                   \
  });                                                                                 \
  m.impl(#NAME "_backward.grad_input",                                                \
         [](const Tensor& g, const Tensor& x, Pads p, Tensor& out) -> Tensor& {       \
           return to_out(out, pad_backward(ND, MODE, g, x, p));                       \
         });

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  TP_PAD(reflection_pad1d, 1, lowering::kPadReflect)
  TP_PAD(reflection_pad2d, 2, lowering::kPadReflect)
  TP_PAD(reflection_pad3d, 3, lowering::kPadReflect)
  TP_PAD(replication_pad1d, 1, lowering::kPadReplicate)
  TP_PAD(replication_pad2d, 2, lowering::kPadReplicate)
  TP_PAD(replication_pad3d, 3, lowering::kPadReplicate)
}

}  // namespace torch_pjrt::aten
