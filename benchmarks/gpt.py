"""The GPT training step the eager-mode and compile benchmarks time: the test suite's decoder-only
transformer (token + position embeddings, pre-norm blocks, causal attention, tied head) in the
issues' sizes, trained with AdamW."""

import sys
from pathlib import Path

import torch
import torch.nn.functional as F

# The model is the test suite's GPT (tests/python/models.py), so benchmarks time what tests check.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "python"))
from models import GPT  # noqa: E402


# The configurations: vocab 256, sequence 64, batch 8.
SMALL = {"vocab": 256, "d": 128, "heads": 4, "layers": 2, "seq": 64}
LARGE = {"vocab": 256, "d": 256, "heads": 4, "layers": 6, "seq": 64}
TINY = {"vocab": 64, "d": 32, "heads": 4, "layers": 2, "seq": 16}  # the training tests' size
BATCH = 8


def make(config, seed=0):
    """A model and a fixed batch (inputs, targets), on the CPU."""
    torch.manual_seed(seed)
    model = GPT(**config)
    g = torch.Generator().manual_seed(seed + 1)
    tokens = torch.randint(0, config["vocab"], (BATCH, config["seq"] + 1), generator=g)
    return model, tokens[:, :-1].contiguous(), tokens[:, 1:].contiguous()


def train_step(model, opt, x, y):
    """One AdamW step; returns the loss tensor."""
    opt.zero_grad(set_to_none=True)
    logits = model(x)
    loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))
    loss.backward()
    opt.step()
    return loss
