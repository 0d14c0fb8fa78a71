// max_unpool2d/3d (max_unpool1d is PyTorch's composite over 2d): the input scattered into zeros at
// max pooling's flat per-plane indices, with PyTorch's checks. Indices out of range are reported
// by scatter's device-side check. Autograd's backward (a gather) is composed of native ops.
#include <ATen/ATen.h>
#include <torch/library.h>

#include "aten/op_result.h"
#include "aten/tensor_bridge.h"

namespace torch_pjrt::aten {
namespace {

using at::Tensor;

Tensor max_unpool(int64_t nd, const Tensor& self, const Tensor& indices,
                  c10::SymIntArrayRef output_size_sym) {
  // Duplicate indices race on the CPU and CUDA: both refuse under use_deterministic_algorithms.
  at::globalContext().alertNotDeterministic(nd == 2 ? "max_unpooling2d_forward_out"
                                                    : "max_unpooling3d_forward_out");
  const auto output_size = C10_AS_INTARRAYREF_SLOW(output_size_sym);
  const char* fn =
      nd == 2 ? "max_unpooling2d_forward_out_cpu()" : "max_unpooling3d_forward_out_cpu()";
  TORCH_CHECK(indices.scalar_type() == at::kLong,
              "elements in indices should be type int64 but got: ", indices.scalar_type());
  TORCH_CHECK(static_cast<int64_t>(output_size.size()) == nd, "There should be exactly ",
              nd == 2 ? "two elements (height, width)" : "three elements (depth, height, width)",
              " in output_size, but got ", output_size.size(), " elements.");
  TORCH_CHECK(self.dim() == nd + 1 || self.dim() == nd + 2, "Input to max_unpooling", nd,
              "d should be a ", nd + 1, "d or ", nd + 2, "d Tensor, but got a tensor with ",
              self.dim(), " dimensions.");
  TORCH_CHECK(self.sizes() == indices.sizes(),
              "Expected shape of indices to be same as that of the input tensor (", self.sizes(),
              ") but got indices tensor with shape: ", indices.sizes());
  for (int64_t i = 1; i < self.dim(); ++i) {
    TORCH_CHECK(self.size(i) > 0, fn,
                ": Expected input to have non-zero size for non-batch dimensions, but got ",
                self.sizes(), " with dimension ", i, " being empty.");
  }
  const bool batch = self.dim() == nd + 2;
  const Tensor x = batch ? self : self.unsqueeze(0);
  const Tensor index = batch ? indices : indices.unsqueeze(0);
  const int64_t n = x.size(0), c = x.size(1);
  int64_t plane = 1;
  for (int64_t s : output_size) plane *= s;
  OneOp op;
  Tensor out = at::zeros({n, c, plane}, x.options())
                   .scatter(2, index.reshape({n, c, -1}), x.reshape({n, c, -1}));
  std::vector<int64_t> sizes{n, c};
  sizes.insert(sizes.end(), output_size.begin(), output_size.end());
  out = out.reshape(sizes);
  op.finish();
  return batch ? out : out.squeeze(0);
}

void check_3d(at::IntArrayRef stride, at::IntArrayRef padding) {
  TORCH_CHECK(stride.size() == 3,
              "There should be exactly three elements (depth, height, width) in stride, but got: ",
              stride.size(), " elements.");
  TORCH_CHECK(padding.size() == 3,
              "There should be exactly three elements (depth, height, width) in padding, but got: ",
              padding.size(), " elements.");
  TORCH_CHECK(stride[0] > 0 && stride[1] > 0 && stride[2] > 0,
              "strides should be greater than zero, but got stride: ", stride);
}

Tensor max_unpool3d_tensor(const Tensor& self, const Tensor& indices,
                           c10::SymIntArrayRef output_size, at::IntArrayRef stride,
                           at::IntArrayRef padding) {
  check_3d(stride, padding);
  return max_unpool(3, self, indices, output_size);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("max_unpool2d", [](const Tensor& self, const Tensor& indices, c10::SymIntArrayRef size) {
    return max_unpool(2, self, indices, size);
  });
  m.impl(
      "max_unpool2d.out",
      [](const Tensor& self, const Tensor& indices, c10::SymIntArrayRef size,
         Tensor& out) -> Tensor& { return copy_to_out(out, max_unpool(2, self, indices, size)); });
  m.impl("max_unpool3d", max_unpool3d_tensor);
  m.impl("max_unpool3d.out",
         [](const Tensor& self, const Tensor& indices, c10::SymIntArrayRef size,
            at::IntArrayRef stride, at::IntArrayRef padding, Tensor& out) -> Tensor& {
           return copy_to_out(out, max_unpool3d_tensor(self, indices, size, stride, padding));
         });
}

}  // namespace torch_pjrt::aten
