"""Glue that makes Hugging Face Accelerate (and through it Transformers' Trainer and
`device_map="auto"`) choose device "tpu", applied only when those modules are imported.

Accelerate 1.15 knows CUDA, XPU, NPU, MPS, ... but not a PrivateUse1 device named "tpu", so by
itself it picks the CPU. At autoload torch_pjrt installs an import hook that, once the module named
below has been executed (or at once, if it already was), changes it:

- `accelerate.state`: `PartialState.default_device` (what `Accelerator()` and `Trainer` use in a
  single process) is "tpu" where Accelerate would have chosen the CPU and a "tpu" device exists.
- `accelerate.utils.modeling`: `get_max_memory()` (what `device_map="auto"`, "balanced" and
  "sequential" place by) lists the "tpu" devices by index with their free memory
  (`torch.tpu.mem_get_info`), when no other accelerator is listed.

- `transformers.generation.configuration_utils`: the default `backend` of `CompileConfig` (what
  `generate` compiles the model with) is None, torch.compile's own default, instead of
  "inductor": torch.compile then chooses "tpu" for a model on "tpu" and Inductor elsewhere.

Transformers itself (5.x) already treats "tpu" as an accelerator, and Diffusers needs nothing.
Other torch_pjrt modules hook imports here too (`patch_on_import`).
"""

import dataclasses
import importlib.abc
import importlib.util
import sys

import torch

# module name -> function(module) applied once the module has been executed
_PATCHES = {}


def _tpu_available():
    try:
        return torch.tpu.is_available()
    except RuntimeError:  # no plugin could be loaded
        return False


def _patch_accelerate_state(module):
    original = module.PartialState.default_device

    def default_device(self):
        device = original.fget(self)
        if device.type == "cpu" and _tpu_available():
            return torch.device("tpu")
        return device

    module.PartialState.default_device = property(default_device, doc=original.__doc__)


def _patch_accelerate_modeling(module):
    original = module.get_max_memory

    def get_max_memory(max_memory=None):
        result = original(max_memory)
        if max_memory is None and _tpu_available() and not any(isinstance(k, int) for k in result):
            free = {i: torch.tpu.mem_get_info(i)[0] for i in torch.tpu._own_devices()}
            result = {**free, **result}  # accelerators first, as Accelerate orders them
        return result

    get_max_memory.__doc__ = original.__doc__
    module.get_max_memory = get_max_memory


def _patch_transformers_compile_config(module):
    cls = module.CompileConfig
    field = getattr(cls, "__dataclass_fields__", {}).get("backend")
    if field is None or field.default != "inductor":
        return
    names = [f.name for f in dataclasses.fields(cls) if f.init]
    defaults = list(cls.__init__.__defaults__)
    defaults[names.index("backend") - len(names) + len(defaults)] = None
    cls.__init__.__defaults__ = tuple(defaults)
    field.default = cls.backend = None


_PATCHES["accelerate.state"] = _patch_accelerate_state
_PATCHES["accelerate.utils.modeling"] = _patch_accelerate_modeling
_PATCHES["transformers.generation.configuration_utils"] = _patch_transformers_compile_config


def patch_on_import(name, patch):
    """Has `install()` (called after this) apply `patch(module)` to the module named `name`: at
    once if it is imported by then, else once it has been executed."""
    _PATCHES[name] = patch


class _Loader(importlib.abc.Loader):
    """Runs the real loader, then the module's patch."""

    def __init__(self, loader, patch):
        self._loader, self._patch = loader, patch

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        self._loader.exec_module(module)
        self._patch(module)


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        patch = _PATCHES.get(name)
        if patch is None:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    spec.loader = _Loader(spec.loader, patch)
                return spec
        return None


def install():
    """Patches the modules already imported and hooks the imports of the others."""
    for name, patch in _PATCHES.items():
        module = sys.modules.get(name)
        if module is not None and not getattr(module.__spec__, "_initializing", False):
            patch(module)
    if not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.insert(0, _Finder())
