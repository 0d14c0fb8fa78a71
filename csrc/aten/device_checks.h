// Data-dependent errors PyTorch raises on the CPU (out-of-range indices and targets, integer
// division by zero, probabilities outside [0, 1]), checked by the op's own program (graph/checks.h)
// instead of reading operands on the host: the error (PyTorch's type and message) is raised at the
// next synchronization in Strict and Fused mode, at the op in Debug mode, and by compiled graphs'
// calls too. Host operands (CPU index tensors, wrapped scalars) are checked on the host at once, as
// the CPU does.
#pragma once

#include <ATen/core/Tensor.h>

#include <string>
#include <vector>

#include "graph/checks.h"

namespace torch_pjrt::aten {

// The error a failure raises: its type, and its message around the invalid value.
struct CheckError {
  graph::CheckKind kind;
  std::string before;
  std::string after;
  bool show_value = true;
};

// Checks, for op `op` (named in errors raised after the op), that every element of the integer
// tensor `t` lies in [lo, hi) or is one of `allowed`. Returns the device check for the op's results
// to depend on (null when there is nothing left to check on the device).
graph::CheckPtr check_in_range(const char* op, const at::Tensor& t, int64_t lo, int64_t hi,
                               const CheckError& error, const std::vector<int64_t>& allowed = {});
// Checks that no element of `t` is zero.
graph::CheckPtr check_nonzero(const char* op, const at::Tensor& t, const CheckError& error);
// Checks that every element of the floating tensor `t` lies in [0, 1] (NaN does not).
graph::CheckPtr check_unit_interval(const char* op, const at::Tensor& t, const CheckError& error);
// The op's results then depend on the check: graph::depends_on(value, check).

}  // namespace torch_pjrt::aten
