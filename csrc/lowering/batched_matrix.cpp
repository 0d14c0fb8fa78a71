// Helpers for the loop-based matrix lowerings: see batched_matrix.h.
#include "lowering/batched_matrix.h"

#include "runtime/element_type.h"

namespace torch_pjrt::lowering {

using hlo::Builder;
using hlo::Value;

Value expand(Builder& b, Value v, const std::vector<int64_t>& dims, std::vector<int64_t> at) {
  const size_t batch = v.type.dims.size() - at.size();
  std::vector<int64_t> map(batch);
  for (size_t i = 0; i < batch; ++i) map[i] = static_cast<int64_t>(i);
  map.insert(map.end(), at.begin(), at.end());
  return b.broadcast_in_dim(v, dims, map);
}

Value scalar_to(Builder& b, Value s, const std::vector<int64_t>& dims) {
  return b.broadcast_in_dim(s, dims, {});
}

Value take(Builder& b, Value x, int64_t dim, Value i) {
  std::vector<Value> start;
  std::vector<int64_t> sizes = x.type.dims, out;
  const Value zero = b.constant_int(0, hlo::ElementType::I32);
  for (size_t d = 0; d < sizes.size(); ++d)
    start.push_back(static_cast<int64_t>(d) == dim ? i : zero);
  sizes[dim] = 1;
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (static_cast<int64_t>(d) != dim) out.push_back(sizes[d]);
  }
  return b.reshape(b.dynamic_slice(x, start, sizes), out);
}

Value conj(Builder& b, Value x) {
  if (!runtime::is_complex(x.type.dtype)) return x;
  return b.complex(b.unary("real", x), b.unary("negate", b.unary("imag", x)));
}

}  // namespace torch_pjrt::lowering
