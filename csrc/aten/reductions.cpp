// Reductions: sum and mean over dimension lists, with PyTorch's dtype rules.
#include <ATen/ATen.h>
#include <ATen/WrapDimUtilsMulti.h>
#include <torch/library.h>

#include "aten/op_result.h"
#include "aten/tensor_bridge.h"
#include "lowering/ops.h"

namespace torch_pjrt::aten {
namespace {

using at::Tensor;

OpResult reduce(const graph::OpDef& op, const char* name, const Tensor& self,
                at::OptionalIntArrayRef dims, bool keepdim, at::ScalarType dtype) {
  const int device = common_device(name, {&self});
  const int64_t ndim = self.dim();
  // An absent or empty list reduces every dimension.
  const bool all = !dims.has_value() || dims->empty();
  const auto mask =
      all ? std::bitset<at::dim_bitset_size>().set() : at::dim_list_to_bitset(*dims, ndim);
  graph::Attrs attrs;
  std::vector<int64_t> sizes;
  for (int64_t d = 0; d < ndim; ++d) {
    if (mask[d]) {
      attrs.ints.push_back(d);
      if (keepdim) sizes.push_back(1);
    } else {
      sizes.push_back(self.size(d));
    }
  }
  auto value =
      graph::record1(op, {read(self)}, std::move(attrs), tensor_type(dtype, sizes), device);
  return {value, dtype, sizes, device};
}

at::ScalarType sum_dtype(const Tensor& self, std::optional<at::ScalarType> dtype) {
  if (dtype) return *dtype;
  return at::isIntegralType(self.scalar_type(), /*includeBool=*/true) ? at::kLong
                                                                      : self.scalar_type();
}

at::ScalarType mean_dtype(const Tensor& self, std::optional<at::ScalarType> dtype) {
  const at::ScalarType t = dtype.value_or(self.scalar_type());
  TORCH_CHECK(at::isFloatingType(t), "mean(): could not infer output dtype. ",
              dtype ? "Optional" : "Input",
              " dtype must be either a floating point or complex "
              "dtype. Got: ",
              t);
  return t;
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("sum.dim_IntList", [](const Tensor& self, at::OptionalIntArrayRef dims, bool keepdim,
                               std::optional<at::ScalarType> dtype) {
    return to_new(reduce(lowering::kSum, "sum", self, dims, keepdim, sum_dtype(self, dtype)));
  });
  m.impl("sum.IntList_out",
         [](const Tensor& self, at::OptionalIntArrayRef dims, bool keepdim,
            std::optional<at::ScalarType> dtype, Tensor& out) -> Tensor& {
           return to_out(
               out, reduce(lowering::kSum, "sum", self, dims, keepdim, sum_dtype(self, dtype)));
         });
  m.impl("mean.dim", [](const Tensor& self, at::OptionalIntArrayRef dims, bool keepdim,
                        std::optional<at::ScalarType> dtype) {
    return to_new(reduce(lowering::kMean, "mean", self, dims, keepdim, mean_dtype(self, dtype)));
  });
  m.impl("mean.out",
         [](const Tensor& self, at::OptionalIntArrayRef dims, bool keepdim,
            std::optional<at::ScalarType> dtype, Tensor& out) -> Tensor& {
           return to_out(
               out, reduce(lowering::kMean, "mean", self, dims, keepdim, mean_dtype(self, dtype)));
         });
}

}  // namespace torch_pjrt::aten
