// PyTorch's FFT primitives _fft_c2c, _fft_r2c and _fft_c2r (and their out= forms), which every
// torch.fft function and its gradient reduce to, lowered to StableHLO's fft (lowering/fft.h).
#include "lowering/fft.h"

#include <ATen/ATen.h>
#include <ATen/WrapDimUtilsMulti.h>
#include <torch/library.h>

#include "aten/op_result.h"
#include "aten/tensor_bridge.h"
#include "lowering/creation.h"

namespace torch_pjrt::aten {
namespace {

using at::Tensor;
using lowering::FftKind;

// The transform's dims wrapped and checked for repeats, as lowering ints after kind and norm.
graph::Attrs fft_attrs(const char* name, const Tensor& self, at::IntArrayRef dim, FftKind kind,
                       int64_t normalization) {
  TORCH_CHECK(normalization >= 0 && normalization <= 2, name, ": invalid normalization mode ",
              normalization);
  graph::Attrs attrs;
  attrs.ints = {static_cast<int64_t>(kind), normalization};
  std::vector<bool> seen(self.dim(), false);
  for (int64_t d : dim) {
    const int64_t w = at::maybe_wrap_dim(d, self.dim());
    TORCH_CHECK(!seen[w], name, ": dims must be unique, got dim ", d, " twice");
    seen[w] = true;
    attrs.ints.push_back(w);
  }
  return attrs;
}

OpResult fft_result(const char* name, const Tensor& self, at::IntArrayRef dim, FftKind kind,
                    int64_t normalization, at::ScalarType dtype, std::vector<int64_t> sizes) {
  const int device = common_device(name, {&self});
  graph::Attrs attrs = fft_attrs(name, self, dim, kind, normalization);
  graph::DataPtr value;
  if (dim.empty() || c10::multiply_integers(sizes) == 0 || self.numel() == 0) {
    // Nothing to transform (or nothing to hold): the input converted, or zeros.
    value = self.numel() > 0 && c10::multiply_integers(sizes) > 0
                ? convert(read(self), dtype)
                : graph::record1(lowering::kFill, {}, graph::Attrs{{}, {0.0}},
                                 tensor_type(dtype, sizes), device);
  } else {
    value = graph::record1(lowering::kFft, {read(self)}, std::move(attrs),
                           tensor_type(dtype, sizes), device);
  }
  return {value, dtype, std::move(sizes), device};
}

OpResult c2c_result(const Tensor& self, at::IntArrayRef dim, int64_t normalization, bool forward) {
  TORCH_CHECK(self.is_complex(), "_fft_c2c: expected a complex input tensor, but got ",
              self.scalar_type());
  return fft_result("_fft_c2c", self, dim, forward ? FftKind::C2CForward : FftKind::C2CInverse,
                    normalization, self.scalar_type(), self.sizes().vec());
}

OpResult r2c_result(const Tensor& self, at::IntArrayRef dim, int64_t normalization, bool onesided) {
  TORCH_CHECK(self.is_floating_point(), "_fft_r2c: expected a real floating point input, got ",
              self.scalar_type());
  TORCH_CHECK(self.scalar_type() == at::kFloat || self.scalar_type() == at::kDouble,
              "Unsupported dtype ", self.scalar_type());
  std::vector<int64_t> sizes = self.sizes().vec();
  if (onesided && !dim.empty()) {
    const int64_t last = at::maybe_wrap_dim(dim.back(), self.dim());
    sizes[last] = sizes[last] / 2 + 1;
  }
  return fft_result("_fft_r2c", self, dim, FftKind::R2C, normalization,
                    c10::toComplexType(self.scalar_type()), std::move(sizes));
}

OpResult c2r_result(const Tensor& self, at::IntArrayRef dim, int64_t normalization,
                    int64_t last_dim_size) {
  TORCH_CHECK(self.is_complex(), "_fft_c2r: expected a complex input tensor, but got ",
              self.scalar_type());
  TORCH_CHECK(!dim.empty(), "_fft_c2r: expected at least one dim");
  TORCH_CHECK(last_dim_size >= 1, "Invalid number of data points (", last_dim_size, ") specified");
  std::vector<int64_t> sizes = self.sizes().vec();
  sizes[at::maybe_wrap_dim(dim.back(), self.dim())] = last_dim_size;
  return fft_result("_fft_c2r", self, dim, FftKind::C2R, normalization,
                    c10::toRealValueType(self.scalar_type()), std::move(sizes));
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_fft_c2c", [](const Tensor& self, at::IntArrayRef dim, int64_t norm, bool forward) {
    return to_new(c2c_result(self, dim, norm, forward));
  });
  m.impl("_fft_c2c.out",
         [](const Tensor& self, at::IntArrayRef dim, int64_t norm, bool forward,
            Tensor& out) -> Tensor& { return to_out(out, c2c_result(self, dim, norm, forward)); });
  m.impl("_fft_r2c", [](const Tensor& self, at::IntArrayRef dim, int64_t norm, bool onesided) {
    return to_new(r2c_result(self, dim, norm, onesided));
  });
  m.impl("_fft_r2c.out",
         [](const Tensor& self, at::IntArrayRef dim, int64_t norm, bool onesided,
            Tensor& out) -> Tensor& { return to_out(out, r2c_result(self, dim, norm, onesided)); });
  m.impl("_fft_c2r", [](const Tensor& self, at::IntArrayRef dim, int64_t norm, int64_t n) {
    return to_new(c2r_result(self, dim, norm, n));
  });
  m.impl("_fft_c2r.out",
         [](const Tensor& self, at::IntArrayRef dim, int64_t norm, int64_t n,
            Tensor& out) -> Tensor& { return to_out(out, c2r_result(self, dim, norm, n)); });
}

}  // namespace torch_pjrt::aten
