"""The key of every on-disk compile result (AOTAutograd entries, Dynamo packages): what such a
result depends on besides its own inputs, i.e. the plugin, XLA and torch, torch_pjrt's code and the
compile options."""

import hashlib
import os
import pathlib

from .. import _C
from .. import cache as disk_cache

_code_digest = None


def _torch_pjrt_digest():
    """sha256 of torch_pjrt's Python sources and of its extension's size and mtime."""
    global _code_digest
    if _code_digest is None:
        root = pathlib.Path(__file__).resolve().parents[1]
        h = hashlib.sha256()
        for path in sorted(root.rglob("*.py")):
            h.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
        st = os.stat(_C.__file__)
        h.update(f"{st.st_size}:{st.st_mtime_ns}".encode())
        _code_digest = h.hexdigest()
    return _code_digest


def digest(*extra):
    """What every cached result depends on: the plugin, XLA and torch, torch_pjrt's code and the
    compile options, then `extra`; 32 hex digits."""
    h = hashlib.sha256()
    for part in (
        disk_cache.environment_fingerprint(),
        _torch_pjrt_digest(),
        _C._compile_options_key().hex(),
        *extra,
    ):
        h.update(part.encode() + b"\0")
    return h.hexdigest()[:32]
