// The fused Adam/AdamW step of one parameter (see optimizers.h), in the order of operations of
// PyTorch's fused kernels.
#include "lowering/optimizers.h"

#include <vector>

#include "lowering/common.h"

namespace torch_pjrt::lowering {
namespace {

using hlo::Builder;
using hlo::Cmp;
using hlo::ElementType;
using hlo::Value;

std::vector<Value> emit_adam_step(Builder& b, const std::vector<Value>& in,
                                  const graph::Attrs& attrs,
                                  const std::vector<hlo::TensorType>& out_types) {
  const bool amsgrad = attrs.ints[0] != 0, maximize = attrs.ints[1] != 0,
             decoupled = attrs.ints[2] != 0, decays = attrs.ints[3] != 0,
             scaled = attrs.ints[4] != 0, skippable = attrs.ints[5] != 0;
  const ElementType acc = opmath_type(in[0].type.dtype);
  const std::vector<int64_t>& dims = in[0].type.dims;
  size_t k = 0;
  const auto tensor = [&] { return to_type(b, in[k++], acc); };
  const auto scalar = [&] { return to_type(b, in[k++], acc); };  // rank 0
  const auto wide = [&](Value s) { return broadcast_to(b, s, dims); };
  const auto mul = [&](Value x, Value y) { return b.binary("multiply", x, y); };
  const auto add = [&](Value x, Value y) { return b.binary("add", x, y); };
  const auto sub = [&](Value x, Value y) { return b.binary("subtract", x, y); };
  const auto div = [&](Value x, Value y) { return b.binary("divide", x, y); };

  Value param = tensor(), grad = tensor(), exp_avg = tensor(), exp_avg_sq = tensor();
  const Value step = scalar(), lr = scalar();
  const Value decay = decays ? scalar() : Value{};
  const Value beta1 = scalar(), beta2 = scalar(), rest1 = scalar(), rest2 = scalar(),
              eps = scalar();
  const size_t max_at = k;
  const Value max_sq = amsgrad ? tensor() : Value{};
  const Value scale = scaled ? scalar() : Value{};
  const Value found = skippable ? in[k++] : Value{};

  if (scaled) grad = div(grad, wide(scale));
  const Value unscaled = grad;
  if (maximize) grad = b.unary("negate", grad);
  if (decays) {
    if (decoupled) {
      param = mul(param, wide(decay));
    } else {
      grad = add(grad, mul(param, wide(decay)));
    }
  }
  exp_avg = add(mul(exp_avg, wide(beta1)), mul(grad, wide(rest1)));
  exp_avg_sq = add(mul(exp_avg_sq, wide(beta2)), mul(mul(grad, grad), wide(rest2)));
  const Value one = full(b, 1, acc, {});
  const Value correction1 = sub(one, b.binary("power", beta1, step));
  const Value correction2_sqrt = b.unary("sqrt", sub(one, b.binary("power", beta2, step)));
  Value second = exp_avg_sq;
  if (amsgrad) second = b.binary("maximum", max_sq, exp_avg_sq);
  const Value denom = add(div(b.unary("sqrt", second), wide(correction2_sqrt)), wide(eps));
  param = sub(param, div(mul(wide(div(lr, correction1)), exp_avg), denom));

  std::vector<Value> results{param, exp_avg, exp_avg_sq};
  std::vector<Value> old{in[0], in[2], in[3]};
  if (amsgrad) {
    results.push_back(second);
    old.push_back(in[max_at]);
  }
  if (scaled) {
    results.push_back(unscaled);
    old.push_back(in[1]);
  }
  Value skip;
  if (skippable) {
    const Value f = to_type(b, found, acc);
    skip = broadcast_to(b, b.compare(Cmp::NE, f, full(b, 0, acc, {})), dims);
  }
  for (size_t i = 0; i < results.size(); ++i) {
    results[i] = to_type(b, results[i], out_types[i].dtype);
    if (skippable) results[i] = b.select(skip, old[i], results[i]);
  }
  return results;
}

}  // namespace

const graph::OpDef kAdamStep{"adam_step", emit_adam_step};

}  // namespace torch_pjrt::lowering
