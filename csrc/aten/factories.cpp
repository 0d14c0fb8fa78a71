// Range factories on "tpu": arange, range, linspace, logspace and eye (their out= forms; the
// functional forms and zeros/ones/full/*_like are composite over these, empty and fill_).
#include "lowering/factories.h"

#include <ATen/ATen.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/native/RangeUtils.h>
#include <torch/library.h>

#include "aten/tensor_bridge.h"

namespace torch_pjrt::aten {
namespace {

using at::Scalar;
using at::Tensor;

void record_into(Tensor& out, const graph::OpDef& op, graph::Attrs attrs) {
  const int device = device_index(out);
  write(out, graph::record1(op, {}, std::move(attrs), tensor_type(out.scalar_type(), out.sizes()),
                            device));
  finish_op();
}

// out[i] = start + i * step for the `size` elements of out (arange, range).
Tensor& record_progression(Tensor& out, const Scalar& start, const Scalar& step, int64_t size) {
  if (size == 0) return out;
  at::assert_no_internal_overlap(out);  // the CPU's nullary TensorIterator check
  graph::Attrs attrs;
  if (at::isFloatingType(out.scalar_type())) {
    attrs.floats = {start.to<double>(), step.to<double>()};
  } else {
    attrs.ints = {start.to<int64_t>(), step.to<int64_t>()};
  }
  record_into(out, lowering::kArange, std::move(attrs));
  return out;
}

Tensor& arange_out(const Scalar& start, const Scalar& end, const Scalar& step, Tensor& out) {
  int64_t size = 0;
  AT_DISPATCH_ALL_TYPES_AND2(at::kHalf, at::kBFloat16, out.scalar_type(), "arange_cpu", [&] {
    size = at::native::compute_arange_size<scalar_t>(start, end, step);
  });
  const int64_t numel = out.numel();
  if (numel != size) {
    if (numel > 0) {
      TORCH_WARN("The number of elements in the out tensor of shape ", out.sizes(), " is ", numel,
                 " which does not match the computed number of elements ", size,
                 ". Note that this may occur as a result of rounding error. "
                 "The out tensor will be resized to a tensor of shape (",
                 size, ",).");
    }
    out.resize_({size});
  }
  return record_progression(out, start, step, size);
}

// range (deprecated, end inclusive): size (end - start) / step + 1 in the accumulate type.
Tensor& range_out(const Scalar& start, const Scalar& end, const Scalar& step, Tensor& out) {
  int64_t size = 0;
  AT_DISPATCH_ALL_TYPES_AND2(at::kBFloat16, at::kHalf, out.scalar_type(), "range_cpu", [&] {
    using acc = at::acc_type<scalar_t, false>;
    at::native::arange_check_bounds(start, end, step);
    size = static_cast<int64_t>(((end.to<acc>() - start.to<acc>()) / step.to<acc>()) + 1);
  });
  if (out.numel() != size) out.resize_({size});
  return record_progression(out, start, step, size);
}

Tensor& linspace_out(const Scalar& start, const Scalar& end, int64_t steps, Tensor& out) {
  TORCH_CHECK(steps >= 0, "number of steps must be non-negative");
  if (out.numel() != steps) out.resize_({steps});
  if (steps == 0) return out;
  if (steps == 1) return out.fill_(start);
  if (out.is_complex()) {
    // The CPU's complex steps divide by a real count, so each part is a linspace of its own.
    const Tensor parts = at::view_as_real(out);
    const c10::complex<double> a = start.toComplexDouble(), b = end.toComplexDouble();
    Tensor re = parts.select(-1, 0), im = parts.select(-1, 1);
    linspace_out(a.real(), b.real(), steps, re);
    linspace_out(a.imag(), b.imag(), steps, im);
    return out;
  }
  graph::Attrs attrs;
  AT_DISPATCH_ALL_TYPES_AND2(at::kHalf, at::kBFloat16, out.scalar_type(), "linspace_cpu", [&] {
    // Integer outputs start from the endpoints converted to the output type.
    attrs.floats = {static_cast<double>(start.to<scalar_t>()),
                    static_cast<double>(end.to<scalar_t>())};
  });
  at::assert_no_internal_overlap(out);
  record_into(out, lowering::kLinspace, std::move(attrs));
  return out;
}

// The CPU's logspace: base ** (linspace of the exponents), exponents and powers in double for real
// outputs (from the endpoints converted to the output type), in the output type for complex.
Tensor& logspace_out(const Scalar& start, const Scalar& end, int64_t steps, double base,
                     Tensor& out) {
  TORCH_CHECK(steps >= 0, "number of steps must be non-negative");
  if (out.numel() != steps) out.resize_({steps});
  if (steps == 0) return out;
  if (out.is_complex()) {
    if (steps == 1) return out.fill_(std::pow(base, start.toComplexDouble()));
    Tensor exponents = at::empty(out.sizes(), out.options());
    linspace_out(start, end, steps, exponents);
    return out.copy_(at::pow(c10::complex<double>(base), exponents));
  }
  if (steps == 1) return out.fill_(std::pow(base, start.to<double>()));
  double first = 0, last = 0;
  AT_DISPATCH_ALL_TYPES_AND2(at::kHalf, at::kBFloat16, out.scalar_type(), "logspace_cpu", [&] {
    first = static_cast<double>(start.to<scalar_t>());
    last = static_cast<double>(end.to<scalar_t>());
  });
  Tensor exponents = at::empty(out.sizes(), out.options().dtype(at::kDouble));
  linspace_out(first, last, steps, exponents);
  return out.copy_(at::pow(base, exponents));
}

Tensor& eye_m_out(int64_t n, int64_t m, Tensor& out) {
  TORCH_CHECK(n >= 0, "n must be greater or equal to 0, got ", n);
  TORCH_CHECK(m >= 0, "m must be greater or equal to 0, got ", m);
  out.resize_({n, m});
  if (out.numel() > 0) record_into(out, lowering::kEye, {});
  return out;
}

Tensor& eye_out(int64_t n, Tensor& out) { return eye_m_out(n, n, out); }

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("arange.start_out", arange_out);
  m.impl("range.out", range_out);
  // The composite range.out_ calls the CPU kernel directly, which would write to device memory.
  m.impl("range.out_", [](const Scalar& start, const Scalar& end, Tensor& out) -> Tensor& {
    return range_out(start, end, 1, out);
  });
  m.impl("linspace.out", linspace_out);
  m.impl("logspace.out", logspace_out);
  m.impl("eye.out", eye_out);
  m.impl("eye.m_out", eye_m_out);
}

}  // namespace torch_pjrt::aten
