// Runs a structured ATen op's C++ meta function (its argument checks, with the CPU kernel's own
// messages) on the operands themselves. Going through the dispatcher's Meta key on meta copies
// would reach the Python meta kernels torch registers over several ops (gather, scatter,
// index_add/copy/reduce), which cost tens of microseconds a call.
#pragma once

#include <ATen/Tensor.h>
#include <ATen/TensorMeta.h>

#include <utility>
#include <vector>

namespace torch_pjrt::aten {

// Structured is ATen's at::meta::structured_<op> class. Its meta() reports the result's shape
// through set_output_*, recorded here; `out`, when given, is the tensor written (an in-place op's
// self), on which the meta function runs its overlap checks.
template <typename Structured>
class MetaChecks final : public Structured {
 public:
  explicit MetaChecks(at::Tensor out = {}) : out_(std::move(out)) {}

  const at::Tensor& maybe_get_output(int64_t) override { return out_; }
  void set_output_strided(int64_t, at::IntArrayRef sizes, at::IntArrayRef,
                          at::TensorOptions options) override {
    set_output(sizes, options);
  }
  void set_output_raw_strided(int64_t, at::IntArrayRef sizes, at::IntArrayRef,
                              at::TensorOptions options) override {
    set_output(sizes, options);
  }

  const std::vector<int64_t>& sizes() const { return sizes_; }

 private:
  // A functional call's output, as the meta functions see it: the result's dtype, device and
  // sizes, without storage (they look at its device, never at its data).
  void set_output(at::IntArrayRef sizes, at::TensorOptions options) {
    sizes_ = sizes.vec();
    if (out_.defined()) return;
    out_ = at::detail::make_tensor<c10::TensorImpl>(
        c10::DispatchKeySet(options.computeDispatchKey()), options.dtype(), options.device());
    out_.unsafeGetTensorImpl()->set_sizes_contiguous(sizes);
  }

  at::Tensor out_;
  std::vector<int64_t> sizes_;
};

// Checks the arguments of a functional call of Structured's op; returns the result's sizes.
template <typename Structured, typename... Args>
std::vector<int64_t> check_structured(Args&&... args) {
  MetaChecks<Structured> checks;
  checks.meta(std::forward<Args>(args)...);
  return checks.sizes();
}

// The same for an in-place call on `self`, with the meta function's overlap checks of self.
template <typename Structured, typename... Args>
void check_structured_inplace(const at::Tensor& self, Args&&... args) {
  MetaChecks<Structured> checks(self);
  checks.meta(self, std::forward<Args>(args)...);
}

}  // namespace torch_pjrt::aten
