// Shape lowerings: concatenate, reverse, roll by slicing, triangles by iota masks, stablehlo.pad.
#include "lowering/shape.h"

#include <string>

#include "lowering/common.h"

namespace torch_pjrt::lowering {
namespace {

std::vector<hlo::Value> emit_concat(hlo::Builder& b, const std::vector<hlo::Value>& in,
                                    const graph::Attrs& attrs,
                                    const std::vector<hlo::TensorType>& outs) {
  std::vector<hlo::Value> parts;
  for (const hlo::Value& v : in) parts.push_back(to_type(b, v, outs[0].dtype));
  return {parts.size() == 1 ? parts[0] : b.concatenate(parts, attrs.ints[0])};
}

std::vector<hlo::Value> emit_flip(hlo::Builder& b, const std::vector<hlo::Value>& in,
                                  const graph::Attrs& attrs, const std::vector<hlo::TensorType>&) {
  if (attrs.ints.empty()) return {in[0]};
  return b.op("reverse", {in[0]}, {in[0].type}, "dimensions = " + hlo::i64_array(attrs.ints));
}

std::vector<hlo::Value> emit_roll(hlo::Builder& b, const std::vector<hlo::Value>& in,
                                  const graph::Attrs& attrs, const std::vector<hlo::TensorType>&) {
  hlo::Value x = in[0];
  const std::vector<int64_t>& dims = x.type.dims;
  for (size_t i = 0; i + 1 < attrs.ints.size(); i += 2) {
    const int64_t d = attrs.ints[i], shift = attrs.ints[i + 1], n = dims[d];
    if (shift == 0) continue;
    std::vector<int64_t> start(dims.size(), 0), limit = dims, strides(dims.size(), 1);
    // result = concat(x[n - shift:], x[:n - shift]) along d.
    start[d] = n - shift;
    hlo::Value tail = b.slice(x, start, limit, strides);
    start[d] = 0;
    limit[d] = n - shift;
    hlo::Value head = b.slice(x, start, limit, strides);
    x = b.concatenate({tail, head}, d);
  }
  return {x};
}

std::vector<hlo::Value> emit_triangle(hlo::Builder& b, const std::vector<hlo::Value>& in,
                                      const graph::Attrs& attrs,
                                      const std::vector<hlo::TensorType>&) {
  const hlo::TensorType& t = in[0].type;
  const int64_t rank = t.rank();
  const hlo::TensorType it{hlo::ElementType::I64, t.dims};
  // Element (i, j) is kept when j - i <= diagonal (tril) or j - i >= diagonal (triu).
  hlo::Value offset = b.binary("subtract", b.iota(it, rank - 1), b.iota(it, rank - 2));
  hlo::Value keep = b.compare(attrs.ints[0] ? hlo::Cmp::GE : hlo::Cmp::LE, offset,
                              b.splat(static_cast<double>(attrs.ints[1]), it));
  return {b.select(keep, in[0], b.splat(0, t))};
}

std::vector<hlo::Value> emit_pad(hlo::Builder& b, const std::vector<hlo::Value>& in,
                                 const graph::Attrs& attrs,
                                 const std::vector<hlo::TensorType>& outs) {
  std::vector<int64_t> low, high;
  for (size_t i = 0; i + 1 < attrs.ints.size(); i += 2) {
    low.push_back(attrs.ints[i]);
    high.push_back(attrs.ints[i + 1]);
  }
  const std::vector<int64_t> interior(low.size(), 0);
  hlo::Value value = to_type(b, in[1], outs[0].dtype);
  return b.op("pad", {to_type(b, in[0], outs[0].dtype), value}, {outs[0]},
              "edge_padding_low = " + hlo::i64_array(low) + ", edge_padding_high = " +
                  hlo::i64_array(high) + ", interior_padding = " + hlo::i64_array(interior));
}

}  // namespace

const graph::OpDef kConcat{"concat", emit_concat};
const graph::OpDef kFlip{"flip", emit_flip};
const graph::OpDef kRoll{"roll", emit_roll};
const graph::OpDef kTriangle{"triangle", emit_triangle};
const graph::OpDef kPad{"pad", emit_pad};

}  // namespace torch_pjrt::lowering
