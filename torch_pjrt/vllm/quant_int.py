"""Integer-quantized linear layers of vLLM on "tpu", in torch ops: the two kernel lists that
compressed-tensors checkpoints (llm-compressor's W8A8 and W4A16/W8A16 recipes) select from, which
have no entry for an out-of-tree platform; this module adds one to each. (GPTQ and AWQ layers
would select from the second too, but vLLM 0.29 refuses them first where Marlin does not run.)

- W8A8 int8 (vLLM's Int8ScaledMMLinearKernel list): int8 weights with per-tensor or per-channel
  scales; activations quantized to int8 at each step, per token or with the checkpoint's static
  scale, symmetric or with a zero point. The int8 values (minus the zero point) are exact in
  float32, so is their product; the sum over the input is exact up to 512 terms and rounds as a
  float32 sum beyond (CUDA sums in int32). The scales apply to the sum, in float32.
- Weight-only integers (vLLM's MPLinearKernel list): 2-, 4- or 8-bit codes packed in int32 along
  the input, one scale per output channel or per group of inputs (in activation order if the
  checkpoint has one), a zero point per scale or the type's fixed bias. The codes stay packed on
  the device; each step unpacks and scales them into a weight of the activations' dtype, then
  multiplies, as vLLM's CUDA kernels do."""

import torch
import torch.nn.functional as F
from vllm.model_executor.kernels import linear
from vllm.model_executor.kernels.linear.mixed_precision.MPLinearKernel import MPLinearKernel
from vllm.model_executor.kernels.linear.scaled_mm.ScaledMMLinearKernel import (
    Int8ScaledMMLinearKernel,
)
from vllm.model_executor.layers.quantization.utils import replace_parameter
from vllm.model_executor.layers.quantization.utils.quant_utils import (
    unpack_quantized_values_into_int32,
)
from vllm.platforms import PlatformEnum


class TpuInt8ScaledMMLinearKernel(Int8ScaledMMLinearKernel):
    """int8 activations times int8 weights, in float32, scaled per token and per channel."""

    @classmethod
    def is_supported(cls, compute_capability=None):
        return True, None

    @classmethod
    def can_implement(cls, c):
        return True, None

    def process_weights_after_loading(self, layer):
        _, s_name, i_s_name, zp_name, _ = self.layer_param_names
        scale = getattr(layer, s_name).float().reshape(-1)
        if not self.config.is_channelwise and scale.numel() > 1:
            # A fused layer (q, k, v; gate, up) with a scale per part: one per output channel.
            parts = zip(scale.split(1), layer.logical_widths)
            scale = torch.cat([s.expand(width) for s, width in parts])
        replace_parameter(layer, s_name, scale)
        if not self.config.is_static_input_scheme:
            setattr(layer, i_s_name, None)
        if not self.config.is_static_input_scheme or self.config.input_symmetric:
            setattr(layer, zp_name, None)

    def apply_weights(self, layer, x, bias=None):
        weight, weight_scale, input_scale, input_zp, _ = self._get_layer_params(layer)
        rows = x.reshape(-1, x.shape[-1]).float()
        if input_scale is not None:  # static: the checkpoint's scale (and zero point)
            scale = input_scale.float().reshape(())
            zp = input_zp.float().reshape(()) if input_zp is not None else None
        elif self.config.input_symmetric:  # dynamic: each token's own range
            scale = rows.abs().amax(-1, keepdim=True) / 127
            zp = None
        else:
            low, high = rows.amin(-1, keepdim=True), rows.amax(-1, keepdim=True)
            scale = (high - low) / 255
            zp = torch.round(-128 - low / torch.where(scale > 0, scale, 1))
        scale = torch.where(scale > 0, scale, 1)  # a row of zeros (or one value) quantizes to 0s
        q = torch.round(rows / scale)
        if zp is not None:
            q = (q + zp).clamp(-128, 127) - zp
        else:
            q = q.clamp(-128, 127)
        out = torch.mm(q, weight.float().t()) * scale * weight_scale
        if bias is not None:
            out = out + bias.float()
        return out.to(x.dtype).view(*x.shape[:-1], -1)


class TpuWNA16LinearKernel(MPLinearKernel):
    """Packed integer weights, unpacked and scaled at each step, times the activations."""

    @classmethod
    def get_min_capability(cls):
        return -1

    @classmethod
    def can_implement(cls, c):
        bits = c.weight_type.size_bits
        if not c.weight_type.is_integer() or 32 % bits:
            return False, f"takes 2-, 4- or 8-bit integer weights, not {c.weight_type}"
        if not c.zero_points and not c.weight_type.has_bias():
            return False, f"takes unsigned codes with a bias or zero points, not {c.weight_type}"
        return True, None

    def process_weights_after_loading(self, layer):
        if hasattr(layer, "_humming_input_quant_config"):  # vLLM's other users of this list
            raise NotImplementedError(
                'device "tpu": integer weights with integer-quantized activations in '
                "compressed-tensors' pack-quantized format (W4A8, W8A8 and the like, vLLM's "
                "Humming kernels) are not supported yet"
            )
        weight = getattr(layer, self.w_q_name)
        if weight.packed_dim != weight.input_dim:
            raise NotImplementedError(
                f'device "tpu": {self.config.weight_type} weights packed along the output '
                "channels are not supported yet"
            )
        bits = self.config.weight_type.size_bits
        # [out, in * bits / 32], [out, groups], [out, groups] (stored transposed by some formats)
        packed = weight.t() if weight.input_dim == 0 else weight
        scales = getattr(layer, self.w_s_name)
        scales = scales.t() if scales.output_dim == 1 else scales
        replace_parameter(layer, self.w_q_name, packed.contiguous())
        replace_parameter(layer, self.w_s_name, scales.contiguous())
        if self.config.zero_points:
            zp = getattr(layer, self.w_zp_name)
            codes = unpack_quantized_values_into_int32(zp, self.config.weight_type, zp.packed_dim)
            codes = codes.t() if zp.output_dim == 1 else codes
            replace_parameter(layer, self.w_zp_name, codes[: scales.shape[0]].contiguous())
        elif self.w_zp_name is not None:
            setattr(layer, self.w_zp_name, None)
        if not self.config.has_g_idx and self.w_gidx_name is not None:
            setattr(layer, self.w_gidx_name, None)
        layer.tpu_code_shifts = torch.arange(0, 32, bits, dtype=torch.int32, device=packed.device)

    def apply_weights(self, layer, x, bias=None):
        packed, scales, zp, g_idx = self._get_weight_params(layer)
        mask = (1 << self.config.weight_type.size_bits) - 1
        codes = (packed.unsqueeze(-1) >> layer.tpu_code_shifts) & mask
        codes = codes.reshape(packed.shape[0], -1).float()  # [out, in]
        if g_idx is not None:  # activation order: each input's own group
            scales = scales.index_select(1, g_idx)
            zp = zp.index_select(1, g_idx) if zp is not None else None
        # Each group's scale and zero point over its inputs (one group: per channel).
        codes = codes.view(codes.shape[0], scales.shape[1], -1)
        zp = zp.float().unsqueeze(-1) if zp is not None else self.config.weight_type.bias
        w = (codes - zp) * scales.float().unsqueeze(-1)
        return F.linear(x, w.view(w.shape[0], -1).to(x.dtype), bias)


linear._POSSIBLE_INT8_KERNELS[PlatformEnum.OOT] = [TpuInt8ScaledMMLinearKernel]
linear._POSSIBLE_KERNELS[PlatformEnum.OOT] = [TpuWNA16LinearKernel]
