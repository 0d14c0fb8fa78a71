// aten::multinomial on the device (sampling in Hugging Face generate). Without replacement, or for
// one sample, PyTorch's own device-generic kernel runs on lowered ops: its argument and value
// checks, then an exponential race (argmax or topk of p / q, q ~ Exp(1)). With replacement, each of
// the n samples is its own race: the distribution repeated n times, one sample from each.
#include <ATen/ATen.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/_assert_async_native.h>
#include <ATen/ops/multinomial_native.h>
#include <torch/library.h>

namespace torch_pjrt::aten {
namespace {

using at::Tensor;
using Gen = std::optional<at::Generator>;

Tensor draw(const Tensor& self, int64_t n, bool replacement, Gen gen) {
  if (!replacement || n == 1) return at::native::multinomial(self, n, replacement, std::move(gen));
  TORCH_CHECK(self.dim() > 0 && self.dim() <= 2, "prob_dist must be 1 or 2 dim");
  TORCH_CHECK(n > 0, "cannot sample n_sample <= 0 samples");
  const Tensor rows = self.dim() == 1 ? self.unsqueeze(0) : self;
  const int64_t batch = rows.size(0), categories = rows.size(1);
  const Tensor repeated =
      rows.unsqueeze(1).expand({batch, n, categories}).reshape({batch * n, categories});
  Tensor out = at::native::multinomial(repeated, 1, false, std::move(gen)).view({batch, n});
  return self.dim() == 1 ? out.squeeze(0) : out;
}

Tensor& draw_out(const Tensor& self, int64_t n, bool replacement, Gen gen, Tensor& out) {
  const Tensor result = draw(self, n, replacement, std::move(gen));
  at::native::resize_output(out, result.sizes());
  return out.copy_(result);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("multinomial", draw);
  m.impl("multinomial.out", draw_out);
  // The kernel's value check. Synchronous, as on the CPU: it reads the flag back.
  m.impl("_assert_async", at::native::_assert_async_cpu);
  m.impl("_assert_async.msg", at::native::_assert_async_msg_cpu);
}

}  // namespace torch_pjrt::aten
