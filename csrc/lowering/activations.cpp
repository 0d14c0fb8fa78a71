// Activation lowerings and their backward ops, mirroring PyTorch's CPU kernels.
#include "lowering/activations.h"

#include <cmath>

#include "lowering/common.h"
#include "lowering/elementwise.h"

namespace torch_pjrt::lowering {
namespace {

using hlo::Cmp;
using hlo::Value;
using Operands = std::vector<Value>;

// Operands converted to math_type(output type) and broadcast; results converted to the outputs.
template <Operands (*F)(const Math&, const Operands&, const graph::Attrs&)>
std::vector<Value> emit(hlo::Builder& b, const Operands& in, const graph::Attrs& attrs,
                        const std::vector<hlo::TensorType>& outs) {
  const Math m{b, math_type(outs[0].dtype), outs[0].dims};
  Operands xs;
  for (const Value& v : in) xs.push_back(broadcast_to(b, to_type(b, v, m.t), m.dims));
  Operands results = F(m, xs, attrs);
  for (size_t i = 0; i < results.size(); ++i) results[i] = to_type(b, results[i], outs[i].dtype);
  return results;
}

constexpr double kSqrt1_2 = 0.70710678118654752440;
constexpr double kGeluTanhBeta = 0.79788456080286535588;  // sqrt(2 / pi)
constexpr double kGeluKappa = 0.044715;

Value exp(const Math& m, Value x) { return m.un("exponential", x); }

Operands gelu(const Math& m, const Operands& x, const graph::Attrs& attrs) {
  if (attrs.ints.at(0)) {
    Value inner = m.mul(m.c(kGeluTanhBeta),
                        m.add(x[0], m.mul(m.c(kGeluKappa), m.mul(x[0], m.mul(x[0], x[0])))));
    return {m.mul(m.mul(m.c(0.5), x[0]), m.add(m.c(1), m.un("tanh", inner)))};
  }
  return {m.mul(m.mul(x[0], m.c(0.5)), m.add(m.c(1), m.erf(m.mul(x[0], m.c(kSqrt1_2)))))};
}

Operands gelu_backward(const Math& m, const Operands& x, const graph::Attrs& attrs) {
  const Value g = x[0], v = x[1];
  Value v2 = m.mul(v, v);
  if (attrs.ints.at(0)) {
    Value inner = m.mul(m.c(kGeluTanhBeta), m.add(v, m.mul(m.c(kGeluKappa), m.mul(v2, v))));
    Value t = m.un("tanh", inner);
    Value left = m.mul(m.c(0.5), v);
    Value right = m.add(m.c(1), t);
    Value left_derivative = m.mul(m.c(0.5), right);
    Value inner_derivative =
        m.mul(m.c(kGeluTanhBeta), m.add(m.c(1), m.mul(m.c(3 * kGeluKappa), v2)));
    Value right_derivative = m.mul(m.mul(left, m.sub(m.c(1), m.mul(t, t))), inner_derivative);
    return {m.mul(g, m.add(left_derivative, right_derivative))};
  }
  Value cdf = m.mul(m.c(0.5), m.add(m.c(1), m.erf(m.mul(v, m.c(kSqrt1_2)))));
  Value pdf = m.mul(m.c(kGeluTanhBeta * 0.5), exp(m, m.mul(v2, m.c(-0.5))));
  return {m.mul(g, m.add(cdf, m.mul(v, pdf)))};
}

Operands silu(const Math& m, const Operands& x, const graph::Attrs&) {
  return {m.div(x[0], m.add(m.c(1), exp(m, m.un("negate", x[0]))))};
}

Operands sigmoid_backward(const Math& m, const Operands& x, const graph::Attrs&) {
  return {m.mul(m.mul(x[0], m.sub(m.c(1), x[1])), x[1])};
}

Operands tanh_backward(const Math& m, const Operands& x, const graph::Attrs&) {
  return {m.mul(x[0], m.sub(m.c(1), m.mul(x[1], x[1])))};
}

Operands softplus(const Math& m, const Operands& x, const graph::Attrs& attrs) {
  Value scaled = m.mul(x[0], m.c(attrs.floats.at(0)));
  Value soft = m.div(m.un("log_plus_one", exp(m, scaled)), m.c(attrs.floats[0]));
  return {m.sel(m.cmp(Cmp::GT, scaled, m.c(attrs.floats.at(1))), x[0], soft)};
}

Operands softplus_backward(const Math& m, const Operands& x, const graph::Attrs& attrs) {
  Value scaled = m.mul(x[1], m.c(attrs.floats.at(0)));
  Value z = exp(m, scaled);
  Value soft = m.div(m.mul(x[0], z), m.add(z, m.c(1)));
  return {m.sel(m.cmp(Cmp::GT, scaled, m.c(attrs.floats.at(1))), x[0], soft)};
}

Operands elu(const Math& m, const Operands& x, const graph::Attrs& attrs) {
  const double alpha = attrs.floats.at(0), scale = attrs.floats.at(1),
               input_scale = attrs.floats.at(2);
  Value neg =
      m.mul(m.un("exponential_minus_one", m.mul(x[0], m.c(input_scale))), m.c(alpha * scale));
  return {m.sel(m.cmp(Cmp::LE, x[0], m.c(0)), neg, m.mul(x[0], m.c(scale)))};
}

Operands elu_backward(const Math& m, const Operands& x, const graph::Attrs& attrs) {
  const double alpha = attrs.floats.at(0), scale = attrs.floats.at(1),
               input_scale = attrs.floats.at(2);
  const Value g = x[0], v = x[1];
  Value neg = attrs.ints.at(0) ? m.mul(m.mul(g, m.c(input_scale)), m.add(v, m.c(alpha * scale)))
                               : m.mul(m.mul(g, m.c(input_scale * alpha * scale)),
                                       exp(m, m.mul(v, m.c(input_scale))));
  return {m.sel(m.cmp(Cmp::LE, v, m.c(0)), neg, m.mul(g, m.c(scale)))};
}

Operands leaky_relu(const Math& m, const Operands& x, const graph::Attrs& attrs) {
  return {m.sel(m.cmp(Cmp::GT, x[0], m.c(0)), x[0], m.mul(x[0], m.c(attrs.floats.at(0))))};
}

Operands leaky_relu_backward(const Math& m, const Operands& x, const graph::Attrs& attrs) {
  return {m.sel(m.cmp(Cmp::GT, x[1], m.c(0)), x[0], m.mul(x[0], m.c(attrs.floats.at(0))))};
}

Value relu6_of_shifted(const Math& m, Value x) {
  return m.min(m.max(m.add(x, m.c(3)), m.c(0)), m.c(6));
}

Operands hardswish(const Math& m, const Operands& x, const graph::Attrs&) {
  return {m.div(m.mul(x[0], relu6_of_shifted(m, x[0])), m.c(6))};
}

Operands hardswish_backward(const Math& m, const Operands& x, const graph::Attrs&) {
  const Value g = x[0], v = x[1];
  Value mid = m.mul(g, m.add(m.div(v, m.c(3)), m.c(0.5)));
  Value r = m.sel(m.cmp(Cmp::LT, v, m.c(3)), mid, g);
  return {m.sel(m.cmp(Cmp::LE, v, m.c(-3)), m.c(0), r)};
}

Operands hardsigmoid(const Math& m, const Operands& x, const graph::Attrs&) {
  return {m.div(relu6_of_shifted(m, x[0]), m.c(6))};
}

Operands hardsigmoid_backward(const Math& m, const Operands& x, const graph::Attrs&) {
  Value inside = m.b.binary("and", m.cmp(Cmp::GT, x[1], m.c(-3)), m.cmp(Cmp::LT, x[1], m.c(3)));
  return {m.sel(inside, m.div(x[0], m.c(6)), m.c(0))};
}

Operands hardtanh_backward(const Math& m, const Operands& x, const graph::Attrs& attrs) {
  Value outside = m.b.binary("or", m.cmp(Cmp::LE, x[1], m.c(attrs.floats.at(0))),
                             m.cmp(Cmp::GE, x[1], m.c(attrs.floats.at(1))));
  return {m.sel(outside, m.c(0), x[0])};
}

// output = min(x, 0) - log1p(exp(-|x|)); the buffer keeps exp(-|x|) for the backward.
Operands log_sigmoid_forward(const Math& m, const Operands& x, const graph::Attrs&) {
  Value z = exp(m, m.un("negate", m.un("abs", x[0])));
  return {m.sub(m.min(x[0], m.c(0)), m.un("log_plus_one", z)), z};
}

Operands log_sigmoid_backward(const Math& m, const Operands& x, const graph::Attrs&) {
  const Value g = x[0], z = x[2];
  Value negative = m.cmp(Cmp::LT, x[1], m.c(0));
  Value ratio = m.div(z, m.add(m.c(1), z));
  return {m.mul(g, m.sel(negative, m.sub(m.c(1), ratio), ratio))};
}

Operands mish(const Math& m, const Operands& x, const graph::Attrs&) {
  return {m.mul(x[0], m.un("tanh", m.un("log_plus_one", exp(m, x[0]))))};
}

Operands threshold(const Math& m, const Operands& x, const graph::Attrs& attrs) {
  return {m.sel(m.cmp(Cmp::LE, x[0], m.c(attrs.floats.at(0))), m.c(attrs.floats.at(1)), x[0])};
}

// softshrink: x - l above l, x + l below -l, else 0 (x * 0, so NaN propagates).
Operands softshrink(const Math& m, const Operands& x, const graph::Attrs& attrs) {
  const double l = attrs.floats.at(0);
  Value below = m.sel(m.cmp(Cmp::LT, x[0], m.c(-l)), m.add(x[0], m.c(l)), m.mul(x[0], m.c(0)));
  return {m.sel(m.cmp(Cmp::GT, x[0], m.c(l)), m.sub(x[0], m.c(l)), below)};
}

// Operand 0 where x (the last operand) lies outside [-l, l], else 0: hardshrink(x) and both
// shrink backward ops (grad, x).
Operands shrink(const Math& m, const Operands& x, const graph::Attrs& attrs) {
  const double l = attrs.floats.at(0);
  const Value v = x.back();
  Value inside = m.b.binary("and", m.cmp(Cmp::GE, v, m.c(-l)), m.cmp(Cmp::LE, v, m.c(l)));
  return {m.sel(inside, m.c(0), x[0])};
}

}  // namespace

const graph::OpDef kGelu{"gelu", emit<gelu>};
const graph::OpDef kGeluBackward{"gelu_backward", emit<gelu_backward>};
const graph::OpDef kSilu{"silu", emit<silu>};
const graph::OpDef kSigmoidBackward{"sigmoid_backward", emit<sigmoid_backward>};
const graph::OpDef kTanhBackward{"tanh_backward", emit<tanh_backward>};
const graph::OpDef kSoftplus{"softplus", emit<softplus>};
const graph::OpDef kSoftplusBackward{"softplus_backward", emit<softplus_backward>};
const graph::OpDef kElu{"elu", emit<elu>};
const graph::OpDef kEluBackward{"elu_backward", emit<elu_backward>};
const graph::OpDef kLeakyRelu{"leaky_relu", emit<leaky_relu>};
const graph::OpDef kLeakyReluBackward{"leaky_relu_backward", emit<leaky_relu_backward>};
const graph::OpDef kHardswish{"hardswish", emit<hardswish>};
const graph::OpDef kHardswishBackward{"hardswish_backward", emit<hardswish_backward>};
const graph::OpDef kHardsigmoid{"hardsigmoid", emit<hardsigmoid>};
const graph::OpDef kHardsigmoidBackward{"hardsigmoid_backward", emit<hardsigmoid_backward>};
const graph::OpDef kHardtanhBackward{"hardtanh_backward", emit<hardtanh_backward>};
const graph::OpDef kLogSigmoidForward{"log_sigmoid_forward", emit<log_sigmoid_forward>};
const graph::OpDef kLogSigmoidBackward{"log_sigmoid_backward", emit<log_sigmoid_backward>};
const graph::OpDef kMish{"mish", emit<mish>};
const graph::OpDef kThreshold{"threshold", emit<threshold>};
const graph::OpDef kSoftshrink{"softshrink", emit<softshrink>};
const graph::OpDef kShrink{"shrink", emit<shrink>};

}  // namespace torch_pjrt::lowering
