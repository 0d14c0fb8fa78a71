// The thread-local trace flag of graph/trace_mode.h.
#include "graph/trace_mode.h"

namespace torch_pjrt::graph {
namespace {
thread_local bool active = false;
}  // namespace

bool trace_active() { return active; }
void set_trace_active(bool a) { active = a; }

}  // namespace torch_pjrt::graph
