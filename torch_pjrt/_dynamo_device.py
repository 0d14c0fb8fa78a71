"""What Dynamo and Inductor ask of device "tpu", answered for torch_pjrt instead of Google's
TorchTPU, which PyTorch 2.13 takes "tpu" to be.

- Dynamo's device interface for "tpu" (`torch._dynamo.device_interface`) is `TpuInterface` below,
  over `torch.tpu`: available when a device is, never Triton-capable. PyTorch's own one answers
  device 0 for every question and calls itself available whenever `torch.tpu` exists.
- Inductor has no code generator for "tpu" here: PyTorch registers Pallas code generation for it,
  whose generated code imports the `torch_tpu` package. Registered first, the generators below
  raise `INDUCTOR_ON_TPU` instead, and `torch.compile(backend="inductor")` raises it before
  Inductor starts on a graph that takes or makes a "tpu" tensor.

Both modules are patched when they are imported (`_integrations`), so importing torch_pjrt does not
import Dynamo.
"""

import functools

import torch
import torch.utils._pytree as pytree

from . import _integrations, device_module

INDUCTOR_ON_TPU = (
    'Inductor cannot compile for device "tpu": it has no code generator for it. Use '
    'torch.compile(..., backend="tpu"), or give no backend and torch_pjrt chooses "tpu" for a '
    'graph on "tpu".'
)


def _any_on_tpu(values):
    return any(isinstance(v, torch.Tensor) and v.device.type == "tpu" for v in values)


def uses_tpu(gm, example_inputs):
    """Whether a Dynamo graph takes a "tpu" tensor or computes one (a graph may have no inputs)."""
    if _any_on_tpu(example_inputs):
        return True
    graph = getattr(gm, "graph", None)
    for node in graph.nodes if graph is not None else ():
        value = node.meta.get("example_value", node.meta.get("val"))
        if value is not None and _any_on_tpu(pytree.tree_leaves(value)):
            return True
    return False


def _make_interface(base):
    class TpuInterface(base):
        """Dynamo's and Inductor's view of device "tpu", from `torch.tpu`."""

        device = device_module.device
        Event = device_module.Event
        Stream = device_module.Stream

        class Worker:
            set_device = staticmethod(device_module.set_device)
            current_device = staticmethod(device_module.current_device)
            get_device_properties = staticmethod(device_module.get_device_properties)

        current_device = staticmethod(device_module.current_device)
        set_device = staticmethod(device_module.set_device)
        device_count = staticmethod(device_module.device_count)
        synchronize = staticmethod(device_module.synchronize)
        memory_allocated = staticmethod(device_module.memory_allocated)
        is_bf16_supported = staticmethod(device_module.is_bf16_supported)

        @staticmethod
        def is_available():
            try:
                return device_module.is_available()
            except RuntimeError:  # no plugin could be loaded
                return False

        @staticmethod
        def exchange_device(device):
            """Makes `device` current and returns the previous one (-1 and nothing for -1)."""
            if device < 0:
                return -1
            previous = device_module.current_device()
            if device != previous:
                device_module.set_device(device)
            return previous

        maybe_exchange_device = exchange_device

        @staticmethod
        def get_compute_capability(device=None):
            return ""

    TpuInterface.__qualname__ = "TpuInterface"
    return TpuInterface


def _patch_device_interface(module):
    interface = _make_interface(module.DeviceInterface)
    if module._device_initialized:
        module.register_interface_for_device("tpu", interface)
        return
    init = module.init_device_reg

    @functools.wraps(init)
    def init_device_reg():
        init()  # registers PyTorch's TpuInterface, replaced here
        module.register_interface_for_device("tpu", interface)

    module.init_device_reg = init_device_reg


class _Refusing(type):
    def __getattr__(cls, name):  # what Inductor reads of a code generator: create, supports_caching
        if name.startswith("__"):
            raise AttributeError(name)
        raise RuntimeError(INDUCTOR_ON_TPU)


class _NoCodegen(metaclass=_Refusing):
    """Inductor's scheduling and wrapper code generators for "tpu": any use raises."""

    def __init__(self, *args, **kwargs):
        raise RuntimeError(INDUCTOR_ON_TPU)


def _patch_inductor_codegen(module):
    # init_backend_registration() registers Pallas for "tpu" only where nothing is registered yet.
    module.register_backend_for_device("tpu", _NoCodegen, _NoCodegen)


def _refuse_tpu_graphs(call):
    @functools.wraps(call)
    def __call__(self, model_, inputs_, **kwargs):
        if uses_tpu(model_, inputs_):
            raise RuntimeError(INDUCTOR_ON_TPU)
        return call(self, model_, inputs_, **kwargs)

    return __call__


def install():
    """Hooks the two modules' imports (before `_integrations.install()`) and makes
    `torch.compile(backend="inductor")` refuse "tpu" graphs."""
    _integrations.patch_on_import("torch._dynamo.device_interface", _patch_device_interface)
    _integrations.patch_on_import("torch._inductor.codegen.common", _patch_inductor_codegen)
    wrapper = torch._TorchCompileInductorWrapper
    wrapper.__call__ = _refuse_tpu_graphs(wrapper.__call__)
