"""torch.compile with no backend: backend "tpu" for "tpu" tensors, Inductor for the rest.

PyTorch's default backend, Inductor, cannot compile for "tpu" (`_dynamo_device`). As Google's
TorchTPU does, `install()` wraps `torch.compile` (which `nn.Module.compile` calls too) so that, when
no backend is given and Inductor is Dynamo's default backend:

- a target visibly on "tpu" (an nn.Module, or a bound method of one, with a parameter or buffer on
  "tpu") is compiled with backend "tpu", and `dynamic` defaults to False;
- anything else (a plain function, a module without "tpu" tensors) gets `DeviceChoice`, Inductor's
  own wrapper except that each graph Dynamo captures on "tpu" (a "tpu" input or a "tpu" tensor
  made inside) goes to backend "tpu" with the call's mode and options. `dynamic` keeps
  torch.compile's default (None: after a new shape, Dynamo recompiles with dynamic sizes, and
  backend "tpu" compiles one program per shape). CPU graphs compile exactly as without torch_pjrt.

An explicit backend, or a default changed with `torch._dynamo.backends.registry
.set_default_backend`, is passed through unchanged.
"""

import contextvars
import functools
import importlib
import inspect
import itertools

import torch

from . import _dynamo_device

# Set while the wrapper runs torch.compile with no backend: the Inductor wrapper torch.compile
# makes then is a DeviceChoice.
_choosing = contextvars.ContextVar("torch_pjrt_choosing_backend", default=False)
_original_compile = torch.compile
_Inductor = torch._TorchCompileInductorWrapper


class DeviceChoice(_Inductor):
    """The backend torch.compile is given when no backend is given: Inductor's wrapper (same
    configuration, equality, reset and compiler config), except that a graph on "tpu" compiles
    with backend "tpu"."""

    def __init__(self, mode, options, dynamic, name=None):
        super().__init__(mode, options, dynamic, name)
        self.mode, self.options = mode, options

    def __eq__(self, other):  # never equal to a plain Inductor wrapper, which refuses "tpu"
        return type(other) is type(self) and super().__eq__(other)

    def __call__(self, model_, inputs_, *, config_patches=None):
        if _dynamo_device.uses_tpu(model_, inputs_):
            backend = importlib.import_module("torch_pjrt.compile").backend
            return backend(model_, inputs_, mode=self.mode, options=self.options)
        return super().__call__(model_, inputs_, config_patches=config_patches)


def _new_inductor_wrapper(cls, *args, **kwargs):
    if cls is _Inductor and _choosing.get():
        cls = DeviceChoice
    return object.__new__(cls)


def _on_tpu(target):
    module = target.__self__ if inspect.ismethod(target) else target
    if not isinstance(module, torch.nn.Module):
        return False
    tensors = itertools.chain(module.parameters(), module.buffers())
    return any(t.device.type == "tpu" for t in tensors)


def _inductor_is_default():
    from torch._dynamo.backends.registry import get_default_backend

    return get_default_backend() == "inductor"


@functools.wraps(_original_compile)
def compile(model=None, **kwargs):
    if kwargs.get("backend") is not None or not _inductor_is_default():
        return _original_compile(model, **kwargs)
    if model is None:  # @torch.compile(...): decide for the decorated function

        def decorate(model):
            if model is None:
                raise RuntimeError("Model can't be None")
            return compile(model, **kwargs)

        return decorate
    if _on_tpu(model):
        importlib.import_module("torch_pjrt.compile")  # registers backend "tpu"
        if kwargs.get("dynamic") is None:
            kwargs["dynamic"] = False
        return _original_compile(model, **{**kwargs, "backend": "tpu"})
    token = _choosing.set(True)
    try:
        return _original_compile(model, **kwargs)
    finally:
        _choosing.reset(token)


def install():
    torch.compile = compile
    _Inductor.__new__ = staticmethod(_new_inductor_wrapper)
