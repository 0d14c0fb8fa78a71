// Device-side checks of data-dependent errors, and how their failures become PyTorch exceptions.
#include "aten/device_checks.h"

#include <ATen/ATen.h>

#include "aten/eager_mode.h"
#include "aten/tensor_bridge.h"
#include "aten/trace.h"
#include "lowering/checks.h"

namespace torch_pjrt::aten {
namespace {

[[noreturn]] void raise(graph::CheckKind kind, const std::string& message) {
  if (kind == graph::CheckKind::Index) TORCH_CHECK_INDEX(false, message);
  TORCH_CHECK(false, message);
}

void raise_check(graph::CheckKind kind, const std::string& message) { raise(kind, message); }

const bool raiser_installed = (graph::set_check_raiser(&raise_check), true);

// Appended to errors raised after the op: which op, and where to look, as CUDA's device-side
// asserts say.
std::string raised_later(const char* op) {
  return std::string(" (a device-side check in ") + op +
         ": in Strict and Fused mode it is raised at the next synchronization, which may be later "
         "than the op; torch_pjrt.eager_mode(\"debug\") or TORCH_TPU_LAUNCH_BLOCKING=1 raises it "
         "at the op)";
}

// The first element of host tensor `bad` (bool, same shape as `t`) that is set: raises `error`.
void raise_first(const at::Tensor& t, const at::Tensor& bad, const CheckError& error) {
  const at::Tensor positions = bad.reshape(-1).nonzero();
  if (positions.numel() == 0) return;
  const at::Tensor first = t.reshape(-1)[positions[0][0].item<int64_t>()];
  raise(error.kind, error.before + (error.show_value ? std::to_string(first.item<int64_t>()) : "") +
                        error.after);
}

graph::CheckPtr record_check(const char* op, const at::Tensor& t, graph::Attrs attrs,
                             const CheckError& error) {
  const int device = device_index(t);
  graph::DataPtr value = graph::record1(lowering::kCheck, {read(t)}, std::move(attrs),
                                        hlo::TensorType{hlo::ElementType::I64, {2}}, device);
  const bool at_op = eager_mode() == EagerMode::Debug && !trace::active();
  graph::CheckPtr check =
      graph::add_check(std::move(value), error.kind, error.before,
                       error.after + (at_op ? "" : raised_later(op)), error.show_value);
  if (at_op) {  // Debug: raise before the op records anything, as the CPU does
    graph::compute({check->value});
    graph::resolve({check});
  }
  return check;
}

}  // namespace

graph::CheckPtr check_in_range(const char* op, const at::Tensor& t, int64_t lo, int64_t hi,
                               const CheckError& error, const std::vector<int64_t>& allowed) {
  if (t.numel() == 0) return nullptr;
  if (t.is_cpu()) {
    const at::Tensor v = t.to(at::kLong);
    at::Tensor bad = (v < lo) | (v >= hi);
    for (int64_t a : allowed) bad &= v != a;
    raise_first(v, bad, error);
    return nullptr;
  }
  graph::Attrs attrs;
  attrs.ints = {lowering::kOutOfRange, lo, hi};
  attrs.ints.insert(attrs.ints.end(), allowed.begin(), allowed.end());
  return record_check(op, t, std::move(attrs), error);
}

graph::CheckPtr check_nonzero(const char* op, const at::Tensor& t, const CheckError& error) {
  if (t.numel() == 0) return nullptr;
  if (t.is_cpu()) {
    raise_first(t, t == 0, error);
    return nullptr;
  }
  graph::Attrs attrs;
  attrs.ints = {lowering::kZero};
  return record_check(op, t, std::move(attrs), error);
}

graph::CheckPtr check_unit_interval(const char* op, const at::Tensor& t, const CheckError& error) {
  if (t.numel() == 0) return nullptr;
  if (t.is_cpu()) {
    raise_first(t, ~((t >= 0) & (t <= 1)), error);
    return nullptr;
  }
  graph::Attrs attrs;
  attrs.ints = {lowering::kOutsideUnit};
  return record_check(op, t, std::move(attrs), error);
}

}  // namespace torch_pjrt::aten
