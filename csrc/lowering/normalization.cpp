// Normalization lowerings: batch, layer, group and RMS norm with their backward passes.
#include "lowering/normalization.h"

#include "lowering/common.h"

namespace torch_pjrt::lowering {
namespace {

using hlo::ElementType;
using hlo::Value;
using Dims = std::vector<int64_t>;

int64_t product(const Dims& dims, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t i = begin; i < end; ++i) p *= dims[i];
  return p;
}

Value add(hlo::Builder& b, Value x, Value y) { return b.binary("add", x, y); }
Value sub(hlo::Builder& b, Value x, Value y) { return b.binary("subtract", x, y); }
Value mul(hlo::Builder& b, Value x, Value y) { return b.binary("multiply", x, y); }
// x (any dims) times or plus a constant.
Value scale(hlo::Builder& b, Value x, double c) { return mul(b, x, b.splat(c, x.type)); }
Value shift(hlo::Builder& b, Value x, double c) { return add(b, x, b.splat(c, x.type)); }

// `v` converted to `t` and reshaped to `dims`.
Value shaped(hlo::Builder& b, Value v, ElementType t, const Dims& dims) {
  v = to_type(b, v, t);
  return v.type.dims == dims ? v : b.reshape(v, dims);
}
Value as_out(hlo::Builder& b, Value v, const hlo::TensorType& out) {
  return shaped(b, v, out.dtype, out.dims);
}

// Per-row statistics of a [R, D] value: mean and rstd [R], and the normalized rows.
struct RowStats {
  Value mean, rstd, xhat;
};
RowStats row_stats(hlo::Builder& b, Value x2, double eps) {
  const Dims& dims = x2.type.dims;
  const double d = static_cast<double>(dims[1]);
  Value mean = scale(b, reduce_sum(b, x2, {1}), 1.0 / d);
  Value diff = sub(b, x2, b.broadcast_in_dim(mean, dims, {0}));
  Value var = scale(b, reduce_sum(b, mul(b, diff, diff), {1}), 1.0 / d);
  Value rstd = b.unary("rsqrt", shift(b, var, eps));
  return {mean, rstd, mul(b, diff, b.broadcast_in_dim(rstd, dims, {0}))};
}

// Gradient of rows normalized to zero mean and unit variance, given the gradient `gx` with
// respect to the normalized rows `xhat` [R, D] and their rstd [R].
Value row_norm_backward(hlo::Builder& b, Value gx, Value xhat, Value rstd) {
  const Dims& dims = gx.type.dims;
  const double inv_d = 1.0 / static_cast<double>(dims[1]);
  Value mean_gx = b.broadcast_in_dim(scale(b, reduce_sum(b, gx, {1}), inv_d), dims, {0});
  Value mean_gxx =
      b.broadcast_in_dim(scale(b, reduce_sum(b, mul(b, gx, xhat), {1}), inv_d), dims, {0});
  Value centered = sub(b, sub(b, gx, mean_gx), mul(b, xhat, mean_gxx));
  return mul(b, centered, b.broadcast_in_dim(rstd, dims, {0}));
}

// The input [N, C, ...] as [N, C, S] in the compute type, and a broadcast of [C] values over it.
Value channels_view(hlo::Builder& b, Value x, ElementType ct) {
  const Dims& d = x.type.dims;
  return shaped(b, x, ct, {d[0], d[1], product(d, 2, d.size())});
}
Value per_channel(hlo::Builder& b, Value v, const Dims& dims3) {
  return b.broadcast_in_dim(v, dims3, {1});
}

std::vector<Value> emit_batch_norm_train(hlo::Builder& b, const std::vector<Value>& in,
                                         const graph::Attrs& attrs,
                                         const std::vector<hlo::TensorType>& outs) {
  const bool has_w = attrs.ints[0], has_b = attrs.ints[1], has_running = attrs.ints[2];
  const double eps = attrs.floats[0], momentum = attrs.floats[1];
  const ElementType ct = opmath_type(in[0].type.dtype);
  Value x = channels_view(b, in[0], ct);
  const Dims dims = x.type.dims;
  const double n = static_cast<double>(dims[0] * dims[2]);
  Value mean = scale(b, reduce_sum(b, x, {0, 2}), 1.0 / n);
  Value diff = sub(b, x, per_channel(b, mean, dims));
  Value ssq = reduce_sum(b, mul(b, diff, diff), {0, 2});
  Value invstd = b.unary("rsqrt", shift(b, scale(b, ssq, 1.0 / n), eps));
  Value y = mul(b, diff, per_channel(b, invstd, dims));
  size_t next = 1;
  if (has_w) y = mul(b, y, per_channel(b, to_type(b, in[next++], ct), dims));
  if (has_b) y = add(b, y, per_channel(b, to_type(b, in[next++], ct), dims));
  std::vector<Value> results{as_out(b, y, outs[0]), as_out(b, mean, outs[1]),
                             as_out(b, invstd, outs[2])};
  if (has_running) {
    // running = (1 - momentum) * running + momentum * batch statistic (unbiased variance).
    Value unbiased = b.binary("divide", ssq, b.splat(n - 1, ssq.type));
    for (Value stat : {mean, unbiased}) {
      Value running = in[next++];
      const ElementType rt = opmath_type(running.type.dtype);
      Value updated = add(b, scale(b, to_type(b, running, rt), 1.0 - momentum),
                          scale(b, to_type(b, stat, rt), momentum));
      results.push_back(as_out(b, updated, outs[results.size()]));
    }
  }
  return results;
}

std::vector<Value> emit_batch_norm_eval(hlo::Builder& b, const std::vector<Value>& in,
                                        const graph::Attrs& attrs,
                                        const std::vector<hlo::TensorType>& outs) {
  const ElementType ct = opmath_type(in[0].type.dtype);
  Value x = channels_view(b, in[0], ct);
  const Dims dims = x.type.dims;
  Value invstd = b.unary("rsqrt", shift(b, to_type(b, in[2], ct), attrs.floats[0]));
  Value y =
      mul(b, sub(b, x, per_channel(b, to_type(b, in[1], ct), dims)), per_channel(b, invstd, dims));
  size_t next = 3;
  if (attrs.ints[0]) y = mul(b, y, per_channel(b, to_type(b, in[next++], ct), dims));
  if (attrs.ints[1]) y = add(b, y, per_channel(b, to_type(b, in[next++], ct), dims));
  return {as_out(b, y, outs[0])};
}

std::vector<Value> emit_batch_norm_backward(hlo::Builder& b, const std::vector<Value>& in,
                                            const graph::Attrs& attrs,
                                            const std::vector<hlo::TensorType>& outs) {
  const bool has_w = attrs.ints[0], train = attrs.ints[1];
  const ElementType ct = opmath_type(in[1].type.dtype);
  Value g = channels_view(b, in[0], ct);
  Value x = channels_view(b, in[1], ct);
  const Dims dims = x.type.dims;
  const double n = static_cast<double>(dims[0] * dims[2]);
  Value mean = to_type(b, in[2], ct);
  Value invstd = to_type(b, in[3], ct);
  if (!train) invstd = b.unary("rsqrt", shift(b, invstd, attrs.floats[0]));
  Value xhat = mul(b, sub(b, x, per_channel(b, mean, dims)), per_channel(b, invstd, dims));
  Value sum_g = reduce_sum(b, g, {0, 2});
  Value sum_gx = reduce_sum(b, mul(b, g, xhat), {0, 2});
  Value factor = has_w ? mul(b, invstd, to_type(b, in[4], ct)) : invstd;
  Value dx = g;
  if (train) {
    dx = sub(b, sub(b, g, per_channel(b, scale(b, sum_g, 1.0 / n), dims)),
             mul(b, xhat, per_channel(b, scale(b, sum_gx, 1.0 / n), dims)));
  }
  dx = mul(b, dx, per_channel(b, factor, dims));
  return {as_out(b, dx, outs[0]), as_out(b, sum_gx, outs[1]), as_out(b, sum_g, outs[2])};
}

// The input as [M, D] rows in the compute type, M the product of the dims before `axis`.
Value rows(hlo::Builder& b, Value x, int64_t axis, ElementType ct) {
  const Dims& d = x.type.dims;
  return shaped(b, x, ct, {product(d, 0, axis), product(d, axis, d.size())});
}
// A [D] broadcast of the normalized-shape operand `v` over [M, D].
Value per_column(hlo::Builder& b, Value v, const Dims& dims2, ElementType ct) {
  return b.broadcast_in_dim(shaped(b, v, ct, {dims2[1]}), dims2, {1});
}

std::vector<Value> emit_layer_norm(hlo::Builder& b, const std::vector<Value>& in,
                                   const graph::Attrs& attrs,
                                   const std::vector<hlo::TensorType>& outs) {
  const ElementType ct = opmath_type(in[0].type.dtype);
  Value x = rows(b, in[0], attrs.ints[0], ct);
  RowStats s = row_stats(b, x, attrs.floats[0]);
  Value y = s.xhat;
  size_t next = 1;
  if (attrs.ints[1]) y = mul(b, y, per_column(b, in[next++], x.type.dims, ct));
  if (attrs.ints[2]) y = add(b, y, per_column(b, in[next++], x.type.dims, ct));
  return {as_out(b, y, outs[0]), as_out(b, s.mean, outs[1]), as_out(b, s.rstd, outs[2])};
}

std::vector<Value> emit_layer_norm_backward(hlo::Builder& b, const std::vector<Value>& in,
                                            const graph::Attrs& attrs,
                                            const std::vector<hlo::TensorType>& outs) {
  const int64_t axis = attrs.ints[0];
  const ElementType ct = opmath_type(in[1].type.dtype);
  Value g = rows(b, in[0], axis, ct);
  Value x = rows(b, in[1], axis, ct);
  const Dims dims = x.type.dims;
  Value rstd = shaped(b, in[3], ct, {dims[0]});
  Value mean = shaped(b, in[2], ct, {dims[0]});
  Value xhat =
      mul(b, sub(b, x, b.broadcast_in_dim(mean, dims, {0})), b.broadcast_in_dim(rstd, dims, {0}));
  Value gx = attrs.ints[1] ? mul(b, g, per_column(b, in[4], dims, ct)) : g;
  return {as_out(b, row_norm_backward(b, gx, xhat, rstd), outs[0]),
          as_out(b, reduce_sum(b, mul(b, g, xhat), {0}), outs[1]),
          as_out(b, reduce_sum(b, g, {0}), outs[2])};
}

// Group norm views: [N * groups, C / groups * S] rows for the statistics, [N, C, S] for the
// per-channel affine parameters.
Value group_rows(hlo::Builder& b, Value x3, int64_t groups) {
  const Dims& d = x3.type.dims;
  return b.reshape(x3, {d[0] * groups, d[1] / groups * d[2]});
}

std::vector<Value> emit_group_norm(hlo::Builder& b, const std::vector<Value>& in,
                                   const graph::Attrs& attrs,
                                   const std::vector<hlo::TensorType>& outs) {
  const ElementType ct = opmath_type(in[0].type.dtype);
  Value x = channels_view(b, in[0], ct);
  const Dims dims = x.type.dims;
  RowStats s = row_stats(b, group_rows(b, x, attrs.ints[0]), attrs.floats[0]);
  Value y = b.reshape(s.xhat, dims);
  size_t next = 1;
  if (attrs.ints[1]) y = mul(b, y, per_channel(b, to_type(b, in[next++], ct), dims));
  if (attrs.ints[2]) y = add(b, y, per_channel(b, to_type(b, in[next++], ct), dims));
  return {as_out(b, y, outs[0]), as_out(b, s.mean, outs[1]), as_out(b, s.rstd, outs[2])};
}

std::vector<Value> emit_group_norm_backward(hlo::Builder& b, const std::vector<Value>& in,
                                            const graph::Attrs& attrs,
                                            const std::vector<hlo::TensorType>& outs) {
  const int64_t groups = attrs.ints[0];
  const ElementType ct = opmath_type(in[1].type.dtype);
  Value g = channels_view(b, in[0], ct);
  Value x = channels_view(b, in[1], ct);
  const Dims dims = x.type.dims;
  Value x2 = group_rows(b, x, groups);
  const Dims dims2 = x2.type.dims;
  Value mean = shaped(b, in[2], ct, {dims2[0]});
  Value rstd = shaped(b, in[3], ct, {dims2[0]});
  Value xhat2 = mul(b, sub(b, x2, b.broadcast_in_dim(mean, dims2, {0})),
                    b.broadcast_in_dim(rstd, dims2, {0}));
  Value xhat = b.reshape(xhat2, dims);
  Value gx = attrs.ints[1] ? mul(b, g, per_channel(b, to_type(b, in[4], ct), dims)) : g;
  Value dx = row_norm_backward(b, group_rows(b, gx, groups), xhat2, rstd);
  return {as_out(b, dx, outs[0]), as_out(b, reduce_sum(b, mul(b, g, xhat), {0, 2}), outs[1]),
          as_out(b, reduce_sum(b, g, {0, 2}), outs[2])};
}

std::vector<Value> emit_rms_norm(hlo::Builder& b, const std::vector<Value>& in,
                                 const graph::Attrs& attrs,
                                 const std::vector<hlo::TensorType>& outs) {
  const ElementType ct = opmath_type(in[0].type.dtype);
  Value x = rows(b, in[0], attrs.ints[0], ct);
  const Dims dims = x.type.dims;
  Value ms = scale(b, reduce_sum(b, mul(b, x, x), {1}), 1.0 / static_cast<double>(dims[1]));
  Value rstd = b.unary("rsqrt", shift(b, ms, attrs.floats[0]));
  Value y = mul(b, x, b.broadcast_in_dim(rstd, dims, {0}));
  if (attrs.ints[1]) y = mul(b, y, per_column(b, in[1], dims, ct));
  return {as_out(b, y, outs[0]), as_out(b, rstd, outs[1])};
}

std::vector<Value> emit_rms_norm_backward(hlo::Builder& b, const std::vector<Value>& in,
                                          const graph::Attrs& attrs,
                                          const std::vector<hlo::TensorType>& outs) {
  const int64_t axis = attrs.ints[0];
  const ElementType ct = opmath_type(in[1].type.dtype);
  Value g = rows(b, in[0], axis, ct);
  Value x = rows(b, in[1], axis, ct);
  const Dims dims = x.type.dims;
  Value rstd = shaped(b, in[2], ct, {dims[0]});
  Value xhat = mul(b, x, b.broadcast_in_dim(rstd, dims, {0}));
  Value gx = attrs.ints[1] ? mul(b, g, per_column(b, in[3], dims, ct)) : g;
  Value mean_gxx =
      scale(b, reduce_sum(b, mul(b, gx, xhat), {1}), 1.0 / static_cast<double>(dims[1]));
  Value dx = mul(b, sub(b, gx, mul(b, xhat, b.broadcast_in_dim(mean_gxx, dims, {0}))),
                 b.broadcast_in_dim(rstd, dims, {0}));
  return {as_out(b, dx, outs[0]), as_out(b, reduce_sum(b, mul(b, g, xhat), {0}), outs[1])};
}

}  // namespace

const graph::OpDef kBatchNormTrain{"batch_norm_train", emit_batch_norm_train};
const graph::OpDef kBatchNormEval{"batch_norm_eval", emit_batch_norm_eval};
const graph::OpDef kBatchNormBackward{"batch_norm_backward", emit_batch_norm_backward};
const graph::OpDef kLayerNorm{"layer_norm", emit_layer_norm};
const graph::OpDef kLayerNormBackward{"layer_norm_backward", emit_layer_norm_backward};
const graph::OpDef kGroupNorm{"group_norm", emit_group_norm};
const graph::OpDef kGroupNormBackward{"group_norm_backward", emit_group_norm_backward};
const graph::OpDef kRmsNorm{"rms_norm", emit_rms_norm};
const graph::OpDef kRmsNormBackward{"rms_norm_backward", emit_rms_norm_backward};

}  // namespace torch_pjrt::lowering
