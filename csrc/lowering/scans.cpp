// Cumulative sum and product as a log-step (Hillis-Steele) scan: ceil(log2 n) shifted combines.
#include "lowering/scans.h"

#include "lowering/common.h"

namespace torch_pjrt::lowering {
namespace {

template <int Identity>
std::vector<hlo::Value> emit_scan(hlo::Builder& b, const std::vector<hlo::Value>& in,
                                  const graph::Attrs& attrs,
                                  const std::vector<hlo::TensorType>& outs) {
  const char* combine = Identity == 0 ? "add" : "multiply";
  hlo::Value x = to_type(b, in[0], outs[0].dtype);
  if (x.type.rank() == 0) return {x};
  const int64_t dim = attrs.ints[0];
  const int64_t n = x.type.dims[dim];
  const std::vector<int64_t> start(x.type.rank(), 0), strides(x.type.rank(), 1);
  for (int64_t k = 1; k < n; k *= 2) {
    // x[i] combined with x[i - k] (the identity before the start).
    std::vector<int64_t> limit = x.type.dims, pad_dims = x.type.dims;
    limit[dim] = n - k;
    pad_dims[dim] = k;
    hlo::Value shifted = b.concatenate(
        {full(b, Identity, x.type.dtype, pad_dims), b.slice(x, start, limit, strides)}, dim);
    x = b.binary(combine, x, shifted);
  }
  return {x};
}

}  // namespace

const graph::OpDef kCumsum{"cumsum", emit_scan<0>};
const graph::OpDef kCumprod{"cumprod", emit_scan<1>};

}  // namespace torch_pjrt::lowering
