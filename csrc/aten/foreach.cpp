// The _foreach_* list ops (what optimizers and clip_grad_norm_ call): PyTorch's per-tensor
// implementations run inside one OneOp, so each list op is one program instead of one per tensor.
// The registrations cover every _foreach_* overload whose CPU implementation is the per-tensor one.
#include <ATen/ATen.h>
#include <ATen/NativeFunctions.h>
#include <torch/library.h>

#include "aten/tensor_bridge.h"
#include "aten/torch_compat.h"

namespace torch_pjrt::aten {
namespace {

template <auto Fn>
struct Grouped;

template <class R, class... Args, R (*Fn)(Args...)>
struct Grouped<Fn> {
  static R call(Args... args) {
    OneOp op;
    SharedScalars scalars;
    if constexpr (std::is_void_v<R>) {
      Fn(args...);
      op.finish();
    } else {
      R result = Fn(args...);
      op.finish();
      return result;
    }
  }
};

}  // namespace

#define TP_GROUPED(NAME, FN) m.impl(NAME, TORCH_FN(Grouped<&at::native::FN>::call));

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  TP_GROUPED("_foreach_add.Scalar", foreach_tensor_add_scalar_kernel_slow)
  TP_GROUPED("_foreach_add_.Scalar", foreach_tensor_add_scalar_kernel_slow_)
  TP_GROUPED("_foreach_add.List", foreach_tensor_add_list_kernel_slow)
  TP_GROUPED("_foreach_add_.List", foreach_tensor_add_list_kernel_slow_)
  TP_GROUPED("_foreach_add.ScalarList", foreach_tensor_add_scalarlist_kernel_slow)
  TP_GROUPED("_foreach_add_.ScalarList", foreach_tensor_add_scalarlist_kernel_slow_)
  TP_GROUPED("_foreach_add.Tensor", foreach_tensor_add_tensor_kernel_slow)
  TP_GROUPED("_foreach_add_.Tensor", foreach_tensor_add_tensor_kernel_slow_)
  TP_GROUPED("_foreach_sub.Scalar", foreach_tensor_sub_scalar_kernel_slow)
  TP_GROUPED("_foreach_sub_.Scalar", foreach_tensor_sub_scalar_kernel_slow_)
  TP_GROUPED("_foreach_sub.List", foreach_tensor_sub_list_kernel_slow)
  TP_GROUPED("_foreach_sub_.List", foreach_tensor_sub_list_kernel_slow_)
  TP_GROUPED("_foreach_sub.ScalarList", foreach_tensor_sub_scalarlist_kernel_slow)
  TP_GROUPED("_foreach_sub_.ScalarList", foreach_tensor_sub_scalarlist_kernel_slow_)
  TP_GROUPED("_foreach_mul.Scalar", foreach_tensor_mul_scalar_kernel_slow)
  TP_GROUPED("_foreach_mul_.Scalar", foreach_tensor_mul_scalar_kernel_slow_)
  TP_GROUPED("_foreach_mul.List", foreach_tensor_mul_list_kernel_slow)
  TP_GROUPED("_foreach_mul_.List", foreach_tensor_mul_list_kernel_slow_)
  TP_GROUPED("_foreach_mul.ScalarList", foreach_tensor_mul_scalarlist_kernel_slow)
  TP_GROUPED("_foreach_mul_.ScalarList", foreach_tensor_mul_scalarlist_kernel_slow_)
  TP_GROUPED("_foreach_mul.Tensor", foreach_tensor_mul_tensor_kernel_slow)
  TP_GROUPED("_foreach_mul_.Tensor", foreach_tensor_mul_tensor_kernel_slow_)
  TP_GROUPED("_foreach_div.Scalar", foreach_tensor_div_scalar_kernel_slow)
  TP_GROUPED("_foreach_div_.Scalar", foreach_tensor_div_scalar_kernel_slow_)
  TP_GROUPED("_foreach_div.List", foreach_tensor_div_list_kernel_slow)
  TP_GROUPED("_foreach_div_.List", foreach_tensor_div_list_kernel_slow_)
  TP_GROUPED("_foreach_div.ScalarList", foreach_tensor_div_scalarlist_kernel_slow)
  TP_GROUPED("_foreach_div_.ScalarList", foreach_tensor_div_scalarlist_kernel_slow_)
  TP_GROUPED("_foreach_div.Tensor", foreach_tensor_div_tensor_kernel_slow)
  TP_GROUPED("_foreach_div_.Tensor", foreach_tensor_div_tensor_kernel_slow_)
  TP_GROUPED("_foreach_clamp_max.Scalar", foreach_tensor_clamp_max_scalar_kernel_slow)
  TP_GROUPED("_foreach_clamp_max_.Scalar", foreach_tensor_clamp_max_scalar_kernel_slow_)
  TP_GROUPED("_foreach_clamp_max.List", foreach_tensor_clamp_max_list_kernel_slow)
  TP_GROUPED("_foreach_clamp_max_.List", foreach_tensor_clamp_max_list_kernel_slow_)
  TP_GROUPED("_foreach_clamp_max.ScalarList", foreach_tensor_clamp_max_scalarlist_kernel_slow)
  TP_GROUPED("_foreach_clamp_max_.ScalarList", foreach_tensor_clamp_max_scalarlist_kernel_slow_)
  TP_GROUPED("_foreach_clamp_min.Scalar", foreach_tensor_clamp_min_scalar_kernel_slow)
  TP_GROUPED("_foreach_clamp_min_.Scalar", foreach_tensor_clamp_min_scalar_kernel_slow_)
  TP_GROUPED("_foreach_clamp_min.List", foreach_tensor_clamp_min_list_kernel_slow)
  TP_GROUPED("_foreach_clamp_min_.List", foreach_tensor_clamp_min_list_kernel_slow_)
  TP_GROUPED("_foreach_clamp_min.ScalarList", foreach_tensor_clamp_min_scalarlist_kernel_slow)
  TP_GROUPED("_foreach_clamp_min_.ScalarList", foreach_tensor_clamp_min_scalarlist_kernel_slow_)
  TP_GROUPED("_foreach_maximum.Scalar", foreach_tensor_clamp_min_scalar_kernel_slow)
  TP_GROUPED("_foreach_maximum_.Scalar", foreach_tensor_clamp_min_scalar_kernel_slow_)
  TP_GROUPED("_foreach_maximum.List", foreach_tensor_clamp_min_list_kernel_slow)
  TP_GROUPED("_foreach_maximum_.List", foreach_tensor_clamp_min_list_kernel_slow_)
  TP_GROUPED("_foreach_maximum.ScalarList", foreach_tensor_clamp_min_scalarlist_kernel_slow)
  TP_GROUPED("_foreach_maximum_.ScalarList", foreach_tensor_clamp_min_scalarlist_kernel_slow_)
  TP_GROUPED("_foreach_minimum.Scalar", foreach_tensor_clamp_max_scalar_kernel_slow)
  TP_GROUPED("_foreach_minimum_.Scalar", foreach_tensor_clamp_max_scalar_kernel_slow_)
  TP_GROUPED("_foreach_minimum.List", foreach_tensor_clamp_max_list_kernel_slow)
  TP_GROUPED("_foreach_minimum_.List", foreach_tensor_clamp_max_list_kernel_slow_)
  TP_GROUPED("_foreach_minimum.ScalarList", foreach_tensor_clamp_max_scalarlist_kernel_slow)
  TP_GROUPED("_foreach_minimum_.ScalarList", foreach_tensor_clamp_max_scalarlist_kernel_slow_)
  TP_GROUPED("_foreach_addcdiv.Scalar", foreach_tensor_addcdiv_scalar_slow)
  TP_GROUPED("_foreach_addcdiv.ScalarList", foreach_tensor_addcdiv_scalarlist_slow)
  TP_GROUPED("_foreach_addcdiv.Tensor", foreach_tensor_addcdiv_tensor_slow)
  TP_GROUPED("_foreach_addcdiv_.Scalar", foreach_tensor_addcdiv_scalar_slow_)
  TP_GROUPED("_foreach_addcdiv_.ScalarList", foreach_tensor_addcdiv_scalarlist_slow_)
  TP_GROUPED("_foreach_addcdiv_.Tensor", foreach_tensor_addcdiv_tensor_slow_)
  TP_GROUPED("_foreach_addcmul.Scalar", foreach_tensor_addcmul_scalar_slow)
  TP_GROUPED("_foreach_addcmul.ScalarList", foreach_tensor_addcmul_scalarlist_slow)
  TP_GROUPED("_foreach_addcmul.Tensor", foreach_tensor_addcmul_tensor_slow)
  TP_GROUPED("_foreach_addcmul_.Scalar", foreach_tensor_addcmul_scalar_slow_)
  TP_GROUPED("_foreach_addcmul_.ScalarList", foreach_tensor_addcmul_scalarlist_slow_)
  TP_GROUPED("_foreach_addcmul_.Tensor", foreach_tensor_addcmul_tensor_slow_)
  TP_GROUPED("_foreach_abs", foreach_tensor_abs_slow)
  TP_GROUPED("_foreach_abs_", foreach_tensor_abs_slow_)
  TP_GROUPED("_foreach_acos", foreach_tensor_acos_slow)
  TP_GROUPED("_foreach_acos_", foreach_tensor_acos_slow_)
  TP_GROUPED("_foreach_asin", foreach_tensor_asin_slow)
  TP_GROUPED("_foreach_asin_", foreach_tensor_asin_slow_)
  TP_GROUPED("_foreach_atan", foreach_tensor_atan_slow)
  TP_GROUPED("_foreach_atan_", foreach_tensor_atan_slow_)
  TP_GROUPED("_foreach_ceil", foreach_tensor_ceil_slow)
  TP_GROUPED("_foreach_ceil_", foreach_tensor_ceil_slow_)
  TP_GROUPED("_foreach_cos", foreach_tensor_cos_slow)
  TP_GROUPED("_foreach_cos_", foreach_tensor_cos_slow_)
  TP_GROUPED("_foreach_cosh", foreach_tensor_cosh_slow)
  TP_GROUPED("_foreach_cosh_", foreach_tensor_cosh_slow_)
  TP_GROUPED("_foreach_erf", foreach_tensor_erf_slow)
  TP_GROUPED("_foreach_erf_", foreach_tensor_erf_slow_)
  TP_GROUPED("_foreach_erfc", foreach_tensor_erfc_slow)
  TP_GROUPED("_foreach_erfc_", foreach_tensor_erfc_slow_)
  TP_GROUPED("_foreach_exp", foreach_tensor_exp_slow)
  TP_GROUPED("_foreach_exp_", foreach_tensor_exp_slow_)
  TP_GROUPED("_foreach_expm1", foreach_tensor_expm1_slow)
  TP_GROUPED("_foreach_expm1_", foreach_tensor_expm1_slow_)
  TP_GROUPED("_foreach_floor", foreach_tensor_floor_slow)
  TP_GROUPED("_foreach_floor_", foreach_tensor_floor_slow_)
  TP_GROUPED("_foreach_frac", foreach_tensor_frac_slow)
  TP_GROUPED("_foreach_frac_", foreach_tensor_frac_slow_)
  TP_GROUPED("_foreach_lerp.List", foreach_tensor_ternary_lerp_slow)
  TP_GROUPED("_foreach_lerp_.List", foreach_tensor_ternary_lerp_slow_)
  TP_GROUPED("_foreach_lerp.Scalar", foreach_tensor_lerp_list_kernel_slow)
  TP_GROUPED("_foreach_lerp_.Scalar", foreach_tensor_lerp_list_kernel_slow_)
  TP_GROUPED("_foreach_lerp.ScalarList", foreach_tensor_lerp_scalarlist_kernel_slow)
  TP_GROUPED("_foreach_lerp_.ScalarList", foreach_tensor_lerp_scalarlist_kernel_slow_)
  TP_GROUPED("_foreach_lgamma", foreach_tensor_lgamma_slow)
  TP_GROUPED("_foreach_lgamma_", foreach_tensor_lgamma_slow_)
  TP_GROUPED("_foreach_log", foreach_tensor_log_slow)
  TP_GROUPED("_foreach_log_", foreach_tensor_log_slow_)
  TP_GROUPED("_foreach_log10", foreach_tensor_log10_slow)
  TP_GROUPED("_foreach_log10_", foreach_tensor_log10_slow_)
  TP_GROUPED("_foreach_log1p", foreach_tensor_log1p_slow)
  TP_GROUPED("_foreach_log1p_", foreach_tensor_log1p_slow_)
  TP_GROUPED("_foreach_log2", foreach_tensor_log2_slow)
  TP_GROUPED("_foreach_log2_", foreach_tensor_log2_slow_)
  TP_GROUPED("_foreach_max", foreach_tensor_max_slow)
  TP_GROUPED("_foreach_neg", foreach_tensor_neg_slow)
  TP_GROUPED("_foreach_neg_", foreach_tensor_neg_slow_)
  TP_GROUPED("_foreach_norm.Scalar", foreach_tensor_norm_slow)
  TP_GROUPED("_foreach_powsum.Scalar", foreach_tensor_powsum_slow)
  TP_GROUPED("_foreach_pow.List", foreach_tensor_pow_list_kernel_slow)
  TP_GROUPED("_foreach_pow.Scalar", foreach_tensor_pow_scalar_kernel_slow)
  TP_GROUPED("_foreach_pow.ScalarList", foreach_tensor_pow_scalarlist_kernel_slow)
  TP_GROUPED("_foreach_pow.ScalarAndTensor", foreach_scalar_pow_list_kernel_slow)
  TP_GROUPED("_foreach_pow_.List", foreach_tensor_pow_list_kernel_slow_)
  TP_GROUPED("_foreach_pow_.Scalar", foreach_tensor_pow_scalar_kernel_slow_)
  TP_GROUPED("_foreach_pow_.ScalarList", foreach_tensor_pow_scalarlist_kernel_slow_)
  TP_GROUPED("_foreach_reciprocal", foreach_tensor_reciprocal_slow)
  TP_GROUPED("_foreach_reciprocal_", foreach_tensor_reciprocal_slow_)
  TP_GROUPED("_foreach_round", foreach_tensor_round_slow)
  TP_GROUPED("_foreach_round_", foreach_tensor_round_slow_)
  TP_GROUPED("_foreach_rsqrt", foreach_tensor_rsqrt_slow)
  TP_GROUPED("_foreach_rsqrt_", foreach_tensor_rsqrt_slow_)
  TP_GROUPED("_foreach_sigmoid", foreach_tensor_sigmoid_slow)
  TP_GROUPED("_foreach_sigmoid_", foreach_tensor_sigmoid_slow_)
  TP_GROUPED("_foreach_sign", foreach_tensor_sign_slow)
  TP_GROUPED("_foreach_sign_", foreach_tensor_sign_slow_)
  TP_GROUPED("_foreach_sin", foreach_tensor_sin_slow)
  TP_GROUPED("_foreach_sin_", foreach_tensor_sin_slow_)
  TP_GROUPED("_foreach_sinh", foreach_tensor_sinh_slow)
  TP_GROUPED("_foreach_sinh_", foreach_tensor_sinh_slow_)
  TP_GROUPED("_foreach_sqrt", foreach_tensor_sqrt_slow)
  TP_GROUPED("_foreach_sqrt_", foreach_tensor_sqrt_slow_)
  TP_GROUPED("_foreach_tan", foreach_tensor_tan_slow)
  TP_GROUPED("_foreach_tan_", foreach_tensor_tan_slow_)
  TP_GROUPED("_foreach_tanh", foreach_tensor_tanh_slow)
  TP_GROUPED("_foreach_tanh_", foreach_tensor_tanh_slow_)
  TP_GROUPED("_foreach_trunc", foreach_tensor_trunc_slow)
  TP_GROUPED("_foreach_trunc_", foreach_tensor_trunc_slow_)
  TP_GROUPED("_foreach_zero_", foreach_tensor_zero_slow_)
#if TORCH_PJRT_HAS_FOREACH_CLONE
  TP_GROUPED("_foreach_clone", foreach_tensor_clone_slow)
#endif
  TP_GROUPED("_foreach_copy_", foreach_tensor_copy_list_kernel_slow_)
}

}  // namespace torch_pjrt::aten
