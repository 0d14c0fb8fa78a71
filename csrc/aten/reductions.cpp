// Reductions: sum, mean, prod, max/min (also with indices), argmax/argmin, amax/amin, aminmax,
// var/std, linalg_vector_norm, logsumexp and all/any, with PyTorch's dtype rules and checks.
#include "lowering/reductions.h"

#include <ATen/ATen.h>
#include <ATen/WrapDimUtilsMulti.h>
#include <ATen/native/ReduceOpsUtils.h>
#include <torch/library.h>

#include "aten/op_result.h"
#include "aten/tensor_bridge.h"
#include "lowering/complex.h"

namespace torch_pjrt::aten {
namespace {

using at::Tensor;

// The reduced dims of `self` (absent or empty: all) as lowering ints, and the result sizes.
std::vector<int64_t> reduced_dims(const Tensor& self, at::OptionalIntArrayRef dims, bool keepdim,
                                  std::vector<int64_t>& sizes) {
  const int64_t ndim = self.dim();
  const bool all = !dims.has_value() || dims->empty();
  const auto mask =
      all ? std::bitset<at::dim_bitset_size>().set() : at::dim_list_to_bitset(*dims, ndim);
  std::vector<int64_t> reduced;
  for (int64_t d = 0; d < ndim; ++d) {
    if (mask[d]) {
      reduced.push_back(d);
      if (keepdim) sizes.push_back(1);
    } else {
      sizes.push_back(self.size(d));
    }
  }
  return reduced;
}

OpResult reduce(const graph::OpDef& op, const char* name, const Tensor& self,
                at::OptionalIntArrayRef dims, bool keepdim, at::ScalarType dtype,
                std::vector<double> floats = {}) {
  const int device = common_device(name, {&self});
  std::vector<int64_t> sizes;
  graph::Attrs attrs{reduced_dims(self, dims, keepdim, sizes), std::move(floats)};
  auto value =
      graph::record1(op, {read(self)}, std::move(attrs), tensor_type(dtype, sizes), device);
  return {value, dtype, sizes, device};
}

at::ScalarType sum_dtype(const Tensor& self, std::optional<at::ScalarType> dtype) {
  if (dtype) return *dtype;
  return at::isIntegralType(self.scalar_type(), /*includeBool=*/true) ? at::kLong
                                                                      : self.scalar_type();
}

// The dtype a sum or prod with out= computes in: the dtype given, which out must then have, else
// out's (the input converted to it first, as on the CPU).
at::ScalarType out_reduction_dtype(const Tensor& out, std::optional<at::ScalarType> dtype) {
  if (dtype) check_out_dtype(out, *dtype);
  return dtype.value_or(out.scalar_type());
}

at::ScalarType mean_dtype(const Tensor& self, std::optional<at::ScalarType> dtype) {
  const at::ScalarType t = dtype.value_or(self.scalar_type());
  TORCH_CHECK(at::isFloatingType(t) || at::isComplexType(t),
              "mean(): could not infer output dtype. ", dtype ? "Optional" : "Input",
              " dtype must be either a floating point or complex "
              "dtype. Got: ",
              t);
  return t;
}

// Complex inputs have no ordering: the CPU's error (its kernel's name, e.g. "max_all").
void check_not_complex(const Tensor& self, const char* kernel) {
  TORCH_CHECK_NOT_IMPLEMENTED(!self.is_complex(), "\"", kernel, "\" not implemented for '",
                              c10::toString(self.scalar_type()), "'");
}

// max()/min() over every element; PyTorch rejects empty inputs.
OpResult extremum_all(const graph::OpDef& op, const char* name, const Tensor& self) {
  check_not_complex(self, &op == &lowering::kAmax ? "max_all" : "min_all");
  TORCH_CHECK(self.numel() > 0, name,
              "(): Expected reduction dim to be specified for "
              "input.numel() == 0. Specify the reduction dim with the 'dim' argument.");
  return reduce(op, name, self, std::nullopt, false, self.scalar_type());
}

// amax/amin (and aminmax's halves) over `dims`.
OpResult extremum_dims(const graph::OpDef& op, const char* name, const Tensor& self,
                       at::IntArrayRef dims, bool keepdim) {
  check_not_complex(self, &op == &lowering::kAmax ? "max_values_cpu" : "min_values_cpu");
  if (self.numel() == 0) {
    at::native::zero_numel_check_dims(self, dims, (std::string(name) + "()").c_str());
  }
  return reduce(op, name, self, dims, keepdim, self.scalar_type());
}

// amax.out/amin.out: out keeps the input's dtype.
Tensor& extremum_dims_out(const graph::OpDef& op, const char* name, const Tensor& self,
                          at::IntArrayRef dims, bool keepdim, Tensor& out) {
  TORCH_CHECK(out.scalar_type() == self.scalar_type(),
              "Expected the dtype for input and out to match, but got ", self.scalar_type(),
              " for input's dtype and ", out.scalar_type(), " for out's dtype.");
  return to_out(out, extremum_dims(op, name, self, dims, keepdim));
}

// aminmax: amin and amax over `dim` (absent: every element).
std::pair<OpResult, OpResult> min_max(const Tensor& self, std::optional<int64_t> dim,
                                      bool keepdim) {
  // The CPU's two messages: a 0-dim input takes another of its paths.
  TORCH_CHECK(!self.is_complex() || self.dim() > 0 || !dim.has_value(),
              "aminmax not implemented for ", self.scalar_type());
  check_not_complex(self, "aminmax_cpu");
  std::vector<int64_t> dims;
  if (dim.has_value()) {
    const int64_t w = at::maybe_wrap_dim(*dim, self.dim());
    if (self.numel() == 0) at::native::zero_numel_check_dims(self, w, "aminmax");
    dims.push_back(*dim);
  } else {
    TORCH_CHECK(self.numel() > 0,
                "aminmax(): cannot compute aminmax over an empty dimension as the operation has no "
                "identity.");
  }
  return {extremum_dims(lowering::kAmin, "aminmax", self, dims, keepdim),
          extremum_dims(lowering::kAmax, "aminmax", self, dims, keepdim)};
}

// Values and indices of max/min along `dim` (max.dim, min.dim).
std::tuple<OpResult, OpResult> extremum_dim(const graph::OpDef& op, const char* name,
                                            const Tensor& self, int64_t dim, bool keepdim) {
  TORCH_CHECK(!self.is_complex(), name, "(): does not support complex input");
  const int64_t d = at::maybe_wrap_dim(dim, self.dim());
  TORCH_CHECK_INDEX(self.dim() == 0 || self.size(d) != 0, name, "(): Expected reduction dim ", d,
                    " to have non-zero size.");
  const int device = common_device(name, {&self});
  std::vector<int64_t> sizes;
  graph::Attrs attrs{reduced_dims(self, at::IntArrayRef(d), keepdim, sizes), {}};
  auto values = graph::record(
      op, {read(self)}, std::move(attrs),
      {tensor_type(self.scalar_type(), sizes), tensor_type(at::kLong, sizes)}, device);
  return {OpResult{values[0], self.scalar_type(), sizes, device},
          OpResult{values[1], at::kLong, sizes, device}};
}

std::tuple<Tensor, Tensor> extremum_dim_new(const graph::OpDef& op, const char* name,
                                            const Tensor& self, int64_t dim, bool keepdim) {
  auto [values, indices] = extremum_dim(op, name, self, dim, keepdim);
  Tensor v = make_tensor(values.value, values.dtype, values.device);
  Tensor i = make_tensor(indices.value, indices.dtype, indices.device);
  finish_op();
  return {v, i};
}

// argmax/argmin: indices along `dim`, or into the flattened input when dim is absent.
OpResult arg_extremum(const graph::OpDef& op, const char* name, const Tensor& self,
                      std::optional<int64_t> dim, bool keepdim) {
  TORCH_CHECK(self.scalar_type() != at::kBool, name, "(): does not support bool input");
  TORCH_CHECK(!self.is_complex(), name, "(): does not support complex input");
  const int device = common_device(name, {&self});
  std::vector<int64_t> sizes;
  graph::Attrs attrs;
  if (dim) {
    const int64_t d = at::maybe_wrap_dim(*dim, self.dim());
    TORCH_CHECK_INDEX(self.dim() == 0 || self.size(d) != 0, name, "(): Expected reduction dim ", d,
                      " to have non-zero size.");
    attrs.ints = reduced_dims(self, at::IntArrayRef(d), keepdim, sizes);
  } else {
    TORCH_CHECK_INDEX(self.numel() != 0, name,
                      "(): Expected reduction dim to be specified for input.numel() == 0.");
    if (keepdim) sizes.assign(self.dim(), 1);
  }
  auto value =
      graph::record(op, {read(self)}, std::move(attrs), {tensor_type(at::kLong, sizes)}, device)[0];
  return {value, at::kLong, sizes, device};
}

// The correction for var/std of `self` over `dims`, after PyTorch's dtype check and warning.
double checked_correction(const graph::OpDef& op, const Tensor& self, at::OptionalIntArrayRef dims,
                          const std::optional<at::Scalar>& correction) {
  TORCH_CHECK(at::isFloatingType(self.scalar_type()),
              "std and var only support floating point and complex dtypes");
  const double c = correction ? correction->toDouble() : 1.0;
  std::vector<int64_t> sizes;
  int64_t n = 1;
  for (int64_t d : reduced_dims(self, dims, false, sizes)) n *= self.size(d);
  if (static_cast<double>(n) - c <= 0) {
    TORCH_WARN(op.name,
               "(): degrees of freedom is <= 0. Correction should be strictly less than the "
               "reduction factor (input numel divided by output numel).");
  }
  return c;
}

// var of a complex tensor, E|z - E z|^2, is var(re) + var(im), in the real type; std its root.
Tensor complex_var_std(const graph::OpDef& op, const Tensor& self, at::OptionalIntArrayRef dims,
                       const std::optional<at::Scalar>& correction, bool keepdim) {
  Tensor v = at::var(at::real(self), dims, correction, keepdim) +
             at::var(at::imag(self), dims, correction, keepdim);
  return &op == &lowering::kStd ? v.sqrt() : v;
}

OpResult var_std(const graph::OpDef& op, const Tensor& self, at::OptionalIntArrayRef dims,
                 const std::optional<at::Scalar>& correction, bool keepdim) {
  if (self.is_complex()) {
    OneOp one;
    const Tensor v = complex_var_std(op, self, dims, correction, keepdim);
    one.finish();
    return result_of(v);
  }
  const double c = checked_correction(op, self, dims, correction);
  return reduce(op, op.name, self, dims, keepdim, self.scalar_type(), {c});
}

// A floating input of a reduction into a floating out=, converted to out's dtype: var, std and
// logsumexp compute in out's dtype on the CPU.
Tensor in_out_dtype(const Tensor& self, const Tensor& out) {
  const bool both = at::isFloatingType(self.scalar_type()) && at::isFloatingType(out.scalar_type());
  return both ? self.to(out.scalar_type()) : self;
}

// var_mean / std_mean: both results from one node.
std::tuple<Tensor, Tensor> var_std_mean(const graph::OpDef& op, const Tensor& self,
                                        at::OptionalIntArrayRef dims,
                                        const std::optional<at::Scalar>& correction, bool keepdim) {
  if (self.is_complex()) {
    OneOp one;
    std::tuple<Tensor, Tensor> r{complex_var_std(op, self, dims, correction, keepdim),
                                 at::mean(self, dims, keepdim)};
    one.finish();
    return r;
  }
  const double c = checked_correction(op, self, dims, correction);
  const int device = common_device(op.name, {&self});
  std::vector<int64_t> sizes;
  graph::Attrs attrs{reduced_dims(self, dims, keepdim, sizes), {c}};
  const hlo::TensorType type = tensor_type(self.scalar_type(), sizes);
  auto values = graph::record(op, {read(self)}, std::move(attrs), {type, type}, device);
  Tensor r = make_tensor(values[0], self.scalar_type(), device);
  Tensor mean = make_tensor(values[1], self.scalar_type(), device);
  finish_op();
  return {r, mean};
}

OpResult vector_norm_result(const Tensor& self, const at::Scalar& ord, at::OptionalIntArrayRef dims,
                            bool keepdim, std::optional<at::ScalarType> dtype) {
  if (self.is_complex()) {  // the norm of |self|, in the real type
    TORCH_CHECK(!dtype || at::isComplexType(*dtype),
                "linalg.vector_norm: dtype should be complex for complex input, but got ", *dtype);
    const at::ScalarType real = c10::toRealValueType(dtype.value_or(self.scalar_type()));
    const OpResult abs =
        elementwise(lowering::kComplexAbs, "linalg.vector_norm", {&self}, real, {});
    return vector_norm_result(make_tensor(abs.value, real, abs.device), ord, dims, keepdim,
                              std::nullopt);
  }
  TORCH_CHECK(at::isFloatingType(self.scalar_type()),
              "linalg.vector_norm: Expected a floating point or complex tensor as input. Got ",
              self.scalar_type());
  if (dtype) {
    TORCH_CHECK(at::isFloatingType(*dtype),
                "linalg.vector_norm: dtype should be floating point or complex, but got ", *dtype);
    TORCH_CHECK(at::promoteTypes(self.scalar_type(), *dtype) == *dtype,
                "linalg.vector_norm: the dtype of the input (", self.scalar_type(),
                ") should be convertible without narrowing to the specified dtype (", *dtype, ")");
  }
  const double p = ord.toDouble();
  if (self.numel() == 0 && (p < 0 || std::isinf(p))) {
    // Only reductions over an empty dimension lack an identity.
    bool empty = !dims.has_value() || dims->empty();
    if (!empty) {
      for (int64_t d : *dims) empty = empty || self.size(at::maybe_wrap_dim(d, self.dim())) == 0;
    }
    TORCH_CHECK(!empty, "linalg.vector_norm cannot compute the ", ord,
                " norm on an empty tensor because the operation does not have an identity");
  }
  return reduce(lowering::kVectorNorm, "linalg.vector_norm", self, dims, keepdim,
                dtype.value_or(self.scalar_type()), {p});
}

OpResult logsumexp_result(const Tensor& self, at::IntArrayRef dims, bool keepdim) {
  // The CPU reduces every dim keeping them, then fails to write that into the 0-dim result.
  TORCH_CHECK(!dims.empty() || keepdim || self.dim() == 0 || self.numel() == 0,
              "output with shape [] doesn't match the broadcast shape ",
              at::IntArrayRef(std::vector<int64_t>(self.dim(), 1)));
  if (self.is_complex()) {  // shifted by the largest real part (0 where it is infinite), as on CPU
    OneOp one;
    Tensor shift = at::amax(at::real(self), dims, /*keepdim=*/true);
    shift = at::where(shift.isinf(), at::zeros_like(shift), shift);
    Tensor r = at::log(at::sum(at::exp(self - shift), dims, /*keepdim=*/true)) + shift;
    if (!keepdim) r = dims.empty() ? r.reshape({}) : r.squeeze(dims);
    one.finish();
    return result_of(r);
  }
  const at::ScalarType t = at::isIntegralType(self.scalar_type(), /*includeBool=*/true)
                               ? at::typeMetaToScalarType(c10::get_default_dtype())
                               : self.scalar_type();
  return reduce(lowering::kLogsumexp, "logsumexp", self, dims, keepdim, t);
}

// The result is bool, or uint8 for a uint8 input; with out=, out's dtype (bool or uint8).
OpResult all_any(const graph::OpDef& op, const Tensor& self, at::OptionalIntArrayRef dims,
                 bool keepdim, std::optional<at::ScalarType> out_dtype = std::nullopt) {
  const at::ScalarType t =
      out_dtype.value_or(self.scalar_type() == at::kByte ? at::kByte : at::kBool);
  if (dims && dims->empty()) {  // an empty list reduces nothing here
    const int device = common_device(op.name, {&self});
    auto value = graph::record1(op, {read(self)}, {}, tensor_type(t, self.sizes()), device);
    return {value, t, self.sizes().vec(), device};
  }
  return reduce(op, op.name, self, dims, keepdim, t);
}

// all/any with out=: a bool result, or uint8 (PyTorch's compatibility with uint8 masks).
Tensor& all_any_out(const graph::OpDef& op, const Tensor& self, at::OptionalIntArrayRef dims,
                    bool keepdim, Tensor& out) {
  TORCH_CHECK(out.scalar_type() == at::kBool || out.scalar_type() == at::kByte, op.name,
              " only supports bool tensor for result, got: ", out.scalar_type());
  return to_out(out, all_any(op, self, dims, keepdim, out.scalar_type()));
}

// hash_tensor: the xor of the elements' 64-bit patterns (mode 0, the only one PyTorch has).
OpResult xor_hash(const Tensor& self, at::IntArrayRef dims, bool keepdim, int64_t mode) {
  TORCH_CHECK(mode == 0, "Unknown hash_tensor mode: ", mode);
  TORCH_CHECK_NOT_IMPLEMENTED(!self.is_complex(), "\"xor_sum_cpu\" not implemented for '",
                              c10::toString(self.scalar_type()), "'");
  if (self.numel() == 0) at::native::zero_numel_check_dims(self, dims, "hash_tensor");
  return reduce(lowering::kHashTensor, "hash_tensor", self, dims, keepdim, at::kUInt64);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("hash_tensor", [](const Tensor& self, at::IntArrayRef dims, bool keepdim, int64_t mode) {
    return to_new(xor_hash(self, dims, keepdim, mode));
  });
  m.impl("hash_tensor.out",
         [](const Tensor& self, at::IntArrayRef dims, bool keepdim, int64_t mode,
            Tensor& out) -> Tensor& {
           TORCH_CHECK(out.scalar_type() == at::kUInt64,
                       "Expected result to be of dtype uint64, but got ", out.scalar_type());
           return to_out(out, xor_hash(self, dims, keepdim, mode));
         });
  m.impl("sum.dim_IntList", [](const Tensor& self, at::OptionalIntArrayRef dims, bool keepdim,
                               std::optional<at::ScalarType> dtype) {
    return to_new(reduce(lowering::kSum, "sum", self, dims, keepdim, sum_dtype(self, dtype)));
  });
  m.impl("sum.IntList_out",
         [](const Tensor& self, at::OptionalIntArrayRef dims, bool keepdim,
            std::optional<at::ScalarType> dtype, Tensor& out) -> Tensor& {
           return to_out(out, reduce(lowering::kSum, "sum", self, dims, keepdim,
                                     out_reduction_dtype(out, dtype)));
         });
  m.impl("max",
         [](const Tensor& self) { return to_new(extremum_all(lowering::kAmax, "max", self)); });
  m.impl("min",
         [](const Tensor& self) { return to_new(extremum_all(lowering::kAmin, "min", self)); });
  m.impl("amax", [](const Tensor& self, at::IntArrayRef dims, bool keepdim) {
    return to_new(extremum_dims(lowering::kAmax, "amax", self, dims, keepdim));
  });
  m.impl("amin", [](const Tensor& self, at::IntArrayRef dims, bool keepdim) {
    return to_new(extremum_dims(lowering::kAmin, "amin", self, dims, keepdim));
  });
  m.impl("amax.out",
         [](const Tensor& self, at::IntArrayRef dims, bool keepdim, Tensor& out) -> Tensor& {
           return extremum_dims_out(lowering::kAmax, "amax", self, dims, keepdim, out);
         });
  m.impl("amin.out",
         [](const Tensor& self, at::IntArrayRef dims, bool keepdim, Tensor& out) -> Tensor& {
           return extremum_dims_out(lowering::kAmin, "amin", self, dims, keepdim, out);
         });
  m.impl("aminmax", [](const Tensor& self, std::optional<int64_t> dim, bool keepdim) {
    auto [lo, hi] = min_max(self, dim, keepdim);
    return std::make_tuple(to_new(lo), to_new(hi));
  });
  m.impl("aminmax.out",
         [](const Tensor& self, std::optional<int64_t> dim, bool keepdim, Tensor& min,
            Tensor& max) -> std::tuple<Tensor&, Tensor&> {
           auto [lo, hi] = min_max(self, dim, keepdim);
           check_out_dtype(min, self.scalar_type());
           check_out_dtype(max, self.scalar_type());
           return {to_out(min, lo), to_out(max, hi)};
         });
  m.impl("mean.dim", [](const Tensor& self, at::OptionalIntArrayRef dims, bool keepdim,
                        std::optional<at::ScalarType> dtype) {
    return to_new(reduce(lowering::kMean, "mean", self, dims, keepdim, mean_dtype(self, dtype)));
  });
  m.impl("mean.out",
         [](const Tensor& self, at::OptionalIntArrayRef dims, bool keepdim,
            std::optional<at::ScalarType> dtype, Tensor& out) -> Tensor& {
           const at::ScalarType t = mean_dtype(self, dtype);
           if (dtype) check_out_dtype(out, t);
           return to_out(out, reduce(lowering::kMean, "mean", self, dims, keepdim, t),
                         SelfOverlap::kAsResized);
         });
  m.impl("prod", [](const Tensor& self, std::optional<at::ScalarType> dtype) {
    return to_new(
        reduce(lowering::kProd, "prod", self, std::nullopt, false, sum_dtype(self, dtype)));
  });
  m.impl("prod.out",
         [](const Tensor& self, std::optional<at::ScalarType> dtype, Tensor& out) -> Tensor& {
           return to_out(out, reduce(lowering::kProd, "prod", self, std::nullopt, false,
                                     out_reduction_dtype(out, dtype)));
         });
  m.impl("prod.dim_int",
         [](const Tensor& self, int64_t dim, bool keepdim, std::optional<at::ScalarType> dtype) {
           return to_new(reduce(lowering::kProd, "prod", self, at::IntArrayRef(dim), keepdim,
                                sum_dtype(self, dtype)));
         });
  m.impl("prod.int_out",
         [](const Tensor& self, int64_t dim, bool keepdim, std::optional<at::ScalarType> dtype,
            Tensor& out) -> Tensor& {
           return to_out(out, reduce(lowering::kProd, "prod", self, at::IntArrayRef(dim), keepdim,
                                     out_reduction_dtype(out, dtype)));
         });
  m.impl("max.dim", [](const Tensor& self, int64_t dim, bool keepdim) {
    return extremum_dim_new(lowering::kMaxDim, "max", self, dim, keepdim);
  });
  m.impl("min.dim", [](const Tensor& self, int64_t dim, bool keepdim) {
    return extremum_dim_new(lowering::kMinDim, "min", self, dim, keepdim);
  });
  m.impl("max.dim_max",
         [](const Tensor& self, int64_t dim, bool keepdim, Tensor& values,
            Tensor& indices) -> std::tuple<Tensor&, Tensor&> {
           auto [v, i] = extremum_dim(lowering::kMaxDim, "max", self, dim, keepdim);
           check_out_dtype(values, self.scalar_type());
           check_out_dtype(indices, at::kLong);
           to_out(values, v, SelfOverlap::kAsResized);
           return {values, to_out(indices, i, SelfOverlap::kAsResized)};
         });
  m.impl("min.dim_min",
         [](const Tensor& self, int64_t dim, bool keepdim, Tensor& values,
            Tensor& indices) -> std::tuple<Tensor&, Tensor&> {
           auto [v, i] = extremum_dim(lowering::kMinDim, "min", self, dim, keepdim);
           check_out_dtype(values, self.scalar_type());
           check_out_dtype(indices, at::kLong);
           to_out(values, v, SelfOverlap::kAsResized);
           return {values, to_out(indices, i, SelfOverlap::kAsResized)};
         });
  m.impl("argmax", [](const Tensor& self, std::optional<int64_t> dim, bool keepdim) {
    return to_new(arg_extremum(lowering::kMaxDim, "argmax", self, dim, keepdim));
  });
  m.impl("argmin", [](const Tensor& self, std::optional<int64_t> dim, bool keepdim) {
    return to_new(arg_extremum(lowering::kMinDim, "argmin", self, dim, keepdim));
  });
  m.impl("argmax.out",
         [](const Tensor& self, std::optional<int64_t> dim, bool keepdim, Tensor& out) -> Tensor& {
           check_out_dtype(out, at::kLong);
           return to_out(out, arg_extremum(lowering::kMaxDim, "argmax", self, dim, keepdim));
         });
  m.impl("argmin.out",
         [](const Tensor& self, std::optional<int64_t> dim, bool keepdim, Tensor& out) -> Tensor& {
           check_out_dtype(out, at::kLong);
           return to_out(out, arg_extremum(lowering::kMinDim, "argmin", self, dim, keepdim));
         });
  m.impl("var.correction", [](const Tensor& self, at::OptionalIntArrayRef dims,
                              const std::optional<at::Scalar>& correction, bool keepdim) {
    return to_new(var_std(lowering::kVar, self, dims, correction, keepdim));
  });
  m.impl("std.correction", [](const Tensor& self, at::OptionalIntArrayRef dims,
                              const std::optional<at::Scalar>& correction, bool keepdim) {
    return to_new(var_std(lowering::kStd, self, dims, correction, keepdim));
  });
  m.impl("var.correction_out",
         [](const Tensor& self, at::OptionalIntArrayRef dims,
            const std::optional<at::Scalar>& correction, bool keepdim, Tensor& out) -> Tensor& {
           return to_out(
               out, var_std(lowering::kVar, in_out_dtype(self, out), dims, correction, keepdim));
         });
  m.impl("std.correction_out",
         [](const Tensor& self, at::OptionalIntArrayRef dims,
            const std::optional<at::Scalar>& correction, bool keepdim, Tensor& out) -> Tensor& {
           return to_out(
               out, var_std(lowering::kStd, in_out_dtype(self, out), dims, correction, keepdim));
         });
  m.impl("var_mean.correction", [](const Tensor& self, at::OptionalIntArrayRef dims,
                                   const std::optional<at::Scalar>& correction, bool keepdim) {
    return var_std_mean(lowering::kVar, self, dims, correction, keepdim);
  });
  m.impl("std_mean.correction", [](const Tensor& self, at::OptionalIntArrayRef dims,
                                   const std::optional<at::Scalar>& correction, bool keepdim) {
    return var_std_mean(lowering::kStd, self, dims, correction, keepdim);
  });
  m.impl("linalg_vector_norm",
         [](const Tensor& self, const at::Scalar& ord, at::OptionalIntArrayRef dims, bool keepdim,
            std::optional<at::ScalarType> dtype) {
           return to_new(vector_norm_result(self, ord, dims, keepdim, dtype));
         });
  m.impl("linalg_vector_norm.out",
         [](const Tensor& self, const at::Scalar& ord, at::OptionalIntArrayRef dims, bool keepdim,
            std::optional<at::ScalarType> dtype, Tensor& out) -> Tensor& {
           // Over dims of size 1 only, the CPU's norm is elementwise and checks out= as such.
           bool elementwise = self.dim() > 0 && dims.has_value() && !dims->empty();
           for (int64_t d : dims.value_or(at::IntArrayRef{})) {
             elementwise = elementwise && self.size(at::maybe_wrap_dim(d, self.dim())) == 1;
           }
           return to_structured_out(out, vector_norm_result(self, ord, dims, keepdim, dtype),
                                    elementwise ? SelfOverlap::kAsResized : SelfOverlap::kAllowed);
         });
  m.impl("logsumexp", [](const Tensor& self, at::IntArrayRef dims, bool keepdim) {
    return to_new(logsumexp_result(self, dims, keepdim));
  });
  m.impl("logsumexp.out",
         [](const Tensor& self, at::IntArrayRef dims, bool keepdim, Tensor& out) -> Tensor& {
           TORCH_CHECK(at::isFloatingType(out.scalar_type()),
                       "logsumexp(): Expected floating point type for result tensor, but got: ",
                       out.scalar_type());
           return to_out(out, logsumexp_result(in_out_dtype(self, out), dims, keepdim),
                         SelfOverlap::kAsResized);
         });
  m.impl("all", [](const Tensor& self) {
    return to_new(all_any(lowering::kAll, self, std::nullopt, false));
  });
  m.impl("all.all_out", [](const Tensor& self, Tensor& out) -> Tensor& {
    return all_any_out(lowering::kAll, self, std::nullopt, false, out);
  });
  m.impl("all.dim", [](const Tensor& self, int64_t dim, bool keepdim) {
    return to_new(all_any(lowering::kAll, self, at::IntArrayRef(dim), keepdim));
  });
  m.impl("all.out", [](const Tensor& self, int64_t dim, bool keepdim, Tensor& out) -> Tensor& {
    return all_any_out(lowering::kAll, self, at::IntArrayRef(dim), keepdim, out);
  });
  m.impl("all.dims", [](const Tensor& self, at::OptionalIntArrayRef dims, bool keepdim) {
    return to_new(all_any(lowering::kAll, self, dims, keepdim));
  });
  m.impl(
      "all.dims_out",
      [](const Tensor& self, at::OptionalIntArrayRef dims, bool keepdim, Tensor& out) -> Tensor& {
        return all_any_out(lowering::kAll, self, dims, keepdim, out);
      });
  m.impl("any", [](const Tensor& self) {
    return to_new(all_any(lowering::kAny, self, std::nullopt, false));
  });
  m.impl("any.all_out", [](const Tensor& self, Tensor& out) -> Tensor& {
    return all_any_out(lowering::kAny, self, std::nullopt, false, out);
  });
  m.impl("any.dim", [](const Tensor& self, int64_t dim, bool keepdim) {
    return to_new(all_any(lowering::kAny, self, at::IntArrayRef(dim), keepdim));
  });
  m.impl("any.out", [](const Tensor& self, int64_t dim, bool keepdim, Tensor& out) -> Tensor& {
    return all_any_out(lowering::kAny, self, at::IntArrayRef(dim), keepdim, out);
  });
  m.impl("any.dims", [](const Tensor& self, at::OptionalIntArrayRef dims, bool keepdim) {
    return to_new(all_any(lowering::kAny, self, dims, keepdim));
  });
  m.impl(
      "any.dims_out",
      [](const Tensor& self, at::OptionalIntArrayRef dims, bool keepdim, Tensor& out) -> Tensor& {
        return all_any_out(lowering::kAny, self, dims, keepdim, out);
      });
}

}  // namespace torch_pjrt::aten
