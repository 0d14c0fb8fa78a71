// The "tpu" random generator: Philox-style (seed, offset) state, one default generator per device.
// The offset counts the 32-bit words of the Philox4x32 stream keyed by the seed that random ops
// have consumed (see aten/random.cpp).
#pragma once

#include <ATen/core/Generator.h>
#include <c10/core/GeneratorImpl.h>

namespace torch_pjrt::device {

class Generator final : public c10::GeneratorImpl {
 public:
  explicit Generator(c10::DeviceIndex index);

  void set_current_seed(uint64_t seed) override;
  uint64_t current_seed() const override { return seed_; }
  uint64_t seed() override;  // a fresh non-deterministic seed, set and returned
  void set_offset(uint64_t offset) override { offset_ = offset; }
  uint64_t get_offset() const override { return offset_; }
  // 16 bytes (uint8 CPU tensor): seed then offset, little-endian uint64.
  void set_state(const c10::TensorImpl& state) override;
  c10::intrusive_ptr<c10::TensorImpl> get_state() const override;

  static c10::DeviceType device_type() { return c10::DeviceType::PrivateUse1; }

 private:
  Generator* clone_impl() const override;
  uint64_t seed_ = 67280421310721ULL;  // PyTorch's default seed
  uint64_t offset_ = 0;
};

const at::Generator& default_generator(c10::DeviceIndex index);

}  // namespace torch_pjrt::device
