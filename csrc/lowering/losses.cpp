// Loss lowerings and embedding's gradient. Class selection in nll_loss uses a one-hot comparison
// against an iota rather than a gather: out-of-range targets select nothing.
#include "lowering/losses.h"

#include "lowering/common.h"

namespace torch_pjrt::lowering {
namespace {

using hlo::ElementType;
using hlo::Value;
using Dims = std::vector<int64_t>;

Value add(hlo::Builder& b, Value x, Value y) { return b.binary("add", x, y); }
Value sub(hlo::Builder& b, Value x, Value y) { return b.binary("subtract", x, y); }
Value mul(hlo::Builder& b, Value x, Value y) { return b.binary("multiply", x, y); }
Value div(hlo::Builder& b, Value x, Value y) { return b.binary("divide", x, y); }
Value constant(hlo::Builder& b, double c, Value like) { return b.splat(c, like.type); }
Value zeros_like(hlo::Builder& b, Value like) { return constant(b, 0, like); }

Value sum_all(hlo::Builder& b, Value x) {
  Dims dims;
  for (int64_t d = 0; d < x.type.rank(); ++d) dims.push_back(d);
  return reduce_sum(b, x, dims);
}

Value as_out(hlo::Builder& b, Value v, const hlo::TensorType& out) {
  v = to_type(b, v, out.dtype);
  return v.type.dims == out.dims ? v : b.reshape(v, out.dims);
}

// What nll_loss needs of the target: where it selects a class of the input dims, and the
// weight of each target element (0 where ignored).
struct NllTarget {
  Value onehot;   // bool, input dims
  Value kept;     // bool, target dims: not ignore_index
  Value weight;   // target dims, compute type
  Dims to_input;  // broadcast mapping of target dims into input dims
};
NllTarget nll_target(hlo::Builder& b, const Dims& input_dims, Value target, const Value* weight,
                     const graph::Attrs& attrs, ElementType ct) {
  const int64_t class_dim = attrs.ints[0], ignore_index = attrs.ints[2];
  NllTarget r;
  for (int64_t d = 0; d < static_cast<int64_t>(input_dims.size()); ++d)
    if (d != class_dim) r.to_input.push_back(d);
  target = to_type(b, target, ElementType::I64);
  Value classes = b.iota(hlo::TensorType{ElementType::I64, input_dims}, class_dim);
  r.onehot = b.compare(hlo::Cmp::EQ, classes, b.broadcast_in_dim(target, input_dims, r.to_input));
  Value w = b.splat(1, hlo::TensorType{ct, target.type.dims});
  if (weight) {
    Value wide = b.broadcast_in_dim(to_type(b, *weight, ct), input_dims, {class_dim});
    w = reduce_sum(b, b.select(r.onehot, wide, b.splat(0, wide.type)), {class_dim});
  }
  r.kept = b.compare(hlo::Cmp::NE, target, b.splat(ignore_index, target.type));
  r.weight = b.select(r.kept, w, zeros_like(b, w));
  return r;
}

std::vector<Value> emit_nll_loss(hlo::Builder& b, const std::vector<Value>& in,
                                 const graph::Attrs& attrs,
                                 const std::vector<hlo::TensorType>& outs) {
  const ElementType ct = opmath_type(in[0].type.dtype);
  Value x = to_type(b, in[0], ct);
  NllTarget t = nll_target(b, x.type.dims, in[1], attrs.ints[3] ? &in[2] : nullptr, attrs, ct);
  Value picked = reduce_sum(b, b.select(t.onehot, x, zeros_like(b, x)), {attrs.ints[0]});
  // Ignored elements contribute exactly 0, even where the input is infinite.
  Value loss = b.select(t.kept, b.unary("negate", mul(b, picked, t.weight)), zeros_like(b, picked));
  // Like the CPU kernel, total_weight stays 0 without a reduction.
  Value total_weight =
      attrs.ints[1] == kReduceNone ? b.splat(0, hlo::TensorType{ct, {}}) : sum_all(b, t.weight);
  Value output = loss;
  if (attrs.ints[1] != kReduceNone) output = sum_all(b, loss);
  if (attrs.ints[1] == kReduceMean) output = div(b, output, total_weight);
  return {as_out(b, output, outs[0]), as_out(b, total_weight, outs[1])};
}

std::vector<Value> emit_nll_loss_backward(hlo::Builder& b, const std::vector<Value>& in,
                                          const graph::Attrs& attrs,
                                          const std::vector<hlo::TensorType>& outs) {
  const ElementType ct = opmath_type(outs[0].dtype);
  NllTarget t = nll_target(b, outs[0].dims, in[1], attrs.ints[3] ? &in[3] : nullptr, attrs, ct);
  Value g = to_type(b, in[0], ct);
  if (attrs.ints[1] == kReduceMean) g = div(b, g, to_type(b, in[2], ct));
  if (attrs.ints[1] != kReduceNone) g = b.broadcast_in_dim(g, t.weight.type.dims, {});
  Value coef = b.unary("negate", mul(b, g, t.weight));
  Value wide = b.broadcast_in_dim(coef, outs[0].dims, t.to_input);
  return {as_out(b, b.select(t.onehot, wide, zeros_like(b, wide)), outs[0])};
}

Value reduce_loss(hlo::Builder& b, Value loss, int64_t reduction) {
  if (reduction == kReduceNone) return loss;
  Value total = sum_all(b, loss);
  if (reduction == kReduceSum) return total;
  return div(b, total, constant(b, static_cast<double>(loss.type.num_elements()), total));
}

std::vector<Value> emit_pointwise_loss(hlo::Builder& b, const std::vector<Value>& in,
                                       const graph::Attrs& attrs,
                                       const std::vector<hlo::TensorType>& outs) {
  const ElementType ct = opmath_type(outs[0].dtype);
  const double param = attrs.floats.empty() ? 0 : attrs.floats[0];
  Value x = to_type(b, in[0], ct), t = to_type(b, in[1], ct);
  Value d = sub(b, x, t);
  Value z = b.unary("abs", d);
  Value loss;
  switch (attrs.ints[0]) {
    case kMse:
      loss = mul(b, d, d);
      break;
    case kSmoothL1: {  // z < beta ? 0.5 z^2 / beta : z - 0.5 beta
      Value quad = div(b, mul(b, constant(b, 0.5, z), mul(b, z, z)), constant(b, param, z));
      loss = b.select(b.compare(hlo::Cmp::LT, z, constant(b, param, z)), quad,
                      sub(b, z, constant(b, 0.5 * param, z)));
      break;
    }
    case kHuber: {  // z < delta ? 0.5 z^2 : delta (z - 0.5 delta)
      Value quad = mul(b, constant(b, 0.5, z), mul(b, z, z));
      Value lin = mul(b, constant(b, param, z), sub(b, z, constant(b, 0.5 * param, z)));
      loss = b.select(b.compare(hlo::Cmp::LT, z, constant(b, param, z)), quad, lin);
      break;
    }
    default: {  // -(t log(x) + (1 - t) log(1 - x)), each log clamped at -100
      Value floor = constant(b, -100, x);
      Value log_x = b.binary("maximum", b.unary("log", x), floor);
      Value log_1mx = b.binary("maximum", b.unary("log", sub(b, constant(b, 1, x), x)), floor);
      loss = sub(b, mul(b, sub(b, t, constant(b, 1, t)), log_1mx), mul(b, t, log_x));
      if (attrs.ints[2]) loss = mul(b, loss, to_type(b, in[2], ct));
    }
  }
  return {as_out(b, reduce_loss(b, loss, attrs.ints[1]), outs[0])};
}

std::vector<Value> emit_pointwise_loss_backward(hlo::Builder& b, const std::vector<Value>& in,
                                                const graph::Attrs& attrs,
                                                const std::vector<hlo::TensorType>& outs) {
  const ElementType ct = opmath_type(outs[0].dtype);
  const double param = attrs.floats.empty() ? 0 : attrs.floats[0];
  Value x = to_type(b, in[1], ct), t = to_type(b, in[2], ct);
  Value g = to_type(b, in[0], ct);
  if (attrs.ints[1] == kReduceMean)
    g = div(b, g, constant(b, static_cast<double>(x.type.num_elements()), g));
  if (attrs.ints[1] != kReduceNone) g = b.broadcast_in_dim(g, x.type.dims, {});
  Value d = sub(b, x, t);
  // Smooth L1 and Huber: d <= -p ? -s : d >= p ? s : slope * d, in PyTorch's branch order.
  auto piecewise = [&](Value s, Value slope_d) {
    Value p = constant(b, param, d);
    return b.select(b.compare(hlo::Cmp::LE, d, b.unary("negate", p)), b.unary("negate", s),
                    b.select(b.compare(hlo::Cmp::GE, d, p), s, slope_d));
  };
  Value grad;
  switch (attrs.ints[0]) {
    case kMse:
      grad = mul(b, constant(b, 2, d), d);
      break;
    case kSmoothL1:
      grad = piecewise(constant(b, 1, d), div(b, d, constant(b, param, d)));
      break;
    case kHuber:
      grad = piecewise(constant(b, param, d), d);
      break;
    default: {  // (x - t) / max(x (1 - x), 1e-12)
      Value denom = mul(b, x, sub(b, constant(b, 1, x), x));
      grad = div(b, d, b.binary("maximum", denom, constant(b, 1e-12, x)));
      if (attrs.ints[2]) grad = mul(b, grad, to_type(b, in[3], ct));
    }
  }
  return {as_out(b, mul(b, grad, g), outs[0])};
}

std::vector<Value> emit_embedding_backward(hlo::Builder& b, const std::vector<Value>& in,
                                           const graph::Attrs& attrs,
                                           const std::vector<hlo::TensorType>& outs) {
  const int64_t num_weights = attrs.ints[0], padding_idx = attrs.ints[1];
  const ElementType ct = opmath_type(outs[0].dtype);
  const int64_t dim = outs[0].dims[1];
  const int64_t count = in[1].type.num_elements();
  Value idx = b.reshape(to_type(b, in[1], ElementType::I64), {count});
  Value g = b.reshape(to_type(b, in[0], ct), {count, dim});
  if (padding_idx >= 0) {
    Value keep = b.compare(hlo::Cmp::NE, idx, b.splat(padding_idx, idx.type));
    g = b.select(b.broadcast_in_dim(keep, g.type.dims, {0}), g, zeros_like(b, g));
  }
  // Scatter-add of the rows of g at idx; out-of-range indices are dropped.
  auto scatter_add = [&](Value operand, Value updates, const std::string& window) {
    return b.op("scatter", {operand, idx, updates}, {operand.type},
                "scatter_dimension_numbers = #stablehlo.scatter<" + window +
                    "inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], "
                    "index_vector_dim = 1>, indices_are_sorted = false, unique_indices = false",
                b.combiner(operand.type.dtype, "add"))[0];
  };
  Value grad = scatter_add(b.splat(0, hlo::TensorType{ct, {num_weights, dim}}), g,
                           "update_window_dims = [1], ");
  if (attrs.ints[2]) {
    Value counts = scatter_add(b.splat(0, hlo::TensorType{ct, {num_weights}}),
                               b.splat(1, hlo::TensorType{ct, {count}}), "");
    counts = b.binary("maximum", counts, constant(b, 1, counts));
    grad = div(b, grad, b.broadcast_in_dim(counts, grad.type.dims, {0}));
  }
  return {as_out(b, grad, outs[0])};
}

}  // namespace

const graph::OpDef kNllLoss{"nll_loss", emit_nll_loss};
const graph::OpDef kNllLossBackward{"nll_loss_backward", emit_nll_loss_backward};
const graph::OpDef kPointwiseLoss{"pointwise_loss", emit_pointwise_loss};
const graph::OpDef kPointwiseLossBackward{"pointwise_loss_backward", emit_pointwise_loss_backward};
const graph::OpDef kEmbeddingBackward{"embedding_backward", emit_embedding_backward};

}  // namespace torch_pjrt::lowering
