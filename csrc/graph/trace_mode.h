// Whether this thread is tracing a compiled graph (torch.compile backend "tpu"): code that would
// otherwise materialize pending work eagerly (e.g. storage resizes) leaves it recorded instead.
#pragma once

namespace torch_pjrt::graph {

bool trace_active();
void set_trace_active(bool active);

}  // namespace torch_pjrt::graph
