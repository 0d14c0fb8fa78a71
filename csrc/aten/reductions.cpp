// Reductions: sum, mean, max/min and amax/amin over dimension lists, with PyTorch's dtype rules.
#include "lowering/reductions.h"

#include <ATen/ATen.h>
#include <ATen/WrapDimUtilsMulti.h>
#include <torch/library.h>

#include "aten/op_result.h"
#include "aten/tensor_bridge.h"

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

// max()/min() over every element; PyTorch rejects empty inputs.
OpResult extremum_all(const graph::OpDef& op, const char* name, const Tensor& self) {
  TORCH_CHECK(self.numel() > 0, name,
              "(): Expected reduction dim to be specified for "
              "input.numel() == 0. Specify the reduction dim with the 'dim' argument.");
  return reduce(op, name, self, std::nullopt, false, self.scalar_type());
}

OpResult extremum_dims(const graph::OpDef& op, const char* name, const Tensor& self,
                       at::IntArrayRef dims, bool keepdim) {
  for (int64_t d : dims) {
    const int64_t w = at::maybe_wrap_dim(d, self.dim());
    TORCH_CHECK(self.numel() > 0 || self.dim() == 0 || self.size(w) != 0, name,
                "(): Expected reduction dim ", w, " to have non-zero size.");
  }
  TORCH_CHECK(self.numel() > 0 || !dims.empty(), name,
              "(): Expected reduction dim to be "
              "specified for input.numel() == 0.");
  return reduce(op, name, self, dims, keepdim, self.scalar_type());
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
  m.impl("max",
         [](const Tensor& self) { return to_new(extremum_all(lowering::kAmax, "max", self)); });
  m.impl("min",
         [](const Tensor& self) { return to_new(extremum_all(lowering::kAmin, "min", self)); });
  m.impl("amax", [](const Tensor& self, at::IntArrayRef dims, bool keepdim) {
    return to_new(extremum_dims(lowering::kAmax, "amax", self, dims, keepdim));
  });
  m.impl("amin", [](const Tensor& self, at::IntArrayRef dims, bool keepdim) {
    return to_new(extremum_dims(lowering::kAmin, "amin", self, dims, keepdim));
  });
  m.impl("amax.out",
         [](const Tensor& self, at::IntArrayRef dims, bool keepdim, Tensor& out) -> Tensor& {
           return to_out(out, extremum_dims(lowering::kAmax, "amax", self, dims, keepdim));
         });
  m.impl("amin.out",
         [](const Tensor& self, at::IntArrayRef dims, bool keepdim, Tensor& out) -> Tensor& {
           return to_out(out, extremum_dims(lowering::kAmin, "amin", self, dims, keepdim));
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
