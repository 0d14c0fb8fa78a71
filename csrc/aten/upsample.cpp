// Nearest, nearest-exact, linear (1d/2d/3d), bicubic (2d) and antialiased bilinear/bicubic (2d)
// upsampling and their backward ops, with PyTorch's checks.
#include <ATen/ATen.h>
#include <torch/library.h>

#include "aten/op_result.h"
#include "aten/tensor_bridge.h"
#include "lowering/resize.h"

namespace torch_pjrt::aten {
namespace {

using at::Tensor;
using Scale = std::optional<double>;
using Sizes = c10::SymIntArrayRef;

// Interpolation modes: nearest, nearest-exact, (multi)linear and cubic.
enum Mode { kNearest = 0, kNearestExact = 1, kLinear = 2, kCubic = 3 };

const char* op_name(int64_t nd, Mode mode) {
  static const char* names[4][3] = {
      {"upsample_nearest1d", "upsample_nearest2d", "upsample_nearest3d"},
      {"_upsample_nearest_exact1d", "_upsample_nearest_exact2d", "_upsample_nearest_exact3d"},
      {"upsample_linear1d", "upsample_bilinear2d", "upsample_trilinear3d"},
      {"", "upsample_bicubic2d", ""}};
  return names[mode][nd - 1];
}

const char* aa_name(Mode mode) {
  return mode == kCubic ? "_upsample_bicubic2d_aa" : "_upsample_bilinear2d_aa";
}

// Ops with align_corners are linear, or cubic with `variant`; the others nearest, or
// nearest-exact with `variant`.
Mode mode_of(std::optional<bool> align, bool variant) {
  if (align) return variant ? kCubic : kLinear;
  return variant ? kNearestExact : kNearest;
}

// PyTorch's upsample_*_common_check: sizes of the right lengths, all positive.
void check_sizes(int64_t nd, at::IntArrayRef output_size, at::IntArrayRef input_size) {
  TORCH_CHECK(static_cast<int64_t>(output_size.size()) == nd,
              "It is expected output_size equals to ", nd, ", but got size ", output_size.size());
  TORCH_CHECK(static_cast<int64_t>(input_size.size()) == nd + 2,
              "It is expected input_size equals to ", nd + 2, ", but got size ", input_size.size());
  bool positive = true;
  for (int64_t i = 0; i < nd; ++i) positive &= input_size[2 + i] > 0 && output_size[i] > 0;
  TORCH_CHECK(positive, "Input and output sizes should be greater than 0, but got input ",
              input_size.slice(2), " output ", output_size);
}

graph::Attrs resize_attrs(int64_t nd, std::optional<bool> align_corners, bool variant,
                          const std::vector<Scale>& scales) {
  graph::Attrs attrs;
  attrs.ints.push_back(nd);
  if (align_corners) attrs.ints.push_back(*align_corners ? 1 : 0);
  if (variant) attrs.ints.push_back(1);
  for (const Scale& s : scales) attrs.floats.push_back(s.value_or(0));
  return attrs;
}

// kUpsampleSeparable's: nd, align_corners, cubic, antialias; the scales.
graph::Attrs separable_attrs(int64_t nd, std::optional<bool> align_corners, bool cubic,
                             bool antialias, const std::vector<Scale>& scales) {
  graph::Attrs attrs = resize_attrs(nd, align_corners, false, scales);
  attrs.ints.push_back(cubic ? 1 : 0);
  attrs.ints.push_back(antialias ? 1 : 0);
  return attrs;
}

// Floating types; uint8 also for nearest and, forward, bilinear/bicubic 2-D (the CPU's integer
// kernels). Antialiasing: float32/float64 (and uint8 forward) only, with the CPU's kernel names.
void check_dtype(const Tensor& t, int64_t nd, Mode mode, bool forward, bool antialias = false) {
  const at::ScalarType d = t.scalar_type();
  if (antialias) {
    const std::string name =
        forward ? "compute_index_ranges_weights" : std::string(aa_name(mode) + 1) + "_backward_cpu";
    TORCH_CHECK_NOT_IMPLEMENTED(d == at::kFloat || d == at::kDouble || (forward && d == at::kByte),
                                "\"", name, "\" not implemented for '", d, "'");
    return;
  }
  const bool nearest = mode == kNearest || mode == kNearestExact;
  const bool byte_ok = nearest || (forward && nd == 2);
  TORCH_CHECK_NOT_IMPLEMENTED(at::isFloatingType(d) || (byte_ok && d == at::kByte), "\"",
                              op_name(nd, mode), "\" not implemented for '", d, "'");
}

// uint8 bilinear/bicubic and antialiased inputs resample one axis at a time, as the CPU does.
OpResult upsample(int64_t nd, const Tensor& self, Sizes output_size, std::optional<bool> align,
                  const std::vector<Scale>& scales, bool variant = false, bool antialias = false) {
  const bool linear = align.has_value();
  const Mode mode = mode_of(align, variant);
  const auto out_size = C10_AS_INTARRAYREF_SLOW(output_size);
  TORCH_CHECK(self.dim() == nd + 2, "Expected ", nd + 2, "D input tensor, but got ", self.sizes());
  check_sizes(nd, out_size, self.sizes());
  check_dtype(self, nd, mode, /*forward=*/true, antialias);
  const int device = common_device(antialias ? aa_name(mode) : op_name(nd, mode), {&self});
  std::vector<int64_t> sizes{self.size(0), self.size(1)};
  sizes.insert(sizes.end(), out_size.begin(), out_size.end());
  const bool separable = linear && (antialias || self.scalar_type() == at::kByte);
  const graph::Attrs attrs = separable ? separable_attrs(nd, align, variant, antialias, scales)
                                       : resize_attrs(nd, align, variant, scales);
  const graph::OpDef& op = separable ? lowering::kUpsampleSeparable
                           : linear  ? lowering::kUpsampleLinear
                                     : lowering::kUpsampleNearest;
  auto value =
      graph::record1(op, {read(self)}, attrs, tensor_type(self.scalar_type(), sizes), device);
  return {value, self.scalar_type(), sizes, device};
}

OpResult upsample_backward(int64_t nd, const Tensor& grad, Sizes output_size, Sizes input_size,
                           std::optional<bool> align, const std::vector<Scale>& scales,
                           bool variant = false, bool antialias = false) {
  const bool linear = align.has_value();
  const Mode mode = mode_of(align, variant);
  const auto out_size = C10_AS_INTARRAYREF_SLOW(output_size);
  const auto in_size = C10_AS_INTARRAYREF_SLOW(input_size);
  check_sizes(nd, out_size, in_size);
  check_dtype(grad, nd, mode, /*forward=*/false, antialias);
  TORCH_CHECK(grad.dim() == nd + 2, "Expected grad_output to be a tensor of dimension ", nd + 2,
              " but got: dimension ", grad.dim());
  for (int64_t i = 0; i < nd + 2; ++i) {
    const int64_t expected = i < 2 ? in_size[i] : out_size[i - 2];
    TORCH_CHECK(grad.size(i) == expected, "Expected grad_output to have the same shape as output;",
                " output.size(", i, ") = ", expected, " but got grad_output.size(", i,
                ") = ", grad.size(i));
  }
  const int device = common_device(antialias ? aa_name(mode) : op_name(nd, mode), {&grad});
  const graph::OpDef& op = antialias ? lowering::kUpsampleSeparableBackward
                           : linear  ? lowering::kUpsampleLinearBackward
                                     : lowering::kUpsampleNearestBackward;
  const graph::Attrs attrs = antialias ? separable_attrs(nd, align, variant, true, scales)
                                       : resize_attrs(nd, align, variant, scales);
  auto value =
      graph::record1(op, {read(grad)}, attrs, tensor_type(grad.scalar_type(), in_size), device);
  return {value, grad.scalar_type(), in_size.vec(), device};
}

// The CPU allocates upsampling results (and their gradients) in the memory format its input
// suggests: channels_last in, channels_last out.
Tensor to_new_as(const Tensor& like, const OpResult& r) {
  return to_new(r, like.suggest_memory_format());
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  // Nearest.
  m.impl("upsample_nearest1d", [](const Tensor& x, Sizes o, Scale s) {
    return to_new_as(x, upsample(1, x, o, std::nullopt, {s}));
  });
  m.impl("upsample_nearest1d.out", [](const Tensor& x, Sizes o, Scale s, Tensor& out) -> Tensor& {
    return to_out(out, upsample(1, x, o, std::nullopt, {s}));
  });
  m.impl("upsample_nearest1d_backward", [](const Tensor& g, Sizes o, Sizes i, Scale s) {
    return to_new_as(g, upsample_backward(1, g, o, i, std::nullopt, {s}));
  });
  m.impl("upsample_nearest1d_backward.grad_input",
         [](const Tensor& g, Sizes o, Sizes i, Scale s, Tensor& out) -> Tensor& {
           return to_out(out, upsample_backward(1, g, o, i, std::nullopt, {s}));
         });
  m.impl("upsample_nearest2d", [](const Tensor& x, Sizes o, Scale h, Scale w) {
    return to_new_as(x, upsample(2, x, o, std::nullopt, {h, w}));
  });
  m.impl("upsample_nearest2d.out",
         [](const Tensor& x, Sizes o, Scale h, Scale w, Tensor& out) -> Tensor& {
           return to_out(out, upsample(2, x, o, std::nullopt, {h, w}));
         });
  m.impl("upsample_nearest2d_backward", [](const Tensor& g, Sizes o, Sizes i, Scale h, Scale w) {
    return to_new_as(g, upsample_backward(2, g, o, i, std::nullopt, {h, w}));
  });
  m.impl("upsample_nearest2d_backward.grad_input",
         [](const Tensor& g, Sizes o, Sizes i, Scale h, Scale w, Tensor& out) -> Tensor& {
           return to_out(out, upsample_backward(2, g, o, i, std::nullopt, {h, w}));
         });
  m.impl("upsample_nearest3d", [](const Tensor& x, Sizes o, Scale d, Scale h, Scale w) {
    return to_new_as(x, upsample(3, x, o, std::nullopt, {d, h, w}));
  });
  m.impl("upsample_nearest3d.out",
         [](const Tensor& x, Sizes o, Scale d, Scale h, Scale w, Tensor& out) -> Tensor& {
           return to_out(out, upsample(3, x, o, std::nullopt, {d, h, w}));
         });
  m.impl("upsample_nearest3d_backward",
         [](const Tensor& g, Sizes o, Sizes i, Scale d, Scale h, Scale w) {
           return to_new_as(g, upsample_backward(3, g, o, i, std::nullopt, {d, h, w}));
         });
  m.impl("upsample_nearest3d_backward.grad_input",
         [](const Tensor& g, Sizes o, Sizes i, Scale d, Scale h, Scale w, Tensor& out) -> Tensor& {
           return to_out(out, upsample_backward(3, g, o, i, std::nullopt, {d, h, w}));
         });
  // Nearest-exact.
  m.impl("_upsample_nearest_exact1d", [](const Tensor& x, Sizes o, Scale s) {
    return to_new_as(x, upsample(1, x, o, std::nullopt, {s}, true));
  });
  m.impl("_upsample_nearest_exact1d.out",
         [](const Tensor& x, Sizes o, Scale s, Tensor& out) -> Tensor& {
           return to_out(out, upsample(1, x, o, std::nullopt, {s}, true));
         });
  m.impl("_upsample_nearest_exact1d_backward", [](const Tensor& g, Sizes o, Sizes i, Scale s) {
    return to_new_as(g, upsample_backward(1, g, o, i, std::nullopt, {s}, true));
  });
  m.impl("_upsample_nearest_exact1d_backward.grad_input",
         [](const Tensor& g, Sizes o, Sizes i, Scale s, Tensor& out) -> Tensor& {
           return to_out(out, upsample_backward(1, g, o, i, std::nullopt, {s}, true));
         });
  m.impl("_upsample_nearest_exact2d", [](const Tensor& x, Sizes o, Scale h, Scale w) {
    return to_new_as(x, upsample(2, x, o, std::nullopt, {h, w}, true));
  });
  m.impl("_upsample_nearest_exact2d.out",
         [](const Tensor& x, Sizes o, Scale h, Scale w, Tensor& out) -> Tensor& {
           return to_out(out, upsample(2, x, o, std::nullopt, {h, w}, true));
         });
  m.impl("_upsample_nearest_exact2d_backward",
         [](const Tensor& g, Sizes o, Sizes i, Scale h, Scale w) {
           return to_new_as(g, upsample_backward(2, g, o, i, std::nullopt, {h, w}, true));
         });
  m.impl("_upsample_nearest_exact2d_backward.grad_input",
         [](const Tensor& g, Sizes o, Sizes i, Scale h, Scale w, Tensor& out) -> Tensor& {
           return to_out(out, upsample_backward(2, g, o, i, std::nullopt, {h, w}, true));
         });
  m.impl("_upsample_nearest_exact3d", [](const Tensor& x, Sizes o, Scale d, Scale h, Scale w) {
    return to_new_as(x, upsample(3, x, o, std::nullopt, {d, h, w}, true));
  });
  m.impl("_upsample_nearest_exact3d.out",
         [](const Tensor& x, Sizes o, Scale d, Scale h, Scale w, Tensor& out) -> Tensor& {
           return to_out(out, upsample(3, x, o, std::nullopt, {d, h, w}, true));
         });
  m.impl("_upsample_nearest_exact3d_backward",
         [](const Tensor& g, Sizes o, Sizes i, Scale d, Scale h, Scale w) {
           return to_new_as(g, upsample_backward(3, g, o, i, std::nullopt, {d, h, w}, true));
         });
  m.impl("_upsample_nearest_exact3d_backward.grad_input",
         [](const Tensor& g, Sizes o, Sizes i, Scale d, Scale h, Scale w, Tensor& out) -> Tensor& {
           return to_out(out, upsample_backward(3, g, o, i, std::nullopt, {d, h, w}, true));
         });
  // Linear.
  m.impl("upsample_linear1d", [](const Tensor& x, Sizes o, bool a, Scale s) {
    return to_new_as(x, upsample(1, x, o, a, {s}));
  });
  m.impl("upsample_linear1d.out",
         [](const Tensor& x, Sizes o, bool a, Scale s, Tensor& out) -> Tensor& {
           return to_out(out, upsample(1, x, o, a, {s}));
         });
  m.impl("upsample_linear1d_backward", [](const Tensor& g, Sizes o, Sizes i, bool a, Scale s) {
    return to_new_as(g, upsample_backward(1, g, o, i, a, {s}));
  });
  m.impl("upsample_linear1d_backward.grad_input",
         [](const Tensor& g, Sizes o, Sizes i, bool a, Scale s, Tensor& out) -> Tensor& {
           return to_out(out, upsample_backward(1, g, o, i, a, {s}));
         });
  m.impl("upsample_bilinear2d", [](const Tensor& x, Sizes o, bool a, Scale h, Scale w) {
    return to_new_as(x, upsample(2, x, o, a, {h, w}));
  });
  m.impl("upsample_bilinear2d.out",
         [](const Tensor& x, Sizes o, bool a, Scale h, Scale w, Tensor& out) -> Tensor& {
           return to_out(out, upsample(2, x, o, a, {h, w}));
         });
  m.impl("upsample_bilinear2d_backward",
         [](const Tensor& g, Sizes o, Sizes i, bool a, Scale h, Scale w) {
           return to_new_as(g, upsample_backward(2, g, o, i, a, {h, w}));
         });
  m.impl("upsample_bilinear2d_backward.grad_input",
         [](const Tensor& g, Sizes o, Sizes i, bool a, Scale h, Scale w, Tensor& out) -> Tensor& {
           return to_out(out, upsample_backward(2, g, o, i, a, {h, w}));
         });
  m.impl("upsample_trilinear3d", [](const Tensor& x, Sizes o, bool a, Scale d, Scale h, Scale w) {
    return to_new_as(x, upsample(3, x, o, a, {d, h, w}));
  });
  m.impl("upsample_trilinear3d.out",
         [](const Tensor& x, Sizes o, bool a, Scale d, Scale h, Scale w, Tensor& out) -> Tensor& {
           return to_out(out, upsample(3, x, o, a, {d, h, w}));
         });
  m.impl("upsample_trilinear3d_backward",
         [](const Tensor& g, Sizes o, Sizes i, bool a, Scale d, Scale h, Scale w) {
           return to_new_as(g, upsample_backward(3, g, o, i, a, {d, h, w}));
         });
  m.impl("upsample_trilinear3d_backward.grad_input",
         [](const Tensor& g, Sizes o, Sizes i, bool a, Scale d, Scale h, Scale w,
            Tensor& out) -> Tensor& {
           return to_out(out, upsample_backward(3, g, o, i, a, {d, h, w}));
         });
  // Antialiased bilinear and bicubic.
  m.impl("_upsample_bilinear2d_aa", [](const Tensor& x, Sizes o, bool a, Scale h, Scale w) {
    return to_new_as(x, upsample(2, x, o, a, {h, w}, false, true));
  });
  m.impl("_upsample_bilinear2d_aa.out",
         [](const Tensor& x, Sizes o, bool a, Scale h, Scale w, Tensor& out) -> Tensor& {
           return to_out(out, upsample(2, x, o, a, {h, w}, false, true));
         });
  m.impl("_upsample_bicubic2d_aa", [](const Tensor& x, Sizes o, bool a, Scale h, Scale w) {
    return to_new_as(x, upsample(2, x, o, a, {h, w}, true, true));
  });
  m.impl("_upsample_bicubic2d_aa.out",
         [](const Tensor& x, Sizes o, bool a, Scale h, Scale w, Tensor& out) -> Tensor& {
           return to_out(out, upsample(2, x, o, a, {h, w}, true, true));
         });
  m.impl("_upsample_bilinear2d_aa_backward",
         [](const Tensor& g, Sizes o, Sizes i, bool a, Scale h, Scale w) {
           return to_new_as(g, upsample_backward(2, g, o, i, a, {h, w}, false, true));
         });
  m.impl("_upsample_bilinear2d_aa_backward.grad_input",
         [](const Tensor& g, Sizes o, Sizes i, bool a, Scale h, Scale w, Tensor& out) -> Tensor& {
           return to_out(out, upsample_backward(2, g, o, i, a, {h, w}, false, true));
         });
  m.impl("_upsample_bicubic2d_aa_backward",
         [](const Tensor& g, Sizes o, Sizes i, bool a, Scale h, Scale w) {
           return to_new_as(g, upsample_backward(2, g, o, i, a, {h, w}, true, true));
         });
  m.impl("_upsample_bicubic2d_aa_backward.grad_input",
         [](const Tensor& g, Sizes o, Sizes i, bool a, Scale h, Scale w, Tensor& out) -> Tensor& {
           return to_out(out, upsample_backward(2, g, o, i, a, {h, w}, true, true));
         });
  // Bicubic.
  m.impl("upsample_bicubic2d", [](const Tensor& x, Sizes o, bool a, Scale h, Scale w) {
    return to_new_as(x, upsample(2, x, o, a, {h, w}, true));
  });
  m.impl("upsample_bicubic2d.out",
         [](const Tensor& x, Sizes o, bool a, Scale h, Scale w, Tensor& out) -> Tensor& {
           return to_out(out, upsample(2, x, o, a, {h, w}, true));
         });
  m.impl("upsample_bicubic2d_backward",
         [](const Tensor& g, Sizes o, Sizes i, bool a, Scale h, Scale w) {
           return to_new_as(g, upsample_backward(2, g, o, i, a, {h, w}, true));
         });
  m.impl("upsample_bicubic2d_backward.grad_input",
         [](const Tensor& g, Sizes o, Sizes i, bool a, Scale h, Scale w, Tensor& out) -> Tensor& {
           return to_out(out, upsample_backward(2, g, o, i, a, {h, w}, true));
         });
}

}  // namespace torch_pjrt::aten
