// The fused Adam/AdamW step of one parameter (see optimizers.h), in the order of operations of
// PyTorch's fused kernels.
#include "lowering/optimizers.h"

#include <vector>

#include "lowering/common.h"
#include "lowering/elementwise.h"

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
  const Math m{b, acc, dims};
  size_t k = 0;
  const auto next = [&] { return to_type(b, in[k++], acc); };  // the next operand, in `acc`
  const auto wide = [&](Value s) { return broadcast_to(b, s, dims); };

  Value param = next(), grad = next(), exp_avg = next(), exp_avg_sq = next();
  const Value step = next(), lr = next();  // rank 0, as the scalars below
  const Value decay = decays ? next() : Value{};
  const Value beta1 = next(), beta2 = next(), rest1 = next(), rest2 = next(), eps = next();
  const size_t max_at = k;
  const Value max_sq = amsgrad ? next() : Value{};
  const Value scale = scaled ? next() : Value{};
  const Value found = skippable ? next() : Value{};

  if (scaled) grad = m.div(grad, wide(scale));
  const Value unscaled = grad;
  if (maximize) grad = m.un("negate", grad);
  if (decays) {
    if (decoupled) {
      param = m.mul(param, wide(decay));
    } else {
      grad = m.add(grad, m.mul(param, wide(decay)));
    }
  }
  exp_avg = m.add(m.mul(exp_avg, wide(beta1)), m.mul(grad, wide(rest1)));
  exp_avg_sq = m.add(m.mul(exp_avg_sq, wide(beta2)), m.mul(m.mul(grad, grad), wide(rest2)));
  const Value one = full(b, 1, acc, {});
  const Value correction1 = m.sub(one, b.binary("power", beta1, step));
  const Value correction2_sqrt = m.un("sqrt", m.sub(one, b.binary("power", beta2, step)));
  Value second = exp_avg_sq;
  if (amsgrad) second = b.binary("maximum", max_sq, exp_avg_sq);
  const Value denom = m.add(m.div(m.un("sqrt", second), wide(correction2_sqrt)), wide(eps));
  param = m.sub(param, m.div(m.mul(wide(m.div(lr, correction1)), exp_avg), denom));

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
  const Value skip = skippable ? wide(m.cmp(Cmp::NE, found, full(b, 0, acc, {}))) : Value{};
  for (size_t i = 0; i < results.size(); ++i) {
    results[i] = to_type(b, results[i], out_types[i].dtype);
    if (skippable) results[i] = b.select(skip, old[i], results[i]);
  }
  return results;
}

}  // namespace

const graph::OpDef kAdamStep{"adam_step", emit_adam_step};

}  // namespace torch_pjrt::lowering
