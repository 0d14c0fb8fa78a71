"""fractional_max_pool2d and its backward on "tpu" against CPU PyTorch for the same random samples:
values, indices (ties, NaN, one output), batched and unbatched input, float32 and bfloat16, the
input's gradient, and the CPU's errors, in the strict and fused eager modes."""

import pytest
import torch
import torch.nn.functional as F

pytestmark = pytest.mark.usefixtures("no_fallback")


def pool_both(x, kernel, out, samples):
    """(output, indices, input gradient) on the CPU and on "tpu"."""
    results = []
    for device in ("cpu", "tpu"):
        xd = x.to(device, copy=True).requires_grad_()
        y, i = F.fractional_max_pool2d(
            xd, kernel, output_size=out, return_indices=True, _random_samples=samples.to(device)
        )
        y.backward(torch.arange(y.numel(), dtype=y.dtype).reshape(y.shape).to(device))
        results.append((y.detach().cpu(), i.cpu(), xd.grad.cpu()))
    return results


def test_matches_cpu(mode):
    torch.manual_seed(0)
    x = torch.randn(2, 3, 11, 9)
    x[0, 0, :4, :4] = 1.0  # ties: the first maximum wins
    x[0, 1, 2, 2] = x[0, 1, 3, 5] = float("nan")  # the last NaN of a window wins
    x[1, 2] = float("-inf")
    samples = torch.rand(3, 3, 2)  # more samples than batches
    cases = [
        (x, (3, 2), (4, 5), samples),
        (x[1].bfloat16(), (2, 2), (5, 1), samples[:1].bfloat16()),  # unbatched, one column
    ]
    for args in cases:
        (cpu_y, cpu_i, cpu_g), (y, i, g) = pool_both(*args)
        torch.testing.assert_close(y, cpu_y, equal_nan=True)
        assert torch.equal(i, cpu_i)
        torch.testing.assert_close(g, cpu_g)


def test_errors_match_cpu(mode):
    x, samples = torch.randn(1, 2, 6, 6), torch.rand(1, 2, 2)
    cases = [
        (x, (4, 4), (4, 4), samples),  # windows past the input
        (x, (2, 2), (3, 3), samples.double()),  # samples of another dtype
        (x, (2, 2), (3, 3), samples[:, :1]),  # samples for fewer channels
    ]
    for xi, kernel, out, s in cases:
        with pytest.raises(Exception) as cpu_error:
            F.fractional_max_pool2d(xi, kernel, output_size=out, _random_samples=s)
        with pytest.raises(type(cpu_error.value)) as tpu_error:
            F.fractional_max_pool2d(
                xi.to("tpu"), kernel, output_size=out, _random_samples=s.to("tpu")
            )
        assert str(tpu_error.value) == str(cpu_error.value)
    y = F.fractional_max_pool2d(x.to("tpu"), 2, output_size=3, _random_samples=samples.to("tpu"))
    torch.testing.assert_close(
        y.cpu(), F.fractional_max_pool2d(x, 2, output_size=3, _random_samples=samples)
    )


def test_out_forms_match_cpu(mode):
    torch.manual_seed(1)
    x, samples = torch.randn(1, 2, 6, 6), torch.rand(1, 2, 2)
    results = []
    for device in ("cpu", "tpu"):
        xd, sd = x.to(device), samples.to(device)
        y, i = torch.empty(0, device=device), torch.empty(0, dtype=torch.long, device=device)
        torch.ops.aten.fractional_max_pool2d.output(xd, [2, 2], [3, 3], sd, output=y, indices=i)
        g = torch.empty(0, device=device)
        torch.ops.aten.fractional_max_pool2d_backward.grad_input(
            torch.ones_like(y), xd, [2, 2], [3, 3], i, grad_input=g
        )
        results.append((y.cpu(), i.cpu(), g.cpu()))
    for got, expected in zip(*results):
        torch.testing.assert_close(got, expected, rtol=0, atol=0)
    errors = []
    for device in ("cpu", "tpu"):  # out= of another dtype, refused as the CPU's structured kernel
        with pytest.raises(RuntimeError) as error:
            torch.ops.aten.fractional_max_pool2d.output(
                x.to(device),
                [2, 2],
                [3, 3],
                samples.to(device),
                output=torch.empty(0, dtype=torch.double, device=device),
                indices=torch.empty(0, dtype=torch.long, device=device),
            )
        errors.append(str(error.value))
    assert errors[0] == errors[1]
