// Ops whose output size depends on the data: nonzero, masked_select, unique (sorted, by dim),
// unique_consecutive, repeat_interleave with tensor repeats, bincount. Each computes on the
// device, reads back only the output size (one host round trip, counted as such) and then builds
// its result on the device. nonzero_static, repeat_interleave with output_size and histc have
// static sizes and read nothing. Empty inputs take their shapes and errors from the CPU op run on
// an empty CPU tensor (no data moves).
//
// The compactions and permutations below are gathers and scatters whose positions are in range by
// construction, so they record no device-side index check.
#include <ATen/ATen.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/native/Resize.h>
#include <torch/library.h>

#include "aten/device_checks.h"
#include "aten/op_result.h"
#include "aten/tensor_bridge.h"
#include "lowering/indexing.h"

namespace torch_pjrt::aten {
namespace {

using at::Tensor;

at::TensorOptions long_options(const Tensor& t) { return t.options().dtype(at::kLong); }

// The position map of a gather/scatter along dimension 0 (its coordinate from the index operand
// at `operand`, the other dimensions from the index space).
std::vector<int64_t> rows_map(int64_t rank, int64_t operand) {
  std::vector<int64_t> map{operand};
  for (int64_t d = 1; d < rank; ++d) map.push_back(d);
  return map;
}

// idx (1-d long, length k) shaped to run along dimension 0 of a rank-`rank` index space.
graph::DataPtr index_column(const Tensor& idx, int64_t rank) {
  std::vector<int64_t> shape(std::max<int64_t>(rank, 1), 1);
  shape[0] = idx.numel();
  return read(idx.reshape(shape));
}

// self's rows (dimension 0) at positions idx (1-d long, in range).
Tensor rows(const Tensor& self, const Tensor& idx) {
  std::vector<int64_t> sizes = self.sizes().vec();
  sizes[0] = idx.numel();
  if (idx.numel() == 0 || self.numel() == 0) return at::empty(sizes, self.options());
  graph::Attrs attrs;
  attrs.ints = rows_map(self.dim(), -1);
  const int device = device_index(self);
  auto value = graph::record1(lowering::kIndexGather, {read(self), index_column(idx, self.dim())},
                              std::move(attrs), tensor_type(self.scalar_type(), sizes), device);
  return make_tensor(value, self.scalar_type(), device);
}

// base with updates' rows combined (`mode`) into its rows at positions idx (1-d long, in range).
Tensor scatter_rows(const Tensor& base, const Tensor& idx, const Tensor& updates,
                    lowering::ScatterMode mode) {
  if (idx.numel() == 0 || base.numel() == 0) return base;
  graph::Attrs attrs;
  attrs.ints = {mode};
  // Index operands follow base and updates.
  for (int64_t m : rows_map(updates.dim(), -2)) attrs.ints.push_back(m);
  const int device = device_index(base);
  auto value = graph::record1(
      lowering::kIndexScatter, {read(base), read(updates), index_column(idx, updates.dim())},
      std::move(attrs), tensor_type(base.scalar_type(), base.sizes()), device);
  return make_tensor(value, base.scalar_type(), device);
}

// The rows of `values` where `keep` (bool, 1-d, k of them true) holds, in order.
Tensor compact(const Tensor& values, const Tensor& keep, int64_t k) {
  // Kept rows go to their rank among the kept ones, the others to a spare row k.
  const Tensor target =
      at::where(keep, at::cumsum(keep, 0, at::kLong) - 1, at::scalar_tensor(k, long_options(keep)));
  std::vector<int64_t> sizes = values.sizes().vec();
  sizes[0] = k + 1;
  return scatter_rows(at::zeros(sizes, values.options()), target, values, lowering::kReplace)
      .narrow(0, 0, k);
}

// Reads the small integer tensor `t` on the host: the op's one synchronization.
std::vector<int64_t> read_back(const Tensor& t) {
  const Tensor host = to_cpu(read(t.to(at::kLong).reshape(-1)), at::kLong);
  return {host.data_ptr<int64_t>(), host.data_ptr<int64_t>() + host.numel()};
}

Tensor on_device(const Tensor& cpu, const Tensor& like) { return cpu.to(like.device()); }
Tensor empty_cpu(const Tensor& t) { return at::empty(t.sizes(), t.options().device(at::kCPU)); }

// ---- nonzero ----

// Row-major coordinates [k, rank] of the flat positions `pos` in a tensor of `sizes`.
Tensor coordinates(const Tensor& pos, at::IntArrayRef sizes) {
  std::vector<Tensor> columns;
  int64_t stride = 1;
  for (int64_t d = static_cast<int64_t>(sizes.size()) - 1; d >= 0; --d) {
    columns.insert(columns.begin(), at::remainder(at::floor_divide(pos, stride), sizes[d]));
    stride *= sizes[d];
  }
  if (columns.empty()) return at::empty({pos.numel(), 0}, pos.options());
  return at::stack(columns, 1);
}

// The flat positions of the k nonzero elements of self.
Tensor nonzero_positions(const Tensor& flat_mask, int64_t k) {
  return compact(at::arange(flat_mask.numel(), long_options(flat_mask)), flat_mask, k);
}

Tensor nonzero_op(const Tensor& self) {
  common_device("nonzero", {&self});
  if (self.numel() == 0) return on_device(at::nonzero(empty_cpu(self)), self);
  OneOp op;
  const Tensor mask = self.reshape(-1).ne(0);
  const int64_t k = read_back(mask.sum())[0];
  const Tensor result = coordinates(nonzero_positions(mask, k), self.sizes());
  op.finish();
  return result;
}

// The first `size` nonzero coordinates, padded with fill_value: no synchronization.
Tensor nonzero_static_op(const Tensor& self, int64_t size, int64_t fill_value) {
  common_device("nonzero_static", {&self});
  if (self.numel() == 0 || size <= 0)
    return on_device(at::nonzero_static(empty_cpu(self), size, fill_value), self);
  OneOp op;
  const Tensor mask = self.reshape(-1).ne(0);
  const Tensor rank = at::cumsum(mask, 0, at::kLong) - 1;
  // Kept positions beyond `size` go to the spare row too.
  const Tensor keep = at::logical_and(mask, rank.lt(size));
  const Tensor target = at::where(keep, rank, at::scalar_tensor(size, long_options(self)));
  const Tensor filled = at::full({size + 1}, -1, long_options(self));
  const Tensor pos =
      scatter_rows(filled, target, at::arange(self.numel(), long_options(self)), lowering::kReplace)
          .narrow(0, 0, size);
  const Tensor coords = coordinates(pos.clamp_min(0), self.sizes());
  const Tensor result =
      at::where(pos.lt(0).unsqueeze(1), at::scalar_tensor(fill_value, long_options(self)), coords);
  op.finish();
  return result;
}

// ---- masked_select ----

Tensor masked_select_op(const Tensor& self, const Tensor& mask) {
  TORCH_CHECK(mask.scalar_type() == at::kBool, "masked_select: expected BoolTensor for mask");
  common_device("masked_select", {&self, &mask});
  const auto sizes = at::infer_size(self.sizes(), mask.sizes());
  const int64_t n = c10::multiply_integers(sizes);
  if (n == 0) return at::empty({0}, self.options());
  OneOp op;
  const Tensor keep = mask.expand(sizes).reshape(-1);
  const int64_t k = read_back(keep.sum())[0];
  const Tensor result = compact(self.expand(sizes).reshape(-1), keep, k);
  op.finish();
  return result;
}

// ---- unique ----

using Unique = std::tuple<Tensor, Tensor, Tensor>;

// From `sorted` rows (sorted.size(0) = n) where `first` marks each group's first row, with
// `order` (sorted row i is input row order[i]; undefined: the identity): the unique rows, the
// inverse (each input row's group) and the counts. The one synchronization reads the group count,
// and with it `flag` (a bool scalar, when defined) into *flag_value; when that is set, nothing
// more is computed and the result is empty.
Unique groups(const Tensor& sorted, const Tensor& first, const Tensor& order, bool return_inverse,
              bool return_counts, const Tensor& flag = {}, bool* flag_value = nullptr) {
  const int64_t n = sorted.size(0);
  const at::TensorOptions options = long_options(sorted);
  const Tensor group = at::cumsum(first, 0, at::kLong) - 1;
  const Tensor count = first.sum().to(at::kLong);
  const auto back = read_back(flag.defined() ? at::stack({count, flag.to(at::kLong)}) : count);
  const int64_t k = back[0];
  if (flag.defined()) {
    *flag_value = back[1] != 0;
    if (*flag_value) return {};
  }
  Tensor inverse = at::empty({0}, options);
  Tensor counts = at::empty({0}, options);
  if (return_inverse) {
    inverse = order.defined()
                  ? scatter_rows(at::zeros({n}, options), order, group, lowering::kReplace)
                  : group;
  }
  if (return_counts) {
    const Tensor starts = nonzero_positions(first, k);
    counts = at::cat({starts.narrow(0, 1, k - 1), at::full({1}, n, options)}) - starts;
  }
  return {compact(sorted, first, k), inverse, counts};
}

// Rows (of a [n, m] tensor, m >= 1) that differ from the row before; the first row does.
Tensor row_starts(const Tensor& rows2d) {
  const int64_t n = rows2d.size(0);
  const Tensor changed = rows2d.narrow(0, 1, n - 1).ne(rows2d.narrow(0, 0, n - 1)).any(1);
  return at::cat({at::ones({1}, changed.options()), changed});
}

Unique unique2_op(const Tensor& self, bool sorted, bool return_inverse, bool return_counts) {
  common_device("unique", {&self});
  if (self.numel() == 0) {
    auto [v, i, c] = at::_unique2(empty_cpu(self), sorted, return_inverse, return_counts);
    return {on_device(v, self), on_device(i, self), on_device(c, self)};
  }
  OneOp op;
  // Sorted either way, as CUDA's unique is.
  const auto [values, order] = at::sort(self.reshape(-1));
  auto [u, inverse, counts] =
      groups(values, row_starts(values.unsqueeze(1)), order, return_inverse, return_counts);
  if (return_inverse) inverse = inverse.reshape(self.sizes());
  op.finish();
  return {u, inverse, counts};
}

// Rows of self along `dim`, sorted (sort_rows) or as they come, grouped.
Unique unique_rows(const Tensor& self, int64_t dim, bool sort_rows, bool return_inverse,
                   bool return_counts) {
  dim = at::maybe_wrap_dim(dim, self.dim());
  const Tensor moved = self.movedim(dim, 0);
  const int64_t n = moved.size(0);
  const Tensor rows2d = moved.reshape({n, -1});
  Tensor order;
  Tensor sorted = rows2d;
  if (sort_rows) {
    // Lexicographic order: stable sorts by each column, the last column first.
    order = at::arange(n, long_options(self));
    for (int64_t c = rows2d.size(1) - 1; c >= 0; --c) {
      const Tensor key = rows(rows2d.select(1, c), order);
      order = rows(order, std::get<1>(at::sort(key, /*stable=*/true, 0, false)));
    }
    sorted = rows(rows2d, order);
  }
  // The CPU sorts rows with a comparison that is no strict weak order once a row holds a NaN
  // (std::sort's result then depends on its algorithm): such inputs take the CPU's own kernel.
  const Tensor has_nan =
      sort_rows && at::isFloatingType(self.scalar_type()) ? at::isnan(rows2d).any() : Tensor();
  bool nan_found = false;
  auto [u, inverse, counts] =
      groups(sorted, row_starts(sorted), order, return_inverse, return_counts, has_nan, &nan_found);
  if (nan_found) {
    auto [v, i, c] = at::unique_dim(self.cpu(), dim, true, return_inverse, return_counts);
    return {on_device(v, self), on_device(i, self), on_device(c, self)};
  }
  std::vector<int64_t> shape = moved.sizes().vec();
  shape[0] = u.size(0);
  return {u.reshape(shape).movedim(0, dim), inverse, counts};
}

Unique unique_dim_op(const Tensor& self, int64_t dim, bool sorted, bool return_inverse,
                     bool return_counts) {
  common_device("unique_dim", {&self});
  if (self.numel() == 0) {
    auto [v, i, c] = at::unique_dim(empty_cpu(self), dim, sorted, return_inverse, return_counts);
    return {on_device(v, self), on_device(i, self), on_device(c, self)};
  }
  OneOp op;
  Unique r = unique_rows(self, dim, true, return_inverse, return_counts);
  op.finish();
  return r;
}

Unique unique_consecutive_op(const Tensor& self, bool return_inverse, bool return_counts,
                             std::optional<int64_t> dim) {
  common_device("unique_consecutive", {&self});
  if (self.numel() == 0) {
    auto [v, i, c] = at::unique_consecutive(empty_cpu(self), return_inverse, return_counts, dim);
    return {on_device(v, self), on_device(i, self), on_device(c, self)};
  }
  OneOp op;
  Unique r;
  if (dim) {
    r = unique_rows(self, *dim, false, return_inverse, return_counts);
  } else {
    const Tensor flat = self.reshape(-1);
    r = groups(flat, row_starts(flat.unsqueeze(1)), {}, return_inverse, return_counts);
    if (return_inverse) std::get<1>(r) = std::get<1>(r).reshape(self.sizes());
  }
  op.finish();
  return r;
}

Unique unique_dim_consecutive_op(const Tensor& self, int64_t dim, bool return_inverse,
                                 bool return_counts) {
  common_device("unique_dim_consecutive", {&self});
  if (self.numel() == 0) {
    auto [v, i, c] =
        at::unique_dim_consecutive(empty_cpu(self), dim, return_inverse, return_counts);
    return {on_device(v, self), on_device(i, self), on_device(c, self)};
  }
  return unique_consecutive_op(self, return_inverse, return_counts, dim);
}

// ---- repeat_interleave, bincount, histc ----

// The source position of each output element of repeat_interleave(repeats).
Tensor repeat_interleave_op(const Tensor& repeats, std::optional<c10::SymInt> output_size) {
  TORCH_CHECK(repeats.dim() == 1, "repeat_interleave only accept 1D vector as repeat");
  TORCH_CHECK(repeats.scalar_type() == at::kLong || repeats.scalar_type() == at::kInt,
              "repeats has to be Long or Int tensor");
  common_device("repeat_interleave", {&repeats});
  if (repeats.numel() == 0) return at::empty({0}, repeats.options());
  OneOp op;
  const Tensor ends = at::cumsum(repeats, 0, at::kLong);
  int64_t total = 0;
  graph::CheckPtr check;
  if (output_size) {
    total = output_size->expect_int();
    // CPU reads the repeats to check them; here the program does, without a synchronization.
    // (The upper bound, 2^62, is exact in the double the check's constant is built from.)
    check = check_in_range("repeat_interleave", repeats, 0, int64_t{1} << 62,
                           {graph::CheckKind::Runtime, "repeats can not be negative", "", false});
  } else {
    const auto back = read_back(at::stack({ends[-1], repeats.min().to(at::kLong)}));
    TORCH_CHECK(back[1] >= 0, "repeats can not be negative");
    total = back[0];
  }
  const at::TensorOptions options = long_options(repeats);
  // Output element j comes from the number of sources that end at or before j.
  const Tensor hist = scatter_rows(at::zeros({total + 1}, options), ends.clamp_max(total),
                                   at::ones({repeats.numel()}, options), lowering::kAccumulate);
  Tensor result = at::cumsum(hist.narrow(0, 0, total), 0).to(repeats.scalar_type());
  if (check) graph::depends_on(read(result), check);
  op.finish();
  return result;
}

Tensor bincount_op(const Tensor& self, const std::optional<Tensor>& weights_opt,
                   int64_t minlength) {
  const Tensor weights = weights_opt.value_or(Tensor());
  TORCH_CHECK_NOT_IMPLEMENTED(at::isIntegralType(self.scalar_type(), /*includeBool=*/false),
                              "\"bincount_cpu\" not implemented for '",
                              c10::toString(self.scalar_type()), "'");
  TORCH_CHECK(minlength >= 0, "minlength should be >= 0");
  TORCH_CHECK(self.dim() == 1, "bincount only supports 1-d non-negative integral inputs.");
  if (weights.defined()) {
    TORCH_CHECK(weights.dim() == 1 && weights.size(0) == self.size(0),
                "weights should be 1-d and have the same length as input");
    common_device("bincount", {&self, &weights});
  } else {
    common_device("bincount", {&self});
  }
  // PyTorch's result types: float weights give float, other weights double, none long.
  const at::ScalarType dtype = !weights.defined()                    ? at::kLong
                               : weights.scalar_type() == at::kFloat ? at::kFloat
                                                                     : at::kDouble;
  const at::TensorOptions options = self.options().dtype(dtype);
  if (self.numel() == 0) return at::zeros({minlength}, options);
  OneOp op;
  const Tensor wide = self.to(at::kLong);
  const auto back = read_back(at::stack({wide.max(), wide.min()}));
  TORCH_CHECK(back[1] >= 0, "bincount only supports 1-d non-negative integral inputs.");
  const int64_t bins = std::max(back[0] + 1, minlength);
  const Tensor updates = weights.defined() ? weights.to(dtype) : at::ones({self.size(0)}, options);
  Tensor result = scatter_rows(at::zeros({bins}, options), wide, updates, lowering::kAccumulate);
  op.finish();
  return result;
}

// histc: bins of equal width over [min, max] (the data's range when both are 0), computed as the
// CPU does in self's dtype; elements outside the range are not counted.
Tensor histc_op(const Tensor& self, int64_t bins, const at::Scalar& min, const at::Scalar& max) {
  at::histc(empty_cpu(self).reshape(-1).narrow(0, 0, 0), bins, min, max);  // PyTorch's checks
  common_device("histc", {&self});
  const at::TensorOptions options = self.options();
  if (self.numel() == 0 && min.toDouble() == max.toDouble())
    return on_device(at::histc(empty_cpu(self), bins, min, max), self);
  OneOp op;
  const Tensor x = self.reshape(-1);
  Tensor lo = at::scalar_tensor(min, options);
  Tensor hi = at::scalar_tensor(max, options);
  if (min.toDouble() == max.toDouble()) {
    lo = x.min();
    hi = x.max();
    // The CPU refuses a data range that is not finite; a device-side check raises it without
    // reading the range here.
    const graph::CheckPtr check = check_nonzero(
        "histc", at::isfinite(at::stack({lo, hi})).to(at::kLong),
        {graph::CheckKind::Runtime,
         "torch.histc: range of [min, max] is not finite (the minimum and maximum of the input)",
         "", /*show_value=*/false});
    if (check) graph::depends_on(read(lo), check);
  }
  const Tensor same = lo.eq(hi);
  lo = at::where(same, lo - 1, lo);
  hi = at::where(same, hi + 1, hi);
  const Tensor inside = at::logical_and(x.ge(lo), x.le(hi));
  const Tensor pos = ((x - lo) * bins / (hi - lo)).to(at::kLong).clamp(0, bins - 1);
  const Tensor target = at::where(inside, pos, at::scalar_tensor(bins, long_options(self)));
  Tensor result = scatter_rows(at::zeros({bins + 1}, options), target,
                               at::ones({x.numel()}, options), lowering::kAccumulate)
                      .narrow(0, 0, bins);
  op.finish();
  return result;
}

// nonzero's out= checks (CUDA's messages).
Tensor& nonzero_into(const Tensor& self, Tensor& out, const Tensor& result) {
  TORCH_CHECK(out.scalar_type() == at::kLong, "Expected object of scalar type ", at::kLong,
              " as out, but got ", out.dtype());
  TORCH_CHECK(self.device() == out.device(),
              "expected self and out to be on the same device, but got out on ", out.device(),
              " and self on ", self.device());
  return copy_to_out(out, result);
}

// nonzero.out: a resized out is laid out as the CPU's kernel lays it out, column-major.
Tensor& nonzero_out(const Tensor& self, Tensor& out) {
  const Tensor result = nonzero_op(self);
  if (out.scalar_type() == at::kLong && self.device() == out.device() &&
      at::native::resize_output_check(out, result.sizes())) {
    out.resize_({result.size(1), result.size(0)});
    out.t_();
  }
  return nonzero_into(self, out, result);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("nonzero", nonzero_op);
  m.impl("nonzero.out", nonzero_out);
  m.impl("nonzero_static", [](const Tensor& self, int64_t size, int64_t fill_value) {
    return nonzero_static_op(self, size, fill_value);
  });
  m.impl("nonzero_static.out",
         [](const Tensor& self, int64_t size, int64_t fill_value, Tensor& out) -> Tensor& {
           return nonzero_into(self, out, nonzero_static_op(self, size, fill_value));
         });
  m.impl("masked_select", masked_select_op);
  m.impl("masked_select.out", [](const Tensor& self, const Tensor& mask, Tensor& out) -> Tensor& {
    TORCH_CHECK(mask.scalar_type() == at::kBool, "masked_select: expected BoolTensor for mask");
    TORCH_CHECK(self.scalar_type() == out.scalar_type(),
                "masked_select(): self and result must have the same scalar type");
    at::assert_no_internal_overlap(out);
    at::assert_no_overlap(out, self);
    at::assert_no_overlap(out, mask);
    return copy_to_out(out, masked_select_op(self, mask));
  });
  m.impl("_unique2", unique2_op);
  m.impl("_unique", [](const Tensor& self, bool sorted, bool return_inverse) {
    auto [u, inverse, counts] = unique2_op(self, sorted, return_inverse, false);
    return std::make_tuple(u, inverse);
  });
  m.impl("unique_dim", unique_dim_op);
  m.impl("unique_consecutive", unique_consecutive_op);
  m.impl("unique_dim_consecutive", unique_dim_consecutive_op);
  m.impl("repeat_interleave.Tensor", repeat_interleave_op);
  m.impl("bincount", bincount_op);
  m.impl("histc", histc_op);
  m.impl("histc.out",
         [](const Tensor& self, int64_t bins, const at::Scalar& min, const at::Scalar& max,
            Tensor& out) -> Tensor& { return copy_to_out(out, histc_op(self, bins, min, max)); });
}

}  // namespace torch_pjrt::aten
