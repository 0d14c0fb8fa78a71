"""`import torch.tpu.pallas` (and `torch.tpu.pallas` as an attribute) load torch_pjrt.pallas on
first use, so JAX is imported only by code that asks for kernels; without JAX the import raises
ImportError naming the install command."""

import importlib
import importlib.abc
import importlib.util
import sys

NAME = "torch.tpu.pallas"


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, fullname, path, target=None):
        return importlib.util.spec_from_loader(fullname, self) if fullname == NAME else None

    def create_module(self, spec):
        return importlib.import_module("torch_pjrt.pallas")  # one module under both names

    def exec_module(self, module):
        pass


def install():
    # `import torch.tpu.pallas` needs torch.tpu to be a package (to have a __path__); with an
    # empty one, only the finder below resolves its submodules.
    sys.modules["torch.tpu"].__path__ = []
    if not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.append(_Finder())


def load():
    return importlib.import_module(NAME)
