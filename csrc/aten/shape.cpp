// Shape kernels: cat, flip, roll, tril/triu, constant_pad_nd, and unfold (a view). Argument checks
// and output shapes come from running the op on meta tensors, so errors match PyTorch's.
#include "lowering/shape.h"

#include <ATen/ATen.h>
#include <ATen/WrapDimUtilsMulti.h>
#include <ATen/native/TypeProperties.h>
#include <ATen/ops/unfold_native.h>
#include <torch/library.h>

#include <algorithm>

#include "aten/dtype_rules.h"
#include "aten/op_result.h"
#include "aten/tensor_bridge.h"
#include "lowering/creation.h"

namespace torch_pjrt::aten {
namespace {

using at::Tensor;

Tensor meta(const Tensor& t) {
  return at::empty_strided(t.sizes(), t.strides(), t.options().device(at::kMeta));
}

// A result of `sizes` filled with zeros: for outputs without elements.
OpResult zeros(at::ScalarType dtype, at::IntArrayRef sizes, int device) {
  graph::Attrs zero;
  zero.floats = {0.0};
  return {graph::record1(lowering::kFill, {}, zero, tensor_type(dtype, sizes), device), dtype,
          sizes.vec(), device};
}

// PyTorch's cat checks (its meta kernel here is a Python decomposition with other messages).
// The CPU's memory format of a cat result: the one every input suggests, else contiguous.
c10::MemoryFormat cat_memory_format(const at::ITensorListRef& list) {
  std::optional<c10::MemoryFormat> format;
  for (const Tensor& t : list) {
    const c10::MemoryFormat f = t.suggest_memory_format();
    if (f == c10::MemoryFormat::Contiguous || (format && *format != f)) {
      return c10::MemoryFormat::Contiguous;
    }
    format = f;
  }
  return format.value_or(c10::MemoryFormat::Contiguous);
}

OpResult cat_result(const at::ITensorListRef& list, int64_t dim) {
  std::vector<Tensor> tensors;
  for (const Tensor& t : list) tensors.push_back(t);
  TORCH_CHECK_VALUE(!tensors.empty(), "torch.cat(): expected a non-empty list of Tensors");
  std::vector<const Tensor*> ptrs;
  std::vector<Tensor> kept;  // legacy 1-d empty tensors are skipped whatever their rank
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    TORCH_CHECK(t.dim() > 0, "zero-dimensional tensor (at position ", i,
                ") cannot be concatenated");
    ptrs.push_back(&t);
    if (!(t.dim() == 1 && t.numel() == 0)) kept.push_back(t);
  }
  const int device = common_device("cat", ptrs);
  const at::ScalarType dtype = at::native::result_type(list);
  if (kept.empty()) return zeros(dtype, {0}, device);
  const Tensor& first = kept[0];
  dim = at::maybe_wrap_dim(dim, first.dim());
  std::vector<int64_t> sizes = first.sizes().vec();
  sizes[dim] = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    if (t.dim() == 1 && t.numel() == 0) continue;
    TORCH_CHECK(t.dim() == first.dim(), "Tensors must have same number of dimensions: got ",
                first.dim(), " and ", t.dim());
    for (int64_t d = 0; d < t.dim(); ++d) {
      if (d == dim) continue;
      TORCH_CHECK(t.size(d) == first.size(d), "Sizes of tensors must match except in dimension ",
                  dim, ". Expected size ", first.size(d), " but got size ", t.size(d),
                  " for tensor number ", i, " in the list.");
    }
    sizes[dim] += t.size(dim);
  }
  if (c10::multiply_integers(sizes) == 0) return zeros(dtype, sizes, device);
  std::vector<graph::DataPtr> parts;
  for (const Tensor& t : kept)
    if (t.numel() > 0) parts.push_back(read(t));
  graph::Attrs attrs;
  attrs.ints = {dim};
  auto value = graph::record1(lowering::kConcat, std::move(parts), std::move(attrs),
                              tensor_type(dtype, sizes), device);
  return {value, dtype, sizes, device};
}

OpResult unary_result(const graph::OpDef& op, const char* name, const Tensor& self,
                      graph::Attrs attrs) {
  const int device = common_device(name, {&self});
  if (self.numel() == 0) return zeros(self.scalar_type(), self.sizes(), device);
  auto value = graph::record1(op, {read(self)}, std::move(attrs),
                              tensor_type(self.scalar_type(), self.sizes()), device);
  return {value, self.scalar_type(), self.sizes().vec(), device};
}

Tensor flip_tensor(const Tensor& self, at::IntArrayRef dims) {
  at::dim_list_to_bitset(dims, self.dim());  // PyTorch's range and repetition checks
  graph::Attrs attrs;
  // A 0-dim tensor accepts dims 0 and -1 and has nothing to reverse.
  if (self.dim() > 0)
    for (int64_t d : dims) attrs.ints.push_back(at::maybe_wrap_dim(d, self.dim()));
  return to_new(unary_result(lowering::kFlip, "flip", self, std::move(attrs)));
}

Tensor roll_tensor(const Tensor& self, at::IntArrayRef shifts, at::IntArrayRef dims) {
  if (is_float4(self)) return float4_from_bytes(roll_tensor(float4_bytes(self), shifts, dims));
  // As on the CPU, an empty tensor rolled along one dim is copied before the dim is checked.
  if (self.numel() == 0 && shifts.size() == 1 && dims.size() == 1) {
    return self.clone(at::MemoryFormat::Preserve);
  }
  if (shifts.size() != 1 || dims.size() != 1) {  // the CPU's roll_common checks, its messages
    TORCH_CHECK(!shifts.empty(), "`shifts` required");
    TORCH_CHECK((dims.empty() && shifts.size() == 1) || shifts.size() == dims.size(),
                "shifts and dimensions must align. shifts: ", shifts.size(),
                ", dims:", dims.size());
  }
  at::roll(meta(self), shifts, dims);
  if (dims.empty() && self.dim() != 1) {
    // Rolls the flattened tensor.
    return roll_tensor(self.reshape(-1), shifts, {0}).view(self.sizes());
  }
  graph::Attrs attrs;
  for (size_t i = 0; i < shifts.size(); ++i) {
    const int64_t d = at::maybe_wrap_dim(dims.empty() ? 0 : dims[i], self.dim());
    const int64_t n = self.size(d);
    if (n == 0) continue;
    attrs.ints.push_back(d);
    attrs.ints.push_back(((shifts[i] % n) + n) % n);
  }
  return to_new(unary_result(lowering::kRoll, "roll", self, std::move(attrs)));
}

OpResult triangle_result(const Tensor& self, int64_t diagonal, bool upper) {
  const char* name = upper ? "triu" : "tril";
  TORCH_CHECK(self.dim() >= 2, name, ": input tensor must have at least 2 dimensions");
  graph::Attrs attrs;
  attrs.ints = {upper ? 1 : 0, diagonal};
  return unary_result(lowering::kTriangle, name, self, std::move(attrs));
}

Tensor constant_pad_nd(const Tensor& self, at::IntArrayRef pad, const at::Scalar& value) {
  TORCH_CHECK(pad.size() % 2 == 0, "Length of pad must be even but instead it equals ", pad.size());
  const int64_t padded = static_cast<int64_t>(pad.size()) / 2;
  TORCH_CHECK(padded <= self.dim(),
              "Padding length should be less than or equal to two times the input dimension but "
              "got padding length ",
              pad.size(), " and input of dimension ", self.dim());
  std::vector<int64_t> sizes = self.sizes().vec();
  for (int64_t k = 0; k < padded; ++k) {
    int64_t& size = sizes[self.dim() - 1 - k];
    size += pad[2 * k] + pad[2 * k + 1];
    TORCH_CHECK(size >= 0, "narrow(): length must be non-negative.");
  }
  const int device = common_device("constant_pad_nd", {&self});
  const at::ScalarType dtype = self.scalar_type();
  if (c10::multiply_integers(sizes) == 0) return to_new(zeros(dtype, sizes, device));
  if (self.numel() == 0) {
    graph::Attrs fill;
    fill.floats = {value.toDouble()};
    return to_new({graph::record1(lowering::kFill, {}, fill, tensor_type(dtype, sizes), device),
                   dtype, sizes, device});
  }
  // pad lists (low, high) from the last dimension backwards.
  graph::Attrs attrs;
  for (int64_t d = 0; d < self.dim(); ++d) {
    const int64_t k = self.dim() - 1 - d;
    attrs.ints.push_back(k < padded ? pad[2 * k] : 0);
    attrs.ints.push_back(k < padded ? pad[2 * k + 1] : 0);
  }
  auto value_operand = scalar(value, dtype, device);
  auto out = graph::record1(lowering::kPad, {read(self), value_operand}, std::move(attrs),
                            tensor_type(dtype, sizes), device);
  // The CPU allocates the result in the memory format the input suggests.
  return to_new({out, dtype, sizes, device}, self.suggest_memory_format());
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("cat", [](const at::ITensorListRef& tensors, int64_t dim) {
    if (!tensors.empty() && std::all_of(tensors.begin(), tensors.end(), is_float4)) {
      std::vector<Tensor> bytes;
      for (const Tensor& t : tensors) bytes.push_back(float4_bytes(t));
      return float4_from_bytes(at::cat(bytes, dim));
    }
    return to_new(cat_result(tensors, dim), cat_memory_format(tensors));
  });
  m.impl("cat.out", [](const at::ITensorListRef& tensors, int64_t dim, Tensor& out) -> Tensor& {
    OpResult r = cat_result(tensors, dim);
    TORCH_CHECK_TYPE(at::canCast(r.dtype, out.scalar_type()),
                     "torch.cat(): input types can't be cast to the desired output type ",
                     out.scalar_type());
    return to_out(out, r, SelfOverlap::kAsResized);
  });
  m.impl("flip", flip_tensor);
  m.impl("roll", roll_tensor);
  m.impl("tril", [](const Tensor& self, int64_t diagonal) {
    return to_new(triangle_result(self, diagonal, false));
  });
  m.impl("tril_", [](Tensor& self, int64_t diagonal) -> Tensor& {
    return to_self(self, triangle_result(self, diagonal, false));
  });
  m.impl("tril.out", [](const Tensor& self, int64_t diagonal, Tensor& out) -> Tensor& {
    return to_structured_out(out, triangle_result(self, diagonal, false));
  });
  m.impl("triu", [](const Tensor& self, int64_t diagonal) {
    return to_new(triangle_result(self, diagonal, true));
  });
  m.impl("triu_", [](Tensor& self, int64_t diagonal) -> Tensor& {
    return to_self(self, triangle_result(self, diagonal, true));
  });
  m.impl("triu.out", [](const Tensor& self, int64_t diagonal, Tensor& out) -> Tensor& {
    return to_structured_out(out, triangle_result(self, diagonal, true));
  });
  m.impl("constant_pad_nd", constant_pad_nd);
  m.impl("unfold", at::native::unfold);
}

}  // namespace torch_pjrt::aten
