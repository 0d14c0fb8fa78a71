// Settings scoped to a block of one thread (eager mode, matmul precision) that follow the work the
// block starts: each lives in a c10::ThreadLocalDebugInfo slot of its own, which PyTorch copies
// into the autograd engine's device threads and other worker threads (a thread_local would not
// reach them), so `loss.backward()` inside the block runs under the same setting.
#pragma once

#include <c10/util/ThreadLocalDebugInfo.h>

#include <memory>
#include <string_view>

namespace torch_pjrt::aten {

// `Name` names the slot (its address is the slot's identity).
template <class T, const std::string_view* Name>
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
  static constexpr c10::DebugInfoKind kind() { return c10::DebugInfoKind{Name}; }
};

}  // namespace torch_pjrt::aten
