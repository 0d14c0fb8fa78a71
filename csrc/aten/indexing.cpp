// Indexing kernels: gather, scatter/scatter_add/scatter_reduce, index_select/add/copy/fill,
// advanced indexing (index.Tensor, _index_put_impl_), masked_fill/scatter, take/put_ and the
// backward of unfold (nonzero and masked_select: data_dependent.cpp). Argument checks run the
// structured ops' C++ meta functions on the operands (aten/structured_meta.h) and the others on
// meta tensors, so errors match PyTorch's; elsewhere they are written out.
//
// Out-of-range indices are checked by the op's own program (aten/device_checks.h): the error is
// raised at the next synchronization, and the op's results depend on the check. (The results
// computed from invalid indices are never read: gathers read XLA's clamped position, scatters drop
// the update.) Indexing with bool masks takes their true positions from nonzero, which reads their
// count on the host: a synchronization.
#include "lowering/indexing.h"

#include <ATen/ATen.h>
#include <ATen/ExpandUtils.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/gather_meta.h>
#include <ATen/ops/index_add_meta.h>
#include <ATen/ops/index_copy_meta.h>
#include <ATen/ops/index_reduce_meta.h>
#include <ATen/ops/scatter_add_meta.h>
#include <ATen/ops/scatter_meta.h>
#include <ATen/ops/scatter_reduce_meta.h>
#include <torch/library.h>

#include <functional>

#include "aten/device_checks.h"
#include "aten/op_result.h"
#include "aten/structured_meta.h"
#include "aten/tensor_bridge.h"
#include "device/runtime_state.h"
#include "lowering/creation.h"
#include "lowering/elementwise.h"
#include "lowering/views.h"

namespace torch_pjrt::aten {
namespace {

using at::Scalar;
using at::Tensor;
using lowering::ScatterMode;

Tensor meta(const Tensor& t) {
  return at::empty_strided(t.sizes(), t.strides(), t.options().device(at::kMeta));
}

// Operands of a point gather or scatter: the index tensors' values and, per dimension of self,
// where its coordinate comes from (lowering/indexing.h's map).
struct Points {
  std::vector<graph::DataPtr> indices;
  std::vector<int64_t> map;
};

// `r` with its value depending on `checks` (those of its indices).
OpResult checked(OpResult r, const std::vector<graph::CheckPtr>& checks) {
  for (const graph::CheckPtr& c : checks) graph::depends_on(r.value, c);
  return r;
}

// PyTorch's "index I is out of bounds for dimension D with size S", after `prefix`.
CheckError out_of_bounds(graph::CheckKind kind, const std::string& prefix, int64_t dim,
                         int64_t size) {
  return {kind, prefix + "index ",
          " is out of bounds for dimension " + std::to_string(dim) + " with size " +
              std::to_string(size)};
}

// `index` (1-d or 0-dim, n elements) laid out so that it runs along dimension `dim` of a space of
// rank `rank` when broadcast with trailing dims aligned.
graph::DataPtr along(const Tensor& index, int64_t dim, int64_t rank) {
  std::vector<int64_t> shape(std::max<int64_t>(rank - dim, 1), 1);
  shape[0] = index.numel();
  return read(index.reshape(shape));
}

OpResult gather_points(const Tensor& self, const Points& p, at::IntArrayRef out_sizes, int device) {
  if (self.numel() == 0 && c10::multiply_integers(out_sizes) > 0) {
    // Every index is out of range of the empty dimension: the op's index check fails at the next
    // sync point; XLA has nothing to gather from, so the value is zeros, never read.
    graph::Attrs zero;
    zero.floats = {0.0};
    return {graph::record1(lowering::kFill, {}, std::move(zero),
                           tensor_type(self.scalar_type(), out_sizes), device),
            self.scalar_type(), out_sizes.vec(), device};
  }
  std::vector<graph::DataPtr> operands{read(self)};
  operands.insert(operands.end(), p.indices.begin(), p.indices.end());
  graph::Attrs attrs;
  attrs.ints = p.map;
  auto value = graph::record1(lowering::kIndexGather, std::move(operands), std::move(attrs),
                              tensor_type(self.scalar_type(), out_sizes), device);
  return {value, self.scalar_type(), out_sizes.vec(), device};
}

graph::DataPtr scatter_points(graph::DataPtr self, graph::DataPtr updates, const Points& p,
                              ScatterMode mode, int device) {
  std::vector<graph::DataPtr> operands{self, std::move(updates)};
  operands.insert(operands.end(), p.indices.begin(), p.indices.end());
  graph::Attrs attrs;
  attrs.ints = {mode};
  // Index operands follow self and updates here.
  for (int64_t m : p.map) attrs.ints.push_back(m < 0 ? m - 1 : m);
  auto type = self->type;
  return graph::record1(lowering::kIndexScatter, std::move(operands), std::move(attrs),
                        std::move(type), device);
}

// `value` broadcast to `sizes` with dtype's element type.
graph::DataPtr broadcast(graph::DataPtr value, at::ScalarType dtype, at::IntArrayRef sizes) {
  const int device = value->device;
  return graph::record1(lowering::kConvert, {std::move(value)}, {}, tensor_type(dtype, sizes),
                        device);
}

// ---- gather / scatter along a dimension ----

Points along_dim(const Tensor& self, int64_t dim, const Tensor& index) {
  Points p;
  for (int64_t d = 0; d < self.dim(); ++d) p.map.push_back(d == dim ? -1 : d);
  p.indices = {read(index)};
  return p;
}

// gather, scatter and index_add: indices in [0, size) along `dim` (a RuntimeError on the CPU).
graph::CheckPtr check_dim_range(const char* op, const Tensor& self, int64_t dim,
                                const Tensor& index) {
  const int64_t size = self.dim() == 0 ? 1 : self.size(dim);
  return check_in_range(op, index, 0, size,
                        out_of_bounds(graph::CheckKind::Runtime, "", dim, size));
}

OpResult gather_result(const Tensor& self, int64_t dim, const Tensor& index) {
  const std::vector<int64_t> sizes =
      check_structured<at::meta::structured_gather>(self, dim, index, false);
  const int device = common_device("gather", {&self, &index});
  dim = at::maybe_wrap_dim(dim, self.dim());
  auto check = check_dim_range("gather", self, dim, index);
  return checked(gather_points(self, along_dim(self, dim, index), sizes, device), {check});
}

at::ScalarType scalar_type_of(const Scalar& s) {
  if (s.isBoolean()) return at::kBool;
  if (s.isIntegral(false)) return at::kLong;
  if (s.isComplex()) return at::kComplexDouble;
  return at::kDouble;
}

// The element identity of a scatter_reduce reduction, for include_self=False.
Scalar identity(ScatterMode mode, at::ScalarType dtype) {
  if (mode == lowering::kAccumulate) return 0;
  if (mode == lowering::kMultiply) return 1;
  Scalar r;
  AT_DISPATCH_ALL_TYPES_AND3(at::kHalf, at::kBFloat16, at::kBool, dtype, "identity", [&] {
    using L = std::numeric_limits<scalar_t>;
    const scalar_t lo = L::has_infinity ? -L::infinity() : L::lowest();
    const scalar_t hi = L::has_infinity ? L::infinity() : L::max();
    r = Scalar(mode == lowering::kMax ? lo : hi);
  });
  return r;
}

// self with `updates` (dims `space`) combined into it at points p by `mode`; with `mean`, the sums
// divided by the counts (self counting once when included; integers round down, as PyTorch's
// floor division does). include_self false first resets the positions reached to the
// reduction's identity.
OpResult reduce_points(const Tensor& self, const Points& p, graph::DataPtr updates,
                       at::IntArrayRef space, ScatterMode mode, bool include_self, bool mean,
                       int device) {
  const at::ScalarType dtype = self.scalar_type();
  graph::DataPtr base = read(self);
  if (!include_self) {
    auto id = broadcast(scalar(identity(mode, dtype), dtype, device), dtype, space);
    base = scatter_points(base, id, p, lowering::kReplace, device);
  }
  graph::DataPtr value = scatter_points(base, std::move(updates), p, mode, device);
  if (!mean) return {value, dtype, self.sizes().vec(), device};
  auto one = scalar(1, dtype, device);
  graph::DataPtr counts = broadcast(one, dtype, self.sizes());
  if (!include_self) {
    counts = scatter_points(counts, broadcast(scalar(0, dtype, device), dtype, space), p,
                            lowering::kReplace, device);
  }
  counts = scatter_points(counts, broadcast(one, dtype, space), p, lowering::kAccumulate, device);
  const bool floating = at::isFloatingType(dtype);
  graph::Attrs compute;
  if (!floating) compute.ints = {static_cast<int64_t>(hlo::ElementType::F64)};
  const at::ScalarType quotient_type = floating ? dtype : at::kDouble;
  graph::DataPtr quotient = graph::record1(lowering::kDiv, {value, counts}, compute,
                                           tensor_type(quotient_type, self.sizes()), device);
  if (!floating) {
    quotient = graph::record1(lowering::kFloor, {quotient}, {},
                              tensor_type(at::kDouble, self.sizes()), device);
    quotient = convert(quotient, dtype);
  }
  return {quotient, dtype, self.sizes().vec(), device};
}

// scatter of `src` (a tensor, or a scalar when undefined) into a copy of self (reduce_points).
OpResult scatter_result(const char* op, const Tensor& self, int64_t dim, const Tensor& index,
                        const Tensor& src, const std::optional<Scalar>& value, ScatterMode mode,
                        bool include_self = true, bool mean = false) {
  const int device = common_device(op, {&self, &index, &src});
  dim = at::maybe_wrap_dim(dim, self.dim());
  auto check = check_dim_range(op, self, dim, index);
  const at::ScalarType dtype = self.scalar_type();
  graph::DataPtr updates;
  if (value) {
    updates = broadcast(scalar(*value, dtype, device), dtype, index.sizes());
  } else {
    Tensor window = src;
    for (int64_t d = 0; d < index.dim(); ++d) window = window.narrow(d, 0, index.size(d));
    updates = read(window);
  }
  return checked(reduce_points(self, along_dim(self, dim, index), updates, index.sizes(), mode,
                               include_self, mean, device),
                 {check});
}

ScatterMode reduce_mode(c10::string_view reduce) {
  if (reduce == "add" || reduce == "sum" || reduce == "mean") return lowering::kAccumulate;
  if (reduce == "multiply" || reduce == "prod") return lowering::kMultiply;
  if (reduce == "amax") return lowering::kMax;
  return lowering::kMin;
}

OpResult scatter_reduce_result(const Tensor& self, int64_t dim, const Tensor& index,
                               const Tensor& src, c10::string_view reduce, bool include_self) {
  check_structured<at::meta::structured_scatter_reduce_two>(self, dim, index, src, reduce,
                                                            include_self);
  return scatter_result("scatter_reduce", self, dim, index, src, std::nullopt, reduce_mode(reduce),
                        include_self, reduce == "mean");
}

// ---- index_select / index_add / index_fill ----

Tensor vector_index(const Tensor& index) { return index.dim() == 0 ? index.reshape(1) : index; }

// index_select's argument checks, as the CPU kernel makes them (torch's Python meta kernel words
// them differently and costs tens of microseconds). Returns the result's sizes.
std::vector<int64_t> check_index_select(const Tensor& self, int64_t dim, const Tensor& index) {
  dim = at::maybe_wrap_dim(dim, self.dim());
  TORCH_CHECK_INDEX(index.dim() <= 1, "index_select(): Index is supposed to be a vector");
  TORCH_CHECK(!(self.dim() == 0 && index.numel() != 1),
              "index_select(): Index to scalar can have only 1 value, got ", index.numel(),
              " value(s)");
  TORCH_CHECK(index.scalar_type() == at::kLong || index.scalar_type() == at::kInt,
              "index_select(): Expected dtype int32 or int64 for index");
  std::vector<int64_t> sizes = self.sizes().vec();
  if (self.dim() > 0) sizes[dim] = index.numel();
  return sizes;
}

OpResult index_select_result(const Tensor& self, int64_t dim, const Tensor& index) {
  const std::vector<int64_t> sizes = check_index_select(self, dim, index);
  const int device = common_device("index_select", {&self, &index});
  dim = at::maybe_wrap_dim(dim, self.dim());
  const int64_t size = self.dim() == 0 ? 1 : self.size(dim);
  auto check = check_in_range("index_select", index, 0, size,
                              {graph::CheckKind::Index, "index out of range in self", "", false});
  Points p;
  if (self.dim() > 0) {
    for (int64_t d = 0; d < self.dim(); ++d) p.map.push_back(d == dim ? -1 : d);
    p.indices = {along(vector_index(index), dim, self.dim())};
  }
  return checked(gather_points(self, p, sizes, device), {check});
}

// The points of self's slices at index (1-d or 0-dim) along dim: index_add/copy/fill/reduce.
Points index_points(const Tensor& self, int64_t dim, const Tensor& index) {
  Points p;
  for (int64_t d = 0; d < self.dim(); ++d) p.map.push_back(d == dim ? -1 : d);
  if (self.dim() > 0) p.indices = {along(vector_index(index), dim, self.dim())};
  return p;
}

// The shape of index_copy/fill's updates: self's with dimension dim sized like index. (index_copy
// lets a 0-dim self take a one-element source and the reverse: the source is reshaped to it.)
std::vector<int64_t> index_space(const Tensor& self, int64_t dim, const Tensor& index) {
  std::vector<int64_t> space = self.sizes().vec();
  if (self.dim() > 0) space[dim] = index.numel();
  return space;
}

// index_add and index_reduce: the CPU refuses a source of another rank than self (even 0-dim
// against one element, which the meta kernels let through).
void check_same_rank(const Tensor& self, const Tensor& source) {
  TORCH_CHECK(self.dim() == source.dim(),
              "source tensor shape must match self tensor shape, excluding the specified "
              "dimension. Got self.shape = ",
              self.sizes(), " source.shape = ", source.sizes());
}

// Scatters `updates` (dims index_space) at index.
OpResult index_scatter_result(const Tensor& self, int64_t dim, const Tensor& index,
                              graph::DataPtr updates, ScatterMode mode, int device) {
  return {
      scatter_points(read(self), std::move(updates), index_points(self, dim, index), mode, device),
      self.scalar_type(), self.sizes().vec(), device};
}

OpResult index_add_result(const Tensor& self, int64_t dim, const Tensor& index,
                          const Tensor& source, const Scalar& alpha) {
  check_structured<at::meta::structured_index_add>(self, dim, index, source, alpha);
  const int device = common_device("index_add", {&self, &index, &source});
  dim = at::maybe_wrap_dim(dim, self.dim());
  // The CPU's error differs by kernel: RuntimeError naming the index for alpha 1 and self of
  // rank 2 or more, IndexError otherwise.
  const bool unit_alpha = alpha.isIntegral(true) && alpha.toLong() == 1;
  auto check =
      self.dim() > 1 && unit_alpha
          ? check_dim_range("index_add", self, dim, index)
          : check_in_range("index_add", index, 0, self.dim() == 0 ? 1 : self.size(dim),
                           {graph::CheckKind::Index, "index out of range in self", "", false});
  check_same_rank(self, source);
  graph::DataPtr updates = read(source);
  if (!unit_alpha) {
    Tensor factor = at::scalar_tensor(alpha, at::TensorOptions().dtype(scalar_type_of(alpha)));
    factor.unsafeGetTensorImpl()->set_wrapped_number(true);
    updates = elementwise(lowering::kMul, "index_add", {&source, &factor}, source.scalar_type(), {})
                  .value;
  }
  return checked(index_scatter_result(self, dim, index, updates, lowering::kAccumulate, device),
                 {check});
}

OpResult index_copy_result(const Tensor& self, int64_t dim, const Tensor& index,
                           const Tensor& source) {
  check_structured<at::meta::structured_index_copy>(self, dim, index, source);
  const int device = common_device("index_copy", {&self, &index, &source});
  dim = at::maybe_wrap_dim(dim, self.dim());
  const int64_t size = self.dim() == 0 ? 1 : self.size(dim);
  auto check = check_in_range("index_copy", index, 0, size,
                              out_of_bounds(graph::CheckKind::Index, "index_copy_(): ", dim, size));
  const Tensor src = source.reshape(index_space(self, dim, index));
  return checked(index_scatter_result(self, dim, index, read(src), lowering::kReplace, device),
                 {check});
}

// index_reduce: source's slices reduced (prod, mean, amax, amin) into self's at index along dim.
OpResult index_reduce_result(const Tensor& self, int64_t dim, const Tensor& index,
                             const Tensor& source, c10::string_view reduce, bool include_self) {
  check_structured<at::meta::structured_index_reduce>(self, dim, index, source, reduce,
                                                      include_self);
  const int device = common_device("index_reduce", {&self, &index, &source});
  dim = at::maybe_wrap_dim(dim, self.dim());
  const int64_t size = self.dim() == 0 ? 1 : self.size(dim);
  auto check = check_in_range("index_reduce", index, 0, size,
                              {graph::CheckKind::Index, "index out of range in self", "", false});
  check_same_rank(self, source);
  return checked(reduce_points(self, index_points(self, dim, index), read(source), source.sizes(),
                               reduce_mode(reduce), include_self, reduce == "mean", device),
                 {check});
}

// unfold's backward: each window element of grad added back at its position in the input. The
// positions are a constant made on the host.
Tensor unfold_backward(const Tensor& grad, at::IntArrayRef input_sizes, int64_t dim, int64_t size,
                       int64_t step) {
  const int device = common_device("unfold_backward", {&grad});
  const int64_t rank = static_cast<int64_t>(input_sizes.size());
  dim = at::maybe_wrap_dim(dim, std::max<int64_t>(rank, 1));
  const at::ScalarType dtype = grad.scalar_type();
  if (rank == 0) return to_new({read(grad.reshape({})), dtype, {}, device});
  graph::DataPtr zeros = broadcast(scalar(0, dtype, device), dtype, input_sizes);
  if (grad.numel() == 0) return to_new({zeros, dtype, input_sizes.vec(), device});
  const int64_t windows = grad.size(dim);
  std::vector<int64_t> shape(rank - dim + 1, 1);
  shape.front() = windows;
  shape.back() = size;
  const Tensor positions =
      (at::arange(windows).mul(step).reshape({windows, 1}) + at::arange(size).reshape({1, size}))
          .reshape(shape)
          .to(grad.device());
  Points p;
  for (int64_t d = 0; d < rank; ++d) p.map.push_back(d == dim ? -1 : d);
  p.indices = {read(positions)};
  return to_new({scatter_points(zeros, read(grad), p, lowering::kAccumulate, device), dtype,
                 input_sizes.vec(), device});
}

Tensor& index_fill_(Tensor& self, int64_t dim, const Tensor& index, const Tensor& value) {
  Tensor m = meta(self);
  m.index_fill_(dim, meta(index), meta(value));
  // PyTorch fills with value.item(): a complex value cannot fill a real tensor.
  TORCH_CHECK(self.is_complex() || !value.is_complex(),
              "index_fill_(): Converting complex Scalar to non-complex type is not supported");
  const int device = common_device("index_fill_", {&self, &index, &value});
  dim = at::maybe_wrap_dim(dim, self.dim());
  const int64_t size = self.dim() == 0 ? 1 : self.size(dim);
  auto check = check_in_range("index_fill_", index, -size, size,
                              out_of_bounds(graph::CheckKind::Index, "", dim, size));
  auto updates = broadcast(operand(value, self.scalar_type(), device), self.scalar_type(),
                           index_space(self, dim, index));
  return to_self(
      self, checked(index_scatter_result(self, dim, index, updates, lowering::kReplace, device),
                    {check}));
}

// ---- advanced indexing ----

// Advanced indexing reduced to points: bool masks become the long indices of their true
// positions, indices are checked and broadcast together, and `space` is the result's shape.
struct Advanced {
  Points points;
  std::vector<int64_t> space;
  std::vector<graph::CheckPtr> checks;
};

// A bool/uint8 mask indexing self's dims from `first` must have their sizes (as on the CPU).
void check_mask_shape(const Tensor& self, const Tensor& mask, int64_t first) {
  for (int64_t j = 0; j < mask.dim(); ++j) {
    TORCH_CHECK_INDEX(mask.size(j) == self.size(first + j), "The shape of the mask ", mask.sizes(),
                      " at index ", j, " does not match the shape of the indexed tensor ",
                      self.sizes(), " at index ", first + j);
  }
}

// `check_space`, when given, checks the result's shape before the indices' range checks are
// recorded (index_put_'s values, which the CPU checks first).
Advanced advanced(const char* op, const Tensor& self, const c10::List<std::optional<Tensor>>& list,
                  const std::function<void(at::IntArrayRef)>& check_space = {}) {
  std::vector<Tensor> indices;  // per dimension of self; undefined where not indexed
  std::vector<bool> from_mask;  // per dimension: the true positions of a mask (in range)
  for (const std::optional<Tensor>& opt : list) {
    if (!opt || !opt->defined()) {
      indices.emplace_back();
      from_mask.push_back(false);
      continue;
    }
    const Tensor& index = *opt;
    const at::ScalarType t = index.scalar_type();
    TORCH_CHECK_INDEX(t == at::kLong || t == at::kInt || t == at::kByte || t == at::kBool,
                      "tensors used as indices must be long, int, byte or bool tensors");
    if (t == at::kByte) {
      TORCH_WARN(
          "indexing with dtype torch.uint8 is now deprecated, please use a dtype "
          "torch.bool instead.");
    }
    if (t != at::kByte && t != at::kBool) {
      indices.push_back(index);  // CPU indices are allowed, as for other accelerators
      from_mask.push_back(false);
      continue;
    }
    // A mask: its true positions (nonzero: one synchronization reads their count).
    const int64_t first = static_cast<int64_t>(indices.size());
    TORCH_CHECK_INDEX(first + index.dim() <= self.dim(),
                      "too many indices for tensor of dimension ", self.dim());
    check_mask_shape(self, index, first);
    const Tensor positions = at::nonzero(index);
    for (int64_t j = 0; j < index.dim(); ++j) {
      indices.push_back(positions.select(1, j).contiguous().to(self.device()));
      from_mask.push_back(true);
    }
  }
  TORCH_CHECK_INDEX(static_cast<int64_t>(indices.size()) <= self.dim(),
                    "too many indices for tensor of dimension ", self.dim());
  indices.resize(self.dim());
  from_mask.resize(self.dim(), false);

  std::vector<int64_t> indexed;
  for (int64_t d = 0; d < self.dim(); ++d)
    if (indices[d].defined()) indexed.push_back(d);
  std::vector<int64_t> shape;  // the indices broadcast together
  try {
    for (int64_t d : indexed) shape = at::infer_size(shape, indices[d].sizes());
  } catch (const c10::Error&) {
    std::string shapes;
    for (int64_t d : indexed) shapes += (shapes.empty() ? "" : ", ") + c10::str(indices[d].sizes());
    TORCH_CHECK_INDEX(false,
                      "shape mismatch: indexing tensors could not be broadcast together "
                      "with shapes ",
                      shapes);
  }
  // As PyTorch: a non-empty index into a dimension of size 0 (no index can be in range).
  const auto has_zero = [](const auto& sizes) {
    return std::find(sizes.begin(), sizes.end(), 0) != sizes.end();
  };
  std::vector<int64_t> indexed_sizes;
  for (int64_t d : indexed) indexed_sizes.push_back(self.size(d));
  TORCH_CHECK_INDEX(!has_zero(indexed_sizes) || has_zero(shape),
                    "index is out of bounds for dimension with size 0");
  // Adjacent indexed dims put the broadcast shape in their place (after the leading dims), others
  // put it first; the dims not indexed follow.
  const bool adjacent = indexed.empty() || indexed.back() - indexed.front() + 1 ==
                                               static_cast<int64_t>(indexed.size());
  const int64_t block = adjacent && !indexed.empty() ? indexed.front() : 0;
  const auto leading = [&](int64_t d) { return !indices[d].defined() && adjacent && d < block; };
  const auto trailing = [&](int64_t d) { return !indices[d].defined() && !leading(d); };
  Advanced a;
  for (int64_t d = 0; d < self.dim(); ++d) {
    if (!leading(d)) continue;
    a.points.map.push_back(d);
    a.space.push_back(self.size(d));
  }
  a.space.insert(a.space.end(), shape.begin(), shape.end());
  const int64_t first_trailing = static_cast<int64_t>(a.space.size());
  for (int64_t d = 0; d < self.dim(); ++d)
    if (trailing(d)) a.space.push_back(self.size(d));
  if (check_space) check_space(a.space);

  for (size_t k = 0; k < indexed.size(); ++k) {
    Tensor& index = indices[indexed[k]];
    if (from_mask[indexed[k]]) continue;
    const int64_t size = self.size(indexed[k]);
    auto check =
        check_in_range(op, index, -size, size, out_of_bounds(graph::CheckKind::Index, "", k, size));
    if (check) a.checks.push_back(std::move(check));
    if (index.is_cpu()) index = index.to(self.device());
  }
  const int64_t trailing_count = static_cast<int64_t>(a.space.size()) - first_trailing;
  for (int64_t d = 0, after = 0; d < self.dim(); ++d) {
    if (indices[d].defined()) {
      std::vector<int64_t> view = indices[d].sizes().vec();
      view.insert(view.end(), trailing_count, 1);
      a.points.indices.push_back(read(indices[d].reshape(view)));
      a.points.map.push_back(-static_cast<int64_t>(a.points.indices.size()));
    } else if (trailing(d)) {
      a.points.map.push_back(first_trailing + after++);
    }
  }
  return a;
}

OpResult index_result(const Tensor& self, const c10::List<std::optional<Tensor>>& indices) {
  TORCH_CHECK_INDEX(!indices.empty(), "at least one index must be provided");
  const int device = common_device("index", {&self});
  const Advanced a = advanced("index", self, indices);
  return checked(gather_points(self, a.points, a.space, device), a.checks);
}

// The mask PyTorch turns `self[mask] = value` into masked_fill_ with (any device): one bool or
// uint8 index on self's device, the others None, and a one-element CPU value (whose dtype then
// need not match self's). Unsqueezed to broadcast over the dims after it. Nullopt otherwise.
std::optional<Tensor> masked_fill_mask(const Tensor& self,
                                       const c10::List<std::optional<Tensor>>& indices,
                                       const Tensor& values) {
  if (values.numel() != 1 || !values.is_cpu()) return std::nullopt;
  Tensor mask;
  int64_t dims = 0;  // of self, the indices cover
  for (const std::optional<Tensor>& i : indices) {
    if (!i.has_value() || !i->defined()) {
      ++dims;
      continue;
    }
    const at::ScalarType t = i->scalar_type();
    if ((t != at::kBool && t != at::kByte) || i->device() != self.device() || mask.defined()) {
      return std::nullopt;
    }
    mask = *i;
    check_mask_shape(self, mask, dims);
    dims += mask.dim();
  }
  if (!mask.defined()) return std::nullopt;
  for (int64_t d = dims; d < self.dim(); ++d) mask = mask.unsqueeze(-1);
  return mask;
}

Tensor& index_put_(Tensor& self, const c10::List<std::optional<Tensor>>& indices,
                   const Tensor& values, bool accumulate, bool /*unsafe*/) {
  if (!accumulate) {
    if (const std::optional<Tensor> mask = masked_fill_mask(self, indices, values)) {
      return self.masked_fill_(*mask, values.item());
    }
  }
  // The CPU's order: the indices, the values' shape, their dtype, then their device.
  const Advanced a = advanced("index_put_", self, indices, [&](at::IntArrayRef space) {
    TORCH_CHECK(at::is_expandable_to(values.sizes(), space),
                "shape mismatch: value tensor of shape ", values.sizes(),
                " cannot be broadcast to indexing result of shape ", space);
    TORCH_CHECK(self.scalar_type() == values.scalar_type(),
                "Index put requires the source and destination dtypes match, got ",
                self.scalar_type(), " for the destination and ", values.scalar_type(),
                " for the source.");
  });
  const int device = common_device("index_put_", {&self, &values});
  auto updates =
      broadcast(operand(values, self.scalar_type(), device), self.scalar_type(), a.space);
  auto value = scatter_points(read(self), updates, a.points,
                              accumulate ? lowering::kAccumulate : lowering::kReplace, device);
  return to_self(self, checked({value, self.scalar_type(), self.sizes().vec(), device}, a.checks));
}

// ---- masks, take ----

Tensor& masked_fill_(Tensor& self, const Tensor& mask, const Tensor& value) {
  TORCH_CHECK(mask.scalar_type() == at::kBool,
              "masked_fill_ only supports boolean masks, but got mask with dtype ", mask.dtype());
  TORCH_CHECK(value.dim() == 0,
              "masked_fill_ only supports a 0-dimensional value tensor, but got tensor with ",
              value.dim(), " dimension(s).");
  const at::ScalarType t = self.scalar_type();
  if (value.is_cpu() && (at::isIntegralType(t, /*includeBool=*/false) || t == at::kHalf ||
                         t == at::kBFloat16 || t == at::kFloat || t == at::kDouble)) {
    // The CPU converts the value to self's type with an overflow check (a device value converts
    // on the device, unchecked, as on CUDA).
    AT_DISPATCH_ALL_TYPES_AND2(at::kHalf, at::kBFloat16, t, "masked_fill_",
                               [&] { value.item().to<scalar_t>(); });
  }
  OpResult r = elementwise(lowering::kWhere, "masked_fill_", {&mask, &value, &self}, t, {});
  // Unlike TensorIterator ops, the CPU kernel only warns about an expanded self.
  r.inputs.clear();
  if (at::has_internal_overlap(self) == at::MemOverlap::Yes) {
    TORCH_WARN(
        "Use of masked_fill_ on expanded tensors is deprecated. Please clone() the tensor "
        "before performing this operation.");
  }
  at::assert_no_partial_overlap(self, mask);
  return to_self(self, r);
}

Tensor wrapped(const Scalar& s) {
  Tensor t = at::scalar_tensor(s, at::TensorOptions().dtype(scalar_type_of(s)));
  t.unsafeGetTensorImpl()->set_wrapped_number(true);
  return t;
}

// take and put_: row-major positions in [-n, n).
graph::CheckPtr check_flat_range(const char* op, const Tensor& self, const Tensor& index) {
  const int64_t n = self.numel();
  return check_in_range(op, index, -n, n,
                        {graph::CheckKind::Index, "out of range: tried to access index ",
                         " on a tensor of " + std::to_string(n) + " elements."});
}

OpResult take_result(const Tensor& self, const Tensor& index) {
  at::take(meta(self), meta(index));
  const int device = common_device("take", {&self, &index});
  auto check = check_flat_range("take", self, index);
  Points p;
  p.map = {-1};
  p.indices = {read(index)};
  return checked(gather_points(self.reshape(-1), p, index.sizes(), device), {check});
}

// take's inverse: source's elements written (or added) at self's row-major positions `index`.
Tensor& put_(Tensor& self, const Tensor& index, const Tensor& source, bool accumulate) {
  // Duplicate indices without accumulate: the CPU refuses under use_deterministic_algorithms.
  if (!accumulate) at::globalContext().alertNotDeterministic("put_");
  const int device = common_device("put_", {&self, &index, &source});
  TORCH_CHECK(index.scalar_type() == at::kLong,
              "put_(): Expected a long tensor for index, but got ", index.scalar_type());
  TORCH_CHECK(self.scalar_type() == source.scalar_type(),
              "put_(): self and source expected to have the same dtype, but got self.dtype = ",
              self.scalar_type(), " and source.dtype = ", source.scalar_type());
  TORCH_CHECK(index.numel() == source.numel(),
              "put_(): Expected source and index to have the same number of elements, but got "
              "source.numel() = ",
              source.numel(), ", index.numel() = ", index.numel());
  at::assert_no_internal_overlap(self);
  auto check = check_flat_range("put_", self, index);
  if (index.numel() == 0) return self;
  Points p;
  p.map = {-1};
  p.indices = {read(index.reshape(-1))};
  auto flat = scatter_points(read(self.reshape(-1)), read(source.reshape(-1)), p,
                             accumulate ? lowering::kAccumulate : lowering::kReplace, device);
  const auto strides = c10::contiguous_strides(self.sizes());
  auto value =
      graph::record1(lowering::kViewRead, {flat},
                     lowering::view_attrs(self.sizes().vec(), {strides.begin(), strides.end()}, 0),
                     tensor_type(self.scalar_type(), self.sizes()), device);
  return to_self(self, checked({value, self.scalar_type(), self.sizes().vec(), device}, {check}));
}

// source's leading elements written, in order, where the mask is true: element i takes source's
// element r, r the number of true mask elements before i. No synchronization: the program checks
// that source has enough elements.
Tensor& masked_scatter_(Tensor& self, const Tensor& mask, const Tensor& source) {
  const int device = common_device("masked_scatter_", {&self, &mask, &source});
  TORCH_CHECK(mask.scalar_type() == at::kBool,
              "masked_scatter_ only supports boolean masks, but got mask with dtype ",
              mask.scalar_type());
  TORCH_CHECK(self.scalar_type() == source.scalar_type(),
              "masked_scatter: expected self and source to have same dtypes but got",
              self.scalar_type(), " and ", source.scalar_type());
  at::assert_no_internal_overlap(self);
  const Tensor keep = mask.to(self.device()).expand(self.sizes());
  const int64_t n = self.numel();
  if (n == 0) return self;
  OneOp op;
  const Tensor rank = at::cumsum(keep.reshape(-1), 0, at::kLong);
  auto check = check_in_range("masked_scatter_", rank.narrow(0, n - 1, 1), 0, source.numel() + 1,
                              {graph::CheckKind::Runtime,
                               "Number of elements of source < number of ones in mask", "", false});
  Tensor result = self;
  if (source.numel() > 0) {
    Points p;
    p.map = {-1};
    p.indices = {read((rank - 1).clamp(0, source.numel() - 1))};
    const Tensor taken = to_new(gather_points(source.reshape(-1), p, {n}, device));
    result = at::where(keep, taken.view(self.sizes()), self);
  }
  Tensor& r = to_self(
      self, checked({read(result), self.scalar_type(), self.sizes().vec(), device}, {check}));
  op.finish();
  return r;
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("gather", [](const Tensor& self, int64_t dim, const Tensor& index, bool) {
    return to_new(gather_result(self, dim, index));
  });
  m.impl("gather.out",
         [](const Tensor& self, int64_t dim, const Tensor& index, bool, Tensor& out) -> Tensor& {
           check_structured_out(out, self.scalar_type(), index.sizes(), SelfOverlap::kAsResized);
           return to_out(out, gather_result(self, dim, index));
         });

  // scatter family: functional, in-place and out=, validated by the structured meta functions.
  m.impl("scatter.src",
         [](const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
           check_structured<at::meta::structured_scatter_src>(self, dim, index, src);
           return to_new(
               scatter_result("scatter", self, dim, index, src, std::nullopt, lowering::kReplace));
         });
  m.impl("scatter_.src",
         [](Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) -> Tensor& {
           check_structured_inplace<at::meta::structured_scatter_src>(self, dim, index, src);
           return to_self(self, scatter_result("scatter", self, dim, index, src, std::nullopt,
                                               lowering::kReplace));
         });
  m.impl("scatter.src_out",
         [](const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
            Tensor& out) -> Tensor& {
           check_structured<at::meta::structured_scatter_src>(self, dim, index, src);
           check_structured_out(out, self.scalar_type(), self.sizes(), SelfOverlap::kAsPassed);
           return to_out(out, scatter_result("scatter", self, dim, index, src, std::nullopt,
                                             lowering::kReplace));
         });
  m.impl("scatter.value", [](const Tensor& self, int64_t dim, const Tensor& index,
                             const Scalar& value) {
    check_structured<at::meta::structured_scatter_value>(self, dim, index, value);
    return to_new(scatter_result("scatter", self, dim, index, {}, value, lowering::kReplace));
  });
  m.impl("scatter_.value",
         [](Tensor& self, int64_t dim, const Tensor& index, const Scalar& value) -> Tensor& {
           check_structured_inplace<at::meta::structured_scatter_value>(self, dim, index, value);
           return to_self(
               self, scatter_result("scatter", self, dim, index, {}, value, lowering::kReplace));
         });
  m.impl("scatter.value_out",
         [](const Tensor& self, int64_t dim, const Tensor& index, const Scalar& value,
            Tensor& out) -> Tensor& {
           check_structured<at::meta::structured_scatter_value>(self, dim, index, value);
           check_structured_out(out, self.scalar_type(), self.sizes(), SelfOverlap::kAsPassed);
           return to_out(
               out, scatter_result("scatter", self, dim, index, {}, value, lowering::kReplace));
         });
  m.impl("scatter.reduce", [](const Tensor& self, int64_t dim, const Tensor& index,
                              const Tensor& src, c10::string_view reduce) {
    check_structured<at::meta::structured_scatter_reduce>(self, dim, index, src, reduce);
    return to_new(
        scatter_result("scatter", self, dim, index, src, std::nullopt, reduce_mode(reduce)));
  });
  m.impl("scatter_.reduce",
         [](Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
            c10::string_view reduce) -> Tensor& {
           check_structured_inplace<at::meta::structured_scatter_reduce>(self, dim, index, src,
                                                                         reduce);
           return to_self(self, scatter_result("scatter", self, dim, index, src, std::nullopt,
                                               reduce_mode(reduce)));
         });
  m.impl("scatter.value_reduce", [](const Tensor& self, int64_t dim, const Tensor& index,
                                    const Scalar& value, c10::string_view reduce) {
    check_structured<at::meta::structured_scatter_value_reduce>(self, dim, index, value, reduce);
    return to_new(scatter_result("scatter", self, dim, index, {}, value, reduce_mode(reduce)));
  });
  m.impl("scatter_.value_reduce",
         [](Tensor& self, int64_t dim, const Tensor& index, const Scalar& value,
            c10::string_view reduce) -> Tensor& {
           check_structured_inplace<at::meta::structured_scatter_value_reduce>(self, dim, index,
                                                                               value, reduce);
           return to_self(
               self, scatter_result("scatter", self, dim, index, {}, value, reduce_mode(reduce)));
         });
  m.impl("scatter_add",
         [](const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
           check_structured<at::meta::structured_scatter_add>(self, dim, index, src);
           return to_new(scatter_result("scatter_add", self, dim, index, src, std::nullopt,
                                        lowering::kAccumulate));
         });
  m.impl("scatter_add_",
         [](Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) -> Tensor& {
           check_structured_inplace<at::meta::structured_scatter_add>(self, dim, index, src);
           return to_self(self, scatter_result("scatter_add", self, dim, index, src, std::nullopt,
                                               lowering::kAccumulate));
         });
  m.impl("scatter_add.out",
         [](const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
            Tensor& out) -> Tensor& {
           check_structured<at::meta::structured_scatter_add>(self, dim, index, src);
           check_structured_out(out, self.scalar_type(), self.sizes(), SelfOverlap::kAsPassed);
           return to_out(out, scatter_result("scatter_add", self, dim, index, src, std::nullopt,
                                             lowering::kAccumulate));
         });

  m.impl("scatter_reduce.two", [](const Tensor& self, int64_t dim, const Tensor& index,
                                  const Tensor& src, c10::string_view reduce, bool include_self) {
    return to_new(scatter_reduce_result(self, dim, index, src, reduce, include_self));
  });
  m.impl("scatter_reduce_.two",
         [](Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
            c10::string_view reduce, bool include_self) -> Tensor& {
           at::assert_no_internal_overlap(self);
           return to_self(self, scatter_reduce_result(self, dim, index, src, reduce, include_self));
         });
  m.impl("scatter_reduce.two_out",
         [](const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
            c10::string_view reduce, bool include_self, Tensor& out) -> Tensor& {
           check_structured_out(out, self.scalar_type(), self.sizes(), SelfOverlap::kAsPassed);
           return to_out(out, scatter_reduce_result(self, dim, index, src, reduce, include_self));
         });

  m.impl("index_select", [](const Tensor& self, int64_t dim, const Tensor& index) {
    return to_new(index_select_result(self, dim, index));
  });
  m.impl("index_select.out",
         [](const Tensor& self, int64_t dim, const Tensor& index, Tensor& out) -> Tensor& {
           TORCH_CHECK(out.scalar_type() == self.scalar_type(),
                       "index_select(): self and result must have the same scalar type");
           at::assert_no_internal_overlap(out);
           at::assert_no_overlap(out, self);
           at::assert_no_overlap(out, index);
           return to_out(out, index_select_result(self, dim, index));
         });
  m.impl("index_add", [](const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source,
                         const Scalar& alpha) {
    return to_new(index_add_result(self, dim, index, source, alpha));
  });
  m.impl("index_add_",
         [](Tensor& self, int64_t dim, const Tensor& index, const Tensor& source,
            const Scalar& alpha) -> Tensor& {
           at::assert_no_internal_overlap(self);
           return to_self(self, index_add_result(self, dim, index, source, alpha));
         });
  m.impl("index_add.out",
         [](const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source,
            const Scalar& alpha, Tensor& out) -> Tensor& {
           check_structured_out(out, self.scalar_type(), self.sizes(), SelfOverlap::kAsResized);
           return to_out(out, index_add_result(self, dim, index, source, alpha));
         });
  m.impl("index_copy",
         [](const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source) {
           return to_new(index_copy_result(self, dim, index, source));
         });
  m.impl("index_copy_",
         [](Tensor& self, int64_t dim, const Tensor& index, const Tensor& source) -> Tensor& {
           // the CPU's structured index_copy checks of the tensor it writes
           at::assert_no_internal_overlap(self);
           at::assert_no_overlap(self, index);
           at::assert_no_overlap(self, source);
           return to_self(self, index_copy_result(self, dim, index, source));
         });
  m.impl("index_copy.out",
         [](const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source,
            Tensor& out) -> Tensor& {
           check_structured_out(out, self.scalar_type(), self.sizes(), SelfOverlap::kAsResized);
           at::assert_no_overlap(out, index);
           at::assert_no_overlap(out, source);
           return to_out(out, index_copy_result(self, dim, index, source));
         });
  m.impl("index_reduce", [](const Tensor& self, int64_t dim, const Tensor& index,
                            const Tensor& source, c10::string_view reduce, bool include_self) {
    return to_new(index_reduce_result(self, dim, index, source, reduce, include_self));
  });
  m.impl("index_reduce_",
         [](Tensor& self, int64_t dim, const Tensor& index, const Tensor& source,
            c10::string_view reduce, bool include_self) -> Tensor& {
           at::assert_no_internal_overlap(self);
           return to_self(self,
                          index_reduce_result(self, dim, index, source, reduce, include_self));
         });
  m.impl("index_reduce.out",
         [](const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source,
            c10::string_view reduce, bool include_self, Tensor& out) -> Tensor& {
           check_structured_out(out, self.scalar_type(), self.sizes(), SelfOverlap::kAsResized);
           return to_out(out, index_reduce_result(self, dim, index, source, reduce, include_self));
         });
  m.impl("unfold_backward", unfold_backward);
  m.impl("index_fill_.int_Tensor", index_fill_);
  m.impl("index_fill_.int_Scalar",
         [](Tensor& self, int64_t dim, const Tensor& index, const Scalar& value) -> Tensor& {
           return index_fill_(self, dim, index, wrapped(value));
         });

  m.impl("index.Tensor", [](const Tensor& self, const c10::List<std::optional<Tensor>>& indices) {
    return to_new(index_result(self, indices));
  });
  m.impl("index.Tensor_out",
         [](const Tensor& self, const c10::List<std::optional<Tensor>>& indices,
            Tensor& out) -> Tensor& { return to_out(out, index_result(self, indices)); });
  m.impl("_index_put_impl_", index_put_);

  m.impl("masked_fill_.Tensor", masked_fill_);
  m.impl("masked_fill_.Scalar",
         [](Tensor& self, const Tensor& mask, const Scalar& value) -> Tensor& {
           return masked_fill_(self, mask, wrapped(value));
         });
  m.impl("take",
         [](const Tensor& self, const Tensor& index) { return to_new(take_result(self, index)); });
  m.impl("take.out", [](const Tensor& self, const Tensor& index, Tensor& out) -> Tensor& {
    TORCH_CHECK(out.scalar_type() == self.scalar_type(),
                "take(): self and out expected to have the same dtype, but got self.dtype = ",
                self.scalar_type(), " and out.dtype = ", out.scalar_type());
    at::assert_no_internal_overlap(out);
    return to_out(out, take_result(self, index));
  });
  m.impl("put_", put_);
  m.impl("masked_scatter_", masked_scatter_);
}

}  // namespace torch_pjrt::aten
