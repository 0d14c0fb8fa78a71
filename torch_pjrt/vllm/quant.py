"""Quantized linear layers of vLLM on "tpu": the fp8 scaled matmul (`quantization="fp8"`, online
from a bf16/fp16 checkpoint; the kernel takes per-channel weight scales too) in torch ops. vLLM
picks a linear kernel from per-platform lists that have no entry for an out-of-tree platform;
this module adds one for it, and the fp8 quantization op of vLLM's CUDA extension that its weight
loading calls.

The matmul upcasts both fp8 operands to float32 (their products are exact there), then scales by
the activation's and the weight's scales. Dynamic activation scales are per token whatever the
layer asks (vLLM asks per-tensor ones when CUTLASS is absent): a per-tensor scale would be taken
over the whole padded step, so a request's tokens would depend on the requests and the padding
beside it; per token they do not, as with vLLM's CUDA default."""

import torch
from vllm.model_executor.kernels import linear
from vllm.model_executor.kernels.linear.scaled_mm.ScaledMMLinearKernel import (
    FP8ScaledMMLinearKernel,
)
from vllm.model_executor.layers.quantization.input_quant_fp8 import QuantFP8
from vllm.model_executor.layers.quantization.utils.quant_utils import GroupShape
from vllm.platforms import PlatformEnum

_FP8 = torch.float8_e4m3fn
_FP8_MAX = torch.finfo(_FP8).max


def _static_scaled_fp8_quant(out, x, scale, group_shape=None):
    """`_C.static_scaled_fp8_quant`: x / scale, saturated to fp8's range, written into out (a
    per-tensor scale; vLLM's weight loading calls it so)."""
    if scale.numel() != 1:
        raise NotImplementedError(
            f'device "tpu": static fp8 quantization with {scale.numel()} scales (only one)'
        )
    q = (x.float() / scale.float().reshape(())).clamp(-_FP8_MAX, _FP8_MAX)
    out.copy_(q.to(out.dtype))


if not hasattr(torch.ops._C, "static_scaled_fp8_quant"):
    _lib = torch.library.Library("_C", "FRAGMENT")
    _lib.define(
        "static_scaled_fp8_quant(Tensor(a!) result, Tensor input, Tensor scale, "
        "SymInt[]? group_shape=None) -> ()"
    )
    _lib.impl("static_scaled_fp8_quant", _static_scaled_fp8_quant, "PrivateUse1")


class TpuFP8ScaledMMLinearKernel(FP8ScaledMMLinearKernel):
    """fp8 activations times fp8 weights ([in, out], a transposed view), in float32, scaled."""

    def __init__(self, c, layer_param_names):
        super().__init__(c, layer_param_names)
        if not c.activation_quant_key.scale.static:
            self.quant_fp8 = QuantFP8(static=False, group_shape=GroupShape.PER_TOKEN)

    @classmethod
    def is_supported(cls, compute_capability=None):
        return True, None

    @classmethod
    def can_implement(cls, c):
        if c.activation_quant_key.scale.group_shape.is_per_group():
            return False, "takes per-tensor or per-channel weight scales, not blocks"
        return True, None

    def apply_scaled_mm(self, *, A, B, out_dtype, As, Bs, bias, output_shape):
        out = torch.mm(A.float(), B.float())
        out = out * As.float().reshape(-1, 1) * Bs.float().reshape(1, -1)
        if bias is not None:
            out = out + bias.float()
        return out.to(out_dtype).view(*output_shape)


linear._POSSIBLE_FP8_KERNELS[PlatformEnum.OOT] = [TpuFP8ScaledMMLinearKernel]
