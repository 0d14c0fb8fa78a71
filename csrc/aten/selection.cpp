// Order-statistic and search ops composed of the device's own kernels (one program each): median,
// nanmedian, kthvalue and mode select from a stable sort (NaN last) with PyTorch's CPU index
// conventions; searchsorted and bucketize count the boundaries before each value.
#include <ATen/ATen.h>
#include <ATen/TensorUtils.h>
#include <ATen/native/BucketizationUtils.h>
#include <ATen/native/ReduceOpsUtils.h>
#include <ATen/native/Resize.h>
#include <torch/library.h>

#include "aten/tensor_bridge.h"

namespace torch_pjrt::aten {
namespace {

using at::Tensor;

void check_dtype(const Tensor& self, const char* kernel, bool bool_ok) {
  const at::ScalarType t = self.scalar_type();
  TORCH_CHECK_NOT_IMPLEMENTED(!self.is_complex() && (bool_ok || t != at::kBool), "\"", kernel,
                              "\" not implemented for '", c10::toString(t), "'");
}

// (values, indices) at the positions `pos` (int64, the input's dims with size 1 along `d`) of
// `in` stably sorted along `d`.
std::tuple<Tensor, Tensor> pick(const Tensor& sorted, const Tensor& perm, const Tensor& pos,
                                int64_t d) {
  return {at::gather(sorted, d, pos), at::gather(perm, d, pos)};
}

// The row's NaN count (0 for non-float types), with size 1 along `d`.
Tensor nan_count(const Tensor& in, int64_t d) {
  if (!at::isFloatingType(in.scalar_type())) return at::zeros({}, in.options().dtype(at::kLong));
  return at::sum(at::isnan(in), d, true, at::kLong);
}

enum class Select { kMedian, kNanmedian, kKth, kMode };

// Computes the selection along `dim` of `self` (a 0-dim input is one row of one element); the
// results keep `dim` only when `keepdim`.
std::tuple<Tensor, Tensor> select_along(const Tensor& self, int64_t dim, bool keepdim, Select how,
                                        int64_t k = 0) {
  OneOp one;
  const bool scalar = self.dim() == 0;
  Tensor in = scalar ? self.unsqueeze(0) : self;
  const int64_t d = at::maybe_wrap_dim(dim, in.dim());
  const int64_t n = in.size(d);
  auto [sorted, perm] = at::sort(in, true, d, false);
  std::vector<int64_t> row = in.sizes().vec();
  row[d] = 1;
  auto constant = [&](int64_t v) { return at::full(row, v, in.options().dtype(at::kLong)); };
  Tensor values, indices;
  switch (how) {
    case Select::kMedian: {
      // A row with NaN gives its first NaN, which the stable sort puts first among the NaNs.
      Tensor nans = nan_count(in, d).expand(row);
      Tensor pos = at::where(nans > 0, n - nans, constant((n - 1) / 2));
      std::tie(values, indices) = pick(sorted, perm, pos, d);
      break;
    }
    case Select::kNanmedian: {
      Tensor count = n - nan_count(in, d).expand(row);
      Tensor pos = at::where(count > 0, at::div(count - 1, 2, "floor"), constant(0));
      std::tie(values, indices) = pick(sorted, perm, pos, d);
      break;
    }
    case Select::kKth:
      std::tie(values, indices) = pick(sorted, perm, constant(k - 1), d);
      break;
    case Select::kMode: {
      // Run lengths of equal sorted values: the first position of the longest run's end is the
      // smallest most frequent value, and its last index in input order (as the CPU's sort of
      // (value, index) pairs gives).
      Tensor position = at::arange(n, in.options().dtype(at::kLong));
      std::vector<int64_t> shape(in.dim(), 1);
      shape[d] = n;
      position = position.view(shape).expand(in.sizes());
      Tensor starts = at::ne(sorted.narrow(d, 1, n - 1), sorted.narrow(d, 0, n - 1));
      starts = at::cat({at::ones(row, starts.options()), starts}, d);
      Tensor run_start = std::get<0>(at::cummax(at::where(starts, position, 0), d));
      Tensor length = position - run_start;
      Tensor pos = at::argmax(length, d, true);
      std::tie(values, indices) = pick(sorted, perm, pos, d);
      break;
    }
  }
  if (!keepdim || scalar) {
    values = values.squeeze(d);
    indices = indices.squeeze(d);
  }
  one.finish();
  return {values, indices};
}

std::tuple<Tensor&, Tensor&> into(const char* name, const Tensor& self, Tensor& values,
                                  Tensor& indices, std::tuple<Tensor, Tensor> r) {
  at::checkScalarType(name, {indices, "indices", 1}, at::kLong);
  at::checkSameType(name, {values, "values", 0}, {self, "self", 2});
  at::native::resize_output(values, std::get<0>(r).sizes());
  at::native::resize_output(indices, std::get<1>(r).sizes());
  values.copy_(std::get<0>(r));
  indices.copy_(std::get<1>(r));
  return {values, indices};
}

std::tuple<Tensor, Tensor> median_dim(const Tensor& self, int64_t dim, bool keepdim, bool nan) {
  check_dtype(self, "median_out", false);
  const int64_t d = at::maybe_wrap_dim(dim, self.dim());
  at::native::zero_numel_check_dims(self, d, "median()");
  return select_along(self, d, keepdim, nan ? Select::kNanmedian : Select::kMedian);
}

Tensor median_all(const Tensor& self, bool nan) {
  check_dtype(self, "median_cpu", false);
  if (self.numel() == 0)
    return at::full({}, std::numeric_limits<float>::quiet_NaN(), self.options().dtype(at::kFloat))
        .to(self.scalar_type());
  return std::get<0>(
      select_along(self.reshape({-1}), 0, false, nan ? Select::kNanmedian : Select::kMedian));
}

std::tuple<Tensor, Tensor> kth_value(const Tensor& self, int64_t k, int64_t dim, bool keepdim) {
  check_dtype(self, "kthvalue_cpu", false);
  const int64_t d = at::maybe_wrap_dim(dim, self.dim(), /*wrap_scalar=*/true);
  const int64_t size = self.dim() == 0 ? 1 : self.size(d);
  at::native::zero_numel_check_dims(self, d, "kthvalue()");
  TORCH_CHECK(k >= 1 && k <= size, "kthvalue(): selected number k out of range for dimension ", d);
  return select_along(self, d, keepdim, Select::kKth, k);
}

std::tuple<Tensor, Tensor> mode_of(const Tensor& self, int64_t dim, bool keepdim) {
  check_dtype(self, "mode_cpu", true);
  const int64_t d = at::maybe_wrap_dim(dim, self.dim());
  at::native::zero_numel_check_dims(self, d, "mode()");
  return select_along(self, d, keepdim, Select::kMode);
}

// The CPU's binary search, step for step (so boundaries that are not sorted give its results
// too): over [start, end), a value moves start past mid when !(boundary[mid] >= v) (left side) or
// !(boundary[mid] > v) (right side), else end to mid; a NaN value moves past every boundary.
// bit_width(n) steps, each a gather of one boundary per value.
Tensor search(const Tensor& boundaries, const Tensor& input, bool out_int32, bool right,
              std::optional<std::string_view> side, const std::optional<Tensor>& sorter_opt,
              const Tensor* out) {
  const Tensor sorter = sorter_opt.value_or(Tensor());
  const at::ScalarType dtype = out_int32 ? at::kInt : at::kLong;
  const Tensor probe = out ? *out : at::empty({0}, boundaries.options().dtype(dtype));
  at::native::searchsorted_pre_check(boundaries, input, probe, out_int32, right, side, sorter);
  OneOp one;
  Tensor in = input, bd = boundaries, unused;
  at::native::searchsorted_maybe_trim_input_tensors(in, bd, unused, input, boundaries, sorter);
  if (sorter.defined()) bd = at::gather(bd, -1, sorter);
  const bool upper = right || (side && *side == "right");
  const int64_t n = bd.size(-1);
  const at::TensorOptions index = in.options().dtype(at::kLong);
  Tensor start = at::zeros(in.sizes(), index);
  Tensor end = at::full(in.sizes(), n, index);
  for (int64_t span = n; span > 0; span >>= 1) {
    const Tensor active = start < end;
    const Tensor mid = (start + (end - start).div(2, "floor")).clamp_max(n - 1);
    const Tensor b = bd.dim() == 1 ? at::take(bd, mid) : at::gather(bd, -1, mid);
    const Tensor past = at::logical_and(active, at::logical_not(upper ? b > in : b >= in));
    start = at::where(past, mid + 1, start);
    end = at::where(at::logical_and(active, at::logical_not(past)), mid, end);
  }
  Tensor r = start.to(dtype);
  one.finish();
  return r;
}

Tensor bucketize(const Tensor& self, const Tensor& boundaries, bool out_int32, bool right,
                 const Tensor* out) {
  TORCH_CHECK(boundaries.dim() == 1, "boundaries tensor must be 1 dimension, but got dim(",
              boundaries.dim(), ")");
  return search(boundaries, self, out_int32, right, std::nullopt, std::nullopt, out);
}

Tensor& copy_out(Tensor& out, const Tensor& r) {
  at::native::resize_output(out, r.sizes());
  return out.copy_(r);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("median", [](const Tensor& self) { return median_all(self, false); });
  m.impl("nanmedian", [](const Tensor& self) { return median_all(self, true); });
  m.impl("median.dim_values",
         [](const Tensor& self, int64_t dim, bool keepdim, Tensor& values,
            Tensor& indices) -> std::tuple<Tensor&, Tensor&> {
           return into("median", self, values, indices, median_dim(self, dim, keepdim, false));
         });
  m.impl("nanmedian.dim_values",
         [](const Tensor& self, int64_t dim, bool keepdim, Tensor& values,
            Tensor& indices) -> std::tuple<Tensor&, Tensor&> {
           return into("median", self, values, indices, median_dim(self, dim, keepdim, true));
         });
  m.impl("median.dim", [](const Tensor& self, int64_t dim, bool keepdim) {
    return median_dim(self, dim, keepdim, false);
  });
  m.impl("nanmedian.dim", [](const Tensor& self, int64_t dim, bool keepdim) {
    return median_dim(self, dim, keepdim, true);
  });
  m.impl("kthvalue", [](const Tensor& self, int64_t k, int64_t dim, bool keepdim) {
    return kth_value(self, k, dim, keepdim);
  });
  m.impl("kthvalue.values",
         [](const Tensor& self, int64_t k, int64_t dim, bool keepdim, Tensor& values,
            Tensor& indices) -> std::tuple<Tensor&, Tensor&> {
           return into("kthvalue", self, values, indices, kth_value(self, k, dim, keepdim));
         });
  m.impl("mode", mode_of);
  m.impl("mode.values",
         [](const Tensor& self, int64_t dim, bool keepdim, Tensor& values,
            Tensor& indices) -> std::tuple<Tensor&, Tensor&> {
           // The CPU's checks for mode's outputs (median and kthvalue use TensorUtils' ones).
           TORCH_CHECK(values.scalar_type() == self.scalar_type(), "expected scalar type '",
                       self.scalar_type(), "' but got '", values.scalar_type(),
                       "' for values output");
           TORCH_CHECK(indices.scalar_type() == at::kLong, "expected scalar type '", at::kLong,
                       "' but got '", indices.scalar_type(), "' for indices output");
           return into("mode", self, values, indices, mode_of(self, dim, keepdim));
         });
  m.impl("searchsorted.Tensor",
         [](const Tensor& sorted, const Tensor& self, bool out_int32, bool right,
            std::optional<std::string_view> side, const std::optional<Tensor>& sorter) {
           return search(sorted, self, out_int32, right, side, sorter, nullptr);
         });
  m.impl("searchsorted.Tensor_out",
         [](const Tensor& sorted, const Tensor& self, bool out_int32, bool right,
            std::optional<std::string_view> side, const std::optional<Tensor>& sorter,
            Tensor& out) -> Tensor& {
           return copy_out(out, search(sorted, self, out_int32, right, side, sorter, &out));
         });
  m.impl("searchsorted.Scalar",
         [](const Tensor& sorted, const at::Scalar& self, bool out_int32, bool right,
            std::optional<std::string_view> side, const std::optional<Tensor>& sorter) {
           const Tensor v = at::native::searchsorted_scalar_tensor(self, sorted.device());
           return search(sorted, v, out_int32, right, side, sorter, nullptr);
         });
  m.impl("searchsorted.Scalar_out",
         [](const Tensor& sorted, const at::Scalar& self, bool out_int32, bool right,
            std::optional<std::string_view> side, const std::optional<Tensor>& sorter,
            Tensor& out) -> Tensor& {
           const Tensor v = at::native::searchsorted_scalar_tensor(self, sorted.device());
           return copy_out(out, search(sorted, v, out_int32, right, side, sorter, &out));
         });
  m.impl("bucketize.Tensor",
         [](const Tensor& self, const Tensor& boundaries, bool out_int32, bool right) {
           return bucketize(self, boundaries, out_int32, right, nullptr);
         });
  m.impl("bucketize.Tensor_out",
         [](const Tensor& self, const Tensor& boundaries, bool out_int32, bool right,
            Tensor& out) -> Tensor& {
           return copy_out(out, bucketize(self, boundaries, out_int32, right, &out));
         });
  m.impl("bucketize.Scalar",
         [](const at::Scalar& self, const Tensor& boundaries, bool out_int32, bool right) {
           const Tensor v = at::native::searchsorted_scalar_tensor(self, boundaries.device());
           return bucketize(v, boundaries, out_int32, right, nullptr);
         });
  m.impl("bucketize.Scalar_out",
         [](const at::Scalar& self, const Tensor& boundaries, bool out_int32, bool right,
            Tensor& out) -> Tensor& {
           const Tensor v = at::native::searchsorted_scalar_tensor(self, boundaries.device());
           return copy_out(out, bucketize(v, boundaries, out_int32, right, &out));
         });
}

}  // namespace torch_pjrt::aten
