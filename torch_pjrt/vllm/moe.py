"""Mixture-of-experts layers of vLLM on "tpu". For an out-of-tree platform vLLM selects no expert
kernel of its own and leaves the computation to the platform's version of its unquantized MoE
method (`UnquantizedFusedMoEMethod`, a custom op); this is that version, in torch ops.

Two ways to run the experts, both of fixed shapes whatever the routing (a step's program depends
on its padded token count only):
- dense: each expert on every token of the step, each token's output the sum of its top-k
  experts' outputs by their router weights (zero for the others): num_experts / top_k times the
  routed work;
- grouped: the tokens * top_k (token, expert) pairs sorted by expert, the rows of their tokens
  through a grouped matmul (torch_pjrt.kernels.grouped_matmul: JAX's megablox kernel on TPU)
  whose work follows the routed rows, weighted and summed back per token.
The grouped way runs where the grouped matmul is megablox (libtpu); elsewhere the portable
grouped matmul does the dense work anyway (see kernels/grouped_matmul.py), so the dense way, with
no sort or gathers, runs. TORCH_PJRT_MOE=dense|grouped forces one. With expert parallelism
(`enable_expert_parallel`) each rank runs the experts it holds and the layer's all-reduce sums the
ranks' shares."""

import os

import torch
import torch.nn.functional as F
from vllm.model_executor.custom_op import CustomOp
from vllm.model_executor.layers.fused_moe.activation import MoEActivation
from vllm.model_executor.layers.fused_moe.unquantized_fused_moe_method import (
    UnquantizedFusedMoEMethod,
)

from .. import kernels

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


_WAYS = ("auto", "dense", "grouped")


def moe_way(dtype):
    """ "dense" or "grouped": how the experts run for activations of this dtype."""
    choice = os.environ.get("TORCH_PJRT_MOE", "auto")
    if choice not in _WAYS:
        raise ValueError(f"TORCH_PJRT_MOE must be one of {', '.join(_WAYS)}, not {choice!r}")
    if choice != "auto":
        return choice
    return "grouped" if kernels.grouped_matmul_kernel(dtype) == "megablox" else "dense"


def _local(topk_weights, topk_ids, expert_map, dtype):
    """The experts' ids on this rank and the router weights: with expert parallelism (an
    `expert_map` of local ids, -1 for the other ranks' experts) weight 0 where another rank's
    expert is picked, and its id -1."""
    ids, routed = topk_ids.long(), topk_weights.to(dtype)
    if expert_map is not None:
        ids = expert_map[ids]
        routed = torch.where(ids >= 0, routed, 0)
    return ids, routed


def dense_experts(x, topk_weights, topk_ids, w13, w2, act, w13_bias=None, w2_bias=None,
                  expert_map=None):  # fmt: skip
    """Every expert on every token; w13 [E, 2I, H], w2 [E, H, I], biases [E, 2I] and [E, H]."""
    h = torch.einsum("th,eoh->teo", x, w13)
    if w13_bias is not None:
        h = h + w13_bias
    y = torch.einsum("tei,ehi->teh", act(h), w2)
    if w2_bias is not None:
        y = y + w2_bias
    ids, routed = _local(topk_weights, topk_ids, expert_map, y.dtype)
    # Each token's weight per expert: its router weight where routed there, else 0.
    weights = torch.zeros(x.shape[0], w13.shape[0], dtype=y.dtype, device=x.device)
    weights = weights.scatter_add(1, ids.clamp(min=0), routed)
    return torch.einsum("te,teh->th", weights, y).to(x.dtype)


def grouped_experts(x, topk_weights, topk_ids, w13, w2, act, w13_bias=None, w2_bias=None,
                    expert_map=None):  # fmt: skip
    """The routed (token, expert) pairs only, through grouped matmuls; the arguments of
    `dense_experts`."""
    experts = w13.shape[0]
    k = topk_ids.shape[1]
    ids, routed = _local(topk_weights, topk_ids, expert_map, x.dtype)
    # Pairs routed to another rank's expert sort last, past every group (the grouped matmul
    # gives their rows zeros; their weight is 0 too).
    ids = torch.where(ids >= 0, ids, experts).reshape(-1)
    order = ids.argsort(stable=True)
    sizes = torch.zeros(experts + 1, dtype=torch.int32, device=x.device)
    sizes = sizes.scatter_add(0, ids, torch.ones_like(ids, dtype=torch.int32))[:experts]
    rows = order // k  # each sorted pair's token
    expert = ids[order].clamp(max=experts - 1)  # for the biases
    h = kernels.grouped_matmul(x[rows], w13, sizes, transpose_rhs=True)
    if w13_bias is not None:
        h = h + w13_bias[expert]
    y = kernels.grouped_matmul(act(h), w2, sizes, transpose_rhs=True)
    if w2_bias is not None:
        y = y + w2_bias[expert]
    y = y * routed.reshape(-1)[order, None]
    return torch.zeros_like(x).index_add(0, rows, y)


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
        biases = (layer.w13_bias, layer.w2_bias) if self.moe.has_bias else (None, None)
        experts = grouped_experts if moe_way(x.dtype) == "grouped" else dense_experts
        # Shared experts, if any, are the MoE runner's to run (before this, in its own order).
        return experts(x, topk_weights, topk_ids, layer.w13_weight, layer.w2_weight, act,
                       *biases, layer.expert_map)  # fmt: skip

    forward_oot = forward_native
