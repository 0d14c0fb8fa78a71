// What differs between the torch releases torch_pjrt builds against (2.11-2.13): every conditional
// on the torch version is named here (scripts/check_build_matrix.sh compiles against each).
#pragma once

#include <c10/util/ThreadLocalDebugInfo.h>
#include <torch/headeronly/version.h>

#include <string_view>

#define TORCH_PJRT_TORCH_AT_LEAST(major, minor) \
  (TORCH_VERSION_MAJOR > (major) ||             \
   (TORCH_VERSION_MAJOR == (major) && TORCH_VERSION_MINOR >= (minor)))

// aten::_foreach_clone exists from torch 2.12.
#define TORCH_PJRT_HAS_FOREACH_CLONE TORCH_PJRT_TORCH_AT_LEAST(2, 12)

namespace torch_pjrt::compat {

// ThreadLocalDebugInfo slots of torch_pjrt's own (the thread-scoped eager mode and matmul
// precision, aten/thread_scoped.h: unlike a thread_local, the state in such a slot is copied into
// autograd's worker threads). torch 2.13 lets extensions name new slots; 2.11 and 2.12 have a fixed
// enum, of which only the two test slots are unused outside PyTorch's own C++ tests: torch_pjrt
// takes them there.
#if TORCH_PJRT_TORCH_AT_LEAST(2, 13)
inline constexpr std::string_view kEagerModeSlotName = "torch_pjrt.eager_mode";
inline constexpr c10::DebugInfoKind kEagerModeSlot{&kEagerModeSlotName};
inline constexpr std::string_view kPrecisionSlotName = "torch_pjrt.matmul_precision";
inline constexpr c10::DebugInfoKind kPrecisionSlot{&kPrecisionSlotName};
#else
inline constexpr c10::DebugInfoKind kEagerModeSlot = c10::DebugInfoKind::TEST_INFO_2;
inline constexpr c10::DebugInfoKind kPrecisionSlot = c10::DebugInfoKind::TEST_INFO;
#endif

}  // namespace torch_pjrt::compat
