// Convolutions as stablehlo.convolution: forward, transposed, and the input/weight/bias gradients.
#include "lowering/convolution.h"

#include <array>
#include <string>

#include "lowering/common.h"

namespace torch_pjrt::lowering {
namespace {

struct Params {
  bool transposed;
  int64_t groups;
  std::vector<int64_t> stride, padding, dilation;
  std::array<bool, 3> mask{true, false, false};
};

Params params(const graph::Attrs& attrs, int64_t nd) {
  const auto& v = attrs.ints;
  Params p{v.at(0) != 0, v.at(1), {}, {}, {}};
  for (int64_t i = 0; i < nd; ++i) {
    p.stride.push_back(v.at(2 + i));
    p.padding.push_back(v.at(2 + nd + i));
    p.dilation.push_back(v.at(2 + 2 * nd + i));
  }
  if (v.size() == static_cast<size_t>(2 + 3 * nd + 3)) {
    for (int i = 0; i < 3; ++i) p.mask[i] = v[2 + 3 * nd + i] != 0;
  }
  return p;
}

// `[x, y, 0, 1, ...]`: the layout of one convolution operand with two leading named dimensions.
std::string layout(const char* first, const char* second, int64_t nd) {
  std::string s = std::string("[") + first + ", " + second;
  for (int64_t i = 0; i < nd; ++i) s += ", " + std::to_string(i);
  return s + "]";
}

struct Window {
  std::vector<int64_t> strides, lhs_dilation, rhs_dilation, pad_lo, pad_hi;
};

// High padding making a convolution of `in` elements (after lhs dilation `lhs_dil`, low padding
// `lo`) with a window of `k` taps dilated by `rhs_dil` and stride `s` produce exactly `out`
// elements; elements past the last window are cut off by a smaller (possibly negative) padding.
int64_t pad_hi(int64_t in, int64_t lhs_dil, int64_t lo, int64_t k, int64_t rhs_dil, int64_t s,
               int64_t out) {
  return (out - 1) * s + (k - 1) * rhs_dil + 1 - ((in - 1) * lhs_dil + 1) - lo;
}

hlo::Value convolution(hlo::Builder& b, hlo::Value lhs, hlo::Value rhs, const Window& w,
                       const std::string& numbers, int64_t feature_groups, int64_t batch_groups,
                       const hlo::TensorType& out) {
  std::string padding;
  for (size_t i = 0; i < w.pad_lo.size(); ++i) {
    padding +=
        (i ? ", [" : "[") + std::to_string(w.pad_lo[i]) + ", " + std::to_string(w.pad_hi[i]) + "]";
  }
  const std::string attrs = "batch_group_count = " + std::to_string(batch_groups) +
                            " : i64, dimension_numbers = #stablehlo.conv<" + numbers +
                            ">, feature_group_count = " + std::to_string(feature_groups) +
                            " : i64, lhs_dilation = " + hlo::i64_array(w.lhs_dilation) +
                            ", padding = dense<[" + padding + "]> : tensor<" +
                            std::to_string(w.pad_lo.size()) + "x2xi64>, " + hlo::kHighestPrecision +
                            ", rhs_dilation = " + hlo::i64_array(w.rhs_dilation) +
                            ", window_strides = " + hlo::i64_array(w.strides);
  return b.op("convolution", {lhs, rhs}, {out}, attrs)[0];
}

// Weight [A, B/g, K...] of a convolution from B to A channels turned into the weight
// [B, A/g, K...] of the convolution that runs it backwards: groups kept apart, the two channel
// dimensions swapped within each group, and the window reversed.
hlo::Value flip(hlo::Builder& b, hlo::Value w, int64_t groups) {
  const auto& d = w.type.dims;
  const int64_t nd = w.type.rank() - 2;
  std::vector<int64_t> split{groups, d[0] / groups, d[1]}, perm{0, 2, 1},
      merged{d[1] * groups, d[0] / groups};
  std::vector<int64_t> spatial;
  for (int64_t i = 0; i < nd; ++i) {
    split.push_back(d[2 + i]);
    perm.push_back(3 + i);
    merged.push_back(d[2 + i]);
    spatial.push_back(2 + i);
  }
  hlo::Value t = groups == 1 ? b.transpose(w,
                                           [&] {
                                             std::vector<int64_t> p{1, 0};
                                             for (int64_t s : spatial) p.push_back(s);
                                             return p;
                                           }())
                             : b.reshape(b.transpose(b.reshape(w, split), perm), merged);
  return b.op("reverse", {t}, {t.type}, "dimensions = " + hlo::i64_array(spatial))[0];
}

// Input [N, C, S...] (any channels) convolved as a regular convolution with weight [O, C/g, K...].
hlo::Value forward(hlo::Builder& b, hlo::Value x, hlo::Value w, const Params& p,
                   const hlo::TensorType& out) {
  const int64_t nd = x.type.rank() - 2;
  Window win;
  for (int64_t i = 0; i < nd; ++i) {
    const int64_t k = w.type.dims[2 + i];
    win.strides.push_back(p.stride[i]);
    win.lhs_dilation.push_back(1);
    win.rhs_dilation.push_back(p.dilation[i]);
    win.pad_lo.push_back(p.padding[i]);
    win.pad_hi.push_back(pad_hi(x.type.dims[2 + i], 1, p.padding[i], k, p.dilation[i], p.stride[i],
                                out.dims[2 + i]));
  }
  return convolution(
      b, x, w, win, layout("b", "f", nd) + "x" + layout("o", "i", nd) + "->" + layout("b", "f", nd),
      p.groups, 1, out);
}

// The transpose of the regular convolution with weight `w` [C, O/g, K...] (from O to C channels),
// applied to `y` [N, C, S...]: the gradient of that convolution's input, which is also what a
// transposed convolution computes.
hlo::Value backward_input(hlo::Builder& b, hlo::Value y, hlo::Value w, const Params& p,
                          const hlo::TensorType& out) {
  const int64_t nd = y.type.rank() - 2;
  Window win;
  for (int64_t i = 0; i < nd; ++i) {
    const int64_t k = w.type.dims[2 + i];
    const int64_t lo = p.dilation[i] * (k - 1) - p.padding[i];
    win.strides.push_back(1);
    win.lhs_dilation.push_back(p.stride[i]);
    win.rhs_dilation.push_back(p.dilation[i]);
    win.pad_lo.push_back(lo);
    win.pad_hi.push_back(
        pad_hi(y.type.dims[2 + i], p.stride[i], lo, k, p.dilation[i], 1, out.dims[2 + i]));
  }
  return convolution(
      b, y, flip(b, w, p.groups), win,
      layout("b", "f", nd) + "x" + layout("o", "i", nd) + "->" + layout("b", "f", nd), p.groups, 1,
      out);
}

// Gradient of the weight [O, C/g, K...] of the regular convolution taking `x` [N, C, S...] to
// `gy` [N, O, T...]: a convolution over the batch, with the roles of stride and dilation swapped.
hlo::Value backward_weight(hlo::Builder& b, hlo::Value x, hlo::Value gy, const Params& p,
                           const hlo::TensorType& out) {
  const int64_t nd = x.type.rank() - 2;
  Window win;
  for (int64_t i = 0; i < nd; ++i) {
    const int64_t t = gy.type.dims[2 + i];
    win.strides.push_back(p.dilation[i]);
    win.lhs_dilation.push_back(1);
    win.rhs_dilation.push_back(p.stride[i]);
    win.pad_lo.push_back(p.padding[i]);
    win.pad_hi.push_back(pad_hi(x.type.dims[2 + i], 1, p.padding[i], t, p.stride[i], p.dilation[i],
                                out.dims[2 + i]));
  }
  return convolution(
      b, x, gy, win,
      layout("f", "b", nd) + "x" + layout("i", "o", nd) + "->" + layout("f", "b", nd), 1, p.groups,
      out);
}

std::vector<hlo::Value> emit_convolution(hlo::Builder& b, const std::vector<hlo::Value>& in,
                                         const graph::Attrs& attrs,
                                         const std::vector<hlo::TensorType>& outs) {
  const hlo::TensorType& out = outs[0];
  const Params p = params(attrs, out.rank() - 2);
  hlo::Value x = to_type(b, in[0], out.dtype), w = to_type(b, in[1], out.dtype);
  hlo::Value y = p.transposed ? backward_input(b, x, w, p, out) : forward(b, x, w, p, out);
  if (in.size() > 2) {
    y = b.binary("add", y, b.broadcast_in_dim(to_type(b, in[2], out.dtype), out.dims, {1}));
  }
  return {y};
}

std::vector<hlo::Value> emit_convolution_backward(hlo::Builder& b,
                                                  const std::vector<hlo::Value>& in,
                                                  const graph::Attrs& attrs,
                                                  const std::vector<hlo::TensorType>& outs) {
  const hlo::Value gy = in[0], x = in[1], w = in[2];
  const int64_t nd = x.type.rank() - 2;
  const Params p = params(attrs, nd);
  std::vector<hlo::Value> results;
  size_t next = 0;
  if (p.mask[0]) {
    // A transposed convolution's input gradient is the regular convolution of grad_output.
    results.push_back(p.transposed ? forward(b, gy, w, p, outs[next])
                                   : backward_input(b, gy, w, p, outs[next]));
    ++next;
  }
  if (p.mask[1]) {
    // Transposed, the weight maps grad_output's channels to the input's: the regular convolution
    // runs from grad_output (as its input) to the input (as its output).
    results.push_back(p.transposed ? backward_weight(b, gy, x, p, outs[next])
                                   : backward_weight(b, x, gy, p, outs[next]));
    ++next;
  }
  if (p.mask[2]) {
    std::vector<int64_t> dims{0};
    for (int64_t i = 0; i < nd; ++i) dims.push_back(2 + i);
    results.push_back(
        b.reduce(gy, b.splat(0, hlo::TensorType{gy.type.dtype, {}}), dims, hlo::ReduceKind::Sum));
  }
  return results;
}

}  // namespace

const graph::OpDef kConvolution{"convolution", emit_convolution};
const graph::OpDef kConvolutionBackward{"convolution_backward", emit_convolution_backward};

}  // namespace torch_pjrt::lowering
