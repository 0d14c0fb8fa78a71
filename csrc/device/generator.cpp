// (seed, offset) generator state for "tpu" devices.
#include "device/generator.h"

#include <ATen/EmptyTensor.h>
#include <ATen/Utils.h>
#include <ATen/core/Tensor.h>
#include <c10/core/TensorImpl.h>

#include <cstring>
#include <mutex>
#include <random>
#include <vector>

#include "device/runtime_state.h"

namespace torch_pjrt::device {
namespace {
constexpr size_t kStateBytes = 2 * sizeof(uint64_t);
}

Generator::Generator(c10::DeviceIndex index)
    : c10::GeneratorImpl(c10::Device(c10::DeviceType::PrivateUse1, index),
                         c10::DispatchKeySet(c10::DispatchKey::PrivateUse1)) {}

void Generator::set_current_seed(uint64_t seed) {
  seed_ = seed;
  offset_ = 0;
}

uint64_t Generator::seed() {
  std::random_device rd;
  const uint64_t s = (static_cast<uint64_t>(rd()) << 32) | rd();
  set_current_seed(s);
  return s;
}

void Generator::set_state(const c10::TensorImpl& state) {
  // CUDA's checks and messages: a contiguous uint8 CPU tensor of the state's size.
  at::detail::check_rng_state(state);
  TORCH_CHECK(state.numel() == static_cast<int64_t>(kStateBytes), "RNG state is wrong size");
  const auto* bytes = static_cast<const uint8_t*>(state.data());
  std::memcpy(&seed_, bytes, sizeof seed_);
  std::memcpy(&offset_, bytes + sizeof seed_, sizeof offset_);
}

c10::intrusive_ptr<c10::TensorImpl> Generator::get_state() const {
  // Allocated without dispatch, as CUDA's and the CPU's generators do, so that the state is a real
  // tensor under FakeTensorMode (torch.compile and DTensor read it there).
  at::Tensor state = at::detail::empty_cpu({static_cast<int64_t>(kStateBytes)}, at::kByte);
  auto* bytes = state.data_ptr<uint8_t>();
  std::memcpy(bytes, &seed_, sizeof seed_);
  std::memcpy(bytes + sizeof seed_, &offset_, sizeof offset_);
  return state.getIntrusivePtr();
}

Generator* Generator::clone_impl() const {
  auto* g = new Generator(device().index());
  g->seed_ = seed_;
  g->offset_ = offset_;
  return g;
}

const at::Generator& default_generator(c10::DeviceIndex index) {
  static std::mutex mutex;
  static std::vector<at::Generator> generators;
  std::lock_guard<std::mutex> lock(mutex);
  if (generators.empty()) {
    const int count = device_count();
    for (int i = 0; i < count; ++i) {
      generators.push_back(at::make_generator<Generator>(static_cast<c10::DeviceIndex>(i)));
    }
  }
  const int i = index < 0 ? current_device() : index;
  TORCH_CHECK_INDEX(i >= 0 && i < static_cast<int>(generators.size()), "tpu: invalid device index ",
                    i, " for a generator");
  return generators[i];
}

}  // namespace torch_pjrt::device
