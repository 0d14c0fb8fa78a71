// segment_reduce and its backward over 1-D lengths or offsets, composed of the device's own
// scatter_reduce, index_select and searchsorted: each element of `data` along axis 0 belongs to the
// segment whose [offsets[s], offsets[s + 1]) holds its position. Validating the lengths reads them
// on the host (unless `unsafe`), as the CPU and CUDA kernels do. Multi-dimensional lengths or
// offsets run through the counted CPU fallback.
#include <ATen/ATen.h>
#include <torch/library.h>

#include <limits>
#include <string>

#include "aten/fallback.h"

namespace torch_pjrt::aten {
namespace {

using at::Tensor;

// The reduction `reduce` names, as scatter_reduce spells it ("max" and "min" are amax/amin).
std::string reduction(c10::string_view reduce) {
  const std::string r(reduce);
  if (r == "max" || r == "amax") return "amax";
  if (r == "min" || r == "amin") return "amin";
  TORCH_CHECK(r == "sum" || r == "prod" || r == "mean",
              "reduce argument must be either sum, prod, mean, amax or amin, got ", r);
  return r;
}

// The value a segment starts from: `initial`, else the reduction's identity (NaN for mean, which
// an empty segment gives without `initial`).
double start_value(const std::string& r, const std::optional<at::Scalar>& initial) {
  if (initial) return initial->toDouble();
  if (r == "amax") return -std::numeric_limits<double>::infinity();
  if (r == "amin") return std::numeric_limits<double>::infinity();
  if (r == "prod") return 1;
  return 0;
}

// Offsets [S + 1] from lengths or offsets, both 1-D here.
Tensor segment_offsets(const std::optional<Tensor>& lengths, const std::optional<Tensor>& offsets) {
  if (offsets && offsets->defined()) return *offsets;
  return at::cat({at::zeros({1}, lengths->options()), lengths->cumsum(0)});
}

// Per element along axis 0 of `data`, the index of its segment; S for the elements outside every
// segment (before offsets[0] or from offsets[S] on), which the kernels ignore.
Tensor segment_ids(const Tensor& offs, int64_t n) {
  const Tensor positions = at::arange(n, offs.options());
  const Tensor ids =
      at::searchsorted(offs.slice(0, 1), positions, /*out_int32=*/false, /*right=*/true);
  const Tensor inside = (positions >= offs[0]) & (positions < offs[-1]);
  return at::where(inside, ids, offs.size(0) - 1);
}

// `index` [N] broadcast over the trailing dims of `like` [N, ...], for scatter along dim 0.
Tensor spread(const Tensor& index, const Tensor& like) {
  std::vector<int64_t> shape(like.dim(), 1);
  shape[0] = index.size(0);
  return index.reshape(shape).expand(like.sizes());
}

// The data's rows reduced per segment: [S, ...] from [N, ...] by scatter_reduce (into one more
// row, for the elements outside every segment).
Tensor reduce_rows(const Tensor& data, const Tensor& ids, int64_t segments, const std::string& r,
                   double start) {
  std::vector<int64_t> shape = data.sizes().vec();
  shape[0] = segments + 1;
  const Tensor init = at::full(shape, start, data.options());
  return init.scatter_reduce(0, spread(ids, data), data, r == "mean" ? "sum" : r)
      .narrow(0, 0, segments);
}

// `rows` [S, ...] per element of data: row ids[j], zero for the elements outside every segment.
Tensor per_element(const Tensor& rows, const Tensor& ids) {
  return at::cat({rows, at::zeros_like(rows.narrow(0, 0, 1))}).index_select(0, ids);
}

bool one_dimensional(const std::optional<Tensor>& lengths, const std::optional<Tensor>& offsets) {
  const Tensor& t = offsets && offsets->defined() ? *offsets : *lengths;
  return t.dim() == 1;
}

Tensor segment_reduce(const Tensor& data, c10::string_view reduce,
                      const std::optional<Tensor>& lengths, const std::optional<Tensor>& indices,
                      const std::optional<Tensor>& offsets, int64_t axis, bool unsafe,
                      const std::optional<at::Scalar>& initial) {
  const bool has_lengths = lengths && lengths->defined();
  const bool has_offsets = offsets && offsets->defined();
  TORCH_CHECK(has_lengths || has_offsets,
              "segment_reduce(): Either lengths or offsets must be defined.");
  if (!one_dimensional(lengths, offsets)) {
    static const c10::OperatorHandle op =
        c10::Dispatcher::singleton().findSchemaOrThrow("aten::segment_reduce", "");
    torch::jit::Stack stack{data,   std::string(reduce), lengths, indices, offsets, axis, unsafe,
                            initial};
    cpu_fallback(op, &stack);
    return stack[0].toTensor();
  }
  const std::string r = reduction(reduce);
  axis = at::maybe_wrap_dim(axis, data.dim());
  TORCH_CHECK(axis == 0, "segment_reduce(): Expected axis to be the last dimension of ",
              has_offsets ? "offsets" : "lengths", " but got ", axis, ".");
  TORCH_CHECK_NOT_IMPLEMENTED(at::isFloatingType(data.scalar_type()),
                              "\"_segment_reduce_cpu\" not implemented for '",
                              c10::toString(data.scalar_type()), "'");
  const Tensor offs = segment_offsets(lengths, offsets);
  TORCH_CHECK_NOT_IMPLEMENTED(!at::isFloatingType(offs.scalar_type()),
                              "\"_segment_reduce_lengths_cpu_kernel1\" not implemented for '",
                              c10::toString(offs.scalar_type()), "'");
  if (!unsafe && has_lengths) {
    TORCH_CHECK(lengths->min().item<int64_t>() >= 0, "lengths contains negative value!");
    TORCH_CHECK(offs[-1].item<int64_t>() == data.size(0),
                "segment_reduce(): Expected all rows of lengths along axis to sum to "
                "data.size(lengths.dim()-1) when !unsafe.");
  }
  const int64_t segments = offs.size(0) - 1;
  const Tensor ids = segment_ids(offs, data.size(0));
  Tensor out = reduce_rows(data, ids, segments, r, start_value(r, initial));
  if (r != "mean") return out;
  std::vector<int64_t> shape(data.dim(), 1);
  shape[0] = segments;
  const Tensor count = (offs.slice(0, 1) - offs.slice(0, 0, -1)).reshape(shape).to(out.dtype());
  const double empty = initial ? initial->toDouble() : std::numeric_limits<double>::quiet_NaN();
  return at::where(count > 0, out / count, empty);
}

// The gradient for `data`: as the CPU kernel computes it, including its choices for ties (max/min:
// the tied elements, and NaN ones, share a positive gradient equally) and for zeros in products
// (their gradient is the product of the segment's other elements).
Tensor segment_reduce_backward(const Tensor& grad, const Tensor& output, const Tensor& data,
                               c10::string_view reduce, const std::optional<Tensor>& lengths,
                               const std::optional<Tensor>& offsets, int64_t axis,
                               const std::optional<at::Scalar>& initial) {
  if (!one_dimensional(lengths, offsets)) {
    static const c10::OperatorHandle op =
        c10::Dispatcher::singleton().findSchemaOrThrow("aten::_segment_reduce_backward", "");
    torch::jit::Stack stack{grad,    output,  data, std::string(reduce),
                            lengths, offsets, axis, initial};
    cpu_fallback(op, &stack);
    return stack[0].toTensor();
  }
  const std::string r = reduction(reduce);
  const Tensor offs = segment_offsets(lengths, offsets);
  const int64_t segments = offs.size(0) - 1;
  const Tensor ids = segment_ids(offs, data.size(0));
  const Tensor g = per_element(grad, ids);
  if (r == "sum") return g;
  if (r == "mean") {
    std::vector<int64_t> shape(data.dim(), 1);
    shape[0] = segments;
    const Tensor count = (offs.slice(0, 1) - offs.slice(0, 0, -1)).reshape(shape);
    return per_element(grad / count.clamp_min(1).to(grad.dtype()), ids);
  }
  auto per_segment_sum = [&](const Tensor& values) {
    return per_element(reduce_rows(values, ids, segments, "sum", 0), ids);
  };
  if (r == "amax" || r == "amin") {
    const Tensor hit = at::isnan(data) | (data == per_element(output, ids));
    const Tensor picked = at::where(hit, g, 0);
    const Tensor ties = per_segment_sum(hit.to(data.dtype()));
    return at::where((ties >= 2) & (picked > 0), picked / ties, picked);
  }
  // prod: grad * output / x, or for a zero or NaN x the product of the other elements, from the
  // product of the segment's ordinary elements and its counts of zeros and NaNs.
  const Tensor is_zero = data == 0;
  const Tensor is_nan = at::isnan(data);
  const Tensor special = is_zero | is_nan;
  const Tensor ordinary = per_element(reduce_rows(at::where(special, 1, data), ids, segments,
                                                  "prod", initial ? initial->toDouble() : 1.0),
                                      ids);
  const Tensor other_zeros = per_segment_sum(is_zero.to(data.dtype())) - is_zero.to(data.dtype());
  const Tensor other_nans = per_segment_sum(is_nan.to(data.dtype())) - is_nan.to(data.dtype());
  Tensor others = at::where(other_zeros > 0, 0, ordinary);
  others = at::where(other_nans > 0, std::numeric_limits<double>::quiet_NaN(), others);
  const Tensor regular = g * per_element(output, ids) / data;
  return at::where(special, g * others, regular);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("segment_reduce", segment_reduce);
  m.impl("_segment_reduce_backward", segment_reduce_backward);
}

}  // namespace torch_pjrt::aten
