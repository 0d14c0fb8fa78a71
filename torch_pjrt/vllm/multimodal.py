"""Multimodal inputs of vLLM on "tpu": the encoder and the merge of its outputs into the token
embeddings, in programs whose shapes do not depend on what a step holds.

Upstream's runner encodes a step's images as one batch (a program per image count), slices each
encoder output by the part of its placeholder the step schedules and scatters the slices into the
embeddings of the step's unpadded tokens (a program per token count and slice sizes). Here:
- each item is encoded alone, as a program of its own: its shape is the processed item's (fixed
  for processors that resize to one size, such as CLIP's; one per image size otherwise);
- the token embeddings are taken for the padded token count, and each scheduled piece of an
  encoder output is merged by a gather of the whole output with row indices made on the host
  (a program per padded token count and encoder output length).
"""

from contextlib import contextmanager

import numpy as np
import torch
import vllm.v1.worker.gpu_model_runner
from vllm.multimodal.inputs import MultiModalFeatureSpec, PlaceholderRange

import torch_pjrt

_group_and_batch = vllm.v1.worker.gpu_model_runner.group_and_batch_mm_kwargs


def _one_item_per_batch(mm_kwargs, **kwargs):
    """Upstream's `group_and_batch_mm_kwargs`, one item per batch; each item's encoder is
    launched once the runner has called it (the generator resumes after)."""
    for item in mm_kwargs:
        yield from _group_and_batch([item], **kwargs)
        torch_pjrt.launch_pending()


@contextmanager
def _encoding_items_alone():
    module = vllm.v1.worker.gpu_model_runner
    module.group_and_batch_mm_kwargs = _one_item_per_batch
    try:
        yield
    finally:
        module.group_and_batch_mm_kwargs = _group_and_batch


class _Rows:
    """Rows [start, stop) of an encoder output, as numbers: what upstream's gather slices."""

    def __init__(self, output, start=0, stop=None):
        self.output, self.start = output, start
        self.stop = output.shape[0] if stop is None else stop

    def __getitem__(self, rows):
        return _Rows(self.output, self.start + rows.start, self.start + rows.stop)

    def __len__(self):
        return self.stop - self.start


def step_embeddings(runner, scheduler_output, padded):
    """The input embeddings of a step's `padded` tokens: the scheduled items encoded, the text
    embedded, each piece of an encoder output the step places put over its tokens."""
    with _encoding_items_alone():
        runner._execute_mm_encoder(scheduler_output)
    # Upstream's gather (which tokens take which rows: chunked prefill, is_embed), over row
    # ranges instead of slices of the outputs.
    cache_lookup = runner._get_encoder_output_from_cache
    runner._get_encoder_output_from_cache = lambda h: (
        None if (out := cache_lookup(h)) is None else _Rows(out)
    )
    try:
        pieces, is_mm = runner._gather_mm_embeddings(scheduler_output)
    finally:
        del runner._get_encoder_output_from_cache
    positions = np.flatnonzero(is_mm.numpy())
    device = runner.device

    def on_device(array):  # a host array of its own per transfer
        return torch.from_numpy(array).to(device)

    def tokens_mask(tokens):
        mask = np.zeros(padded, dtype=bool)
        mask[tokens] = True
        return on_device(mask)

    input_ids = runner.input_ids.gpu[:padded]
    if runner.speculative_config is not None:
        input_ids = input_ids.clamp(min=0)  # the scheduler's draft placeholders are -1
    embeds = runner.model.embed_input_ids(input_ids, is_multimodal=tokens_mask(positions))
    torch_pjrt.launch_pending()
    start = 0
    for piece in pieces:
        tokens = positions[start : start + len(piece)]
        start += len(piece)
        rows = np.zeros(padded, dtype=np.int64)
        rows[tokens] = np.arange(piece.start, piece.stop)
        taken = piece.output[on_device(rows)].to(embeds.dtype)
        embeds = torch.where(tokens_mask(tokens)[:, None], taken, embeds)
        torch_pjrt.launch_pending()
    return embeds


def walk_item(runner):
    """A made-up item of the modality with the most tokens per item (vLLM's dummy input, as its
    profile run makes), for the start-up walk: (modality, kwargs item, its placeholder); None
    when the model takes no item (every limit 0)."""
    budget = runner.mm_budget
    if budget is None or not budget.mm_max_toks_per_item:
        return None
    modality = budget.get_modality_with_max_tokens()
    dummy = runner.mm_registry.get_dummy_mm_inputs(runner.model_config, mm_counts={modality: 1})
    placeholder = dummy["mm_placeholders"][modality][0]
    return modality, dummy["mm_kwargs"][modality][0], placeholder


def walk_feature(item, identifier, offset):
    """A walk request's feature: the made-up item placed at `offset` of its prompt."""
    modality, data, placeholder = item
    position = PlaceholderRange(offset=offset, length=placeholder.length,
                                is_embed=placeholder.is_embed)  # fmt: skip
    return MultiModalFeatureSpec(data=data, modality=modality, identifier=identifier,
                                 mm_position=position)  # fmt: skip
