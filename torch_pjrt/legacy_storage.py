"""torch.tpu's legacy typed storage classes (torch.tpu.FloatStorage, ...), as torch.cuda has them:
`Tensor.storage_type()` of a "tpu" tensor names its class (PyTorch looks it up in torch.tpu, and
answered None without it), `isinstance(t.storage(), torch.tpu.FloatStorage)` holds, and
`torch.tpu.FloatStorage(n)` allocates on "tpu" (the device comes from the class's module name)."""

import torch
from torch.storage import _dtype_to_storage_type_map, _LegacyStorage, _warn_typed_storage_removal


class _TpuLegacyStorage(_LegacyStorage):
    @classmethod
    def from_buffer(cls, *args, **kwargs):
        _warn_typed_storage_removal()
        raise RuntimeError("from_buffer: Not available for tpu storage")

    @classmethod
    def _new_with_weak_ptr(cls, *args, **kwargs):
        raise RuntimeError("_new_with_weak_ptr: Not available for tpu storage")

    @classmethod
    def _new_shared_filename(cls, manager, obj, size, *, device=None, dtype=None):
        raise RuntimeError("_new_shared_filename: Not available for tpu storage")


def _storage_class(name, dtype):
    def dtype_(cls):
        _warn_typed_storage_removal()
        return dtype

    attrs = {
        "__module__": "torch.tpu",  # TypedStorage takes a legacy class's device from this
        "dtype": torch._utils.classproperty(dtype_),
        "_dtype": torch._utils.classproperty(lambda cls: dtype),
    }
    return type(name, (_TpuLegacyStorage,), attrs)


def classes():
    """{name: class} for every dtype that has a legacy storage class, quantized ones excepted
    (no quantized tensors on "tpu")."""
    return {
        name: _storage_class(name, dtype)
        for dtype, name in _dtype_to_storage_type_map().items()
        if dtype not in (torch.qint8, torch.qint32, torch.quint8, torch.quint4x2, torch.quint2x4)
    }
