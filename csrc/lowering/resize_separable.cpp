// Separable bilinear/bicubic resampling, one spatial axis at a time (the last first), as PyTorch's
// CPU kernels for uint8 (int16 fixed-point weights, each pass rounded and clamped to uint8) and for
// antialiased float inputs. Each pass is a product with an [in, out] weight matrix.
#include <algorithm>
#include <cmath>
#include <vector>

#include "lowering/common.h"
#include "lowering/pooling.h"
#include "lowering/resize.h"

namespace torch_pjrt::lowering {
namespace {

using hlo::ElementType;
using hlo::TensorType;

// PIL's filters as PyTorch writes them: triangle, or cubic convolution with coefficient `a`.
template <typename T>
T filter(T x, bool cubic, T a) {
  x = std::abs(x);
  if (!cubic) return x < 1 ? 1 - x : 0;
  if (x < 1) return ((a + 2) * x - (a + 3)) * x * x + 1;
  if (x < 2) return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
  return 0;
}

// Weights [in * out] (row-major, input index first) of one axis, computed in T as the CPU's
// _compute_index_ranges_weights: a window of taps around each output's centre, normalized.
template <typename T>
std::vector<double> axis_weights(int64_t in, int64_t out, double scale_attr, bool align, bool cubic,
                                 bool antialias) {
  T scale;
  if (align) {
    scale = out > 1 ? static_cast<T>(in - 1) / static_cast<T>(out - 1) : T(0);
  } else {
    scale = scale_attr > 0 ? static_cast<T>(1.0 / scale_attr)
                           : static_cast<T>(in) / static_cast<T>(out);
  }
  const T interp = cubic ? 4 : 2;
  const T support = antialias && scale >= 1 ? interp * T(0.5) * scale : interp * T(0.5);
  const int64_t max_taps =
      antialias ? static_cast<int64_t>(std::ceil(support)) * 2 + 1 : static_cast<int64_t>(interp);
  const double delta = align && !antialias ? 0.5 : 0.0;
  const T invscale = antialias && scale >= 1 ? T(1) / scale : T(1);
  // Keys' a = -0.5 with antialiasing, else PyTorch's -0.75 (closest to its float results).
  const T a = antialias ? T(-0.5) : T(-0.75);
  std::vector<double> w(in * out, 0.0);
  std::vector<T> taps(max_taps);
  // Without antialiasing, bicubic keeps four taps from floor(centre - 1.5), clamped to the input
  // (the border repeats), as the CPU's float kernel does.
  const bool clamped = cubic && !antialias;
  for (int64_t o = 0; o < out; ++o) {
    const T center = static_cast<T>(scale * (o + 0.5 - delta) + delta);
    int64_t xmin, xsize;
    if (clamped) {
      xmin = static_cast<int64_t>(std::floor(center - support + 0.5));
      xsize = max_taps;
    } else {
      xmin = std::max(static_cast<int64_t>(center - support + 0.5), int64_t{0});
      xsize = std::clamp(std::min(static_cast<int64_t>(center + support + 0.5), in) - xmin,
                         int64_t{0}, max_taps);
    }
    T total = 0;
    for (int64_t j = 0; j < xsize; ++j) {
      taps[j] = filter<T>(static_cast<T>((j + xmin - center + 0.5) * invscale), cubic, a);
      total += taps[j];
    }
    for (int64_t j = 0; j < xsize; ++j) {
      const int64_t i = std::clamp<int64_t>(xmin + j, 0, in - 1);
      w[i * out + o] += static_cast<double>(total != 0 ? taps[j] / total : taps[j]);
    }
  }
  return w;
}

// The CPU's int16 weights: the most fractional bits that keep the largest weight under 2^15,
// each weight rounded half away from zero. Returns the number of bits.
int quantize(std::vector<double>& w) {
  const double wt_max = *std::max_element(w.begin(), w.end());
  int bits = 0;
  for (; bits < 22; ++bits) {
    if (static_cast<int>(0.5 + wt_max * (1 << (bits + 1))) >= (1 << 15)) break;
  }
  for (double& v : w) {
    const double s = v * (1 << bits);
    v = static_cast<double>(s < 0 ? static_cast<int>(-0.5 + s) : static_cast<int>(0.5 + s));
  }
  return bits;
}

// x resampled along `dim` by the matrix `w` ([size of dim, out], row-major) of x's type, the
// result's axis in place.
hlo::Value apply_axis(hlo::Builder& b, hlo::Value x, int64_t dim, const std::vector<double>& w,
                      int64_t out) {
  const int64_t in = x.type.dims[dim], rank = x.type.rank();
  hlo::Value m = b.reshape(vector_constant(b, w, x.type.dtype), {in, out});
  hlo::Value r = b.dot_general(x, m, {}, {}, {dim}, {0}, hlo::Precision::kHighest);
  std::vector<int64_t> perm;  // dot_general puts the new axis last
  for (int64_t i = 0; i < rank - 1; ++i) {
    if (i == dim) perm.push_back(rank - 1);
    perm.push_back(i);
  }
  if (dim == rank - 1) perm.push_back(rank - 1);
  return b.transpose(r, perm);
}

std::vector<double> float_weights(ElementType ct, int64_t in, int64_t out, double scale, bool align,
                                  bool cubic, bool antialias) {
  return ct == ElementType::F64 ? axis_weights<double>(in, out, scale, align, cubic, antialias)
                                : axis_weights<float>(in, out, scale, align, cubic, antialias);
}

std::vector<hlo::Value> emit_separable(hlo::Builder& b, const std::vector<hlo::Value>& in,
                                       const graph::Attrs& attrs,
                                       const std::vector<TensorType>& outs) {
  const int64_t nd = attrs.ints.at(0);
  const bool align = attrs.ints.at(1) != 0, cubic = attrs.ints.at(2) != 0;
  const bool antialias = attrs.ints.at(3) != 0;
  const TensorType& out = outs[0];
  const bool u8 = out.dtype == ElementType::U8;
  const ElementType ct = u8 ? ElementType::I32 : opmath_type(out.dtype);
  hlo::Value x = in[0];
  for (int64_t i = nd - 1; i >= 0; --i) {  // an axis whose size stays is not resampled
    const int64_t dim = out.rank() - nd + i;
    const int64_t n_in = x.type.dims[dim], n_out = out.dims[dim];
    if (n_in == n_out) continue;
    const double scale = attrs.floats.at(i);
    // uint8 weights are computed in double before quantize(), as the CPU's integer kernel does.
    std::vector<double> w =
        float_weights(u8 ? ElementType::F64 : ct, n_in, n_out, scale, align, cubic, antialias);
    const int bits = u8 ? quantize(w) : 0;
    hlo::Value v = apply_axis(b, to_type(b, x, ct), dim, w, n_out);
    if (u8) {  // (sum + half) >> bits, clamped to [0, 255]
      v = b.binary("add", v, full(b, 1 << (bits - 1), ct, v.type.dims));
      v = b.binary("shift_right_arithmetic", v, full(b, bits, ct, v.type.dims));
      v = b.binary("minimum", b.binary("maximum", v, full(b, 0, ct, v.type.dims)),
                   full(b, 255, ct, v.type.dims));
    }
    x = to_type(b, v, out.dtype);
  }
  return {to_type(b, x, out.dtype)};
}

// The gradient (float types): each axis's transposed matrix, the first axis first.
std::vector<hlo::Value> emit_separable_backward(hlo::Builder& b, const std::vector<hlo::Value>& in,
                                                const graph::Attrs& attrs,
                                                const std::vector<TensorType>& outs) {
  const int64_t nd = attrs.ints.at(0);
  const bool align = attrs.ints.at(1) != 0, cubic = attrs.ints.at(2) != 0;
  const bool antialias = attrs.ints.at(3) != 0;
  const TensorType& out = outs[0];  // the forward's input
  const ElementType ct = opmath_type(out.dtype);
  hlo::Value g = in[0];
  for (int64_t i = 0; i < nd; ++i) {
    const int64_t dim = out.rank() - nd + i;
    const int64_t n_in = out.dims[dim], n_out = g.type.dims[dim];
    if (n_in == n_out) continue;
    const std::vector<double> w =
        float_weights(ct, n_in, n_out, attrs.floats.at(i), align, cubic, antialias);
    std::vector<double> wt(w.size());
    for (int64_t r = 0; r < n_in; ++r) {
      for (int64_t c = 0; c < n_out; ++c) wt[c * n_in + r] = w[r * n_out + c];
    }
    g = to_type(b, apply_axis(b, to_type(b, g, ct), dim, wt, n_in), out.dtype);
  }
  return {to_type(b, g, out.dtype)};
}

}  // namespace

const graph::OpDef kUpsampleSeparable{"upsample_separable", emit_separable};
const graph::OpDef kUpsampleSeparableBackward{"upsample_separable_backward",
                                              emit_separable_backward};

}  // namespace torch_pjrt::lowering
