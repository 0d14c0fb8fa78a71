"""`torch.tpu.distributed`: the c10d backend for device "tpu" and TorchTPU's launcher helpers.

The backend is registered with torch.distributed as "tpu_dist" and "tpu" and is the default for
device "tpu", so `dist.init_process_group()` with no backend, `init_process_group("tpu_dist")` and
`DeviceMesh("tpu", ...)` use it. Each process drives one device ("tpu:<LOCAL_RANK>" under
torchrun and spawn). Its collectives run on one of two transports, chosen per plugin
(`transport()`): collective programs on the device for plugins with cross-process collectives
(CUDA, TPU), or device -> host -> Gloo -> device for the XLA CPU plugins.
"""

import functools
import os

import torch
import torch.distributed as dist

from .. import _C, plugins
from .launch import launch_environment, local_device_count, set_tpu_launch_env
from .ragged import ragged_all_to_all

__all__ = [
    "launch_environment",
    "local_device_count",
    "ragged_all_to_all",
    "set_tpu_launch_env",
    "transport",
]

TRANSPORTS = ("host", "device")
_DEVICE_COLLECTIVE_KINDS = ("cuda", "tpu")


def transport():
    """The transport of new tpu_dist process groups: TORCH_PJRT_DIST_TRANSPORT (host or device)
    when set, else "device" for plugins with cross-process collectives (CUDA, TPU) and "host"
    (Gloo) for the others (the XLA CPU plugins)."""
    chosen = os.environ.get("TORCH_PJRT_DIST_TRANSPORT", "").strip().lower()
    if chosen:
        if chosen not in TRANSPORTS:
            raise ValueError(
                f"TORCH_PJRT_DIST_TRANSPORT must be one of {', '.join(TRANSPORTS)}, got {chosen!r}"
            )
        return chosen
    return "device" if plugins.state["kind"] in _DEVICE_COLLECTIVE_KINDS else "host"


def transport_description():
    """One line for `python -m torch_pjrt.info`."""
    kind = transport()
    if kind == "device":
        return "device (collective programs compiled with a device assignment)"
    return "host (device -> host -> Gloo -> device; the plugin has no cross-process collectives)"


def _create_backend(store, rank, size, timeout):
    kind = transport()
    gloo = dist.ProcessGroupGloo(store, rank, size, timeout) if kind == "host" else None
    return _C._create_process_group(store, rank, size, timeout, gloo, kind)


def _default_backend_fixed(new_group_helper):
    """init_process_group() with no backend name makes GLOO the group's default backend type (torch
    assumes gloo or nccl there), which a group made only of tpu_dist lacks: DDP, which asks the
    default backend for its name, would fail. Such groups get CUSTOM (tpu_dist) instead."""

    @functools.wraps(new_group_helper)
    def helper(*args, **kwargs):
        pg, store = new_group_helper(*args, **kwargs)
        if (
            isinstance(pg, dist.ProcessGroup)
            and pg._device_types == [torch.device("tpu")]
            and pg._get_backend_name() == "gloo"
        ):
            pg._set_default_backend(dist.ProcessGroup.BackendType.CUSTOM)
        return pg, store

    helper._tpu_dist = True
    return helper


def _register():
    if not dist.is_available():
        return
    import torch.distributed.distributed_c10d as c10d

    _C._init_distributed(_C)
    for name in ("tpu", "tpu_dist"):
        if name.upper() not in dist.Backend._plugins:
            dist.Backend.register_backend(name, _create_backend, devices=["tpu"])
    dist.Backend.default_device_backend_map["tpu"] = "tpu_dist"
    if not getattr(c10d._new_process_group_helper, "_tpu_dist", False):
        c10d._new_process_group_helper = _default_backend_fixed(c10d._new_process_group_helper)


_register()
