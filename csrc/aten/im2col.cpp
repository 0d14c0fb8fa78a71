// im2col and col2im (F.unfold and F.fold, and each other's gradient), composed of native ops: each
// kernel tap is a strided slice of the padded input; col2im adds the taps back in place. PyTorch's
// shape checks.
#include <ATen/ATen.h>
#include <torch/library.h>

#include "aten/op_result.h"
#include "aten/tensor_bridge.h"

namespace torch_pjrt::aten {
namespace {

using at::IntArrayRef;
using at::Tensor;

// Kernel, dilation, padding and stride along (height, width).
struct Window {
  int64_t k[2], d[2], p[2], s[2];
};

Window window(IntArrayRef kernel, IntArrayRef dilation, IntArrayRef padding, IntArrayRef stride) {
  for (const auto& [v, name] : {std::pair{kernel, "kernel_size"}, std::pair{dilation, "dilation"},
                                std::pair{padding, "padding"}, std::pair{stride, "stride"}}) {
    TORCH_CHECK(v.size() == 2, "It is expected ", name, " equals to 2, but got size ", v.size());
  }
  const Window w{{kernel[0], kernel[1]},
                 {dilation[0], dilation[1]},
                 {padding[0], padding[1]},
                 {stride[0], stride[1]}};
  TORCH_CHECK(w.k[1] > 0 && w.k[0] > 0,
              "kernel size should be greater than zero, but got kernel_height: ", w.k[0],
              " kernel_width: ", w.k[1]);
  TORCH_CHECK(w.d[1] > 0 && w.d[0] > 0,
              "dilation should be greater than zero, but got dilation_height: ", w.d[0],
              " dilation_width: ", w.d[1]);
  TORCH_CHECK(w.p[1] >= 0 && w.p[0] >= 0,
              "padding should be non-negative, but got pad_height: ", w.p[0],
              " pad_width: ", w.p[1]);
  TORCH_CHECK(w.s[1] > 0 && w.s[0] > 0,
              "stride should be greater than zero, but got stride_height: ", w.s[0],
              " stride_width: ", w.s[1]);
  return w;
}

// Number of sliding blocks along axis a of a plane of size n (floor division, as div_rtn).
int64_t blocks(const Window& w, int a, int64_t n) {
  const int64_t span = n + 2 * w.p[a] - (w.d[a] * (w.k[a] - 1) + 1);
  return (span >= 0 ? span / w.s[a] : -((-span + w.s[a] - 1) / w.s[a])) + 1;
}

// Tap (i, j) of the padded plane xp [..., H + 2p, W + 2p]: [..., oh, ow].
Tensor tap(const Tensor& xp, const Window& w, int64_t i, int64_t j, int64_t oh, int64_t ow) {
  const int64_t h0 = i * w.d[0], w0 = j * w.d[1];
  return xp.slice(-2, h0, h0 + (oh - 1) * w.s[0] + 1, w.s[0])
      .slice(-1, w0, w0 + (ow - 1) * w.s[1] + 1, w.s[1]);
}

Tensor im2col_tensor(const Tensor& self, IntArrayRef kernel, IntArrayRef dilation,
                     IntArrayRef padding, IntArrayRef stride) {
  const Window w = window(kernel, dilation, padding, stride);
  const int64_t ndim = self.dim();
  const bool valid_dims = ndim >= 3 && self.size(1) != 0 && self.size(2) != 0;
  TORCH_CHECK(
      (ndim == 3 && self.size(0) && valid_dims) || (ndim == 4 && valid_dims && self.size(3) != 0),
      "Expected 3D or 4D (batch mode) tensor input with possible 0 batch size and non-zero "
      "dimensions, but got: ",
      self.sizes());
  const Tensor x = ndim == 3 ? self.unsqueeze(0) : self;
  const int64_t h = x.size(2), wd = x.size(3);
  const int64_t oh = blocks(w, 0, h), ow = blocks(w, 1, wd);
  TORCH_CHECK(oh >= 1 && ow >= 1, "Given input with spatial size (", h, ", ", h, "), kernel_size=(",
              w.k[0], ", ", w.k[1], "), dilation=(", w.d[0], ", ", w.d[1], "), padding=(", w.p[0],
              ", ", w.p[1], "), calculated shape of the array of sliding blocks as (", oh, ", ", ow,
              "), but its components must be at least one.");
  OneOp op;
  const Tensor xp = at::constant_pad_nd(x, {w.p[1], w.p[1], w.p[0], w.p[0]});
  std::vector<Tensor> taps;
  for (int64_t i = 0; i < w.k[0]; ++i) {
    for (int64_t j = 0; j < w.k[1]; ++j) taps.push_back(tap(xp, w, i, j, oh, ow));
  }
  Tensor cols = at::stack(taps, 2).reshape({x.size(0), x.size(1) * w.k[0] * w.k[1], oh * ow});
  op.finish();
  return ndim == 3 ? cols.squeeze(0) : cols;
}

Tensor col2im_tensor(const Tensor& self, c10::SymIntArrayRef output_size_sym, IntArrayRef kernel,
                     IntArrayRef dilation, IntArrayRef padding, IntArrayRef stride) {
  const auto output_size = C10_AS_INTARRAYREF_SLOW(output_size_sym);
  TORCH_CHECK(output_size.size() == 2, "It is expected output_size equals to 2, but got size ",
              output_size.size());
  const Window w = window(kernel, dilation, padding, stride);
  const int64_t ndim = self.dim();
  const bool valid_dims = ndim >= 2 && self.size(ndim - 2) != 0 && self.size(ndim - 1) != 0;
  TORCH_CHECK((ndim == 2 || ndim == 3) && valid_dims,
              "Expected 2D or 3D (batch mode) tensor for input with possibly 0 batch size and "
              "non-zero dimensions for input, but got: ",
              self.sizes());
  const Tensor x = ndim == 2 ? self.unsqueeze(0) : self;
  const int64_t planes = x.size(1), length = x.size(2), kk = w.k[0] * w.k[1];
  TORCH_CHECK(planes % kk == 0,
              "Expected size of input's dimension 1 to be divisible by the product of "
              "kernel_size, but got input.size(1)=",
              planes, " and kernel_size=(", w.k[0], ", ", w.k[1], ").");
  const int64_t h = output_size[0], wd = output_size[1];
  const int64_t oh = blocks(w, 0, h), ow = blocks(w, 1, wd);
  const auto describe = [&] {
    return c10::str("Given output_size=(", h, ", ", wd, "), kernel_size=(", w.k[0], ", ", w.k[1],
                    "), dilation=(", w.d[0], ", ", w.d[1], "), padding=(", w.p[0], ", ", w.p[1],
                    "), stride=(", w.s[0], ", ", w.s[1], "), ");
  };
  TORCH_CHECK(length == oh * ow, describe(),
              "expected size of input's dimension 2 to match the calculated number of sliding "
              "blocks ",
              oh, " * ", ow, " = ", oh * ow, ", but got input.size(2)=", length, ".");
  TORCH_CHECK(oh >= 1 && ow >= 1, describe(),
              "calculated shape of the array of sliding blocks as (", oh, ", ", ow,
              "), which is too small (non-positive)");
  const int64_t n = x.size(0), c = planes / kk;
  OneOp op;
  const Tensor cols = x.reshape({n, c, w.k[0], w.k[1], oh, ow});
  Tensor out = at::zeros({n, c, h + 2 * w.p[0], wd + 2 * w.p[1]}, x.options());
  for (int64_t i = 0; i < w.k[0]; ++i) {
    for (int64_t j = 0; j < w.k[1]; ++j)
      tap(out, w, i, j, oh, ow).add_(cols.select(2, i).select(2, j));
  }
  out = out.slice(2, w.p[0], w.p[0] + h).slice(3, w.p[1], w.p[1] + wd);
  out = (ndim == 2 ? out.squeeze(0) : out).contiguous();
  op.finish();
  return out;
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("im2col", im2col_tensor);
  m.impl("im2col.out",
         [](const Tensor& self, IntArrayRef k, IntArrayRef d, IntArrayRef p, IntArrayRef s,
            Tensor& out) -> Tensor& { return copy_to_out(out, im2col_tensor(self, k, d, p, s)); });
  m.impl("col2im", col2im_tensor);
  m.impl("col2im.out",
         [](const Tensor& self, c10::SymIntArrayRef size, IntArrayRef k, IntArrayRef d,
            IntArrayRef p, IntArrayRef s, Tensor& out) -> Tensor& {
           return copy_to_out(out, col2im_tensor(self, size, k, d, p, s));
         });
}

}  // namespace torch_pjrt::aten
