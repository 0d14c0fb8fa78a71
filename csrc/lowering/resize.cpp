// Nearest, (multi)linear and bicubic interpolation as gathers of precomputed source positions, and
// their gradients as scatter-adds; positions and weights follow PyTorch's CPU kernels.
#include "lowering/resize.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <optional>

#include "lowering/common.h"
#include "lowering/pooling.h"

namespace torch_pjrt::lowering {
namespace {

using hlo::ElementType;
using hlo::TensorType;

// The type interpolation weights and sums are computed in (PyTorch's opmath type).
ElementType compute_type(ElementType t) {
  return t == ElementType::F64 ? ElementType::F64 : ElementType::F32;
}

template <typename T>
T axis_scale(int64_t in, int64_t out, double scale, bool align_corners) {
  if (align_corners) return out > 1 ? static_cast<T>(in - 1) / static_cast<T>(out - 1) : T(0);
  return scale > 0 ? static_cast<T>(1.0 / scale) : static_cast<T>(in) / static_cast<T>(out);
}

// Source index floor(o * scale), or floor((o + 0.5) * scale) for "nearest-exact".
template <typename T>
std::vector<int64_t> nearest_axis(int64_t in, int64_t out, double scale, bool exact) {
  const T s = axis_scale<T>(in, out, scale, false);
  std::vector<int64_t> index;
  for (int64_t o = 0; o < out; ++o) {
    const double real = exact ? (static_cast<double>(o) + 0.5) * s : s * static_cast<T>(o);
    index.push_back(std::min(static_cast<int64_t>(std::floor(static_cast<float>(real))), in - 1));
  }
  return index;
}

// Taps per output position (two for linear, four for cubic): source indices and weights.
struct LinearAxis {
  std::vector<std::vector<int64_t>> index;
  std::vector<std::vector<double>> weight;
};

template <typename T>
LinearAxis linear_axis(int64_t in, int64_t out, double scale, bool align_corners) {
  const T s = axis_scale<T>(in, out, scale, align_corners);
  LinearAxis a{std::vector<std::vector<int64_t>>(2), std::vector<std::vector<double>>(2)};
  for (int64_t o = 0; o < out; ++o) {
    int64_t i0 = o, i1 = o;
    T l0 = 1, l1 = 0;
    if (in != out) {
      T real = align_corners ? s * static_cast<T>(o) : s * (static_cast<T>(o) + T(0.5)) - T(0.5);
      if (!align_corners && real < 0) real = 0;
      i0 = std::min(static_cast<int64_t>(std::floor(static_cast<float>(real))), in - 1);
      l1 = std::min(std::max(real - static_cast<T>(i0), T(0)), T(1));
      i1 = i0 + (i0 < in - 1 ? 1 : 0);
      l0 = T(1) - l1;
    }
    a.index[0].push_back(i0);
    a.index[1].push_back(i1);
    a.weight[0].push_back(l0);
    a.weight[1].push_back(l1);
  }
  return a;
}

// PyTorch's cubic convolution coefficients (A = -0.75) for the fractional position t.
template <typename T>
std::array<T, 4> cubic_coefficients(T t) {
  const T A = -0.75;
  const auto near = [&](T x) { return ((A + 2) * x - (A + 3)) * x * x + 1; };
  const auto far = [&](T x) { return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A; };
  return {far(t + 1), near(t), near(1 - t), far(2 - t)};
}

// Four taps at floor(real) - 1 .. floor(real) + 2, clamped to the input.
template <typename T>
LinearAxis cubic_axis(int64_t in, int64_t out, double scale, bool align_corners) {
  const T s = axis_scale<T>(in, out, scale, align_corners);
  LinearAxis a{std::vector<std::vector<int64_t>>(4), std::vector<std::vector<double>>(4)};
  for (int64_t o = 0; o < out; ++o) {
    const T real =
        align_corners ? s * static_cast<T>(o) : s * (static_cast<T>(o) + T(0.5)) - T(0.5);
    const int64_t i0 = static_cast<int64_t>(std::floor(static_cast<float>(real)));
    const std::array<T, 4> w = cubic_coefficients<T>(real - static_cast<T>(i0));
    for (int64_t t = 0; t < 4; ++t) {
      a.index[t].push_back(std::clamp<int64_t>(i0 - 1 + t, 0, in - 1));
      a.weight[t].push_back(w[t]);
    }
  }
  return a;
}

std::vector<int64_t> spatial(const TensorType& t, int64_t nd) {
  return {t.dims.end() - nd, t.dims.end()};
}

AxisIndices nearest_indices(const graph::Attrs& attrs, const TensorType& in, const TensorType& out,
                            bool f64) {
  const int64_t nd = attrs.ints.at(0);
  const bool exact = attrs.ints.size() > 1 && attrs.ints[1] != 0;
  const auto in_sp = spatial(in, nd), out_sp = spatial(out, nd);
  AxisIndices index;
  for (int64_t i = 0; i < nd; ++i) {
    index.push_back(f64 ? nearest_axis<double>(in_sp[i], out_sp[i], attrs.floats.at(i), exact)
                        : nearest_axis<float>(in_sp[i], out_sp[i], attrs.floats.at(i), exact));
  }
  return index;
}

std::vector<hlo::Value> emit_nearest(hlo::Builder& b, const std::vector<hlo::Value>& in,
                                     const graph::Attrs& attrs,
                                     const std::vector<TensorType>& outs) {
  hlo::Value x = to_type(b, in[0], outs[0].dtype);
  const bool f64 = outs[0].dtype == ElementType::F64;
  return {gather_spatial(b, x, nearest_indices(attrs, x.type, outs[0], f64))};
}

std::vector<hlo::Value> emit_nearest_backward(hlo::Builder& b, const std::vector<hlo::Value>& in,
                                              const graph::Attrs& attrs,
                                              const std::vector<TensorType>& outs) {
  const TensorType& out = outs[0];
  const ElementType ct = compute_type(out.dtype);
  hlo::Value g = to_type(b, in[0], ct);
  TensorType acc{ct, out.dims};
  hlo::Value r = scatter_add_spatial(
      b, acc, {nearest_indices(attrs, out, g.type, out.dtype == ElementType::F64)}, {g});
  return {to_type(b, r, out.dtype)};
}

std::vector<LinearAxis> linear_axes(const graph::Attrs& attrs, const TensorType& in,
                                    const TensorType& out, bool f64) {
  const int64_t nd = attrs.ints.at(0);
  const bool align = attrs.ints.at(1) != 0;
  const bool cubic = attrs.ints.size() > 2 && attrs.ints[2] != 0;
  const auto in_sp = spatial(in, nd), out_sp = spatial(out, nd);
  std::vector<LinearAxis> axes;
  for (int64_t i = 0; i < nd; ++i) {
    const double scale = attrs.floats.at(i);
    axes.push_back(cubic ? (f64 ? cubic_axis<double>(in_sp[i], out_sp[i], scale, align)
                                : cubic_axis<float>(in_sp[i], out_sp[i], scale, align))
                         : (f64 ? linear_axis<double>(in_sp[i], out_sp[i], scale, align)
                                : linear_axis<float>(in_sp[i], out_sp[i], scale, align)));
  }
  return axes;
}

// Weight of tap t along `axis`, broadcast to `dims`.
hlo::Value axis_weight(hlo::Builder& b, const LinearAxis& a, size_t t, int64_t axis,
                       const TensorType& type) {
  return b.broadcast_in_dim(vector_constant(b, a.weight[t], type.dtype), type.dims, {axis});
}

// Nested as PyTorch does: the last axis interpolates first, each axis as w0 * v0 + w1 * v1 + ...
hlo::Value interpolate(hlo::Builder& b, hlo::Value x, const std::vector<LinearAxis>& axes,
                       const TensorType& out, AxisIndices& taps) {
  const size_t axis = taps.size();
  if (axis == axes.size()) return gather_spatial(b, x, taps);
  const int64_t dim = out.rank() - axes.size() + axis;
  std::optional<hlo::Value> sum;
  for (size_t t = 0; t < axes[axis].index.size(); ++t) {
    taps.push_back(axes[axis].index[t]);
    hlo::Value v = b.binary("multiply", interpolate(b, x, axes, out, taps),
                            axis_weight(b, axes[axis], t, dim, out));
    taps.pop_back();
    sum = sum ? b.binary("add", *sum, v) : v;
  }
  return *sum;
}

std::vector<hlo::Value> emit_linear(hlo::Builder& b, const std::vector<hlo::Value>& in,
                                    const graph::Attrs& attrs,
                                    const std::vector<TensorType>& outs) {
  const ElementType ct = compute_type(outs[0].dtype);
  hlo::Value x = to_type(b, in[0], ct);
  TensorType out{ct, outs[0].dims};
  const auto axes = linear_axes(attrs, x.type, out, ct == ElementType::F64);
  AxisIndices taps;
  return {to_type(b, interpolate(b, x, axes, out, taps), outs[0].dtype)};
}

std::vector<hlo::Value> emit_linear_backward(hlo::Builder& b, const std::vector<hlo::Value>& in,
                                             const graph::Attrs& attrs,
                                             const std::vector<TensorType>& outs) {
  const ElementType ct = compute_type(outs[0].dtype);
  hlo::Value g = to_type(b, in[0], ct);
  TensorType acc{ct, outs[0].dims};
  const auto axes = linear_axes(attrs, acc, g.type, ct == ElementType::F64);
  const int64_t nd = axes.size(), lead = g.type.rank() - nd;
  std::vector<AxisIndices> index;
  std::vector<hlo::Value> updates;
  int64_t combos = 1;
  for (const LinearAxis& a : axes) combos *= static_cast<int64_t>(a.index.size());
  for (int64_t combo = 0; combo < combos; ++combo) {
    AxisIndices taps;
    std::optional<hlo::Value> weight;
    for (int64_t i = 0, rest = combo; i < nd; ++i) {  // combo's digits, the last axis fastest
      int64_t radix = 1;
      for (int64_t k = i + 1; k < nd; ++k) radix *= static_cast<int64_t>(axes[k].index.size());
      const int64_t t = rest / radix;
      rest %= radix;
      taps.push_back(axes[i].index[t]);
      hlo::Value w = axis_weight(b, axes[i], t, lead + i, g.type);
      weight = weight ? b.binary("multiply", *weight, w) : w;
    }
    index.push_back(taps);
    updates.push_back(b.binary("multiply", *weight, g));
  }
  return {to_type(b, scatter_add_spatial(b, acc, index, updates), outs[0].dtype)};
}

}  // namespace

const graph::OpDef kUpsampleNearest{"upsample_nearest", emit_nearest};
const graph::OpDef kUpsampleNearestBackward{"upsample_nearest_backward", emit_nearest_backward};
const graph::OpDef kUpsampleLinear{"upsample_linear", emit_linear};
const graph::OpDef kUpsampleLinearBackward{"upsample_linear_backward", emit_linear_backward};

}  // namespace torch_pjrt::lowering
