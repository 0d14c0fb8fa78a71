// The eager execution modes: when the work an op records is compiled and run.
//   Strict: each op runs as its own program as soon as it is recorded (asynchronously).
//   Fused:  ops accumulate and run as one program at sync points or when the fusion policy cuts.
//   Debug:  each op runs and is waited for before the op returns, so errors surface at the op.
#pragma once

#include <string>

namespace torch_pjrt::aten {

enum class EagerMode { Strict, Fused, Debug };

EagerMode parse_eager_mode(const std::string& name);  // raises ValueError for an unknown name
const char* eager_mode_name(EagerMode mode);

// The mode ops on this thread run in: the innermost thread-scoped mode, else the process default.
// Thread-scoped modes travel with PyTorch's thread-local state, so a backward pass run by the
// autograd engine's device threads follows the mode of the thread that called backward().
EagerMode eager_mode();

// The process default (what threads outside thread-scoped blocks run in).
EagerMode default_eager_mode();

// Changing the mode is a sync point: work pending under the old mode is launched first.
void set_default_eager_mode(EagerMode mode);
void push_eager_mode(EagerMode mode);
void pop_eager_mode();

}  // namespace torch_pjrt::aten
