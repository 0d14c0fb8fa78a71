// nn.EmbeddingBag on the device: aten::_embedding_bag (and _forward_only), its weight gradient
// (_embedding_bag_backward, dense) and the per_sample_weights gradient, each composed of lowered
// ops and recorded as one program. The auxiliary outputs follow the device (CUDA) layout that
// PyTorch's meta kernel gives non-CPU devices: offset2bag [N] (the bag of each index, -1 outside
// every bag), bag_size [offsets.size(0)] (indices counted per bag, padding_idx excluded),
// max_indices [bags, D] in max mode (the weight row of each maximum, -1 for an empty bag) and empty
// otherwise.
#include <ATen/ATen.h>
#include <ATen/OpMathType.h>
#include <ATen/TensorUtils.h>
#include <torch/library.h>

#include <limits>

#include "aten/tensor_bridge.h"

namespace torch_pjrt::aten {
namespace {

using at::Tensor;

constexpr int64_t kSum = 0;
constexpr int64_t kMean = 1;
constexpr int64_t kMax = 2;

using Outputs = std::tuple<Tensor, Tensor, Tensor, Tensor>;

void check_inputs(const Tensor& weight, const Tensor& indices, const Tensor& offsets, int64_t mode,
                  const std::optional<Tensor>& per_sample_weights, bool include_last_offset) {
  const at::TensorArg weight_arg(weight, "weight", 1), indices_arg(indices, "indices", 2),
      offsets_arg(offsets, "offsets", 3);
  at::checkScalarTypes("embedding_bag", indices_arg, {at::kLong, at::kInt});
  at::checkScalarTypes("embedding_bag", offsets_arg, {at::kLong, at::kInt});
  at::checkSameType("embedding_bag", indices_arg, offsets_arg);
  at::checkScalarTypes("embedding_bag", weight_arg,
                       {at::kHalf, at::kBFloat16, at::kFloat, at::kDouble});
  TORCH_CHECK(weight.dim() == 2,
              "embedding_bag: weight has to be a 2D Tensor, but got Tensor of "
              "dimension ",
              weight.dim());
  TORCH_CHECK(indices.dim() == 1, "input has to be a 1D or 2D Tensor, but got Tensor of dimension ",
              indices.dim());
  TORCH_CHECK(offsets.dim() == 1, "offsets has to be a 1D Tensor, but got Tensor of dimension ",
              offsets.dim());
  TORCH_CHECK(mode >= kSum && mode <= kMax, "embedding_bag: unknown mode ", mode);
  TORCH_CHECK(!include_last_offset || offsets.size(0) >= 1,
              "include_last_offset: number of offset should be at least 1");
  if (per_sample_weights && per_sample_weights->defined()) {
    TORCH_CHECK(mode == kSum, "embedding_bag: per_sample_weights only supported with mode='sum'");
    TORCH_CHECK(per_sample_weights->scalar_type() == weight.scalar_type(),
                "embedding_bag: Expected per_sample_weights to have the same dtype as weight");
    TORCH_CHECK(per_sample_weights->dim() == 1, "embedding_bag: per_sample_weights must be 1D");
    TORCH_CHECK(per_sample_weights->numel() == indices.numel(),
                "embedding_bag: expected "
                "per_sample_weights.numel() (",
                per_sample_weights->numel(), ") to be the same as indices.numel() (",
                indices.numel(), ")");
  }
  std::vector<const Tensor*> tensors{&weight, &indices, &offsets};
  if (per_sample_weights && per_sample_weights->defined()) tensors.push_back(&*per_sample_weights);
  common_device("embedding_bag", tensors);
}

// The bag of each index (the number of bag starts at or before its position, minus one) and
// whether it counts: inside a bag, and not padding_idx.
std::pair<Tensor, Tensor> locate(const Tensor& indices, const Tensor& offsets, int64_t bags,
                                 bool include_last_offset, int64_t padding_idx) {
  const Tensor pos = at::arange(indices.size(0), indices.options().dtype(at::kLong));
  const Tensor starts = offsets.narrow(0, 0, bags).to(at::kLong);
  const Tensor bag = at::le(starts.unsqueeze(0), pos.unsqueeze(1)).sum(1) - 1;
  Tensor inside = bag.ge(0);
  if (include_last_offset) {
    inside = at::logical_and(inside, pos.lt(offsets.select(0, bags).to(at::kLong)));
  }
  Tensor keep = inside;
  if (padding_idx >= 0) keep = at::logical_and(keep, indices.ne(padding_idx));
  return {at::where(inside, bag, -1), keep};
}

Outputs forward(const Tensor& weight, const Tensor& indices, const Tensor& offsets,
                bool /*scale_grad_by_freq*/, int64_t mode, bool /*sparse*/,
                const std::optional<Tensor>& per_sample_weights, bool include_last_offset,
                int64_t padding_idx) {
  check_inputs(weight, indices, offsets, mode, per_sample_weights, include_last_offset);
  const int64_t bags = offsets.size(0) - (include_last_offset ? 1 : 0);
  const int64_t n = indices.size(0);
  const int64_t dim = weight.size(1);
  const auto index_options = indices.options();
  OneOp op;
  Tensor output = at::zeros({bags, dim}, weight.options());
  Tensor offset2bag = at::full({n}, -1, index_options);
  Tensor bag_size = at::zeros({offsets.size(0)}, index_options);
  Tensor max_indices =
      mode == kMax ? at::full({bags, dim}, -1, index_options) : at::empty({0}, index_options);
  if (bags > 0 && n > 0) {
    const auto [bag, keep] = locate(indices, offsets, bags, include_last_offset, padding_idx);
    const Tensor slot = bag.clamp_min(0);  // a valid row for indices outside every bag (masked)
    const Tensor count =
        at::zeros({bags}, index_options).index_add(0, slot, keep.to(indices.scalar_type()));
    const Tensor rows = weight.index_select(0, indices);
    const Tensor kept = keep.unsqueeze(1);
    if (mode == kMax) {
      const Tensor lowest =
          at::full({}, -std::numeric_limits<double>::infinity(), weight.options());
      const Tensor expanded = slot.unsqueeze(1).expand({n, dim});
      const Tensor best =
          at::full({bags, dim}, -std::numeric_limits<double>::infinity(), weight.options())
              .scatter_reduce(0, expanded, at::where(kept, rows, lowest), "amax");
      // The first position holding each maximum, as PyTorch's kernels pick it.
      const Tensor pos = at::arange(n, index_options.dtype(at::kLong));
      const Tensor hit = at::logical_and(rows.eq(best.index_select(0, slot)), kept);
      const Tensor first =
          at::full({bags, dim}, n, index_options.dtype(at::kLong))
              .scatter_reduce(0, expanded, at::where(hit, pos.unsqueeze(1), n), "amin");
      const Tensor empty = count.eq(0).unsqueeze(1);
      output = at::where(empty, at::zeros({}, weight.options()), best);
      const Tensor row_of_first =
          indices.index_select(0, first.clamp_max(n - 1).flatten()).view({bags, dim});
      max_indices = at::where(empty, at::full({}, -1, index_options), row_of_first);
    } else {
      // Sums of half/bfloat16 rows accumulate in float32, as PyTorch's kernels do.
      const auto acc = at::toOpMathType(weight.scalar_type());
      Tensor values = at::where(kept, rows, at::zeros({}, weight.options())).to(acc);
      if (per_sample_weights && per_sample_weights->defined()) {
        values = values * per_sample_weights->to(acc).unsqueeze(1);
      }
      Tensor sums = at::zeros({bags, dim}, values.options()).index_add(0, slot, values);
      if (mode == kMean) sums = sums / count.clamp_min(1).unsqueeze(1).to(acc);
      output = sums.to(weight.scalar_type());
    }
    offset2bag = bag.to(indices.scalar_type());
    bag_size = include_last_offset ? at::cat({count, at::zeros({1}, index_options)}) : count;
  }
  op.finish();
  return {output, offset2bag, bag_size, max_indices};
}

// Each index's row of its bag's gradient, over the bag's size for mean and times its per-sample
// weight, and whether the index is in a bag at all (the rows of those that are not are to be
// dropped).
std::pair<Tensor, Tensor> index_rows(const Tensor& grad, const Tensor& offset2bag,
                                     const Tensor& bag_size, int64_t mode,
                                     const std::optional<Tensor>& per_sample_weights) {
  const Tensor bag = offset2bag.to(at::kLong);
  const Tensor slot = bag.clamp_min(0);
  Tensor g = grad.index_select(0, slot);
  if (mode == kMean) {
    g = g / bag_size.index_select(0, slot).clamp_min(1).unsqueeze(1).to(grad.scalar_type());
  }
  if (per_sample_weights && per_sample_weights->defined()) {
    g = g * per_sample_weights->unsqueeze(1);
  }
  return {g, bag.ge(0)};
}

Tensor dense_backward(const Tensor& grad, const Tensor& indices, const Tensor& offset2bag,
                      const Tensor& bag_size, const Tensor& max_indices, c10::SymInt num_weights,
                      bool scale_grad_by_freq, int64_t mode,
                      const std::optional<Tensor>& per_sample_weights, int64_t padding_idx) {
  TORCH_CHECK(grad.dim() == 2, "embedding_bag_backward: expected a 2D grad, got ", grad.dim(), "D");
  common_device("_embedding_bag_dense_backward", {&grad, &indices});
  const int64_t rows = num_weights.expect_int();
  OneOp op;
  Tensor result = at::zeros({rows, grad.size(1)}, grad.options());
  const Tensor zero = at::zeros({}, grad.options());
  if (mode == kMax) {
    if (max_indices.numel() > 0) {
      const Tensor src = at::where(max_indices.ge(0), grad, zero);
      result = result.scatter_add(0, max_indices.clamp_min(0).to(at::kLong), src);
    }
  } else if (indices.numel() > 0) {
    const Tensor index = indices.to(at::kLong);
    auto [g, keep] = index_rows(grad, offset2bag, bag_size, mode, per_sample_weights);
    if (padding_idx >= 0) keep = at::logical_and(keep, index.ne(padding_idx));
    if (scale_grad_by_freq) {
      const Tensor counts =
          at::zeros({rows}, index.options()).index_add(0, index, at::ones_like(index));
      g = g / counts.index_select(0, index).unsqueeze(1).to(grad.scalar_type());
    }
    result = result.index_add(0, index, at::where(keep.unsqueeze(1), g, zero));
  }
  op.finish();
  return result;
}

// The weight's sparse gradient (sparse=True; sum and mean, as PyTorch allows): the index rows,
// handed to embedding's sparse backward, which drops padding_idx and scales by frequency, as the
// CPU does.
Tensor sparse_backward(const Tensor& grad, const Tensor& indices, const Tensor& offset2bag,
                       const Tensor& bag_size, c10::SymInt num_weights, bool scale_grad_by_freq,
                       int64_t mode, const std::optional<Tensor>& per_sample_weights,
                       int64_t padding_idx) {
  common_device("_embedding_bag_sparse_backward", {&grad, &indices});
  const auto [g, in_bag] = index_rows(grad, offset2bag, bag_size, mode, per_sample_weights);
  return at::embedding_sparse_backward(
      at::where(in_bag.unsqueeze(1), g, at::zeros({}, grad.options())), indices,
      num_weights.expect_int(), padding_idx, scale_grad_by_freq);
}

// What autograd calls for the weight.
Tensor backward(const Tensor& grad, const Tensor& indices, const Tensor& /*offsets*/,
                const Tensor& offset2bag, const Tensor& bag_size, const Tensor& max_indices,
                c10::SymInt num_weights, bool scale_grad_by_freq, int64_t mode, bool sparse,
                const std::optional<Tensor>& per_sample_weights, int64_t padding_idx) {
  if (sparse) {
    return sparse_backward(grad, indices, offset2bag, bag_size, std::move(num_weights),
                           scale_grad_by_freq, mode, per_sample_weights, padding_idx);
  }
  return dense_backward(grad, indices, offset2bag, bag_size, max_indices, std::move(num_weights),
                        scale_grad_by_freq, mode, per_sample_weights, padding_idx);
}

Tensor per_sample_weights_backward(const Tensor& grad, const Tensor& weight, const Tensor& indices,
                                   const Tensor& offsets, const Tensor& offset2bag, int64_t mode,
                                   int64_t padding_idx) {
  TORCH_CHECK(mode == kSum,
              "embedding_bag_backward: per_sample_weights only supported for "
              "mode='sum'");
  common_device("_embedding_bag_per_sample_weights_backward", {&grad, &weight, &indices, &offsets});
  if (indices.numel() == 0) return at::zeros({0}, grad.options());
  OneOp op;
  // An empty offset2bag (what the CPU's sum mode returns) means: derive the bags from offsets.
  const Tensor bag =
      offset2bag.numel() == 0
          ? locate(indices, offsets, offsets.size(0), /*include_last_offset=*/false, -1).first
          : offset2bag.to(at::kLong);
  Tensor keep = bag.ge(0);
  if (padding_idx >= 0) keep = at::logical_and(keep, indices.ne(padding_idx));
  const Tensor products =
      (weight.index_select(0, indices) * grad.index_select(0, bag.clamp_min(0))).sum(1);
  Tensor result = at::where(keep, products, at::zeros({}, grad.options()));
  op.finish();
  return result;
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_embedding_bag", forward);
  m.impl("_embedding_bag_forward_only", forward);
  m.impl("_embedding_bag_backward", backward);
  m.impl("_embedding_bag_dense_backward", dense_backward);
  m.impl("_embedding_bag_per_sample_weights_backward", per_sample_weights_backward);
}

}  // namespace torch_pjrt::aten
