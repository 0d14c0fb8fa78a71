// out= overloads of ops whose functional overload the device implements, all through one boxed
// kernel: the functional overload computes on the device, then each result is checked against its
// out tensor as the op's CPU kernel checks it and written there (resize_output, with its warning
// for a non-empty out of another shape). Without these, such out= calls took the CPU fallback.
#include <ATen/ATen.h>
#include <ATen/core/stack.h>
#include <ATen/native/LinearAlgebraUtils.h>
#include <ATen/native/Resize.h>
#include <torch/library.h>

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "aten/op_result.h"

namespace torch_pjrt::aten {
namespace {

using at::Tensor;

// The CPU kernel's checks of an out tensor, by kind of kernel.
enum class OutRule {
  // Structured kernels: exactly the result's dtype and device ("Expected out tensor to have dtype
  // float, but got int instead"); a resized out takes the result's strides.
  kStructured,
  // Linalg kernels written as functional-then-copy: same device as the input, a dtype the result
  // safely casts to (checkSameDevice and checkLinalgCompatibleDtype, with the op's API name and
  // its outs' names).
  kLinalgCastable,
  // Kernels that write through data_ptr<T>: exactly the result's dtype, with that check's message.
  kScalarType,
};

class OutViaFunctional final : public c10::OperatorKernel {
 public:
  OutViaFunctional(std::string functional_overload, OutRule rule, std::string api = {},
                   std::vector<std::string> out_names = {})
      : functional_overload_(std::move(functional_overload)),
        rule_(rule),
        api_(std::move(api)),
        out_names_(std::move(out_names)) {}

  void operator()(const c10::OperatorHandle& op, c10::DispatchKeySet, torch::jit::Stack* stack) {
    const auto& args = op.schema().arguments();
    size_t n_out = 0;
    for (const c10::Argument& a : args) n_out += a.is_out() ? 1 : 0;
    const size_t n_in = args.size() - n_out;  // out= arguments come last
    std::vector<Tensor> outs;
    for (size_t i = 0; i < n_out; ++i)
      outs.push_back(torch::jit::peek(*stack, i, n_out).toTensor());
    torch::jit::drop(*stack, n_out);
    if (rule_ == OutRule::kLinalgCastable) {
      // Checked before computing, as the CPU kernel does, against its first tensor argument.
      for (size_t i = 0; i < n_in; ++i) {
        const c10::IValue& v = torch::jit::peek(*stack, i, n_in);
        if (!v.isTensor()) continue;
        for (size_t k = 0; k < n_out; ++k) {
          at::native::checkSameDevice(api_, outs[k], v.toTensor(), out_names_.at(k));
        }
        break;
      }
    }
    functional(op).callBoxed(stack);
    std::vector<Tensor> results;
    for (size_t i = 0; i < n_out; ++i) {
      results.push_back(torch::jit::peek(*stack, i, n_out).toTensor());
    }
    torch::jit::drop(*stack, n_out);
    for (size_t k = 0; k < n_out; ++k) check(outs[k], results[k], k);
    for (size_t k = 0; k < n_out; ++k) write(outs[k], results[k]);
    for (Tensor& out : outs) torch::jit::push(*stack, std::move(out));
  }

 private:
  const c10::OperatorHandle& functional(const c10::OperatorHandle& op) {
    if (!functional_) {
      functional_ = c10::Dispatcher::singleton().findSchemaOrThrow(op.schema().name().c_str(),
                                                                   functional_overload_.c_str());
    }
    return *functional_;
  }

  void check(const Tensor& out, const Tensor& r, size_t k) const {
    switch (rule_) {
      case OutRule::kStructured:
        check_out_dtype(out, r.scalar_type());
        TORCH_CHECK(out.device() == r.device(), "Expected out tensor to have device ", r.device(),
                    ", but got ", out.device(), " instead");
        break;
      case OutRule::kLinalgCastable:
        at::native::checkLinalgCompatibleDtype(api_, out.scalar_type(), r.scalar_type(),
                                               out_names_.at(k));
        break;
      case OutRule::kScalarType:
        TORCH_CHECK(out.scalar_type() == r.scalar_type(), "expected scalar type ", r.scalar_type(),
                    " but found ", out.scalar_type());
        TORCH_CHECK(out.device() == r.device(), "Expected out tensor to have device ", r.device(),
                    ", but got ", out.device(), " instead");
        break;
    }
  }

  void write(Tensor& out, const Tensor& r) const {
    const bool resized = at::native::resize_output(out, r.sizes());
    // The structured kernels' meta functions give the layout of a resized out (column-major
    // matrices for the factorizations), which the functional result has too.
    if (resized && rule_ == OutRule::kStructured && !r.is_contiguous()) {
      out.as_strided_(r.sizes(), r.strides());
    }
    out.copy_(r);
  }

  std::string functional_overload_;
  OutRule rule_;
  std::string api_;
  std::vector<std::string> out_names_;
  std::optional<c10::OperatorHandle> functional_;
};

void impl(torch::Library& m, const char* out_overload, std::string functional_overload,
          OutRule rule, std::string api = {}, std::vector<std::string> out_names = {}) {
  m.impl(out_overload,
         torch::CppFunction::makeFromBoxedFunctor(std::make_unique<OutViaFunctional>(
             std::move(functional_overload), rule, std::move(api), std::move(out_names))));
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  for (const char* name :
       {"linalg_cholesky_ex.L", "triangular_solve.X", "_linalg_det.result", "_linalg_slogdet.sign",
        "_linalg_solve_ex.result", "linalg_inv_ex.inverse", "linalg_lu.out",
        "linalg_lu_factor_ex.out", "linalg_lu_solve.out", "linalg_qr.out", "lu_unpack.out"}) {
    impl(m, name, "", OutRule::kStructured);
  }
  impl(m, "scatter.reduce_out", "reduce", OutRule::kStructured);
  impl(m, "cholesky.out", "", OutRule::kLinalgCastable, "cholesky", {"result"});
  impl(m, "cholesky_inverse.out", "", OutRule::kLinalgCastable, "cholesky_inverse", {"result"});
  impl(m, "geqrf.a", "", OutRule::kLinalgCastable, "torch.geqrf", {"a", "tau"});
  impl(m, "linalg_householder_product.out", "", OutRule::kLinalgCastable,
       "torch.linalg.householder_product", {"result"});
  impl(m, "linalg_solve_triangular.out", "", OutRule::kScalarType);
}

}  // namespace torch_pjrt::aten
