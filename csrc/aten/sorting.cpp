// sort (stable, descending) and topk, returning values and int64 indices.
#include "lowering/sorting.h"

#include <ATen/ATen.h>
#include <torch/library.h>

#include "aten/op_result.h"
#include "aten/tensor_bridge.h"

namespace torch_pjrt::aten {
namespace {

using at::Tensor;

// Sorts along `dim` and keeps the first `k` entries along it (all when k is absent).
std::tuple<OpResult, OpResult> sorted(const char* name, const Tensor& self, int64_t dim,
                                      bool descending, std::optional<int64_t> k) {
  const int device = common_device(name, {&self});
  const int64_t d = at::maybe_wrap_dim(dim, self.dim());
  std::vector<int64_t> sizes = self.sizes().vec();
  if (k && self.dim() > 0) sizes[d] = *k;
  auto values = graph::record(
      lowering::kSort, {read(self)}, {{d, descending ? 1 : 0}, {}},
      {tensor_type(self.scalar_type(), sizes), tensor_type(at::kLong, sizes)}, device);
  return {OpResult{values[0], self.scalar_type(), sizes, device},
          OpResult{values[1], at::kLong, sizes, device}};
}

std::tuple<OpResult, OpResult> topk_result(const Tensor& self, int64_t k, int64_t dim,
                                           bool largest) {
  const int64_t d = at::maybe_wrap_dim(dim, self.dim());
  const int64_t size = self.dim() == 0 ? 1 : self.size(d);
  TORCH_CHECK(k >= 0 && k <= size, "selected index k out of range");
  TORCH_CHECK(self.scalar_type() != at::kBool, "topk does not support bool dtypes on CPU");
  return sorted("topk", self, d, largest, k);
}

std::tuple<Tensor, Tensor> to_new_pair(const std::tuple<OpResult, OpResult>& r) {
  const auto& [v, i] = r;
  Tensor values = make_tensor(v.value, v.dtype, v.device);
  Tensor indices = make_tensor(i.value, i.dtype, i.device);
  finish_op();
  return {values, indices};
}

// sort's out= may not overlap itself (checked once resized); topk's may.
std::tuple<Tensor&, Tensor&> to_out_pair(Tensor& values, Tensor& indices,
                                         const std::tuple<OpResult, OpResult>& r,
                                         SelfOverlap self_overlap = SelfOverlap::kAllowed) {
  to_out(values, std::get<0>(r), self_overlap);
  to_out(indices, std::get<1>(r), self_overlap);
  return {values, indices};
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  // Always stable: an unstable sort may order ties any way, so the stable order is valid for both.
  m.impl("sort", [](const Tensor& self, int64_t dim, bool descending) {
    return to_new_pair(sorted("sort", self, dim, descending, std::nullopt));
  });
  m.impl("sort.stable", [](const Tensor& self, std::optional<bool>, int64_t dim, bool descending) {
    return to_new_pair(sorted("sort", self, dim, descending, std::nullopt));
  });
  m.impl("sort.values",
         [](const Tensor& self, int64_t dim, bool descending, Tensor& values,
            Tensor& indices) -> std::tuple<Tensor&, Tensor&> {
           return to_out_pair(values, indices, sorted("sort", self, dim, descending, std::nullopt),
                              SelfOverlap::kAsResized);
         });
  m.impl("sort.values_stable",
         [](const Tensor& self, std::optional<bool>, int64_t dim, bool descending, Tensor& values,
            Tensor& indices) -> std::tuple<Tensor&, Tensor&> {
           return to_out_pair(values, indices, sorted("sort", self, dim, descending, std::nullopt),
                              SelfOverlap::kAsResized);
         });
  // Returned in sorted order whether or not `sorted` asks for it.
  m.impl("topk", [](const Tensor& self, int64_t k, int64_t dim, bool largest, bool) {
    return to_new_pair(topk_result(self, k, dim, largest));
  });
  m.impl("topk.values",
         [](const Tensor& self, int64_t k, int64_t dim, bool largest, bool, Tensor& values,
            Tensor& indices) -> std::tuple<Tensor&, Tensor&> {
           return to_out_pair(values, indices, topk_result(self, k, dim, largest));
         });
}

}  // namespace torch_pjrt::aten
