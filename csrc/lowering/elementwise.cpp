// Elementwise lowerings: binary arithmetic, comparisons, where, and unary activations.
#include "lowering/common.h"
#include "lowering/elementwise.h"

namespace torch_pjrt::lowering {
namespace {

hlo::ElementType compute_type(const graph::Attrs& attrs, const hlo::TensorType& out) {
  return attrs.ints.empty() ? out.dtype : static_cast<hlo::ElementType>(attrs.ints[0]);
}

// Both operands converted to the compute type and broadcast to the output dims.
std::pair<hlo::Value, hlo::Value> prepare(hlo::Builder& b, const std::vector<hlo::Value>& in,
                                          hlo::ElementType t, const std::vector<int64_t>& dims) {
  return {broadcast_to(b, to_type(b, in[0], t), dims), broadcast_to(b, to_type(b, in[1], t), dims)};
}

template <const char* Op>
std::vector<hlo::Value> emit_binary(hlo::Builder& b, const std::vector<hlo::Value>& in,
                                    const graph::Attrs& attrs,
                                    const std::vector<hlo::TensorType>& outs) {
  const hlo::TensorType& out = outs[0];
  auto [x, y] = prepare(b, in, compute_type(attrs, out), out.dims);
  if (!attrs.floats.empty())
    y = b.binary("multiply", y, full(b, attrs.floats[0], out.dtype, out.dims));
  return {b.binary(Op, x, y)};
}

template <hlo::Cmp Direction>
std::vector<hlo::Value> emit_compare(hlo::Builder& b, const std::vector<hlo::Value>& in,
                                     const graph::Attrs& attrs,
                                     const std::vector<hlo::TensorType>& outs) {
  auto [x, y] = prepare(b, in, static_cast<hlo::ElementType>(attrs.ints.at(0)), outs[0].dims);
  return {b.compare(Direction, x, y)};
}

std::vector<hlo::Value> emit_where(hlo::Builder& b, const std::vector<hlo::Value>& in,
                                   const graph::Attrs&, const std::vector<hlo::TensorType>& outs) {
  const hlo::TensorType& out = outs[0];
  hlo::Value cond = broadcast_to(b, in[0], out.dims);
  auto [x, y] = prepare(b, {in[1], in[2]}, out.dtype, out.dims);
  return {b.select(cond, x, y)};
}

template <const char* Op>
std::vector<hlo::Value> emit_unary(hlo::Builder& b, const std::vector<hlo::Value>& in,
                                   const graph::Attrs&, const std::vector<hlo::TensorType>& outs) {
  return {b.unary(Op, to_type(b, in[0], outs[0].dtype))};
}

// ceil and floor of an integer are the integer itself.
template <const char* Op>
std::vector<hlo::Value> emit_rounding(hlo::Builder& b, const std::vector<hlo::Value>& in,
                                      const graph::Attrs& attrs,
                                      const std::vector<hlo::TensorType>& outs) {
  if (!runtime::is_floating(outs[0].dtype)) return {to_type(b, in[0], outs[0].dtype)};
  return emit_unary<Op>(b, in, attrs, outs);
}

// max(x, 0) would turn NaN into 0 on some backends; select keeps PyTorch's NaN propagation.
std::vector<hlo::Value> emit_relu(hlo::Builder& b, const std::vector<hlo::Value>& in,
                                  const graph::Attrs&, const std::vector<hlo::TensorType>& outs) {
  hlo::Value x = to_type(b, in[0], outs[0].dtype);
  hlo::Value zero = full(b, 0, outs[0].dtype, outs[0].dims);
  return {b.select(b.compare(hlo::Cmp::LT, x, zero), zero, x)};
}

std::vector<hlo::Value> emit_threshold_backward(hlo::Builder& b, const std::vector<hlo::Value>& in,
                                                const graph::Attrs& attrs,
                                                const std::vector<hlo::TensorType>& outs) {
  const hlo::TensorType& out = outs[0];
  auto [grad, self] = prepare(b, in, out.dtype, out.dims);
  hlo::Value threshold = full(b, attrs.floats.at(0), out.dtype, out.dims);
  hlo::Value zero = full(b, 0, out.dtype, out.dims);
  return {b.select(b.compare(hlo::Cmp::LE, self, threshold), zero, grad)};
}

constexpr char kNegName[] = "negate";
constexpr char kAbsName[] = "abs";
constexpr char kCeilName[] = "ceil";
constexpr char kFloorName[] = "floor";
constexpr char kExpName[] = "exponential";
constexpr char kLogName[] = "log";
constexpr char kSqrtName[] = "sqrt";
constexpr char kRsqrtName[] = "rsqrt";
constexpr char kTanhName[] = "tanh";
constexpr char kLogisticName[] = "logistic";
constexpr char kSinName[] = "sine";
constexpr char kCosName[] = "cosine";
constexpr char kAndName[] = "and";
constexpr char kOrName[] = "or";
constexpr char kXorName[] = "xor";
constexpr char kAddName[] = "add";
constexpr char kSubName[] = "subtract";
constexpr char kMulName[] = "multiply";
constexpr char kDivName[] = "divide";
constexpr char kMaxName[] = "maximum";
constexpr char kMinName[] = "minimum";

}  // namespace

const graph::OpDef kAdd{"add", emit_binary<kAddName>};
const graph::OpDef kSub{"sub", emit_binary<kSubName>};
const graph::OpDef kMul{"mul", emit_binary<kMulName>};
const graph::OpDef kDiv{"div", emit_binary<kDivName>};
const graph::OpDef kMaximum{"maximum", emit_binary<kMaxName>};
const graph::OpDef kMinimum{"minimum", emit_binary<kMinName>};
const graph::OpDef kEq{"eq", emit_compare<hlo::Cmp::EQ>};
const graph::OpDef kNe{"ne", emit_compare<hlo::Cmp::NE>};
const graph::OpDef kLt{"lt", emit_compare<hlo::Cmp::LT>};
const graph::OpDef kLe{"le", emit_compare<hlo::Cmp::LE>};
const graph::OpDef kGt{"gt", emit_compare<hlo::Cmp::GT>};
const graph::OpDef kGe{"ge", emit_compare<hlo::Cmp::GE>};
const graph::OpDef kWhere{"where", emit_where};
const graph::OpDef kNeg{"neg", emit_unary<kNegName>};
const graph::OpDef kAbs{"abs", emit_unary<kAbsName>};
const graph::OpDef kCeil{"ceil", emit_rounding<kCeilName>};
const graph::OpDef kFloor{"floor", emit_rounding<kFloorName>};
const graph::OpDef kExp{"exp", emit_unary<kExpName>};
const graph::OpDef kLog{"log", emit_unary<kLogName>};
const graph::OpDef kSqrt{"sqrt", emit_unary<kSqrtName>};
const graph::OpDef kRsqrt{"rsqrt", emit_unary<kRsqrtName>};
const graph::OpDef kTanh{"tanh", emit_unary<kTanhName>};
const graph::OpDef kSigmoid{"sigmoid", emit_unary<kLogisticName>};
const graph::OpDef kSin{"sin", emit_unary<kSinName>};
const graph::OpDef kCos{"cos", emit_unary<kCosName>};
const graph::OpDef kBitwiseAnd{"bitwise_and", emit_binary<kAndName>};
const graph::OpDef kBitwiseOr{"bitwise_or", emit_binary<kOrName>};
const graph::OpDef kBitwiseXor{"bitwise_xor", emit_binary<kXorName>};
const graph::OpDef kRelu{"relu", emit_relu};
const graph::OpDef kThresholdBackward{"threshold_backward", emit_threshold_backward};

}  // namespace torch_pjrt::lowering
