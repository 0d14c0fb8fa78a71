"""Range factories (arange, range, linspace, logspace) into out= tensors of other shapes, strides
and dtypes, against the CPU: an out= with the right element count keeps its shape and is filled in
row-major order, a wrong count is resized to 1-D (arange warns), and complex linspace/logspace."""

import warnings

import pytest
import torch

pytestmark = pytest.mark.usefixtures("no_fallback")


def _first_sentences(messages):
    """Warning texts without the C++ source location PyTorch appends."""
    return [m.split(" (Triggered internally")[0] for m in messages if "deprecated" not in m]


def _both(fn, make_out):
    """fn(out) on a CPU out= and on a "tpu" out= made alike: the outs and their warnings, or the
    CPU's exception, which "tpu" must raise too."""
    results = []
    for device in ("cpu", "tpu"):
        out = make_out(device)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                r = fn(out)
            except Exception as e:  # noqa: BLE001  (compared below)
                results.append(e)
                continue
        assert r is out
        results.append((out, _first_sentences(str(w.message) for w in caught)))
    return results


OUTS = {
    "2x3": lambda d, dt: torch.zeros(2, 3, dtype=dt, device=d),
    "3x2 transposed": lambda d, dt: torch.zeros(3, 2, dtype=dt, device=d).t(),
    "strided": lambda d, dt: torch.zeros(12, dtype=dt, device=d)[::2],
    "1x6x1": lambda d, dt: torch.zeros(1, 6, 1, dtype=dt, device=d),
    "wrong count 2x2": lambda d, dt: torch.zeros(2, 2, dtype=dt, device=d),
    "empty": lambda d, dt: torch.zeros(0, dtype=dt, device=d),
}
CALLS = {
    "arange": lambda out: torch.arange(6, out=out),
    "arange float step": lambda out: torch.arange(0.5, 3.5, 0.5, out=out),
    "range": lambda out: torch.range(1, 6, out=out),
    "linspace": lambda out: torch.linspace(-1, 2, 6, out=out),
    "logspace": lambda out: torch.logspace(0, 2, 6, out=out),
    "logspace base 2": lambda out: torch.logspace(-1, 4, 6, base=2, out=out),
}


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64, torch.float64])
@pytest.mark.parametrize("out", list(OUTS))
@pytest.mark.parametrize("call", list(CALLS))
def test_out_of_other_shapes(call, out, dtype):
    if call == "range":
        warnings.simplefilter("ignore", UserWarning)  # torch.range is deprecated
    cpu_result, tpu_result = _both(CALLS[call], lambda d: OUTS[out](d, dtype))
    if isinstance(cpu_result, Exception):
        assert type(tpu_result) is type(cpu_result) and str(tpu_result) == str(cpu_result)
        return
    (cpu, cpu_warn), (tpu, tpu_warn) = cpu_result, tpu_result
    assert tpu.shape == cpu.shape and tpu.stride() == cpu.stride()
    torch.testing.assert_close(tpu.cpu(), cpu)
    assert tpu_warn == cpu_warn


def test_arange_into_2x3_is_row_major():
    o = torch.zeros(2, 3, device="tpu")
    torch.arange(6, out=o)
    assert o.cpu().tolist() == [[0, 1, 2], [3, 4, 5]]


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128])
@pytest.mark.parametrize(
    "start,end,steps", [(0.1 + 0.3j, 7.7 - 2.9j, 37), (-5.1, 3j, 7), (1 + 1j, 2, 1), (0, 1j, 0)]
)
def test_complex_linspace_logspace(dtype, start, end, steps):
    for fn in (torch.linspace, torch.logspace):
        cpu = fn(start, end, steps, dtype=dtype)
        tpu = fn(start, end, steps, dtype=dtype, device="tpu")
        assert tpu.dtype == dtype
        torch.testing.assert_close(tpu.cpu(), cpu)
    out = torch.zeros(2, 3, dtype=dtype, device="tpu")
    cpu_out = torch.zeros(2, 3, dtype=dtype)
    torch.linspace(start, end, 6, out=out)
    torch.linspace(start, end, 6, out=cpu_out)
    torch.testing.assert_close(out.cpu(), cpu_out)
