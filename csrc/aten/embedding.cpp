// embedding_dense_backward: the gradient rows summed per index, as a scatter-add on the device.
// (The embedding forward is index_select, lowered with the indexing kernels.)
#include <ATen/ATen.h>
#include <torch/library.h>

#include "aten/op_result.h"
#include "aten/tensor_bridge.h"
#include "lowering/losses.h"

namespace torch_pjrt::aten {
namespace {

using at::Tensor;

OpResult dense_backward(const Tensor& grad, const Tensor& indices, c10::SymInt num_weights,
                        c10::SymInt padding_idx, bool scale_grad_by_freq) {
  TORCH_CHECK(indices.scalar_type() == at::kLong || indices.scalar_type() == at::kInt,
              "Expected tensor for argument #1 'indices' to have one of the following scalar "
              "types: Long, Int; but got ",
              indices.toString(), " instead (while checking arguments for embedding_backward)");
  TORCH_CHECK(grad.dim() == indices.dim() + 1 &&
                  grad.sizes().slice(0, indices.dim()).equals(indices.sizes()),
              "embedding_backward: expected grad_output of shape ", indices.sizes(),
              " + [embedding_dim], but got ", grad.sizes());
  const int device = common_device("embedding_dense_backward", {&grad, &indices});
  graph::Attrs attrs;
  attrs.ints = {num_weights.expect_int(), padding_idx.expect_int(), scale_grad_by_freq};
  const std::vector<int64_t> sizes{num_weights.expect_int(), grad.size(-1)};
  auto value = graph::record1(lowering::kEmbeddingBackward, {read(grad), read(indices)}, attrs,
                              tensor_type(grad.scalar_type(), sizes), device);
  return {value, grad.scalar_type(), sizes, device};
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("embedding_dense_backward",
         [](const Tensor& grad, const Tensor& indices, c10::SymInt num_weights,
            c10::SymInt padding_idx, bool scale_grad_by_freq) {
           return to_new(dense_backward(grad, indices, std::move(num_weights),
                                        std::move(padding_idx), scale_grad_by_freq));
         });
  m.impl("embedding_dense_backward.out",
         [](const Tensor& grad, const Tensor& indices, c10::SymInt num_weights,
            c10::SymInt padding_idx, bool scale_grad_by_freq, Tensor& out) -> Tensor& {
           return to_out(out, dense_backward(grad, indices, std::move(num_weights),
                                             std::move(padding_idx), scale_grad_by_freq));
         });
}

}  // namespace torch_pjrt::aten
