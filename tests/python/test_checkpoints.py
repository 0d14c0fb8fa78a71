"""Checkpoints of "tpu" tensors: untyped storages to and from the CPU, torch.save/torch.load with
every kind of map_location, model and AdamW state round trips that continue training exactly,
safetensors, and PyTorch's errors for a missing device or a truncated file, in every eager mode."""

import io

import pytest
import torch
import torch.nn.functional as F
from models import MLP
from safetensors import safe_open
from safetensors.torch import load_file, save_file

import torch_pjrt


@pytest.fixture(params=torch_pjrt.eager.MODES)
def mode(request):
    with torch_pjrt.eager_mode(request.param):
        yield request.param


def sample():
    """CPU tensors of several dtypes, with special values, and views sharing one storage."""
    base = torch.arange(24, dtype=torch.float32).reshape(4, 6) - 11.5
    base[0, :3] = torch.tensor([-0.0, float("inf"), float("nan")])
    return {
        "base": base,
        "row": base[1],
        "transposed": base.t(),
        "strided": base[1:, ::2],
        "i64": torch.tensor([2**62 + 1, -3, 0]),
        "bf16": torch.tensor([1.5, -2.25, 3e38], dtype=torch.bfloat16),
        "f16": torch.tensor([0.1, -65504.0], dtype=torch.float16),
        "f64": torch.tensor([1e-300, -2.5], dtype=torch.float64),
        "mask": torch.tensor([True, False, True]),
        "u8": torch.tensor([0, 255, 7], dtype=torch.uint8),
        "scalar": torch.tensor(3.25),
    }


def to_tpu(d, device="tpu"):
    """`d` on the device, views rebuilt on the moved base so they share its storage."""
    base = d["base"].to(device)
    out = {k: v.to(device) for k, v in d.items()}
    out.update(row=base[1], transposed=base.t(), strided=base[1:, ::2], base=base)
    return out


def raw(t):
    """t's bytes, for comparisons that hold for NaN and -0.0."""
    return t.cpu().reshape(-1).contiguous().view(torch.uint8)


def assert_loaded(loaded, expected, device):
    for k, v in expected.items():
        got = loaded[k]
        assert got.device == torch.device(device), k
        assert got.dtype == v.dtype and got.shape == v.shape and got.stride() == v.stride(), k
        assert torch.equal(raw(got), raw(v)), k
    # Views still share the base's storage, at the same offsets.
    ptr = loaded["base"].untyped_storage().data_ptr()
    for k in ("row", "transposed", "strided"):
        assert loaded[k].untyped_storage().data_ptr() == ptr, k
        assert loaded[k].storage_offset() == expected[k].storage_offset(), k


def save(obj):
    buf = io.BytesIO()
    torch.save(obj, buf)
    buf.seek(0)
    return buf


def test_untyped_storage_to_and_from_cpu(mode):
    x = torch.tensor([1.0, -0.0, 2.5], device="tpu") * 2
    host = x.untyped_storage().cpu()
    assert host.device.type == "cpu" and host.nbytes() == 12
    assert bytes(host) == (torch.tensor([1.0, -0.0, 2.5]) * 2).numpy().tobytes()
    s = torch.UntypedStorage(12, device="tpu")
    assert s.device == torch.device("tpu", 0) and s.nbytes() == 12
    s.copy_(torch.tensor([7.0, 8.0, -1.0]).untyped_storage())
    t = torch.empty(0, device="tpu").set_(s)
    assert t.cpu().tolist() == [7.0, 8.0, -1.0]
    moved = torch.tensor([1, 2], dtype=torch.int16).untyped_storage().to(device="tpu")
    assert moved.device.type == "tpu"
    assert torch.empty(0, dtype=torch.int16, device="tpu").set_(moved).cpu().tolist() == [1, 2]
    on_device = torch.tensor([1, 2], dtype=torch.uint8, device="tpu").untyped_storage()
    assert on_device.tpu() is on_device and on_device.tolist() == [1, 2]


def test_storage_resize_and_slices():
    x = torch.tensor([1.0, 2.0], device="tpu")
    x.untyped_storage().resize_(6)  # no multiple of float32's size: the bytes are kept
    assert x.untyped_storage().tolist() == [0, 0, 0x80, 0x3F, 0, 0]
    assert x.untyped_storage()[0:4].tolist() == [0, 0, 0x80, 0x3F]
    assert x.untyped_storage()[2:4].tolist() == [0x80, 0x3F]  # a slice at an offset


@pytest.mark.parametrize(
    "dtype", [torch.float32, torch.bfloat16, torch.int64, torch.bool, torch.cfloat]
)
def test_legacy_storage_classes(dtype):
    # As torch.cuda's: storage_type() is torch.tpu's class of the CPU's name (it was None).
    host = torch.ones(3, dtype=dtype)
    t = host.to("tpu")
    cls = t.storage_type()
    assert cls.__name__ == host.storage_type().__name__ and cls is getattr(torch.tpu, cls.__name__)
    assert isinstance(t.storage(), cls) and not isinstance(host.storage(), cls)
    assert cls.dtype == dtype and t.storage().type() == f"torch.tpu.{cls.__name__}"
    s = cls(4)
    assert s.device == torch.device("tpu", 0) and s.size() == 4 and s.dtype == dtype
    assert cls(host.tolist()).tolist() == host.storage().tolist()


def test_legacy_format(mode):
    expected = sample()
    buf = io.BytesIO()
    torch.save(to_tpu(expected), buf, _use_new_zipfile_serialization=False)
    buf.seek(0)
    assert_loaded(torch.load(buf), expected, "tpu:0")


@pytest.mark.parametrize(
    "map_location,device",
    [
        (None, "tpu:0"),
        ("cpu", "cpu"),
        ("tpu", "tpu:0"),
        ("tpu:1", "tpu:1"),
        (torch.device("tpu", 1), "tpu:1"),
        ({"tpu:0": "tpu:1"}, "tpu:1"),
        ({"tpu:0": "cpu"}, "cpu"),
        (lambda storage, location: storage, "cpu"),
        (lambda storage, location: storage.tpu(1), "tpu:1"),
    ],
    ids=["absent", "cpu", "tpu", "tpu1", "device", "dict", "dict_cpu", "callable", "callable_tpu"],
)
def test_save_load_map_location(mode, map_location, device):
    expected = sample()
    buf = save(to_tpu(expected))
    loaded = torch.load(buf, map_location=map_location)  # weights_only=True, the default
    assert_loaded(loaded, expected, device)


def test_save_from_second_device_loads_there(mode):
    expected = sample()
    loaded = torch.load(save(to_tpu(expected, "tpu:1")))
    assert_loaded(loaded, expected, "tpu:1")


def _step(model, opt, x, y):
    opt.zero_grad()
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    return loss.item()


def test_model_and_adamw_state_round_trip(mode):
    g = torch.Generator().manual_seed(1)
    x, y = torch.randn(32, 16, generator=g).to("tpu"), torch.randint(0, 4, (32,), generator=g)
    y = y.to("tpu")
    torch.manual_seed(0)
    model = MLP().to("tpu")
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.1)
    for _ in range(3):
        _step(model, opt, x, y)
    ckpt = save({"model": model.state_dict(), "opt": opt.state_dict()})
    uninterrupted = [_step(model, opt, x, y) for _ in range(4)]

    fresh = MLP().to("tpu")
    fresh_opt = torch.optim.AdamW(fresh.parameters(), lr=3e-3, weight_decay=0.1)
    state = torch.load(ckpt)
    assert state["model"]["net.0.weight"].device == torch.device("tpu", 0)
    fresh.load_state_dict(state["model"])
    fresh_opt.load_state_dict(state["opt"])
    resumed = [_step(fresh, fresh_opt, x, y) for _ in range(4)]
    assert resumed == uninterrupted
    for p, q in zip(model.parameters(), fresh.parameters()):
        assert torch.equal(p.cpu(), q.cpu())


def test_compiled_training_resumes_from_checkpoint():
    # The loaded optimizer state is raw bytes until first read; a compiled step converts it before
    # tracing, so its replays run one program per step like an unsaved run's.
    g = torch.Generator().manual_seed(2)
    x, y = torch.randn(32, 16, generator=g).to("tpu"), torch.randint(0, 4, (32,), generator=g)
    y = y.to("tpu")

    def run(model, opt):
        step = torch.compile(lambda: _step(model, opt, x, y), backend="tpu")
        losses = [step() for _ in range(3)]
        before = torch_pjrt.metrics.counters()["executions"]
        losses.append(step())
        return losses, torch_pjrt.metrics.counters()["executions"] - before

    torch.manual_seed(0)
    model = MLP().to("tpu")
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.1)
    _step(model, opt, x, y)
    ckpt = save({"model": model.state_dict(), "opt": opt.state_dict()})
    uninterrupted = run(model, opt)
    fresh = MLP().to("tpu")
    fresh_opt = torch.optim.AdamW(fresh.parameters(), lr=3e-3, weight_decay=0.1)
    state = torch.load(ckpt)
    fresh.load_state_dict(state["model"])
    fresh_opt.load_state_dict(state["opt"])
    assert run(fresh, fresh_opt) == uninterrupted


def test_safetensors(mode, tmp_path):
    tensors = {
        "w": torch.randn(4, 5).to("tpu") * 3,
        "b": torch.tensor([1.5, -0.0], dtype=torch.bfloat16, device="tpu"),
        "i": torch.arange(6, device="tpu").reshape(2, 3),
        "m": torch.tensor([True, False], device="tpu"),
    }
    path = str(tmp_path / "m.safetensors")
    save_file(tensors, path)
    on_host = load_file(path)
    loaded = load_file(path, device="tpu")
    for k, v in tensors.items():
        assert loaded[k].device == torch.device("tpu", 0)
        assert torch.equal(raw(on_host[k]), raw(v)), k
        assert torch.equal(raw(loaded[k]), raw(v)), k
    with safe_open(path, framework="pt", device=torch.device("tpu", 1)) as f:
        part = f.get_slice("w")[1:3]
        assert part.device == torch.device("tpu", 1)
        assert torch.equal(part.cpu(), tensors["w"][1:3].cpu())


def test_missing_device_raises_like_cuda():
    buf = save({"x": torch.ones(2, device="tpu")})
    count = torch.tpu.device_count()
    expected = (
        f"Attempting to deserialize object on TPU device {count + 3} but "
        f"torch.tpu.device_count() is {count}. Please use torch.load with map_location to map "
        "your storages to an existing device."
    )
    for map_location in (f"tpu:{count + 3}", {"tpu:0": f"tpu:{count + 3}"}):
        buf.seek(0)
        with pytest.raises(RuntimeError) as e:
            torch.load(buf, map_location=map_location)
        assert str(e.value) == expected
    buf.seek(0)
    assert torch.load(buf)["x"].cpu().tolist() == [1.0, 1.0]  # still usable


def test_truncated_file_raises_like_cpu(tmp_path):
    errors = []
    for device in ("cpu", "tpu"):
        data = save({"x": torch.arange(1000.0, device=device)}).getvalue()
        path = tmp_path / f"{device}.pt"
        path.write_bytes(data[: len(data) // 2])
        with pytest.raises(Exception) as e:
            torch.load(path)
        errors.append((type(e.value), str(e.value)))
    assert errors[0] == errors[1]
    assert torch.ones(2, device="tpu").sum().item() == 2.0
