// Range factories: arange, linspace and eye as iota arithmetic.
#include "lowering/factories.h"

#include "lowering/common.h"

namespace torch_pjrt::lowering {
namespace {

using hlo::ElementType;
using hlo::Value;

// The progression runs over the output's elements in row-major order: an out= of any shape
// (2x3 for six elements) is filled as the flat sequence reshaped, as on the CPU.
int64_t element_count(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

std::vector<Value> emit_arange(hlo::Builder& b, const std::vector<Value>&, const graph::Attrs& a,
                               const std::vector<hlo::TensorType>& outs) {
  const ElementType t = outs[0].dtype;
  const std::vector<int64_t> dims{element_count(outs[0].dims)};
  if (!runtime::is_floating(t)) {
    Value i = b.iota({ElementType::I64, dims}, 0);
    auto c = [&](int64_t v) {
      return b.broadcast_in_dim(b.constant_int(v, ElementType::I64), dims, {});
    };
    Value v = b.binary("add", c(a.ints.at(0)), b.binary("multiply", i, c(a.ints.at(1))));
    return {b.reshape(to_type(b, v, t), outs[0].dims)};
  }
  // PyTorch's CPU accumulate type: double for float and double, float for 16-bit floats.
  const ElementType ct =
      t == ElementType::F16 || t == ElementType::BF16 ? ElementType::F32 : ElementType::F64;
  Value i = b.iota({ct, dims}, 0);
  Value v = b.binary("add", full(b, a.floats.at(0), ct, dims),
                     b.binary("multiply", full(b, a.floats.at(1), ct, dims), i));
  return {b.reshape(to_type(b, v, t), outs[0].dims)};
}

std::vector<Value> emit_linspace(hlo::Builder& b, const std::vector<Value>&, const graph::Attrs& a,
                                 const std::vector<hlo::TensorType>& outs) {
  const ElementType t = outs[0].dtype;
  const int64_t n = element_count(outs[0].dims);
  // Integer outputs step in double (start/end already truncated by the caller).
  const ElementType ct = runtime::is_floating(t) ? t : ElementType::F64;
  const double start = a.floats.at(0), end = a.floats.at(1);
  const std::vector<int64_t> dims{n};
  Value s = full(b, start, ct, dims), e = full(b, end, ct, dims);
  // step = (end - start) / (n - 1), rounded like the kernel (in the compute type)
  Value step = b.binary("divide", b.binary("subtract", e, s), full(b, double(n - 1), ct, dims));
  Value idx = b.iota({ElementType::I64, dims}, 0);
  Value up = b.binary("add", s, b.binary("multiply", step, b.convert(idx, ct)));
  Value back = b.binary(
      "subtract", e,
      b.binary(
          "multiply", step,
          b.convert(
              b.binary("subtract",
                       b.broadcast_in_dim(b.constant_int(n - 1, ElementType::I64), dims, {}), idx),
              ct)));
  Value half = b.broadcast_in_dim(b.constant_int(n / 2, ElementType::I64), dims, {});
  return {b.reshape(to_type(b, b.select(b.compare(hlo::Cmp::LT, idx, half), up, back), t),
                    outs[0].dims)};
}

std::vector<Value> emit_eye(hlo::Builder& b, const std::vector<Value>&, const graph::Attrs&,
                            const std::vector<hlo::TensorType>& outs) {
  const auto& dims = outs[0].dims;
  Value eq = b.compare(hlo::Cmp::EQ, b.iota({ElementType::I64, dims}, 0),
                       b.iota({ElementType::I64, dims}, 1));
  return {to_type(b, eq, outs[0].dtype)};
}

}  // namespace

const graph::OpDef kArange{"arange", emit_arange};
const graph::OpDef kLinspace{"linspace", emit_linspace};
const graph::OpDef kEye{"eye", emit_eye};

}  // namespace torch_pjrt::lowering
