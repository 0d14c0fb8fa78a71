// fractional_max_pool2d and its backward on "tpu", given the op's random samples: each output
// element's window starts where the CPU's interval sequence puts it (computed on the device in the
// input's dtype, as the CPU rounds), the windows are gathered, and the gradient scatter-added back.
#include <ATen/ATen.h>
#include <ATen/native/FractionalMaxPooling.h>
#include <ATen/ops/fractional_max_pool2d_backward_meta_dispatch.h>
#include <ATen/ops/fractional_max_pool2d_meta_dispatch.h>
#include <torch/library.h>

#include "aten/op_result.h"
#include "aten/tensor_bridge.h"

namespace torch_pjrt::aten {
namespace {

using at::Tensor;

// The CPU's checks are its C++ meta functions (called directly: torch's Python meta
// registrations word them differently), run on meta tensors of the same sizes.
Tensor on_meta(const Tensor& t) { return at::empty(t.sizes(), t.options().device(at::kMeta)); }

// The CPU's window starts for `sample` [N, C]: trunc((i + s) * alpha) - trunc(s * alpha) for the
// first out - 1 windows, in - pool for the last, each step rounded to the samples' dtype.
Tensor window_starts(const Tensor& sample, int64_t in, int64_t out, int64_t pool) {
  const Tensor last =
      at::full({sample.size(0), sample.size(1), 1}, in - pool, sample.options().dtype(at::kLong));
  if (out == 1) return last;
  double alpha = 0;
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, sample.scalar_type(), "alpha", [&] {
    alpha = static_cast<double>(static_cast<scalar_t>(in - pool) / static_cast<scalar_t>(out - 1));
  });
  const Tensor a = at::scalar_tensor(alpha, sample.options());
  const Tensor s = sample.unsqueeze(-1);
  const Tensor i = at::arange(out - 1, sample.options());
  const Tensor starts = ((i + s) * a).to(at::kLong) - (s * a).to(at::kLong);
  return at::cat({starts, last}, -1);
}

std::tuple<Tensor, Tensor> pool_forward(const Tensor& input, at::IntArrayRef pool_size,
                                        at::IntArrayRef output_size, const Tensor& samples) {
  at::meta::fractional_max_pool2d(on_meta(input), pool_size, output_size, on_meta(samples));
  at::native::fractional_max_pool_check_shape<2>(input, samples);
  const bool batched = input.dim() == 4;
  const Tensor x = batched ? input : input.unsqueeze(0);
  const int64_t n = x.size(0), c = x.size(1), h = x.size(2), w = x.size(3);
  const int64_t ph = pool_size[0], pw = pool_size[1], oh = output_size[0], ow = output_size[1];
  OneOp op;
  const Tensor s = samples.narrow(0, 0, n);
  const auto longs = input.options().dtype(at::kLong);
  // [N, C, oh, ph] rows and [N, C, ow, pw] columns of every window.
  const Tensor rows =
      window_starts(s.select(2, 1), h, oh, ph).unsqueeze(-1) + at::arange(ph, longs);
  const Tensor cols =
      window_starts(s.select(2, 0), w, ow, pw).unsqueeze(-1) + at::arange(pw, longs);
  const Tensor flat = (rows.view({n, c, oh, 1, ph, 1}) * w + cols.view({n, c, 1, ow, 1, pw}))
                          .reshape({n, c, oh, ow, ph * pw});
  const Tensor values =
      x.reshape({n, c, h * w}).gather(2, flat.view({n, c, -1})).view({n, c, oh, ow, ph * pw});
  // The CPU keeps the first maximum, or the last NaN of the window.
  const Tensor position = at::arange(1, ph * pw + 1, longs);
  const Tensor last_nan = (at::isnan(values) * position).amax(-1, true) - 1;
  const Tensor pick = at::where(last_nan >= 0, last_nan, values.argmax(-1, true));
  Tensor output = values.gather(-1, pick).squeeze(-1);
  Tensor indices = flat.gather(-1, pick).squeeze(-1);
  if (!batched) {
    output = output.squeeze(0);
    indices = indices.squeeze(0);
  }
  op.finish();
  return {output, indices};
}

Tensor pool_backward(const Tensor& grad, const Tensor& input, at::IntArrayRef pool_size,
                     at::IntArrayRef output_size, const Tensor& indices) {
  at::meta::fractional_max_pool2d_backward(on_meta(grad), on_meta(input), pool_size, output_size,
                                           on_meta(indices));
  const int64_t planes = input.numel() / std::max<int64_t>(1, input.size(-1) * input.size(-2));
  OneOp op;
  Tensor r = at::zeros({planes, input.size(-2) * input.size(-1)}, input.options())
                 .scatter_add(1, indices.reshape({planes, -1}), grad.reshape({planes, -1}))
                 .view(input.sizes());
  op.finish();
  return r;
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("fractional_max_pool2d", pool_forward);
  m.impl("fractional_max_pool2d_backward", pool_backward);
  m.impl("fractional_max_pool2d.output",
         [](const Tensor& input, at::IntArrayRef pool_size, at::IntArrayRef output_size,
            const Tensor& samples, Tensor& output, Tensor& indices) {
           const auto [o, i] = pool_forward(input, pool_size, output_size, samples);
           to_structured_out(output, result_of(o));
           to_structured_out(indices, result_of(i));
           return std::tuple<Tensor&, Tensor&>(output, indices);
         });
  m.impl("fractional_max_pool2d_backward.grad_input",
         [](const Tensor& grad, const Tensor& input, at::IntArrayRef pool_size,
            at::IntArrayRef output_size, const Tensor& indices, Tensor& grad_input) -> Tensor& {
           return to_structured_out(
               grad_input, result_of(pool_backward(grad, input, pool_size, output_size, indices)));
         });
}

}  // namespace torch_pjrt::aten
