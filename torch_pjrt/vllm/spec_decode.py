"""Speculative decoding of vLLM on "tpu": the rejection sampler's and the model-based proposer's
Triton kernels as torch ops, and the methods this platform can run.

vLLM's rejection sampler (`vllm.v1.sample.rejection_sampler`) verifies the draft tokens with
Triton kernels: `rejection_sample` (greedy and random acceptance, recovered tokens) and
`expand_batch_to_tokens`. Here both are torch ops over [requests, longest draft] tensors: a
request keeps its leading accepted drafts, then the target's token at the first rejection (the
argmax for greedy requests, a sample of the residual distribution for the others), or the bonus
token when every draft was accepted. Their programs depend on the step's request and draft
token counts (vLLM's unpadded verification rows).

Methods: "ngram" (its proposer runs on the host, numba) and "draft_model" work. The draft model's
proposer (vLLM's base proposer, shared with "eagle", "eagle3", "mtp") prepares its inputs with
four Triton kernels, here torch ops too (`use_torch_proposer_kernels`); its programs depend on
the step's request and token counts. The Eagle family takes the target's hidden states and is
untried, so refused at start-up, as is "ngram_gpu" (a Triton kernel itself).
"""

from functools import partial

import torch
import vllm.v1.sample.rejection_sampler as upstream
import vllm.v1.spec_decode.llm_base_proposer as base
import vllm.v1.spec_decode.utils as upstream_utils

SUPPORTED_METHODS = ("ngram", "draft_model")


def check_method(speculative_config):
    """A clear error at start-up for a method this platform cannot run (see the docstring)."""
    if speculative_config is None or speculative_config.method in SUPPORTED_METHODS:
        return
    raise NotImplementedError(
        f'vLLM on "tpu": speculative decoding method {speculative_config.method!r} is not '
        f"supported (its proposer needs vLLM's Triton kernels); supported: "
        f"{', '.join(SUPPORTED_METHODS)}"
    )


def _request_of_tokens(cu_num_tokens, num_tokens):
    """[num_tokens]: the request each flattened token belongs to (cu_num_tokens: cumulative
    counts per request)."""
    tokens = torch.arange(num_tokens, device=cu_num_tokens.device)
    return (tokens[:, None] >= cu_num_tokens[None, :].long()).sum(1)


def expand_batch_to_tokens(x, cu_num_tokens, num_tokens, replace_from=0, replace_to=0):
    """Upstream's: x [requests] repeated for each request's tokens, replace_from replaced."""
    expanded = x[_request_of_tokens(cu_num_tokens, num_tokens)]
    return torch.where(expanded == replace_from, replace_to, expanded)


def _random_verdicts(draft_ids, num_draft_tokens, cu_num_draft_tokens, draft_probs, target_logits,
                     metadata):  # fmt: skip
    """For random requests, per draft token: accepted (target p / draft p >= a uniform draw,
    upstream's rule) and the recovered token (a sample of max(target - draft, 0))."""
    tokens, device = draft_ids.shape[0], target_logits.device
    probs = target_logits.softmax(-1, dtype=torch.float32)
    ids = draft_ids.long()[:, None].clamp_min(0)
    target_p = probs.gather(1, ids)[:, 0]
    if draft_probs is None:  # ngram: the draft token with probability 1
        draft_p = torch.ones_like(target_p)
        residual = probs.scatter(1, ids, 0.0)
    else:
        draft_p = draft_probs.gather(1, ids)[:, 0]
        residual = (probs - draft_probs).clamp_min(0)
    uniform = upstream.generate_uniform_probs(tokens, num_draft_tokens, metadata.generators,
                                              device)  # fmt: skip
    accepted = (draft_ids >= 0) & (draft_p > 0) & (target_p / draft_p >= uniform)
    # One exponential draw per request, as upstream: argmax(p / q) samples from p.
    q = torch.empty(len(num_draft_tokens), probs.shape[1], device=device).exponential_()
    for i, generator in metadata.generators.items():
        if num_draft_tokens[i] > 0:
            q[i].exponential_(generator=generator)
    request = _request_of_tokens(cu_num_draft_tokens, tokens)
    recovered = (residual / q[request]).argmax(-1)
    return accepted, recovered


def rejection_sample(draft_token_ids, num_draft_tokens, max_spec_len, cu_num_draft_tokens,
                     draft_probs, target_logits, bonus_token_ids, sampling_metadata,
                     synthetic_mode=False, synthetic_conditional_rates=None,
                     use_fp64_gumbel=False):  # fmt: skip
    """Upstream's `rejection_sample`, the same arguments and output [requests, max_spec_len + 1]
    (int32, -1 past each request's tokens), in torch ops."""
    if synthetic_mode:
        raise NotImplementedError('vLLM on "tpu": synthetic rejection sampling is not supported')
    device = target_logits.device
    tokens = draft_token_ids.shape[0]
    count = torch.tensor(num_draft_tokens, device=device)
    cu = cu_num_draft_tokens.long()
    cols = torch.arange(max_spec_len, device=device)
    valid = cols[None, :] < count[:, None]
    # Each request's draft tokens as a row (the last token repeated past its count).
    where = ((cu - count)[:, None] + cols[None, :]).clamp(0, max(tokens - 1, 0))
    argmax = target_logits.argmax(-1)
    accepted = draft_token_ids.long() == argmax
    recovered = argmax
    if not sampling_metadata.all_greedy:
        random_accepted, random_recovered = _random_verdicts(
            draft_token_ids, num_draft_tokens, cu, draft_probs, target_logits, sampling_metadata
        )
        greedy = (sampling_metadata.temperature == upstream.GREEDY_TEMPERATURE)[
            _request_of_tokens(cu, tokens)
        ]
        accepted = torch.where(greedy, accepted, random_accepted)
        recovered = torch.where(greedy, recovered, random_recovered)
    accepted = accepted[where] & valid
    kept = torch.cumprod(accepted.long(), 1).sum(1, keepdim=True)  # leading accepted drafts
    zero = torch.zeros(len(num_draft_tokens), 1, dtype=torch.long, device=device)
    drafts = torch.cat([draft_token_ids.long()[where], zero], 1)
    recovered = torch.cat([recovered[where], zero], 1)
    cols = torch.arange(max_spec_len + 1, device=device)[None, :]
    all_kept = kept == count[:, None]
    at_kept = torch.where(all_kept, bonus_token_ids.long().view(-1, 1), recovered)
    out = torch.where(cols < kept, drafts, at_kept)
    return torch.where(cols <= kept, out, upstream.PLACEHOLDER_TOKEN_ID).to(torch.int32)


def use_torch_rejection_sampler():
    """Upstream's rejection sampler calls these through its module's globals."""
    upstream.rejection_sample = rejection_sample
    upstream.expand_batch_to_tokens = expand_batch_to_tokens


# The model-based proposers' Triton kernels (vllm.v1.spec_decode.utils), as torch ops. Upstream
# launches them as `kernel[grid](...)`: `_Launch` takes the grid and calls the torch version.


class _Launch:
    def __init__(self, fn):
        self.fn = fn

    def __getitem__(self, grid):
        return partial(self.fn, grid)


def _store(out, index, values, mask):
    """out[index] = values where mask (a masked Triton store), through a spare element."""
    spare = torch.cat((out, out.new_zeros(1)))
    spare.index_put_((torch.where(mask, index, len(out)).flatten(),),
                     values.flatten().to(out.dtype))  # fmt: skip
    out.copy_(spare[:-1])


def prepare_next_token_padded(grid, sampled, discard, backup, next_ids, valid_count, vocab,
                              num_tokens, batch_size, stride, BLOCK_SIZE_TOKENS):  # fmt: skip
    """Per request: the count of valid sampled tokens and the last of them (the backup token
    when none, or when the request's token is discarded)."""
    valid = (sampled != -1) & (sampled < vocab)
    count = valid.sum(1)
    cols = torch.arange(sampled.shape[1], device=sampled.device)
    last = torch.where(valid, cols, -1).amax(1).clamp(min=0)
    token = sampled.gather(1, last[:, None].long())[:, 0]
    discarded = discard[:batch_size]
    next_ids.copy_(torch.where(discarded | (count == 0), backup[:batch_size], token))
    valid_count.copy_(torch.where(discarded, 0, count))


def prepare_inputs_padded(grid, cu_num_draft, valid_count, query_start_loc, to_sample,
                          num_rejected, num_reqs):  # fmt: skip
    """Per request: the rejected draft count and the index of the token to sample."""
    cu = cu_num_draft[:num_reqs].long()
    drafts = cu - torch.cat((cu.new_zeros(1), cu[:-1]))
    rejected = torch.where(drafts > 0, drafts + 1 - valid_count[:num_reqs].long(), 0)
    to_sample.copy_(query_start_loc[1 : num_reqs + 1].long() - 1 - rejected)
    num_rejected.copy_(rejected)


def copy_and_expand_inputs(grid, *, target_token_ids_ptr, target_positions_ptr,
                           next_token_ids_ptr, out_input_ids_ptr, out_positions_ptr,
                           out_is_rejected_token_mask_ptr, out_is_masked_token_mask_ptr,
                           out_new_token_indices_ptr, out_hidden_state_mapping_ptr,
                           query_start_loc_ptr, query_end_loc_ptr, padding_token_id,
                           parallel_drafting_token_id, total_input_tokens,
                           num_padding_slots_per_request, shift_input_ids,
                           BLOCK_SIZE_TOKENS):  # fmt: skip
    """The drafter's first-pass inputs per request: its valid tokens (shifted by one when the
    drafter takes hidden states), the bonus token, parallel drafting slots, rejected slots."""
    batch, blocks = grid
    device = target_token_ids_ptr.device
    slots = num_padding_slots_per_request
    start = query_start_loc_ptr[:batch].long()[:, None]
    next_start = query_start_loc_ptr[1 : batch + 1].long()[:, None]
    end = query_end_loc_ptr[:batch].long()[:, None]
    row = torch.arange(batch, device=device)[:, None]
    offset = 1 if shift_input_ids else 0
    valid = end - start + 1 - offset
    out_start = start + row * (slots - offset)
    total = valid + slots + next_start - end - 1
    j = torch.arange(blocks * BLOCK_SIZE_TOKENS, device=device)[None, :]
    in_bounds = j < total
    is_valid, is_bonus = j < valid, j == valid
    is_parallel = (j > valid) & (j < valid + slots)
    is_rejected = j >= valid + slots
    out = out_start + j
    source = (start + offset + j).clamp(max=total_input_tokens - 1)
    tokens = torch.where(is_valid, target_token_ids_ptr[source].long(), 0)
    tokens = torch.where(is_bonus, next_token_ids_ptr[:batch].long()[:, None], tokens)
    tokens = torch.where(is_parallel, parallel_drafting_token_id, tokens)
    tokens = torch.where(is_rejected, padding_token_id, tokens)
    positions = torch.where(is_rejected, 0, target_positions_ptr[start].long() + j)
    _store(out_input_ids_ptr, out, tokens, in_bounds)
    _store(out_positions_ptr, out, positions, in_bounds)
    _store(out_is_rejected_token_mask_ptr, out, is_rejected & in_bounds, in_bounds)
    _store(out_is_masked_token_mask_ptr, out, is_parallel & in_bounds, in_bounds)
    new = (j >= valid) & (j < valid + slots) & in_bounds
    _store(out_new_token_indices_ptr, row * slots + j - valid, out, new)
    if shift_input_ids:
        _store(out_hidden_state_mapping_ptr, start + j, out, j < next_start - start)


def step_update_slot_mapping_and_metadata(positions_1d, block_table_tensor, seq_lens,
                                          block_size, max_model_len, out_clamped_positions,
                                          out_slot_mapping, input_batch_size=None):  # fmt: skip
    """One autoregressive draft step: positions + 1 (0 past the model's length), their slots
    (padding past it and for padded rows), sequence lengths + 1 (1 past it), in place."""
    batch = positions_1d.shape[0]
    padded = batch if input_batch_size is None else input_batch_size
    position = positions_1d.long() + 1
    exceeds = position >= max_model_len
    position = torch.where(exceeds, 0, position)
    block = (position // block_size).clamp(max=block_table_tensor.shape[1] - 1)
    number = block_table_tensor[:batch].long().gather(1, block[:, None])[:, 0]
    slot = torch.where(exceeds, upstream_utils.PADDING_SLOT_ID,
                       number * block_size + position % block_size)  # fmt: skip
    pad = slot.new_full((padded - batch,), upstream_utils.PADDING_SLOT_ID)
    out_slot_mapping[:padded] = torch.cat((slot, pad))
    out_clamped_positions.copy_(position)
    seq_lens[:batch] = torch.where(exceeds, 1, seq_lens[:batch].long() + 1).clamp(max=max_model_len)


def use_torch_proposer_kernels():
    """The base proposer calls these through its module's globals."""
    base.eagle_prepare_next_token_padded_kernel = _Launch(prepare_next_token_padded)
    base.eagle_prepare_inputs_padded_kernel = _Launch(prepare_inputs_padded)
    base.copy_and_expand_eagle_inputs_kernel = _Launch(copy_and_expand_inputs)
    base.eagle_step_update_slot_mapping_and_metadata = step_update_slot_mapping_and_metadata
