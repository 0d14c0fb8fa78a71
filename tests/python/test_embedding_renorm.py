"""embedding_renorm_ (nn.Embedding's max_norm) on "tpu" against CPU PyTorch: the renormed weight
for norm types 1, 2 and inf (a row exactly at max_norm untouched, repeated and negative indices,
indices of any shape, empty indices), a module's forward and backward after the renorm, and the
CPU's errors, in the strict and fused eager modes."""

import pytest
import torch
import torch.nn.functional as F

pytestmark = pytest.mark.usefixtures("no_fallback")


def weight():
    w = torch.linspace(-2.0, 3.0, 6 * 4).reshape(6, 4)
    # Rows whose norm equals a max_norm below, left as they are: row 1's 2-norm (5), row 2's
    # 1-norm (2), row 5's inf-norm (3).
    w[1] = torch.tensor([3.0, 4.0, 0.0, 0.0])
    w[2] = torch.tensor([0.5, -0.5, 1.0, 0.0])
    return w


@pytest.mark.parametrize(
    "norm_type, max_norm", [(2.0, 5.0), (1.0, 2.0), (float("inf"), 3.0), (2.0, 1.1)]
)
def test_renorm_matches_cpu(mode, norm_type, max_norm):
    indices = torch.tensor([[1, 2, 3], [0, 1, -1], [2, 2, 5]])  # repeats and a negative index
    for idx in (indices, indices[0, :2].int()):
        cpu = weight()
        tpu = cpu.to("tpu")
        torch.embedding_renorm_(cpu, idx, max_norm, norm_type)
        out = torch.embedding_renorm_(tpu, idx.to("tpu"), max_norm, norm_type)
        assert out is tpu
        torch.testing.assert_close(tpu.cpu(), cpu)
        if idx is indices:
            assert not torch.equal(cpu, weight())  # some row was scaled


def test_empty_indices_leave_weight(mode):
    for shape in ((0,), (2, 0)):
        tpu = weight().to("tpu")
        torch.embedding_renorm_(tpu, torch.empty(shape, dtype=torch.long, device="tpu"), 1.0, 2.0)
        torch.testing.assert_close(tpu.cpu(), weight(), rtol=0, atol=0)


def test_module_forward_backward_after_renorm(mode):
    torch.manual_seed(0)
    cpu = torch.nn.Embedding(10, 5, max_norm=1.5, norm_type=2.0)
    tpu = torch.nn.Embedding(10, 5, max_norm=1.5, norm_type=2.0).to("tpu")
    with torch.no_grad():
        tpu.weight.copy_(cpu.weight)
    x = torch.tensor([[0, 3, 3, 9], [1, 0, 7, 2]])

    def step(m, inp):
        m.weight.grad = None
        y = m(inp)
        (y * y.detach().sum(-1, keepdim=True)).sum().backward()
        with torch.no_grad():
            m.weight -= 0.5 * m.weight.grad
        return y

    for _ in range(2):  # the second step renorms rows changed by the first
        torch.testing.assert_close(step(tpu, x.to("tpu")).cpu(), step(cpu, x))
        torch.testing.assert_close(tpu.weight.grad.cpu(), cpu.weight.grad)
        torch.testing.assert_close(tpu.weight.detach().cpu(), cpu.weight.detach())
    assert tpu.weight.is_leaf and tpu.weight.device.type == "tpu"


def test_functional_embedding_max_norm(mode):
    cpu = weight().requires_grad_()
    tpu = weight().to("tpu").requires_grad_()
    x = torch.tensor([4, 0, 4, 5])
    y_cpu = F.embedding(x, cpu, max_norm=2.0, norm_type=1.0)
    y_tpu = F.embedding(x.to("tpu"), tpu, max_norm=2.0, norm_type=1.0)
    torch.testing.assert_close(y_tpu.cpu(), y_cpu)
    y_cpu.pow(2).sum().backward()
    y_tpu.pow(2).sum().backward()
    torch.testing.assert_close(tpu.grad.cpu(), cpu.grad)
    torch.testing.assert_close(tpu.detach().cpu(), cpu.detach())


def test_errors_match_cpu(mode):
    cases = [
        (torch.zeros(2, 2, 2), torch.tensor([0])),  # weight not 2-D
        (torch.zeros(2, 2), torch.tensor([0.0])),  # float indices
        (torch.zeros(2, 2, dtype=torch.long), torch.tensor([1])),  # integer weight
    ]
    for w, idx in cases:
        with pytest.raises(Exception) as cpu_error:
            torch.embedding_renorm_(w, idx, 1.0, 2.0)
        with pytest.raises(type(cpu_error.value)) as tpu_error:
            torch.embedding_renorm_(w.to("tpu"), idx.to("tpu"), 1.0, 2.0)
        assert str(tpu_error.value).split(" for ")[0].split(" but got")[0] in str(cpu_error.value)
    tpu = torch.zeros(2, 2, dtype=torch.long, device="tpu")
    torch.embedding_renorm_(tpu, torch.empty(0, dtype=torch.long, device="tpu"), 1.0, 2.0)
    w = torch.ones(3, 2, device="tpu")
    torch.embedding_renorm_(w, torch.tensor([0, 2], device="tpu"), 1.0, 2.0)  # a valid call after
    torch.testing.assert_close(w.cpu()[1], torch.ones(2))
