// fill_ and zero_: every element of a tensor (or view) set to one value.
#include <ATen/ATen.h>
#include <ATen/Dispatch_v2.h>
#include <torch/library.h>

#include "aten/dtype_rules.h"
#include "aten/tensor_bridge.h"
#include "lowering/creation.h"

namespace torch_pjrt::aten {
namespace {

at::Tensor& fill_scalar(at::Tensor& self, const at::Scalar& value) {
  const int device = common_device("fill_", {&self});
  // The CPU's checked conversion: "value cannot be converted to type int8_t without overflow".
  AT_DISPATCH_V2(self.scalar_type(), "fill_", AT_WRAP([&] { (void)value.to<scalar_t>(); }),
                 AT_EXPAND(AT_ALL_TYPES_AND_COMPLEX), at::kBool, at::kHalf, at::kBFloat16,
                 at::kComplexHalf, AT_EXPAND(AT_FLOAT8_TYPES),
                 AT_EXPAND(AT_BAREBONES_UNSIGNED_TYPES));
  graph::DataPtr v = scalar(value, self.scalar_type(), device);
  if (self.dim() > 0 && self.is_complex() &&
      (value.isComplex() || self.scalar_type() == at::kComplexHalf)) {
    // A complex value (and any complex32 one) is built from its parts (tensor_bridge's scalar):
    // broadcast it.
    v = graph::record1(lowering::kConvert, {v}, {}, tensor_type(self.scalar_type(), self.sizes()),
                       device);
  } else if (self.dim() > 0) {
    // Broadcast the rank-0 constant: a fill node of the full shape.
    graph::Attrs attrs = v->producer->attrs;
    v = graph::record1(lowering::kFill, {}, std::move(attrs),
                       tensor_type(self.scalar_type(), self.sizes()), device);
  }
  write(self, std::move(v));
  finish_op();
  return self;
}

at::Tensor& fill_tensor(at::Tensor& self, const at::Tensor& value) {
  TORCH_CHECK(value.dim() == 0, "fill_ only supports 0-dimension value tensor but got tensor with ",
              value.dim(), " dimensions.");
  if (value.is_cpu()) return fill_scalar(self, value.item());
  const int device = common_device("fill_", {&self, &value});
  write(self, graph::record1(lowering::kConvert, {read(value)}, {},
                             tensor_type(self.scalar_type(), self.sizes()), device));
  finish_op();
  return self;
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("fill_.Scalar", fill_scalar);
  m.impl("fill_.Tensor", fill_tensor);
  m.impl("zero_", [](at::Tensor& self) -> at::Tensor& {
    if (is_float4(self)) {  // zero bytes, as the CPU's memset
      float4_bytes(self).zero_();
      return self;
    }
    return fill_scalar(self, 0);
  });
}

}  // namespace torch_pjrt::aten
