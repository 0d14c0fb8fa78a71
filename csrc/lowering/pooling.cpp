// Max, average and adaptive average pooling with their gradients, window tap by window tap so
// that results follow PyTorch's CPU order of evaluation.
#include "lowering/pooling.h"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <optional>
#include <string>

#include "lowering/common.h"

namespace torch_pjrt::lowering {
namespace {

using hlo::ElementType;
using hlo::TensorType;

struct Window {
  int64_t nd;
  std::vector<int64_t> kernel, stride, padding, dilation;
};

// attrs ints: nd, kernel, stride, padding[, dilation] (nd each).
Window window(const graph::Attrs& attrs, bool dilated) {
  const auto& v = attrs.ints;
  Window w{v.at(0), {}, {}, {}, {}};
  for (int64_t i = 0; i < w.nd; ++i) {
    w.kernel.push_back(v.at(1 + i));
    w.stride.push_back(v.at(1 + w.nd + i));
    w.padding.push_back(v.at(1 + 2 * w.nd + i));
    w.dilation.push_back(dilated ? v.at(1 + 3 * w.nd + i) : 1);
  }
  return w;
}

hlo::Value pad(hlo::Builder& b, hlo::Value x, double value, const std::vector<int64_t>& lo,
               const std::vector<int64_t>& hi, const std::vector<int64_t>& interior) {
  std::vector<int64_t> dims = x.type.dims;
  for (size_t i = 0; i < dims.size(); ++i) {
    dims[i] = lo[i] + hi[i] + dims[i] + std::max<int64_t>(dims[i] - 1, 0) * interior[i];
  }
  hlo::Value v = b.splat(value, TensorType{x.type.dtype, {}});
  return b.op("pad", {x, v}, {TensorType{x.type.dtype, dims}},
              "edge_padding_high = " + hlo::i64_array(hi) + ", edge_padding_low = " +
                  hlo::i64_array(lo) + ", interior_padding = " + hlo::i64_array(interior))[0];
}

// Length of the padded extent every window of an axis lies in, starting at -padding.
int64_t padded_extent(int64_t in, int64_t out, int64_t k, int64_t s, int64_t p, int64_t d) {
  return std::max(in + 2 * p, (out - 1) * s + (k - 1) * d + 1);
}

// Calls fn(offsets) for every tap of the window, the last axis varying fastest.
template <typename Fn>
void for_each_tap(const std::vector<int64_t>& extent, Fn fn) {
  std::vector<int64_t> at(extent.size(), 0);
  while (true) {
    fn(at);
    int64_t i = static_cast<int64_t>(extent.size()) - 1;
    for (; i >= 0; --i) {
      if (++at[i] < extent[i]) break;
      at[i] = 0;
    }
    if (i < 0) return;
  }
}

// The strided slice of `x` (padded, dims [lead..., L...]) seen by window tap `at`.
hlo::Value tap_slice(hlo::Builder& b, hlo::Value x, const Window& w,
                     const std::vector<int64_t>& out_spatial, const std::vector<int64_t>& at) {
  const int64_t lead = x.type.rank() - w.nd;
  std::vector<int64_t> start(lead, 0), limit(x.type.dims.begin(), x.type.dims.begin() + lead),
      strides(lead, 1);
  for (int64_t i = 0; i < w.nd; ++i) {
    start.push_back(at[i] * w.dilation[i]);
    limit.push_back(start.back() + (out_spatial[i] - 1) * w.stride[i] + 1);
    strides.push_back(w.stride[i]);
  }
  return b.slice(x, start, limit, strides);
}

std::vector<int64_t> spatial(const TensorType& t, int64_t nd) {
  return {t.dims.end() - nd, t.dims.end()};
}

std::vector<hlo::Value> emit_max_pool(hlo::Builder& b, const std::vector<hlo::Value>& in,
                                      const graph::Attrs& attrs,
                                      const std::vector<TensorType>& outs) {
  const Window w = window(attrs, true);
  hlo::Value x = in[0];
  const int64_t lead = x.type.rank() - w.nd;
  const std::vector<int64_t> in_sp = spatial(x.type, w.nd), out_sp = spatial(outs[0], w.nd);
  std::vector<int64_t> lo(lead, 0), hi(lead, 0), zero(x.type.rank(), 0);
  for (int64_t i = 0; i < w.nd; ++i) {
    lo.push_back(w.padding[i]);
    hi.push_back(
        padded_extent(in_sp[i], out_sp[i], w.kernel[i], w.stride[i], w.padding[i], w.dilation[i]) -
        in_sp[i] - w.padding[i]);
  }
  // Flat index of every position of the plane, -1 in the padding.
  TensorType plane_type{ElementType::I64, in_sp};
  hlo::Value plane = b.iota(plane_type, 0);
  for (int64_t i = 1; i < w.nd; ++i) {
    plane = b.binary("add", b.binary("multiply", plane, full(b, in_sp[i], ElementType::I64, in_sp)),
                     b.iota(plane_type, i));
  }
  const std::vector<int64_t> sp_lo(lo.begin() + lead, lo.end()), sp_hi(hi.begin() + lead, hi.end());
  plane = pad(b, plane, -1, sp_lo, sp_hi, std::vector<int64_t>(w.nd, 0));
  hlo::Value xp = pad(b, x, 0, lo, hi, zero);

  const TensorType& out = outs[0];
  const bool floating = runtime::is_floating(out.dtype);
  std::vector<int64_t> sp_dims;
  for (int64_t i = 0; i < w.nd; ++i) sp_dims.push_back(lead + i);
  std::optional<hlo::Value> best, best_index;
  hlo::Value none = full(b, -1, ElementType::I64, out.dims);
  for_each_tap(w.kernel, [&](const std::vector<int64_t>& at) {
    hlo::Value v = tap_slice(b, xp, w, out_sp, at);
    hlo::Value index = b.broadcast_in_dim(tap_slice(b, plane, w, out_sp, at), out.dims, sp_dims);
    if (!best) {
      best = v;
      best_index = index;
      return;
    }
    // PyTorch takes a position over the current maximum when it is greater or NaN, and the first
    // position in the input when no maximum was found yet (index -1 marks the padding).
    hlo::Value take = b.binary("or", b.compare(hlo::Cmp::EQ, *best_index, none),
                               b.compare(hlo::Cmp::GT, v, *best));
    if (floating) take = b.binary("or", take, b.compare(hlo::Cmp::NE, v, v));
    take = b.binary("and", b.compare(hlo::Cmp::NE, index, none), take);
    best = b.select(take, v, *best);
    best_index = b.select(take, index, *best_index);
  });
  return {*best, *best_index};
}

// [P, n] view of a value with dims [lead..., spatial...] where the last nd are spatial.
std::vector<int64_t> planes(const TensorType& t, int64_t nd) {
  int64_t p = 1, n = 1;
  for (int64_t i = 0; i < t.rank(); ++i) (i < t.rank() - nd ? p : n) *= t.dims[i];
  return {p, n};
}

hlo::Value scatter_add(hlo::Builder& b, const TensorType& out, hlo::Value flat_index,
                       hlo::Value updates) {
  int64_t numel = 1;
  for (int64_t d : out.dims) numel *= d;
  hlo::Value zeros = full(b, 0, out.dtype, {numel});
  hlo::Value r =
      b.op("scatter", {zeros, flat_index, updates}, {zeros.type},
           "scatter_dimension_numbers = #stablehlo.scatter<inserted_window_dims = [0], "
           "scatter_dims_to_operand_dims = [0], index_vector_dim = 1>, indices_are_sorted = false, "
           "unique_indices = false",
           b.combiner(out.dtype, "add"))[0];
  return b.reshape(r, out.dims);
}

std::vector<hlo::Value> emit_max_pool_backward(hlo::Builder& b, const std::vector<hlo::Value>& in,
                                               const graph::Attrs& attrs,
                                               const std::vector<TensorType>& outs) {
  const int64_t nd = attrs.ints.at(0);
  const TensorType& out = outs[0];
  const std::vector<int64_t> g = planes(in[0].type, nd), o = planes(out, nd);
  hlo::Value grad = b.reshape(to_type(b, in[0], out.dtype), {g[0] * g[1]});
  hlo::Value index = b.reshape(to_type(b, in[1], ElementType::I64), g);
  TensorType index_type{ElementType::I64, g};
  index = b.binary("add", index,
                   b.binary("multiply", b.iota(index_type, 0), full(b, o[1], ElementType::I64, g)));
  return {scatter_add(b, out, b.reshape(index, {g[0] * g[1]}), grad)};
}

// Per-axis window bounds [start, end) of average pooling, clipped to the input or not.
struct Bounds {
  std::vector<int64_t> start, end;
};

Bounds avg_bounds(int64_t in, int64_t out, int64_t k, int64_t s, int64_t p, bool include_pad) {
  Bounds r;
  for (int64_t o = 0; o < out; ++o) {
    int64_t start = o * s - p, end = std::min(start + k, in + p);
    if (!include_pad) {
      start = std::max<int64_t>(start, 0);
      end = std::min(end, in);
    }
    r.start.push_back(start);
    r.end.push_back(end);
  }
  return r;
}

// The divisor of every output of average pooling, as a value of the output type.
hlo::Value avg_divisor(hlo::Builder& b, const Window& w, const std::vector<int64_t>& in_sp,
                       const TensorType& out, bool include_pad, int64_t divisor_override) {
  if (divisor_override != 0) return full(b, divisor_override, out.dtype, out.dims);
  const int64_t lead = out.rank() - w.nd;
  TensorType count_type{ElementType::I64, out.dims};
  hlo::Value count = full(b, 1, ElementType::I64, out.dims);
  for (int64_t i = 0; i < w.nd; ++i) {
    const Bounds r = avg_bounds(in_sp[i], out.dims[lead + i], w.kernel[i], w.stride[i],
                                w.padding[i], include_pad);
    std::vector<double> n;
    for (size_t o = 0; o < r.start.size(); ++o) n.push_back(r.end[o] - r.start[o]);
    count =
        b.binary("multiply", count,
                 b.broadcast_in_dim(vector_constant(b, n, ElementType::I64), out.dims, {lead + i}));
  }
  return b.convert(count, out.dtype);
}

std::vector<hlo::Value> emit_avg_pool(hlo::Builder& b, const std::vector<hlo::Value>& in,
                                      const graph::Attrs& attrs,
                                      const std::vector<TensorType>& outs) {
  const Window w = window(attrs, false);
  const bool include_pad = attrs.ints.at(1 + 3 * w.nd) != 0;
  const int64_t divisor_override = attrs.ints.at(2 + 3 * w.nd);
  const TensorType out{opmath_type(outs[0].dtype), outs[0].dims};  // f16/bf16 sum in f32
  hlo::Value x = to_type(b, in[0], out.dtype);
  const int64_t lead = x.type.rank() - w.nd;
  const std::vector<int64_t> in_sp = spatial(x.type, w.nd), out_sp = spatial(out, w.nd);
  std::vector<int64_t> lo(lead, 0), hi(lead, 0);
  for (int64_t i = 0; i < w.nd; ++i) {
    lo.push_back(w.padding[i]);
    hi.push_back(padded_extent(in_sp[i], out_sp[i], w.kernel[i], w.stride[i], w.padding[i], 1) -
                 in_sp[i] - w.padding[i]);
  }
  hlo::Value xp = pad(b, x, 0, lo, hi, std::vector<int64_t>(x.type.rank(), 0));
  std::optional<hlo::Value> sum;
  for_each_tap(w.kernel, [&](const std::vector<int64_t>& at) {
    hlo::Value v = tap_slice(b, xp, w, out_sp, at);
    sum = sum ? b.binary("add", *sum, v) : v;
  });
  hlo::Value avg =
      b.binary("divide", *sum, avg_divisor(b, w, in_sp, out, include_pad, divisor_override));
  return {to_type(b, avg, outs[0].dtype)};
}

std::vector<hlo::Value> emit_avg_pool_backward(hlo::Builder& b, const std::vector<hlo::Value>& in,
                                               const graph::Attrs& attrs,
                                               const std::vector<TensorType>& outs) {
  const Window w = window(attrs, false);
  const bool include_pad = attrs.ints.at(1 + 3 * w.nd) != 0;
  const int64_t divisor_override = attrs.ints.at(2 + 3 * w.nd);
  const TensorType out{opmath_type(outs[0].dtype), outs[0].dims};
  hlo::Value g = to_type(b, in[0], out.dtype);
  const int64_t lead = out.rank() - w.nd;
  const std::vector<int64_t> in_sp = spatial(out, w.nd), out_sp = spatial(g.type, w.nd);
  g = b.binary("divide", g, avg_divisor(b, w, in_sp, g.type, include_pad, divisor_override));
  // Each tap spreads the gradient over the padded input with the stride between outputs.
  std::optional<hlo::Value> sum;
  for_each_tap(w.kernel, [&](const std::vector<int64_t>& at) {
    std::vector<int64_t> lo(lead, 0), hi(lead, 0), interior(lead, 0);
    for (int64_t i = 0; i < w.nd; ++i) {
      const int64_t extent =
          padded_extent(in_sp[i], out_sp[i], w.kernel[i], w.stride[i], w.padding[i], 1);
      lo.push_back(at[i]);
      hi.push_back(extent - at[i] - (out_sp[i] - 1) * w.stride[i] - 1);
      interior.push_back(w.stride[i] - 1);
    }
    hlo::Value v = pad(b, g, 0, lo, hi, interior);
    sum = sum ? b.binary("add", *sum, v) : v;
  });
  std::vector<int64_t> start(lead, 0), limit(out.dims.begin(), out.dims.begin() + lead),
      strides(out.rank(), 1);
  for (int64_t i = 0; i < w.nd; ++i) {
    start.push_back(w.padding[i]);
    limit.push_back(w.padding[i] + in_sp[i]);
  }
  return {to_type(b, b.slice(*sum, start, limit, strides), outs[0].dtype)};
}

// Adaptive windows of one axis: tap j of output o reads min(start + j, end - 1) and counts when
// start + j < end.
struct AdaptiveAxis {
  std::vector<int64_t> start, length;
  int64_t taps = 0;
};

AdaptiveAxis adaptive_axis(int64_t in, int64_t out) {
  AdaptiveAxis a;
  for (int64_t o = 0; o < out; ++o) {
    const int64_t start = o * in / out, end = ((o + 1) * in + out - 1) / out;
    a.start.push_back(start);
    a.length.push_back(end - start);
    a.taps = std::max(a.taps, end - start);
  }
  return a;
}

struct AdaptiveTaps {
  std::vector<AxisIndices> index;
  std::vector<hlo::Value> valid;  // bool, dims of the pooled output
};

AdaptiveTaps adaptive_taps(hlo::Builder& b, const std::vector<int64_t>& in_sp,
                           const TensorType& out, std::vector<AdaptiveAxis>& axes) {
  const int64_t nd = in_sp.size(), lead = out.rank() - nd;
  std::vector<int64_t> taps;
  for (int64_t i = 0; i < nd; ++i) {
    axes.push_back(adaptive_axis(in_sp[i], out.dims[lead + i]));
    taps.push_back(axes.back().taps);
  }
  AdaptiveTaps r;
  for_each_tap(taps, [&](const std::vector<int64_t>& at) {
    AxisIndices index;
    std::optional<hlo::Value> valid;
    for (int64_t i = 0; i < nd; ++i) {
      const AdaptiveAxis& a = axes[i];
      std::vector<int64_t> idx;
      std::vector<double> ok;
      for (size_t o = 0; o < a.start.size(); ++o) {
        idx.push_back(a.start[o] + std::min(at[i], a.length[o] - 1));
        ok.push_back(at[i] < a.length[o] ? 1 : 0);
      }
      index.push_back(idx);
      hlo::Value v =
          b.broadcast_in_dim(vector_constant(b, ok, ElementType::Bool), out.dims, {lead + i});
      valid = valid ? b.binary("and", *valid, v) : v;
    }
    r.index.push_back(index);
    r.valid.push_back(*valid);
  });
  return r;
}

// Divides `v` by the window length of each axis in turn, as PyTorch does.
hlo::Value divide_by_lengths(hlo::Builder& b, hlo::Value v, const std::vector<AdaptiveAxis>& axes) {
  const int64_t lead = v.type.rank() - axes.size();
  for (size_t i = 0; i < axes.size(); ++i) {
    std::vector<double> n(axes[i].length.begin(), axes[i].length.end());
    v = b.binary("divide", v,
                 b.broadcast_in_dim(vector_constant(b, n, v.type.dtype), v.type.dims,
                                    {lead + static_cast<int64_t>(i)}));
  }
  return v;
}

std::vector<hlo::Value> emit_adaptive_avg_pool(hlo::Builder& b, const std::vector<hlo::Value>& in,
                                               const graph::Attrs& attrs,
                                               const std::vector<TensorType>& outs) {
  const TensorType out{opmath_type(outs[0].dtype), outs[0].dims};  // f16/bf16 sum in f32
  hlo::Value x = to_type(b, in[0], out.dtype);
  std::vector<AdaptiveAxis> axes;
  const AdaptiveTaps taps = adaptive_taps(b, spatial(x.type, attrs.ints.at(0)), out, axes);
  hlo::Value zero = full(b, 0, out.dtype, out.dims);
  std::optional<hlo::Value> sum;
  for (size_t t = 0; t < taps.index.size(); ++t) {
    hlo::Value v = b.select(taps.valid[t], gather_spatial(b, x, taps.index[t]), zero);
    sum = sum ? b.binary("add", *sum, v) : v;
  }
  return {to_type(b, divide_by_lengths(b, *sum, axes), outs[0].dtype)};
}

std::vector<hlo::Value> emit_adaptive_avg_pool_backward(hlo::Builder& b,
                                                        const std::vector<hlo::Value>& in,
                                                        const graph::Attrs& attrs,
                                                        const std::vector<TensorType>& outs) {
  const TensorType out{opmath_type(outs[0].dtype), outs[0].dims};
  hlo::Value g = to_type(b, in[0], out.dtype);
  std::vector<AdaptiveAxis> axes;
  const AdaptiveTaps taps = adaptive_taps(b, spatial(out, attrs.ints.at(0)), g.type, axes);
  g = divide_by_lengths(b, g, axes);
  hlo::Value zero = full(b, 0, out.dtype, g.type.dims);
  std::vector<hlo::Value> updates;
  for (const hlo::Value& valid : taps.valid) updates.push_back(b.select(valid, g, zero));
  return {to_type(b, scatter_add_spatial(b, out, taps.index, updates), outs[0].dtype)};
}

std::vector<hlo::Value> emit_adaptive_max_pool(hlo::Builder& b, const std::vector<hlo::Value>& in,
                                               const graph::Attrs& attrs,
                                               const std::vector<TensorType>& outs) {
  const TensorType& out = outs[0];
  const hlo::Value x = in[0];
  const int64_t nd = attrs.ints.at(0), lead = out.rank() - nd;
  const std::vector<int64_t> in_sp = spatial(x.type, nd);
  std::vector<AdaptiveAxis> axes;
  const AdaptiveTaps taps = adaptive_taps(b, in_sp, out, axes);
  std::optional<hlo::Value> best, best_index;
  for (size_t t = 0; t < taps.index.size(); ++t) {
    hlo::Value v = gather_spatial(b, x, taps.index[t]);
    // Index within the plane: sum over axes of position times the axis stride.
    std::optional<hlo::Value> index;
    int64_t stride = 1;
    for (int64_t i = nd - 1; i >= 0; --i) {
      std::vector<double> scaled;
      for (int64_t p : taps.index[t][i]) scaled.push_back(static_cast<double>(p * stride));
      hlo::Value term =
          b.broadcast_in_dim(vector_constant(b, scaled, ElementType::I64), out.dims, {lead + i});
      index = index ? b.binary("add", *index, term) : term;
      stride *= in_sp[i];
    }
    if (!best) {  // the first tap is always inside the window
      best = v;
      best_index = *index;
      continue;
    }
    hlo::Value take = b.compare(hlo::Cmp::GT, v, *best);
    if (runtime::is_floating(out.dtype)) take = b.binary("or", take, b.compare(hlo::Cmp::NE, v, v));
    take = b.binary("and", taps.valid[t], take);
    best = b.select(take, v, *best);
    best_index = b.select(take, *index, *best_index);
  }
  return {*best, *best_index};
}

// Flat indices into [lead..., in...] of the per-axis positions, dims [P, out...].
hlo::Value flat_index(hlo::Builder& b, const std::vector<int64_t>& in_dims, int64_t nd,
                      const AxisIndices& index) {
  const int64_t lead = in_dims.size() - nd;
  int64_t p = 1;
  for (int64_t i = 0; i < lead; ++i) p *= in_dims[i];
  std::vector<int64_t> dims{p};
  for (const auto& v : index) dims.push_back(static_cast<int64_t>(v.size()));
  int64_t stride = 1;
  for (int64_t i = 0; i < nd; ++i) stride *= in_dims[lead + i];
  hlo::Value flat = b.binary("multiply", b.iota(TensorType{ElementType::I64, dims}, 0),
                             full(b, stride, ElementType::I64, dims));
  for (int64_t i = 0; i < nd; ++i) {
    stride /= in_dims[lead + i];
    std::vector<double> scaled;
    for (int64_t v : index[i]) scaled.push_back(static_cast<double>(v * stride));
    flat =
        b.binary("add", flat,
                 b.broadcast_in_dim(vector_constant(b, scaled, ElementType::I64), dims, {1 + i}));
  }
  return flat;
}

int64_t numel(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

}  // namespace

hlo::Value vector_constant(hlo::Builder& b, const std::vector<double>& values, ElementType t) {
  std::string text;
  for (size_t i = 0; i < values.size(); ++i) {
    char buf[40];
    if (runtime::is_floating(t)) {
      std::snprintf(buf, sizeof buf, "%.17e", values[i]);
    } else if (t == ElementType::Bool) {
      std::snprintf(buf, sizeof buf, "%s", values[i] != 0 ? "true" : "false");
    } else {
      std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(values[i]));
    }
    text += (i ? ", " : "") + std::string(buf);
  }
  TensorType type{t, {static_cast<int64_t>(values.size())}};
  if (values.empty()) return b.splat(0, type);
  std::string literal = "dense<[" + text + "]>";
  // Floats that are not plain decimals (inf, nan) never occur here: weights and counts are finite.
  return b.op("constant", {}, {type}, "value = " + literal + " : " + type.str())[0];
}

hlo::Value gather_spatial(hlo::Builder& b, hlo::Value x, const AxisIndices& index) {
  const int64_t nd = index.size(), lead = x.type.rank() - nd;
  std::vector<int64_t> out_dims(x.type.dims.begin(), x.type.dims.begin() + lead);
  for (const auto& v : index) out_dims.push_back(static_cast<int64_t>(v.size()));
  hlo::Value flat = flat_index(b, x.type.dims, nd, index);
  hlo::Value r = b.gather_1d(b.reshape(x, {numel(x.type.dims)}), flat);
  return b.reshape(r, out_dims);
}

hlo::Value scatter_add_spatial(hlo::Builder& b, const TensorType& out,
                               const std::vector<AxisIndices>& index,
                               const std::vector<hlo::Value>& updates) {
  const int64_t nd = index.at(0).size();
  std::vector<hlo::Value> flat, values;
  for (size_t t = 0; t < index.size(); ++t) {
    const int64_t n = numel(updates[t].type.dims);
    flat.push_back(b.reshape(flat_index(b, out.dims, nd, index[t]), {n}));
    values.push_back(b.reshape(updates[t], {n}));
  }
  hlo::Value all_index = flat.size() == 1 ? flat[0] : b.concatenate(flat, 0);
  hlo::Value all_values = values.size() == 1 ? values[0] : b.concatenate(values, 0);
  return scatter_add(b, out, all_index, all_values);
}

const graph::OpDef kMaxPool{"max_pool", emit_max_pool};
const graph::OpDef kMaxPoolBackward{"max_pool_backward", emit_max_pool_backward};
const graph::OpDef kAvgPool{"avg_pool", emit_avg_pool};
const graph::OpDef kAvgPoolBackward{"avg_pool_backward", emit_avg_pool_backward};
const graph::OpDef kAdaptiveAvgPool{"adaptive_avg_pool", emit_adaptive_avg_pool};
const graph::OpDef kAdaptiveMaxPool{"adaptive_max_pool", emit_adaptive_max_pool};
const graph::OpDef kAdaptiveAvgPoolBackward{"adaptive_avg_pool_backward",
                                            emit_adaptive_avg_pool_backward};

}  // namespace torch_pjrt::lowering
