// out= overloads of ops whose functional overload runs on the device, all through one boxed
// kernel: the functional overload computes on the device, then each out is checked as the op's
// CPU kernel checks it (its messages), resized and laid out as that kernel does (resize_output's
// warning for a non-empty out of another shape, or resize_ without one; LAPACK's column-major
// matrices), and written. Without these, such out= calls took the CPU fallback.
#include <ATen/ATen.h>
#include <ATen/core/stack.h>
#include <ATen/native/LinearAlgebraUtils.h>
#include <ATen/native/Resize.h>
#include <torch/library.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "aten/op_result.h"

namespace torch_pjrt::aten {
namespace {

using at::Tensor;

// Checks out tensor `k` against its result `r` as the CPU kernel does (`input`: the op's first
// tensor argument).
using Check =
    std::function<void(const Tensor& out, const Tensor& r, const Tensor& input, size_t k)>;

// How the CPU kernel resizes an out of another shape.
enum class Resize {
  kWarn,        // resize_output, with its warning for a non-empty out
  kStructured,  // the same, then the result's strides (the meta function's layout of a new out)
  kSilent,      // resize_, no warning (narrow_copy, log_sigmoid_forward)
};

// TORCH_CHECK's message when it is given none.
void check_bare(bool ok, const char* condition) {
  TORCH_CHECK(ok, "Expected ", condition, " to be true, but got false.  (Could this error message ",
              "be improved?  If so, please report an enhancement request to PyTorch.)");
}

void same_device(const Tensor& out, const Tensor& r) {
  TORCH_CHECK(out.device() == r.device(), "Expected out tensor to have device ", r.device(),
              ", but got ", out.device(), " instead");
}

// Structured kernels: exactly the result's dtype and device.
void structured(const Tensor& out, const Tensor& r, const Tensor&, size_t) {
  check_out_dtype(out, r.scalar_type());
  same_device(out, r);
}

// Kernels that write through data_ptr<T>: exactly the result's dtype, with that check's message.
void data_ptr_dtype(const Tensor& out, const Tensor& r, const Tensor&, size_t) {
  TORCH_CHECK(out.scalar_type() == r.scalar_type(), "expected scalar type ", r.scalar_type(),
              " but found ", out.scalar_type());
  same_device(out, r);
}

// TensorIterator kernels: a dtype the result casts to, on the result's device.
void castable(const Tensor& out, const Tensor& r, const Tensor&, size_t) {
  TORCH_CHECK(at::canCast(r.scalar_type(), out.scalar_type()), "result type ", r.scalar_type(),
              " can't be cast to the desired output type ", out.scalar_type());
  same_device(out, r);
}

// Linalg kernels written as functional-then-copy: the input's device, a dtype the result safely
// casts to; `api` and the outs' `names` as their messages say them.
Check linalg_castable(std::string api, std::vector<std::string> names) {
  return [api = std::move(api), names = std::move(names)](const Tensor& out, const Tensor& r,
                                                          const Tensor& input, size_t k) {
    at::native::checkSameDevice(api, out, input, names.at(k));
    at::native::checkLinalgCompatibleDtype(api, out.scalar_type(), r.scalar_type(), names.at(k));
  };
}

// max() and min() of all elements.
void reduce_all(const Tensor& out, const Tensor&, const Tensor& input, size_t) {
  check_bare(input.device() == out.device(), "self.device() == out.device()");
  check_bare(at::canCast(input.scalar_type(), out.scalar_type()),
             "canCast( typeMetaToScalarType(self.dtype()), typeMetaToScalarType(out.dtype()))");
}

void narrow_copy(const Tensor& out, const Tensor& r, const Tensor& input, size_t) {
  check_bare(input.dtype() == out.dtype(), "self.dtype() == output.dtype()");
  same_device(out, r);
}

void ormqr(const Tensor& out, const Tensor&, const Tensor& input, size_t) {
  at::native::checkSameDevice("torch.ormqr", out, input);
  TORCH_CHECK(out.scalar_type() == input.scalar_type(),
              "torch.ormqr: Expected input and result to have the same dtype, but input has dtype",
              input.scalar_type(), " and result has dtype ", out.scalar_type());
}

void histogram(const Tensor& out, const Tensor& r, const Tensor& input, size_t k) {
  const char* name = k == 0 ? "hist" : "bin_edges";
  TORCH_CHECK(input.dtype() == out.dtype(), "torch.histogram: input tensor and ", name,
              " tensor should have the same dtype, but got input ", input.dtype(), " and ", name,
              " ", out.dtype(), k == 0 ? "" : " for dimension 0");
  same_device(out, r);
}

class OutViaFunctional final : public c10::OperatorKernel {
 public:
  OutViaFunctional(c10::OperatorHandle functional, Check check, Resize resize,
                   unsigned column_major, std::string ex_api)
      : functional_(std::move(functional)),
        check_(std::move(check)),
        resize_(resize),
        column_major_(column_major),
        ex_api_(std::move(ex_api)) {}

  void operator()(const c10::OperatorHandle& op, c10::DispatchKeySet, torch::jit::Stack* stack) {
    const auto& args = op.schema().arguments();
    size_t n_out = 0;
    for (const c10::Argument& a : args) n_out += a.is_out() ? 1 : 0;
    const size_t n_in = args.size() - n_out;  // out= arguments come last
    std::vector<Tensor> outs;
    for (size_t i = 0; i < n_out; ++i) {
      outs.push_back(torch::jit::peek(*stack, i, n_out).toTensor());
    }
    torch::jit::drop(*stack, n_out);
    Tensor input;
    for (size_t i = 0; i < n_in && !input.defined(); ++i) {
      const c10::IValue& v = torch::jit::peek(*stack, i, n_in);
      if (v.isTensor()) input = v.toTensor();
    }
    // A *_ex op's CPU kernel checks and writes its outs before it raises for the values (its
    // check_errors): the functional form computes without raising, and the values are checked
    // once written, from the last out (info).
    bool check_errors = false;
    if (!ex_api_.empty()) {
      c10::IValue& flag =
          torch::jit::peek(*stack, *op.schema().argumentIndexWithName("check_errors"), n_in);
      check_errors = flag.toBool();
      flag = false;
    }
    functional_.callBoxed(stack);
    std::vector<Tensor> results;
    for (size_t i = 0; i < n_out; ++i) {
      results.push_back(torch::jit::peek(*stack, i, n_out).toTensor());
    }
    torch::jit::drop(*stack, n_out);
    for (size_t k = 0; k < n_out; ++k) check_(outs[k], results[k], input, k);
    for (size_t k = 0; k < n_out; ++k) write(outs[k], results[k], (column_major_ >> k) & 1);
    if (check_errors) at::_linalg_check_errors(outs.back(), ex_api_, input.dim() == 2);
    for (Tensor& out : outs) torch::jit::push(*stack, std::move(out));
  }

 private:
  // `lapack`: the CPU kernel lays this out column-major once resized (kStructured) or when passed
  // empty (kWarn: kernels that compute in place in an empty out, through a copy otherwise).
  void write(Tensor& out, const Tensor& r, bool lapack) const {
    if (resize_ == Resize::kSilent) {
      out.resize_(r.sizes());
      out.copy_(r);
      return;
    }
    const bool was_empty = out.numel() == 0;
    const bool resized = at::native::resize_output(out, r.sizes());
    const bool column_major =
        lapack && r.dim() >= 2 && (resize_ == Resize::kStructured ? resized : was_empty);
    if (column_major) {
      out.as_strided_(r.sizes(), at::native::batched_matrix_contiguous_strides(r.sizes(), true));
    } else if (resized && resize_ == Resize::kStructured && !r.is_contiguous()) {
      out.as_strided_(r.sizes(), r.strides());
    }
    out.copy_(r);
  }

  c10::OperatorHandle functional_;
  Check check_;
  Resize resize_;
  unsigned column_major_;
  std::string ex_api_;  // a *_ex op's name in its value errors
};

struct Form {
  Resize resize = Resize::kWarn;
  unsigned column_major = 0;  // bit k: the CPU's LAPACK kernel lays out k column-major
  std::string ex_api = {};    // a *_ex op's name in its value errors
};

// Registers `out_overload` ("op.overload") through op's overload `functional_overload` (not at
// all if this torch lacks it: the out= form then takes the CPU fallback, which
// test_out_views.py's dispatcher check reports).
void impl(torch::Library& m, const std::string& out_overload, const char* functional_overload,
          Check check, Form form = {}) {
  const std::string op = "aten::" + out_overload.substr(0, out_overload.find('.'));
  std::optional<c10::OperatorHandle> functional =
      c10::Dispatcher::singleton().findSchema({op, functional_overload});
  if (!functional) return;
  m.impl(out_overload.c_str(),
         torch::CppFunction::makeFromBoxedFunctor(std::make_unique<OutViaFunctional>(
             *std::move(functional), std::move(check), form.resize, form.column_major,
             std::move(form.ex_api))));
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  const Form structured_form{Resize::kStructured};
  for (const char* name : {"linalg_lu.out", "lu_unpack.out"}) {
    impl(m, name, "", structured, structured_form);
  }
  impl(m, "_linalg_det.result", "", structured, {Resize::kStructured, 0b10});     // LU
  impl(m, "_linalg_slogdet.sign", "", structured, {Resize::kStructured, 0b100});  // LU
  impl(m, "scatter.reduce_out", "reduce", structured, structured_form);
  impl(m, "triangular_solve.X", "", structured, {Resize::kStructured, 0b11});
  impl(m, "linalg_qr.out", "", structured, {Resize::kStructured, 0b11});
  impl(m, "linalg_lu_solve.out", "", structured, {Resize::kStructured, 1});
  impl(m, "linalg_cholesky_ex.L", "", structured, {Resize::kStructured, 1, "linalg.cholesky_ex"});
  impl(m, "linalg_inv_ex.inverse", "", structured, {Resize::kStructured, 1, "linalg.inv_ex"});
  impl(m, "linalg_lu_factor_ex.out", "", structured,
       {Resize::kStructured, 1, "torch.linalg.lu_factor_ex"});
  impl(m, "_linalg_solve_ex.result", "", structured,
       {Resize::kStructured, 0b11, "torch.linalg.solve_ex"});
  impl(m, "scatter.value_reduce_out", "value_reduce", structured, structured_form);
  impl(m, "norm.out", "ScalarOpt_dim", structured, structured_form);
  impl(m, "norm.dtype_out", "ScalarOpt_dim_dtype", structured, structured_form);
  impl(m, "logit_backward.grad_input", "", castable);
  impl(m, "cholesky.out", "", linalg_castable("cholesky", {"result"}));
  const Form lapack{Resize::kWarn, 1};
  impl(m, "cholesky_inverse.out", "", linalg_castable("cholesky_inverse", {"result"}), lapack);
  impl(m, "geqrf.a", "", linalg_castable("torch.geqrf", {"a", "tau"}), lapack);
  impl(m, "linalg_householder_product.out", "",
       linalg_castable("torch.linalg.householder_product", {"result"}), lapack);
  impl(m, "ormqr.out", "", ormqr, lapack);
  // Its CPU kernel resizes as the structured ones do.
  impl(m, "linalg_solve_triangular.out", "", data_ptr_dtype, {Resize::kStructured, 1});
  impl(m, "max.unary_out", "", reduce_all);
  impl(m, "min.unary_out", "", reduce_all);
  impl(m, "histogram.bin_ct_out", "bin_ct", histogram);
  impl(m, "histogram.bins_tensor_out", "bins_tensor", histogram);
  impl(m, "narrow_copy.out", "", narrow_copy, {Resize::kSilent});
  impl(m, "log_sigmoid_forward.output", "", data_ptr_dtype, {Resize::kSilent});
}

}  // namespace torch_pjrt::aten
