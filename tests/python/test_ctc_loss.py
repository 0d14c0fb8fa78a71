"""CTC loss on "tpu" (nn.CTCLoss, F.ctc_loss): the loss and its gradient with respect to the log
probabilities computed on the device, equal to the CPU's for padded and concatenated targets,
repeated labels, empty targets, inputs too short to align, each reduction and zero_infinity."""

import pytest
import torch
import torch.nn.functional as F

import torch_pjrt

pytestmark = pytest.mark.usefixtures("no_fallback")

T, B, C = 10, 4, 5


def _loss_and_grad(device, log_probs, targets, input_lengths, target_lengths, **kw):
    x = log_probs.to(device).requires_grad_()
    loss = F.ctc_loss(x, targets.to(device), input_lengths, target_lengths, **kw)
    (grad,) = torch.autograd.grad(loss.sum(), x)
    return loss.detach().cpu(), grad.cpu()


def _check(*args, **kw):
    expected = _loss_and_grad("cpu", *args, **kw)
    got = _loss_and_grad("tpu", *args, **kw)
    for g, e in zip(got, expected):
        torch.testing.assert_close(g, e, equal_nan=True, atol=1e-5, rtol=1e-5)
    return got


def _batch(concatenated):
    torch.manual_seed(0)
    log_probs = torch.randn(T, B, C).log_softmax(2)
    # Repeated labels, an empty target, and an input too short for its target (entry 3).
    targets = torch.tensor([[1, 1, 2], [3, 4, 0], [0, 0, 0], [2, 3, 2]])
    input_lengths, target_lengths = torch.tensor([10, 7, 4, 2]), torch.tensor([3, 2, 0, 3])
    if concatenated:
        targets = torch.cat([targets[b, :n] for b, n in enumerate(target_lengths.tolist())])
    return log_probs, targets, input_lengths, target_lengths


@pytest.mark.parametrize("concatenated", [False, True], ids=["padded", "concatenated"])
def test_loss_and_gradient_match_the_cpu(concatenated):
    batch = _batch(concatenated)
    for reduction in ["none", "mean", "sum"]:
        for zero_infinity in [False, True]:
            _check(*batch, reduction=reduction, zero_infinity=zero_infinity)
    # Entry 3 cannot align: its loss is inf, and without zero_infinity its gradient NaN.
    loss, grad = _check(*batch, reduction="none")
    assert loss[3] == float("inf") and grad[:2, 3].isnan().all() and (grad[2:, 3] == 0).all()


def test_fused_mode_matches_the_cpu():
    with torch_pjrt.eager_mode("fused"):  # the recursions become one program
        _check(*_batch(False), reduction="mean", zero_infinity=True)


def test_double_unbatched_and_module_match_the_cpu():
    torch.manual_seed(1)
    log_probs = torch.randn(T, C, dtype=torch.float64).log_softmax(1)
    _check(log_probs, torch.tensor([1, 2, 2]), torch.tensor(T), torch.tensor(3))
    ctc = torch.nn.CTCLoss(blank=4)
    x = torch.randn(T, 2, C).log_softmax(2)
    args = (torch.tensor([[0, 1], [2, 2]]), [10, 8], [2, 2])
    expected = ctc(x, *args)
    torch.testing.assert_close(ctc(x.to("tpu"), args[0].to("tpu"), *args[1:]).cpu(), expected)


def test_errors_match_the_cpu():
    x = torch.randn(T, 2, C).log_softmax(2)
    targets = torch.tensor([[1, 2], [3, 4]])
    bad = [
        ((targets, [11, 10], [2, 2]), {}, "at most 10"),
        ((targets, [10, 10], [3, 2]), {}, "size at least 3"),
        ((targets.float(), [10, 10], [2, 2]), {}, "scalar type"),
        ((targets, [10], [2, 2]), {}, "input_lengths must be of size batch_size"),
        ((targets, [10, 10], [2, 2]), {"blank": C}, "blank must be in label range"),
    ]
    for args, kw, message in bad:
        for device in ["cpu", "tpu"]:
            with pytest.raises(RuntimeError, match=message):
                torch._ctc_loss(x.to(device), args[0].to(device), *args[1:], **kw)
