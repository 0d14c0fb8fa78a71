// Settings scoped to a block of one thread (eager mode, matmul precision) that follow the work the
// block starts: each lives in a c10::ThreadLocalDebugInfo slot of its own, which PyTorch copies
// into the autograd engine's device threads and other worker threads (a thread_local would not
// reach them), so `loss.backward()` inside the block runs under the same setting.
#pragma once

#include <c10/util/ThreadLocalDebugInfo.h>

#include <memory>

namespace torch_pjrt::aten {

// `Slot` is the slot's kind (aten/torch_compat.h defines one per setting).
template <class T, const c10::DebugInfoKind* Slot>
class ThreadScoped {
 public:
  // The innermost value pushed on this thread (or inherited by it), or null.
  static const T* get() {
    auto* info = c10::ThreadLocalDebugInfo::get(kind());
    return info == nullptr ? nullptr : &static_cast<const Holder*>(info)->value;
  }
  static void push(T value) {
    c10::ThreadLocalDebugInfo::_push(kind(), std::make_shared<Holder>(std::move(value)));
  }
  // Pops the innermost value; blocks must nest.
  static void pop() { c10::ThreadLocalDebugInfo::_pop(kind()); }

 private:
  struct Holder : c10::DebugInfoBase {
    explicit Holder(T v) : value(std::move(v)) {}
    T value;
  };
  static c10::DebugInfoKind kind() { return *Slot; }
};

}  // namespace torch_pjrt::aten
