"""Speculative decoding of vLLM on "tpu": the rejection sampler's Triton kernels as torch ops, and
the methods this platform can run.

vLLM's rejection sampler (`vllm.v1.sample.rejection_sampler`) verifies the draft tokens with
Triton kernels: `rejection_sample` (greedy and random acceptance, recovered tokens) and
`expand_batch_to_tokens`. Here both are torch ops over [requests, longest draft] tensors: a
request keeps its leading accepted drafts, then the target's token at the first rejection (the
argmax for greedy requests, a sample of the residual distribution for the others), or the bonus
token when every draft was accepted. Their programs depend on the step's request and draft
token counts (vLLM's unpadded verification rows).

Methods: "ngram" (its proposer runs on the host, numba) works. The model-based proposers
("draft_model", "eagle", "eagle3", "mtp", ...) prepare their inputs with Triton kernels of
vLLM's (`copy_and_expand_eagle_inputs_kernel`, `eagle_prepare_inputs_padded_kernel`,
`eagle_step_slot_mapping_metadata_kernel`) that vLLM 0.29 offers no torch path for, and
"ngram_gpu" is a Triton kernel too: they are refused at start-up.
"""

import torch
import vllm.v1.sample.rejection_sampler as upstream

SUPPORTED_METHODS = ("ngram",)


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
