// Matmul/convolution precision: thread-scoped torch.tpu.precision() blocks over PyTorch's global
// float32 matmul precision.
#include "aten/precision.h"

#include <ATen/Context.h>

#include "aten/thread_scoped.h"
#include "aten/torch_compat.h"

namespace torch_pjrt::aten {
namespace {

using ScopedPrecision = ThreadScoped<hlo::Precision, &compat::kPrecisionSlot>;

}  // namespace

hlo::Precision matmul_precision() {
  if (const hlo::Precision* scoped = ScopedPrecision::get()) return *scoped;
  switch (at::globalContext().float32MatmulPrecision()) {
    case at::Float32MatmulPrecision::MEDIUM:
      return hlo::Precision::kDefault;
    case at::Float32MatmulPrecision::HIGH:
      return hlo::Precision::kHigh;
    case at::Float32MatmulPrecision::HIGHEST:
      break;
  }
  return hlo::Precision::kHighest;
}

void push_matmul_precision(hlo::Precision precision) { ScopedPrecision::push(precision); }

void pop_matmul_precision() { ScopedPrecision::pop(); }

void add_precision(graph::Attrs& attrs, c10::ScalarType dtype) {
  if (dtype == c10::kFloat) attrs.ints.push_back(static_cast<int64_t>(matmul_precision()));
}

}  // namespace torch_pjrt::aten
