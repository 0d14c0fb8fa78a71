// Delivering op results: new tensor, in place, or out=, each ending the eager op.
#include "aten/op_result.h"

#include <ATen/ExpandUtils.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/native/Resize.h>
#include <ATen/native/TypeProperties.h>

#include "aten/tensor_bridge.h"
#include "lowering/views.h"

namespace torch_pjrt::aten {
namespace {

// TensorIterator's check for the ops it runs on the CPU (those recorded by elementwise()): no
// input read after part of it was written.
void check_partial_overlap(const at::Tensor& dst, const OpResult& r) {
  if (r.overlap_allowed) return;
  for (const at::Tensor& input : r.inputs) at::assert_no_partial_overlap(dst, input);
}

SelfOverlap self_overlap_of(const OpResult& r, SelfOverlap asked) {
  if (r.overlap_allowed) return SelfOverlap::kAllowed;
  return r.inputs.empty() ? asked : SelfOverlap::kAsPassed;
}

// The layout TensorIterator gives a resized out= of an elementwise op on the CPU: dense, its dims
// ordered as its reorder_dimensions() orders them from the inputs' strides (a dim an input
// broadcasts along does not count for that input; equal strides put the smaller dim first). An
// input converted to the common dtype first counts with its copy's strides: its own when dense,
// else dense in the same dim order (a broadcast dim of the copy gets a real stride).
std::vector<int64_t> input_layout(at::IntArrayRef sizes, const OpResult& r) {
  const int64_t n = static_cast<int64_t>(sizes.size());
  std::vector<std::vector<int64_t>> strides;  // per input, over out's dims
  for (const at::Tensor& input : r.inputs) {
    const bool copied = input.scalar_type() != r.common && !input.is_non_overlapping_and_dense();
    const std::vector<int64_t> own =
        copied ? at::infer_dense_strides(input.sizes(), input.strides()) : input.strides().vec();
    std::vector<int64_t>& s = strides.emplace_back(n, 0);
    for (int64_t i = 0, offset = n - input.dim(); i < input.dim(); ++i) {
      if (input.size(i) != 1 || sizes[offset + i] == 1) s[offset + i] = own[i];
    }
  }
  const auto should_swap = [&](int64_t d0, int64_t d1) {
    for (const std::vector<int64_t>& s : strides) {
      if (s[d0] == 0 || s[d1] == 0) continue;
      if (s[d0] != s[d1]) return s[d0] < s[d1] ? -1 : 1;
      if (sizes[d0] > sizes[d1]) return 1;
    }
    return 0;
  };
  std::vector<int64_t> perm(n);  // fastest dim first
  for (int64_t i = 0; i < n; ++i) perm[i] = n - 1 - i;
  for (int64_t i = 1; i < n; ++i) {  // insertion sort that leaves ambiguous pairs in place
    for (int64_t d0 = i - 1, d1 = i; d0 >= 0; --d0) {
      const int c = should_swap(perm[d0], perm[d1]);
      if (c < 0) break;
      if (c > 0) {
        std::swap(perm[d0], perm[d1]);
        d1 = d0;
      }
    }
  }
  std::vector<int64_t> dense(n);
  int64_t stride = 1;
  for (int64_t d : perm) {
    dense[d] = stride;
    stride *= sizes[d];
  }
  return dense;
}

void follow_input_layout(at::Tensor& out, const OpResult& r) {
  const std::vector<int64_t> dense = input_layout(out.sizes(), r);
  if (at::IntArrayRef(dense) != out.strides()) out.as_strided_(out.sizes(), dense);
}

// Runs `checks`, an op's checks of the tensor it writes. When one fails, the op's result is never
// used: the device-side checks the op recorded are dropped, or they would raise at a later,
// unrelated sync.
template <typename Checks>
void check_destination(Checks&& checks) {
  try {
    checks();
  } catch (...) {
    discard_op_checks();
    throw;
  }
}

void check_castable(at::ScalarType result, const at::Tensor& dst) {
  TORCH_CHECK(at::canCast(result, dst.scalar_type()), "result type ", result,
              " can't be cast to the desired output type ", dst.scalar_type());
}

void check_storable(const at::Tensor& dst, const OpResult& r) {
  check_castable(r.dtype, dst);
  TORCH_CHECK(dst.device() ==
                  at::Device(c10::DeviceType::PrivateUse1, static_cast<c10::DeviceIndex>(r.device)),
              "Expected out tensor to have device tpu:", r.device, ", but got ", dst.device(),
              " instead");
}

at::Tensor& store(at::Tensor& dst, const OpResult& r) {
  write(dst, convert(r.value, dst.scalar_type()));
  finish_op();
  return dst;
}

}  // namespace

OpResult elementwise(const graph::OpDef& op, const char* name,
                     std::vector<const at::Tensor*> inputs, at::ScalarType out_dtype,
                     graph::Attrs attrs, std::optional<at::ScalarType> compute) {
  const int device = common_device(name, inputs);
  std::vector<int64_t> sizes = inputs[0]->sizes().vec();
  for (size_t i = 1; i < inputs.size(); ++i) sizes = at::infer_size(sizes, inputs[i]->sizes());
  std::vector<graph::DataPtr> operands;
  std::vector<at::Tensor> on_device;
  for (const at::Tensor* t : inputs) {
    operands.push_back(operand(*t, compute.value_or(out_dtype), device));
    if (t->is_privateuseone()) on_device.push_back(*t);
  }
  if (compute) attrs.ints = {static_cast<int64_t>(element_type(*compute))};
  graph::DataPtr value = graph::record1(op, std::move(operands), std::move(attrs),
                                        tensor_type(out_dtype, sizes), device);
  return {std::move(value),           out_dtype, std::move(sizes), device, std::move(on_device),
          compute.value_or(out_dtype)};
}

void check_binary_destination(const at::Tensor& dst, const at::Tensor& a, const at::Tensor& b) {
  at::assert_no_internal_overlap(dst);
  for (const at::Tensor* t : {&a, &b}) {
    if (!t->is_same(dst)) at::assert_no_partial_overlap(dst, *t);
  }
  const std::vector<int64_t> shape = at::infer_size(a.sizes(), b.sizes());
  TORCH_CHECK(!dst.is_same(a) || a.sizes() == at::IntArrayRef(shape), "output with shape ",
              a.sizes(), " doesn't match the broadcast shape ", at::IntArrayRef(shape));
  check_castable(at::result_type(a, b), dst);
}

std::optional<at::ScalarType> scalar_operand_compute(at::ScalarType dtype, const at::Tensor& b) {
  if (at::isReducedFloatingType(dtype) && b.numel() == 1) return at::kFloat;
  return std::nullopt;
}

namespace {

// Whether TensorIterator could lay a new result of these inputs out other than contiguously: only
// when one of them is not contiguous (channels_last, transposed, expanded).
bool may_follow_inputs(const OpResult& r) {
  for (const at::Tensor& input : r.inputs) {
    if (!input.is_contiguous()) return true;
  }
  return false;
}

// A new tensor of r's value laid out densely with `strides` (a permutation of the contiguous
// ones): the storage holds the value transposed to that dim order (a view_read of the value, which
// lowers to a transpose), and the tensor's strides are set over it.
at::Tensor make_strided(const OpResult& r, const std::vector<int64_t>& strides) {
  const int64_t n = static_cast<int64_t>(r.sizes.size());
  std::vector<int64_t> order(n);  // outermost first
  for (int64_t i = 0; i < n; ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t a, int64_t b) { return strides[a] > strides[b]; });
  const c10::DimVector logical = c10::contiguous_strides(r.sizes);
  std::vector<int64_t> physical_sizes, physical_strides;
  for (int64_t d : order) {
    physical_sizes.push_back(r.sizes[d]);
    physical_strides.push_back(logical[d]);
  }
  graph::DataPtr physical = graph::record1(
      lowering::kViewRead, {r.value}, lowering::view_attrs(physical_sizes, physical_strides, 0),
      tensor_type(r.dtype, physical_sizes), r.device);
  at::Tensor t = make_tensor(std::move(physical), r.dtype, r.device);
  t.as_strided_(r.sizes, strides);
  return t;
}

at::Tensor new_tensor(const OpResult& r, const std::vector<int64_t>& strides) {
  if (r.sizes.size() < 2 || c10::multiply_integers(r.sizes) < 2 ||
      at::IntArrayRef(strides) == at::IntArrayRef(c10::contiguous_strides(r.sizes))) {
    return make_tensor(r.value, r.dtype, r.device);
  }
  return make_strided(r, strides);
}

}  // namespace

at::Tensor to_new(const OpResult& r) {
  // TensorIterator's output layout: dense in the inputs' dim order (channels_last in,
  // channels_last out), as for a resized out=; contiguous when every input is.
  at::Tensor t = may_follow_inputs(r) ? new_tensor(r, input_layout(r.sizes, r))
                                      : make_tensor(r.value, r.dtype, r.device);
  finish_op();
  return t;
}

at::Tensor make_result(const OpResult& r, c10::MemoryFormat format) {
  switch (format) {
    case c10::MemoryFormat::ChannelsLast:
      if (r.sizes.size() == 4) return new_tensor(r, c10::get_channels_last_strides_2d(r.sizes));
      break;
    case c10::MemoryFormat::ChannelsLast3d:
      if (r.sizes.size() == 5) return new_tensor(r, c10::get_channels_last_strides_3d(r.sizes));
      break;
    default:
      break;
  }
  return make_tensor(r.value, r.dtype, r.device);
}

at::Tensor to_new(const OpResult& r, c10::MemoryFormat format) {
  at::Tensor t = make_result(r, format);
  finish_op();
  return t;
}

at::Tensor& to_self(at::Tensor& self, const OpResult& r, SelfOverlap self_overlap) {
  check_destination([&] {
    TORCH_CHECK(self.sizes() == at::IntArrayRef(r.sizes), "output with shape ", self.sizes(),
                " doesn't match the broadcast shape ", at::IntArrayRef(r.sizes));
    if (self_overlap_of(r, self_overlap) != SelfOverlap::kAllowed) {
      at::assert_no_internal_overlap(self);
    }
    check_partial_overlap(self, r);
    check_storable(self, r);
  });
  return store(self, r);
}

at::Tensor& to_out(at::Tensor& out, const OpResult& r, SelfOverlap self_overlap) {
  for (const at::Tensor& input : r.inputs) {
    if (input.is_same(out)) return to_self(out, r);  // x.op_(y) written as op(x, y, out=x)
  }
  check_destination([&] {
    const SelfOverlap check = self_overlap_of(r, self_overlap);
    if (check == SelfOverlap::kAsPassed) at::assert_no_internal_overlap(out);
    const bool resized = out.sizes() != at::IntArrayRef(r.sizes);
    at::native::resize_output(out, r.sizes);
    if (resized) follow_input_layout(out, r);
    if (check == SelfOverlap::kAsResized) at::assert_no_internal_overlap(out);
    check_partial_overlap(out, r);
    check_storable(out, r);
  });
  return store(out, r);
}

void check_out_dtype(const at::Tensor& out, at::ScalarType dtype) {
  TORCH_CHECK(out.scalar_type() == dtype, "Expected out tensor to have dtype ",
              c10::scalarTypeToTypeMeta(dtype), ", but got ", out.dtype(), " instead");
}

at::Tensor& to_same_dtype_out(at::Tensor& out, const OpResult& r) {
  check_destination([&] {
    TORCH_CHECK(out.scalar_type() == r.dtype, "Found dtype ", out.scalar_type(), " but expected ",
                r.dtype);
  });
  return to_out(out, r);
}

at::Tensor& to_structured_out(at::Tensor& out, const OpResult& r, SelfOverlap self_overlap) {
  check_destination([&] { check_out_dtype(out, r.dtype); });
  return to_out(out, r, self_overlap);
}

void check_structured_out(const at::Tensor& out, at::ScalarType dtype, at::IntArrayRef sizes,
                          SelfOverlap self_overlap) {
  check_out_dtype(out, dtype);
  // An out= that needs resizing is laid out afresh, so it cannot overlap itself after that.
  const bool resized = out.sizes() != sizes;
  if (self_overlap == SelfOverlap::kAsPassed ||
      (self_overlap == SelfOverlap::kAsResized && !resized)) {
    at::assert_no_internal_overlap(out);
  }
}

at::Tensor& copy_to_out(at::Tensor& out, const at::Tensor& r) {
  at::native::resize_output(out, r.sizes());
  return out.copy_(r);
}

OpResult result_of(const at::Tensor& t) {
  return {read(t), t.scalar_type(), t.sizes().vec(), static_cast<int>(t.device().index())};
}

}  // namespace torch_pjrt::aten
