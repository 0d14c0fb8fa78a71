"""vLLM's sampling over the padded rows of a step, in programs that depend on the padded request
count only.

Upstream's sampler shapes its work by the step: the number of requests, the longest prompt and
output (penalties), the largest number of logprobs asked for, how many tokens are biased or
banned. On this device each new shape is a new program, so a server would compile while serving.
Here every feature is data in tensors of fixed shapes, built on the host from the input batch:
- one row per padded request: temperature (0: greedy), top-k, top-p, min-p, the three penalties,
  two random keys (a seeded request's come from its seed and its output length, so it repeats
  itself whatever else shares the batch; the others' from a generator seeded with the model's
  seed);
- logit edits as (row, token, kind, value) entries, padded to a power of two from 1,024 (more
  compile once per size): logit bias, the stop tokens of requests short of min_tokens (restored
  when nothing else is left, as upstream does for structured output), bad words whose prefix
  ends the output, allowed-token lists;
- penalties read token counts kept on the device per request (prompt tokens at admission, each
  sampled token after its step), so no tensor is sized by a prompt or an output;
- logprobs: the top `max_logprobs` (the model config's) of the raw logits always, cut on the host
  to what the step asked for;
- structured output's bitmask, one that allows everything when the step has none.
A step whose rows are all greedy, with none of the above, takes the argmax alone. So the sampler
(with the logits before it) is two programs per padded request count, which the start-up walk
compiles. Spec decoding, logprob_token_ids, logprobs of the whole vocabulary, other logprobs
modes and custom logits processors keep upstream's sampler over unpadded rows.
"""

import numpy as np
import torch
from vllm.v1.outputs import LogprobsTensors, SamplerOutput
from vllm.v1.sample.ops.topk_topp_sampler import apply_top_k_top_p_pytorch

import torch_pjrt

_EPS = 1e-5  # upstream's: a temperature below it samples greedily
_MASK32 = 0xFFFFFFFF
# Kinds of logit edits.
_ADD, _ALLOW, _STOP, _STOP_RESTORED = 0, 1, 2, 3
_BUILTIN_PROCESSORS = {"MinPLogitsProcessor", "LogitBiasLogitsProcessor",
                       "MinTokensLogitsProcessor"}  # fmt: skip
# Prompt and output tokens go into the penalty counts this many at a time.
_CHUNK = 256


def _mix32(x):
    """A 32-bit integer hash (int64 tensors holding uint32 values)."""
    x = x ^ (x >> 16)
    x = (x * 0x7FEB352D) & _MASK32
    x = x ^ (x >> 15)
    x = (x * 0x846CA68B) & _MASK32
    return x ^ (x >> 16)


def _seed_keys(seed, position):
    """Two 32-bit keys from a request's seed and output position (splitmix64)."""
    z = (seed * 0x9E3779B97F4A7C15 + position * 0xBF58476D1CE4E5B9) & ((1 << 64) - 1)
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & ((1 << 64) - 1)
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & ((1 << 64) - 1)
    z ^= z >> 31
    return z & _MASK32, z >> 32


def exponential_noise(keys, vocab):
    """Exp(1) noise [rows, vocab] that is a function of each row's two keys: dividing the
    probabilities by it and taking the argmax samples from them."""
    v = torch.arange(vocab, device=keys.device, dtype=torch.int64)
    h = _mix32(_mix32(v ^ keys[:, :1]) ^ keys[:, 1:])
    u = ((h >> 8).float() + 0.5) * (1.0 / (1 << 24))
    return -torch.log(u)


def unpack_bitmask(bitmask, vocab):
    """Structured output's packed bitmask [rows, words] (int32, bit t % 32 of word t // 32 set:
    token t allowed) as a bool mask [rows, vocab] of the tokens it bans; tokens past its last
    word are not banned."""
    bits = torch.arange(32, device=bitmask.device, dtype=torch.int64)
    words = (bitmask.to(torch.int64) & _MASK32)[:, :, None]
    allowed = ((words >> bits) & 1).flatten(1)
    covered = min(vocab, allowed.shape[1])
    banned = torch.zeros(bitmask.shape[0], vocab, dtype=torch.bool, device=bitmask.device)
    banned[:, :covered] = allowed[:, :covered] == 0
    return banned


def whole_min_p_copies(logitsprocs):
    """Makes upstream's MinPLogitsProcessor copy its whole buffer to the device: its copy of the
    first `batch size` rows would be a program sized by the step's request count."""
    for processor in logitsprocs.all:
        if type(processor).__name__ != "MinPLogitsProcessor" or not processor.use_double_tensor:
            continue
        processor.use_double_tensor = False  # it slices the device buffer, copies nothing
        update = processor.update_state

        def update_state(batch_update, processor=processor, update=update):
            update(batch_update)
            processor.min_p_device.copy_(processor.min_p_cpu_tensor, non_blocking=True)

        processor.update_state = update_state


def _pow2(n, minimum):
    size = minimum
    while size < n:
        size *= 2
    return size


class PaddedSampler:
    """Samples a step's padded logits [padded requests, vocab] (see the module's docstring)."""

    def __init__(self, runner):
        self.runner = runner
        self.device = runner.device
        self.max_reqs = runner.max_num_reqs
        self.vocab = runner.model_config.get_vocab_size()
        self.top_logprobs = max(1, runner.model_config.max_logprobs)
        self.logprobs_mode = runner.model_config.logprobs_mode
        self.rng = np.random.default_rng(runner.model_config.seed)
        # Penalty counts per request (a row each, and a spare one for rows without
        # penalties): the prompt's tokens seen, and how often each token was sampled.
        # Kept flat and only ever written flat: a program's inputs take the shape of their
        # storage's last write, so one shape keeps them one program.
        self.slots = {}  # request id -> its row
        size = (self.max_reqs + 1) * self.vocab
        self.prompt_seen = torch.zeros(size, dtype=torch.bool, device=self.device)
        self.output_counts = torch.zeros(size, dtype=torch.float32, device=self.device)
        self._row = torch.arange(self.vocab, device=self.device)
        self._no_bitmask = {}  # padded rows -> an all-allowing bitmask on the device
        # Asynchronous scheduling: the last step's tokens, one per request the runner can
        # hold, for the next step's input ids (model_runner.py).
        self.carried = torch.zeros(self.max_reqs, dtype=torch.int32, device=self.device)

    def carry(self, sampled):
        """Keeps a step's sampled tokens [rows] (int32) padded to every request the runner can
        hold, under asynchronous scheduling: in the step's sampling program, so the next
        step's input preparation reads one shape whatever the step's request count."""
        if self.runner.use_async_scheduling:
            self.carried = torch.nn.functional.pad(sampled, (0, self.max_reqs - len(sampled)))

    # Which steps this sampler takes.

    def unsupported(self, metadata):
        """Why upstream's sampler must take this step (None when this one can)."""
        if any(metadata.spec_token_ids or ()):
            return "speculative decoding"
        if metadata.logprob_token_ids:
            return "logprob_token_ids"
        if metadata.max_num_logprobs is not None and (
            metadata.max_num_logprobs < 0 or metadata.max_num_logprobs > self.top_logprobs
        ):
            return "logprobs of the whole vocabulary"
        if metadata.max_num_logprobs is not None and self.logprobs_mode != "raw_logprobs":
            return f"logprobs mode {self.logprobs_mode}"
        holder = metadata.thinking_budget_state_holder
        if holder is not None and holder.has_tracked_requests():
            return "a thinking budget"
        for processor in metadata.logitsprocs.all:
            if type(processor).__name__ not in _BUILTIN_PROCESSORS:
                return f"logits processor {type(processor).__name__}"
        return None

    @staticmethod
    def _processor(metadata, name):
        for processor in metadata.logitsprocs.all:
            if type(processor).__name__ == name:
                return processor
        return None

    # The host's part: the step's parameters as tensors.

    def _edits(self, metadata, batch, n):
        """(entries [K, 3] int64: row, token, kind; values [K] float32; rows restricted to
        allowed tokens [n]) of the step's logit edits."""
        rows, tokens, kinds, values = [], [], [], []

        def add(row, toks, kind, value=0.0):
            rows.extend([row] * len(toks))
            tokens.extend(toks)
            kinds.extend([kind] * len(toks))
            values.extend([value] * len(toks) if np.isscalar(value) else value)

        restricted = np.zeros(n, dtype=bool)
        if batch.allowed_token_ids_mask_cpu_tensor is not None:
            for r in range(n):
                if batch.req_ids[r] in batch.has_allowed_token_ids:
                    restricted[r] = True
                    allowed = batch.allowed_token_ids_mask_cpu_tensor[r].logical_not()
                    add(r, allowed.nonzero().flatten().tolist(), _ALLOW)
        for r, words in metadata.bad_words_token_ids.items():
            past = batch.req_output_token_ids[r]
            for word in words:
                prefix = word[:-1]
                if len(prefix) <= len(past) and (not prefix or past[-len(prefix) :] == prefix):
                    add(r, [word[-1]], _ADD, float("-inf"))
        bias = self._processor(metadata, "LogitBiasLogitsProcessor")
        for r, entries in bias.biases.items() if bias else ():
            add(r, list(entries), _ADD, [float(b) for b in entries.values()])
        min_tokens = self._processor(metadata, "MinTokensLogitsProcessor")
        for r, (_, _, stop, structured) in min_tokens.min_toks.items() if min_tokens else ():
            add(r, sorted(stop), _STOP_RESTORED if structured else _STOP, float("-inf"))
        size = _pow2(len(rows), 1024)
        entries = np.zeros((size, 3), dtype=np.int64)
        entries[:, 0] = self.max_reqs  # padding: the spare row past the logits
        entries[: len(rows)] = np.stack([rows, tokens, kinds], axis=1) if rows else 0
        values_np = np.zeros(size, dtype=np.float32)
        values_np[: len(values)] = values
        return entries, values_np, restricted

    def _params(self, metadata, batch, n, padded):
        """(floats [padded, 6]: temperature, top-p, min-p, presence, frequency, repetition;
        ints [padded, 5]: top-k, two random keys, penalty slot now, penalty slot to count the
        sampled token in)."""
        floats = np.zeros((padded, 6), dtype=np.float32)
        floats[:, 1] = 1.0
        floats[:, 5] = 1.0
        floats[:n, 0] = batch.temperature_cpu[:n]
        floats[:n, 1] = batch.top_p_cpu[:n]
        min_p = self._processor(metadata, "MinPLogitsProcessor")
        if min_p is not None:
            floats[:n, 2] = min_p.min_p_cpu[:n]
        floats[:n, 3] = batch.presence_penalties_cpu[:n]
        floats[:n, 4] = batch.frequency_penalties_cpu[:n]
        floats[:n, 5] = batch.repetition_penalties_cpu[:n]
        ints = np.zeros((padded, 5), dtype=np.int64)
        ints[:, 0] = self.vocab
        ints[:n, 0] = batch.top_k_cpu[:n]
        ints[:, 1:3] = self.rng.integers(0, 1 << 32, size=(padded, 2), dtype=np.int64)
        for r in range(n):
            req = self.runner.requests.get(batch.req_ids[r])
            seed = req.sampling_params.seed if req and req.sampling_params else None
            if seed is not None:
                ints[r, 1:3] = _seed_keys(seed, len(batch.req_output_token_ids[r]))
        ints[:, 3:5] = self.max_reqs  # the spare slot: no penalties
        return floats, ints

    def admit(self, batch):
        """Gives each request of the batch with penalties its row of the counts, filled from
        its prompt (and a resumed request's output so far); frees those of finished requests.
        Runs before the step's forward: its programs are its own, not the sampler's."""
        n = batch.num_reqs
        current = set(batch.req_ids[:n])
        for req_id in [r for r in self.slots if r not in current]:
            del self.slots[req_id]
        penalized = (batch.presence_penalties_cpu[:n] != 0) | (
            batch.frequency_penalties_cpu[:n] != 0
        )
        penalized |= batch.repetition_penalties_cpu[:n] != 1
        for r in np.flatnonzero(penalized):
            req_id = batch.req_ids[r]
            if req_id not in self.slots:
                free = sorted(set(range(self.max_reqs)) - set(self.slots.values()))
                self.slots[req_id] = free[0]
                prompt = batch.token_ids_cpu[r, : batch.num_prompt_tokens[r]]
                self._admit(free[0], prompt, batch.req_output_token_ids[r])

    def _penalty_slots(self, batch, n, ints):
        """Each row's row of the counts in `ints` (the spare one without penalties), and where
        its sampled token is counted (nowhere for a partial prefill, whose token is dropped)."""
        discard = self.runner.discard_request_mask.np
        for r in range(n):
            slot = self.slots.get(batch.req_ids[r])
            if slot is not None:
                ints[r, 3] = slot
                ints[r, 4] = self.max_reqs if discard[r] else slot

    def _admit(self, slot, prompt, output):
        """Sets a slot's counts: the prompt's tokens seen, the output's counted (a resumed
        request has some). Each part is a program of its own, of a fixed size (the tokens go in
        chunks, at least one), so admissions compile nothing after the walk's first."""
        torch_pjrt.launch_pending()
        row = slot * self.vocab + self._row
        self.prompt_seen.index_fill_(0, row, False)
        self.output_counts.index_fill_(0, row, 0.0)
        torch_pjrt.launch_pending()
        spare = self.max_reqs * self.vocab  # padding goes to the spare slot's first token
        for tokens, table, value in ((prompt, self.prompt_seen, True),
                                     (output, self.output_counts, 1.0)):  # fmt: skip
            tokens = np.asarray(tokens, dtype=np.int64)
            for start in range(0, max(len(tokens), 1), _CHUNK):
                flat = np.full(_CHUNK, spare, dtype=np.int64)
                part = tokens[start : start + _CHUNK]
                flat[: len(part)] = slot * self.vocab + part
                positions = torch.from_numpy(flat).to(self.device)
                fill = torch.full((_CHUNK,), value, dtype=table.dtype, device=self.device)
                table.index_put_((positions,), fill, accumulate=value is not True)
                torch_pjrt.launch_pending()

    # The device's part.

    def greedy_only(self, metadata, bitmask):
        """Whether the step's rows are all greedy, with no edits, penalties, logprobs or
        bitmask."""
        if bitmask is not None or not metadata.all_greedy or not metadata.no_penalties:
            return False
        if metadata.max_num_logprobs is not None or metadata.allowed_token_ids_mask is not None:
            return False
        if metadata.bad_words_token_ids:
            return False
        return not any(
            (type(p).__name__ == "LogitBiasLogitsProcessor" and p.biases)
            or (type(p).__name__ == "MinTokensLogitsProcessor" and p.min_toks)
            for p in metadata.logitsprocs.all
        )

    def _bitmask(self, bitmask, padded):
        """Structured output's packed bitmask on the device, [padded rows, words]; one that
        allows everything when the step has none (made once per padded row count)."""
        if bitmask is not None:
            return torch.from_numpy(bitmask).to(self.device)
        if padded not in self._no_bitmask:
            words = np.full((padded, -(-self.vocab // 32)), -1, dtype=np.int32)
            self._no_bitmask[padded] = torch.from_numpy(words).to(self.device)
        return self._no_bitmask[padded]

    def __call__(self, logits, metadata, batch, bitmask=None):
        """The sampled tokens (and logprobs) of a step; `bitmask`: structured output's, one row
        per padded row (numpy int32), or None. The logits' program and this one are one."""
        n, padded = batch.num_reqs, logits.shape[0]
        if self.greedy_only(metadata, bitmask):
            sampled = logits.argmax(dim=-1).to(torch.int32)
            self.carry(sampled)
            torch_pjrt.launch_pending()
            return SamplerOutput(sampled_token_ids=sampled[:, None][:n], logprobs_tensors=None)
        floats, ints = self._params(metadata, batch, n, padded)
        self._penalty_slots(batch, n, ints)
        entries, values, restricted_np = self._edits(metadata, batch, n)
        restricted = np.zeros(padded, dtype=bool)
        restricted[:n] = restricted_np
        host = (floats, ints, entries, values, restricted)
        floats, ints, entries, values, restricted = (
            torch.from_numpy(a).to(self.device) for a in host
        )
        sampled, top_ids, top_lps, ranks = self._sample(
            logits, floats, ints, entries, values, restricted, self._bitmask(bitmask, padded)
        )
        sampled = sampled.to(torch.int32)
        self.carry(sampled)
        # Launched with the same results alive whatever the step asked for, so it is one
        # program (a program's results are the tensors alive when it is launched).
        torch_pjrt.launch_pending()
        logprobs = None
        if metadata.max_num_logprobs is not None:
            k = metadata.max_num_logprobs + 1
            logprobs = LogprobsTensors(top_ids.cpu()[:n, :k], top_lps.cpu()[:n, :k],
                                       ranks.cpu()[:n])  # fmt: skip
        return SamplerOutput(sampled_token_ids=sampled[:, None][:n], logprobs_tensors=logprobs)

    def _sample(self, logits, floats, ints, entries, values, restricted, bitmask):
        padded, vocab = logits.shape
        logits = logits.float()
        raw_logprobs = logits.log_softmax(dim=-1)
        logits = logits.masked_fill(unpack_bitmask(bitmask, vocab), float("-inf"))
        # Edits, on the logits flattened with one spare element for padding entries.
        flat = torch.cat((logits.reshape(-1), logits.new_zeros(1)))
        rows, tokens, kinds = entries[:, 0], entries[:, 1], entries[:, 2]
        at = torch.where(rows < padded, rows * vocab + tokens, padded * vocab)
        kept = torch.zeros_like(flat, dtype=torch.bool)
        kept.index_put_((torch.where(kinds == _ALLOW, at, padded * vocab),),
                        torch.ones_like(at, dtype=torch.bool))  # fmt: skip
        ban = torch.cat((restricted[:, None].expand(padded, vocab).reshape(-1), kept[-1:] & False))
        flat = torch.where(ban & ~kept, float("-inf"), flat)
        before = flat[at]
        adds = torch.where(kinds == _ALLOW, 0.0, values)
        flat = flat.index_put((at,), adds, accumulate=True)
        logits = flat[:-1].view(padded, vocab)
        # A structured output request short of min_tokens gets its stop tokens back when the
        # ban left it nothing (upstream's MinTokensLogitsProcessor).
        dead = torch.isneginf(logits).all(dim=-1)
        restore = (kinds == _STOP_RESTORED) & dead[rows.clamp(max=padded - 1)]
        restore &= torch.isfinite(before) & (rows < padded)
        flat = flat.index_put((torch.where(restore, at, padded * vocab),),
                              torch.where(restore, before, flat[-1]))  # fmt: skip
        logits = flat[:-1].view(padded, vocab)
        # Penalties, from the counts of the rows' slots.
        counts = self.output_counts.view(-1, vocab)[ints[:, 3]]
        seen = counts > 0
        prompt_seen = self.prompt_seen.view(-1, vocab)[ints[:, 3]]
        repetition = torch.where(prompt_seen | seen, floats[:, 5:6], 1.0)
        logits = logits * torch.where(logits > 0, 1.0 / repetition, repetition)
        logits = logits - floats[:, 4:5] * counts - floats[:, 3:4] * seen
        greedy = logits.argmax(dim=-1)
        # Random sampling: temperature, min-p, top-k and top-p, then the exponential race.
        temperature = floats[:, 0:1]
        logits = logits / torch.where(temperature < _EPS, 1.0, temperature)
        probs = logits.softmax(dim=-1)
        threshold = probs.amax(dim=-1, keepdim=True) * floats[:, 2:3]
        logits = logits.masked_fill(probs < threshold, float("-inf"))
        logits = apply_top_k_top_p_pytorch(logits, ints[:, 0], floats[:, 1])
        probs = logits.softmax(dim=-1)
        drawn = (probs / exponential_noise(ints[:, 1:3], vocab)).argmax(dim=-1)
        sampled = torch.where(temperature[:, 0] < _EPS, greedy, drawn)
        at = ints[:, 4] * vocab + sampled
        self.output_counts.index_put_((at,), torch.ones_like(at, dtype=torch.float),
                                      accumulate=True)  # fmt: skip
        # Logprobs of the raw logits: the sampled token's, its rank, and the top ones.
        top_lps, top_ids = raw_logprobs.topk(self.top_logprobs, dim=-1)
        token_lp = raw_logprobs.gather(1, sampled[:, None])
        ranks = (raw_logprobs >= token_lp).sum(-1)
        ids = torch.cat((sampled[:, None], top_ids), dim=1).to(torch.int32)
        return sampled, ids, torch.cat((token_lp, top_lps), dim=1), ranks
