"""Mixture-of-experts layers of vLLM on "tpu". For an out-of-tree platform vLLM selects no expert
kernel of its own and leaves the computation to the platform's version of its unquantized MoE
method (`UnquantizedFusedMoEMethod`, a custom op); this is that version, in torch ops.

The experts run densely, each on every token of the step, and each token's output sums its
top-k experts' outputs by their router weights (zero for the others): shapes stay fixed whatever
the routing, so a step's program depends on its padded token count only, at the cost of
num_experts / top_k times the routed work. With expert parallelism (`enable_expert_parallel`)
each rank runs the experts it holds and the layer's all-reduce sums the ranks' shares. Right for the small MoE models this is tested with; a
grouped matmul over tokens sorted by expert (JAX's megablox kernel on TPU) is what large ones
need."""

import torch
import torch.nn.functional as F
from vllm.model_executor.custom_op import CustomOp
from vllm.model_executor.layers.fused_moe.activation import MoEActivation
from vllm.model_executor.layers.fused_moe.unquantized_fused_moe_method import (
    UnquantizedFusedMoEMethod,
)

# The router's top-k of vLLM's CUDA extension (`_moe_C`, absent from a build without kernels), in
# torch ops: each token's experts by score (plus the correction bias, if any) and their weights
# (renormalized to sum to 1 if asked), written into the caller's tensors.
_ROUTER = "{}(Tensor(a!) topk_weights, Tensor(b!) topk_ids, Tensor(c!) token_expert_indices, "
_ROUTER += "Tensor gating_output, bool renormalize, Tensor? e_score_correction_bias=None, "
_ROUTER += "Tensor? is_padding=None) -> ()"


def _router(scoring):
    def topk(weights, ids, token_expert_indices, gating, renormalize, bias=None, is_padding=None):
        scores = scoring(gating.float())
        chosen = (scores + bias if bias is not None else scores).topk(ids.shape[1], dim=-1)[1]
        picked = scores.gather(1, chosen)
        if renormalize:
            picked = picked / picked.sum(-1, keepdim=True)
        weights.copy_(picked)
        ids.copy_(chosen)
        tokens, k = ids.shape  # the CUDA kernel's source rows: k-major
        rows = torch.arange(k, device=ids.device) * tokens
        token_expert_indices.copy_(rows + torch.arange(tokens, device=ids.device)[:, None])

    return topk


if not hasattr(torch.ops._moe_C, "topk_softmax"):
    _lib = torch.library.Library("_moe_C", "FRAGMENT")
    for _name, _scoring in (("topk_softmax", lambda g: g.softmax(-1)),
                            ("topk_sigmoid", torch.sigmoid)):  # fmt: skip
        _lib.define(_ROUTER.format(_name))
        _lib.impl(_name, _router(_scoring), "PrivateUse1")


def _gated(act):
    """act(gate) * up, gate being the first half of w13's output."""

    def gated(h):
        gate, up = h.chunk(2, dim=-1)
        return act(gate) * up

    return gated


def _swiglu_oai(h, alpha=1.702, limit=7.0):
    """gpt-oss's clamped SwiGLU on interleaved gate/up columns, with the constants vLLM's
    `swigluoai_and_mul` uses for its MoE layers."""
    gate, up = h[..., 0::2].clamp(max=limit), h[..., 1::2].clamp(-limit, limit)
    return gate * torch.sigmoid(gate * alpha) * (up + 1)


_ACTIVATIONS = {
    MoEActivation.SILU: _gated(F.silu),
    MoEActivation.GELU: _gated(F.gelu),
    MoEActivation.GELU_TANH: _gated(lambda x: F.gelu(x, approximate="tanh")),
    MoEActivation.SWIGLUOAI: _swiglu_oai,
}


@CustomOp.register_oot(name="UnquantizedFusedMoEMethod")  # replaces it by class name
class TpuUnquantizedFusedMoEMethod(UnquantizedFusedMoEMethod):
    @property
    def is_monolithic(self) -> bool:
        return False  # the runner selects the experts, then calls forward

    def forward_native(self, layer, x, topk_weights, topk_ids, shared_experts,
                       shared_experts_input):  # fmt: skip
        if layer.apply_router_weight_on_input:
            raise NotImplementedError(
                'device "tpu": MoE with router weights applied on the input is not supported yet'
            )
        act = _ACTIVATIONS.get(layer.activation)
        if act is None:
            raise NotImplementedError(
                f'device "tpu": MoE activation {layer.activation.value!r} is not supported yet'
            )
        w13, w2 = layer.w13_weight, layer.w2_weight  # [E, 2I, H], [E, H, I]
        h = torch.einsum("th,eoh->teo", x, w13)
        if self.moe.has_bias:
            h = h + layer.w13_bias
        y = torch.einsum("tei,ehi->teh", act(h), w2)
        if self.moe.has_bias:
            y = y + layer.w2_bias
        # Each token's weight per expert: its router weight where routed there, else 0.
        ids, routed = topk_ids.long(), topk_weights.to(y.dtype)
        if layer.expert_map is not None:
            # Expert parallel: this rank holds some experts (local ids, -1 for the others'); a
            # token's output here is its share from them, which the layer's all-reduce sums.
            ids = layer.expert_map[ids]
            routed = torch.where(ids >= 0, routed, 0)
            ids = ids.clamp(min=0)
        weights = torch.zeros(x.shape[0], w13.shape[0], dtype=y.dtype, device=x.device)
        weights = weights.scatter_add(1, ids, routed)
        # Shared experts, if any, are the MoE runner's to run (before this, in its own order).
        return torch.einsum("te,teh->th", weights, y).to(x.dtype)

    forward_oot = forward_native
