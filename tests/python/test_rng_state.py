"""RNG state of "tpu" generators: readable under FakeTensorMode (as CPU and CUDA states are) and
validated with PyTorch's checks and messages."""

import pytest
import torch
from torch._subclasses import FakeTensorMode

import torch_pjrt  # noqa: F401


def _state_of(seed, offset):
    return torch.tensor([seed, offset], dtype=torch.int64).view(torch.uint8)


def test_get_rng_state_under_fake_tensor_mode_is_a_real_cpu_tensor():
    torch.tpu.manual_seed(1234)
    expected = _state_of(1234, 0)
    with FakeTensorMode():
        state = torch.tpu.get_rng_state()
        gen_state = torch.Generator(device="tpu").get_state()
        clone = torch.Generator(device="tpu").clone_state()
    for s in (state, gen_state):
        assert type(s) is torch.Tensor and s.device.type == "cpu" and s.dtype == torch.uint8
    assert torch.equal(state, expected)
    # A new generator starts from PyTorch's default seed, as torch.Generator() does on the CPU.
    assert torch.equal(gen_state, _state_of(torch.Generator().initial_seed(), 0))
    assert clone.device.type == "tpu" and clone.initial_seed() == torch.Generator().initial_seed()


def test_state_read_under_fake_mode_restores_the_stream():
    torch.tpu.manual_seed(7)
    with FakeTensorMode():
        state = torch.tpu.get_rng_state()
    first = torch.rand(5, device="tpu").cpu()
    torch.tpu.set_rng_state(state)
    assert torch.equal(torch.rand(5, device="tpu").cpu(), first)


def test_clone_state_continues_the_same_stream():
    g = torch.Generator(device="tpu").manual_seed(99)
    torch.rand(3, device="tpu", generator=g)
    c = g.clone_state()
    assert torch.equal(
        torch.rand(4, device="tpu", generator=g).cpu(),
        torch.rand(4, device="tpu", generator=c).cpu(),
    )


def _error_of(fn):
    with pytest.raises(Exception) as info:
        fn()
    return type(info.value), str(info.value)


@pytest.mark.parametrize(
    "make_bad",
    [
        lambda s: s.to("tpu"),  # on the device
        lambda s: s.float(),  # not bytes
        lambda s: s.to("meta"),
        lambda s: torch.cat([s, s])[::2],  # not contiguous
    ],
    ids=["device", "dtype", "meta", "strided"],
)
def test_bad_states_raise_like_the_cpu_generator(make_bad):
    cpu_error = _error_of(lambda: torch.set_rng_state(make_bad(torch.get_rng_state())))
    tpu_state = torch.tpu.get_rng_state()
    assert _error_of(lambda: torch.tpu.set_rng_state(make_bad(tpu_state))) == cpu_error
    g = torch.Generator(device="tpu")
    assert _error_of(lambda: g.set_state(make_bad(tpu_state))) == cpu_error


def test_bad_state_messages_are_pytorchs():
    state = torch.tpu.get_rng_state()
    with pytest.raises(TypeError, match="^RNG state must be a torch.ByteTensor$"):
        torch.tpu.set_rng_state(state.to("tpu"))
    with pytest.raises(RuntimeError, match="^RNG state is wrong size$"):
        torch.tpu.set_rng_state(torch.cat([state, state]))
    with pytest.raises(TypeError, match="expected a torch.ByteTensor, but got int"):
        torch.Generator(device="tpu").set_state(5)
    # A rejected state leaves the generator as it was.
    torch.tpu.manual_seed(3)
    before = torch.tpu.get_rng_state()
    with pytest.raises(TypeError):
        torch.tpu.set_rng_state(before.to("tpu"))
    assert torch.equal(torch.tpu.get_rng_state(), before)


def test_torchtpu_generator_names():
    torch.tpu._lazy_init()
    g = torch.tpu._get_generator()
    assert g is torch.tpu.default_generators[torch.tpu.current_device()]
    g.manual_seed(5)
    assert torch.tpu.initial_seed() == 5
    assert torch.equal(torch.tpu.get_rng_state(), _state_of(5, 0))
