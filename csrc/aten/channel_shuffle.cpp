// channel_shuffle: PyTorch's checks, then its composite (a reshape, transpose and reshape).
#include <ATen/ATen.h>
#include <torch/library.h>

#include "aten/op_result.h"
#include "aten/tensor_bridge.h"

namespace torch_pjrt::aten {
namespace {

using at::Tensor;

Tensor channel_shuffle_tensor(const Tensor& self, c10::SymInt groups_sym) {
  const int64_t groups = groups_sym.expect_int();
  TORCH_CHECK(self.dim() > 2,
              "channel_shuffle expects input to have at least 3 dimensions, but got input with "
              "sizes ",
              self.sizes());
  TORCH_CHECK(groups > 0, "Number of groups to divide channels in must be positive.",
              " Value of groups:", groups);
  TORCH_CHECK(self.size(1) % groups == 0, "Number of channels must be divisible by groups. Got ",
              self.size(1), " channels and ", groups, " groups.");
  OneOp op;
  Tensor r = at::native_channel_shuffle(self, groups);
  op.finish();
  return r;
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("channel_shuffle", channel_shuffle_tensor);
  m.impl("channel_shuffle.out", [](const Tensor& self, c10::SymInt groups, Tensor& out) -> Tensor& {
    return copy_to_out(out, channel_shuffle_tensor(self, groups));
  });
}

}  // namespace torch_pjrt::aten
