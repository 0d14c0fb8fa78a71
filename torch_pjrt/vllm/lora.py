"""LoRA adapters of vLLM on "tpu": the Punica wrapper (the platform's `get_punica_wrapper`) in
torch ops over fixed shapes, and adapter loads as whole-buffer copies.

Upstream's CPU wrapper gathers each token's adapter weights by a LoRA mapping sized by the
step's real tokens and requests; here a step's tokens and requests are padded (buckets.py), and
each new size would be a new program. So the mapping lives in device buffers of the runner's
largest sizes, -1 (no adapter) past the step's tokens and requests, copied whole from the host
at each change; the ops slice them to the rows they get (the padded count) and compute every
adapter slot densely as one matmul (contraction over slots x rank), masked by a one-hot of each
row's slot: the programs depend on the padded counts only, never on which adapters a step uses.

An adapter's load (vLLM's `set_lora` / `reset_lora` of each layer, slices sized by the
adapter's rank and targets) runs on host twins of the layer's stacked weights, which then go
to the device whole: the same programs for every adapter, which the start-up walk meets once.
"""

import numpy as np
import torch
from vllm.lora.punica_wrapper.punica_base import PunicaWrapperBase

import torch_pjrt

# A LoRA layer's stacked weights: one tensor, or a tuple (one per output slice).
_STACKS = ("lora_a_stacked", "lora_b_stacked")


def _one_hot(indices, slots):
    """[rows, slots] float32: 1 at each row's adapter slot, none for -1 (no adapter)."""
    return (indices[:, None] == torch.arange(slots, device=indices.device)).float()


def _shrink(x, lora_a, indices, scale):
    """x [rows, in] by each row's adapter A [slots, 1, rank, in]: [rows, rank] float32."""
    slots, _, rank, size = lora_a.shape
    all_slots = x.float() @ lora_a.reshape(slots * rank, size).float().T
    picked = all_slots.view(-1, slots, rank) * _one_hot(indices, slots)[:, :, None]
    return picked.sum(1) * scale


def _expand(x, lora_b, indices):
    """x [rows, rank] by each row's adapter B [slots, 1, out, rank]: [rows, out] float32."""
    slots, _, out, rank = lora_b.shape
    spread = _one_hot(indices, slots)[:, :, None] * x.float()[:, None, :rank]
    weights = lora_b.reshape(slots, out, rank).float().transpose(1, 2).reshape(slots * rank, out)
    return spread.reshape(x.shape[0], slots * rank) @ weights


class TpuPunicaWrapper(PunicaWrapperBase):
    """vLLM's Punica interface (y += x @ A @ B per row's adapter) on fixed shapes."""

    def __init__(self, max_num_batched_tokens, max_batches, device, **kwargs):
        super().__init__(max_num_batched_tokens, max_batches, device)
        self._token_lora_indices.fill_(-1)
        self._sampler_indices.fill_(-1)
        self._embeddings_indices.zero_()

    def update_metadata(self, mapping, lora_index_to_id, max_loras, vocab_size, **kwargs):
        """Each token's and each sampled row's adapter slot (-1: none) from the step's mapping,
        padded with -1 to the buffers' size and copied whole."""
        slot = {lora_id: i for i, lora_id in enumerate(lora_index_to_id) if lora_id is not None}

        def slots(ids, size):
            padded = np.full(size, -1, dtype=np.int64)
            padded[: len(ids)] = [slot[i] if i > 0 else -1 for i in ids]
            return padded

        size = self._token_lora_indices.shape[0]
        tokens = slots(mapping.index_mapping, size)
        self._token_lora_indices.copy_(torch.from_numpy(tokens))
        self._sampler_indices.copy_(torch.from_numpy(slots(mapping.prompt_mapping, size)))
        # Row offsets of each token's adapter in the embedding layer's stacked A (slot 0 for
        # none: masked out by the expand).
        self._embeddings_indices.copy_(torch.from_numpy(np.maximum(tokens, 0) * vocab_size))

    def _tokens(self, rows):
        return self._token_lora_indices[:rows]

    def add_shrink(self, y, x, lora_a_stacked, scale, **kwargs):
        x = x.view(-1, x.shape[-1])
        for i, lora_a in enumerate(lora_a_stacked):
            y[i].add_(_shrink(x, lora_a, self._tokens(x.shape[0]), scale))

    def add_expand(self, y, x, lora_b_stacked, output_slices, offset_start=0, add_inputs=True,
                   **kwargs):  # fmt: skip
        flat = y.view(-1, y.shape[-1])
        offset = offset_start
        for i, (lora_b, size) in enumerate(zip(lora_b_stacked, output_slices)):
            delta = _expand(x[i], lora_b, self._tokens(flat.shape[0]))[:, :size]
            target = flat[:, offset : offset + size]
            if add_inputs:
                target.add_(delta.to(flat.dtype))
            else:
                target.copy_(delta)
            offset += size

    def add_lora_embedding(self, y, x, lora_b_stacked, add_inputs=True, **kwargs):
        delta = _expand(x, lora_b_stacked, self._tokens(x.shape[0])).to(y.dtype)
        if add_inputs:
            y.add_(delta)
        else:
            y.copy_(delta)

    def add_lora_linear(self, y, x, lora_a_stacked, lora_b_stacked, scale, output_slices, *,
                        buffer=None, **kwargs):  # fmt: skip
        x = x.view(-1, x.shape[-1])
        shrunk = [_shrink(x, a, self._tokens(x.shape[0]), scale) for a in lora_a_stacked]
        self.add_expand(y, shrunk, lora_b_stacked, output_slices, add_inputs=True)

    def add_lora_logits(self, y, x, lora_a_stacked, lora_b_stacked, scale, *, buffer=None,
                        **kwargs):  # fmt: skip
        # One row per padded request: the sampled rows' adapters.
        flat, x = y.view(-1, y.shape[-1]), x.view(-1, x.shape[-1])
        indices = self._sampler_indices[: x.shape[0]]
        delta = _expand(_shrink(x, lora_a_stacked, indices, scale), lora_b_stacked, indices)
        common = min(delta.shape[1], flat.shape[1])  # the logits may pad the vocabulary
        flat[:, :common].add_(delta[:, :common].to(flat.dtype))


def _flat(stacks):
    """The tensors of {name: a stacked weight or a tuple of them}, in order."""
    return [t for s in stacks.values() for t in (s if isinstance(s, tuple) else (s,))]


def _loaded_on_host(module, method):
    """`method` (a layer's set_lora or reset_lora) run on host twins of its stacked weights,
    which then replace the device's whole."""

    def load(index, *args, **kwargs):
        device = {name: getattr(module, name) for name in _STACKS}
        for name in _STACKS:
            setattr(module, name, module._tpu_host_stacks[name])
        try:
            method(index, *args, **kwargs)
        finally:
            for name, stack in device.items():
                setattr(module, name, stack)
        for host_twin, stack in zip(_flat(module._tpu_host_stacks), _flat(device)):
            stack.copy_(host_twin)

    return load


def whole_adapter_loads(lora_manager):
    """Makes each LoRA layer load adapters through host twins (see the module's docstring), and
    each adapter's activation programs of their own (not part of the step's input preparation,
    which runs it). Layers with other weights (MoE LoRA) keep vLLM's own loads."""
    manager = lora_manager._adapter_manager
    for module in manager.modules.values():
        if not all(hasattr(module, name) for name in _STACKS):
            continue

        def twin(stack):
            if isinstance(stack, tuple):
                return tuple(s.to("cpu") for s in stack)
            return stack.to("cpu")

        module._tpu_host_stacks = {name: twin(getattr(module, name)) for name in _STACKS}
        module.set_lora = _loaded_on_host(module, module.set_lora)
        module.reset_lora = _loaded_on_host(module, module.reset_lora)
    activate = manager.activate_adapter

    def activate_adapter(lora_id):
        torch_pjrt.launch_pending()
        try:
            return activate(lora_id)
        finally:
            torch_pjrt.launch_pending()

    manager.activate_adapter = activate_adapter
