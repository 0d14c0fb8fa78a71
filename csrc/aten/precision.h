// The precision float32 matrix products and convolutions are recorded with (StableHLO
// precision_config: what GPU/TPU plugins may trade for speed; XLA:CPU is exact either way).
#pragma once

#include <c10/core/ScalarType.h>

#include "graph/node.h"
#include "hlo/builder.h"

namespace torch_pjrt::aten {

// The innermost torch.tpu.precision() block of this thread (and the autograd work it starts),
// else torch.set_float32_matmul_precision: "highest" (PyTorch's default, results as on the CPU)
// -> HIGHEST, "high" -> HIGH, "medium" -> DEFAULT.
hlo::Precision matmul_precision();
void push_matmul_precision(hlo::Precision precision);
void pop_matmul_precision();

// Appends the current precision to `attrs.ints` for float32 operands; other dtypes record none,
// so their programs do not depend on the setting.
void add_precision(graph::Attrs& attrs, c10::ScalarType dtype);

}  // namespace torch_pjrt::aten
