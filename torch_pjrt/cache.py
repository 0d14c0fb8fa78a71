"""The on-disk cache of compiled executables for torch.compile(backend="tpu"), and its command
line: `python -m torch_pjrt.cache [list|size|clear]`.

Each entry is one file `<key>.pjrt` in the cache directory: a header (magic, payload length,
sha256 of the payload) and the plugin's serialized executable. The key hashes the program's
StableHLO text with the plugin path and attributes, the platform version, and the torch and
torch_pjrt versions, so a different plugin, XLA or torch never loads a stale program. Files are
written to a temporary name and renamed (atomic); a hit refreshes the file's mtime, and when the
directory grows past its size cap the least recently used files are deleted. A file that is
truncated, corrupt or rejected by the plugin is deleted and treated as a miss.

Settings: TORCH_PJRT_CACHE_DIR (default: $XDG_CACHE_HOME/torch_pjrt or ~/.cache/torch_pjrt; "off"
disables the cache) and TORCH_PJRT_CACHE_MAX_MB (default 2048).
"""

import argparse
import contextlib
import hashlib
import os
import struct
import sys
import tempfile
import time

_MAGIC = b"TORCH_PJRT_EXE\x01"
_HEADER = struct.Struct("<16sQ32s")  # magic (padded), payload length, sha256(payload)
_SUFFIX = ".pjrt"


def cache_dir():
    """The cache directory, or None when the cache is off."""
    d = os.environ.get("TORCH_PJRT_CACHE_DIR")
    if d is not None:
        return None if d.strip().lower() in ("", "off", "0", "none") else d
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "torch_pjrt")


def max_bytes():
    try:
        return int(float(os.environ.get("TORCH_PJRT_CACHE_MAX_MB", "2048")) * 2**20)
    except ValueError:
        return 2048 * 2**20


def environment_fingerprint():
    """What a serialized executable depends on besides its program: plugin, XLA, torch."""
    import torch

    from . import _C

    parts = [
        _C._plugin_path(),
        repr(sorted(_C._plugin_attributes().items())),
        _C._platform_name(),
        _C._platform_version(),
        repr(_C._api_version()),
        torch.__version__,
        "torch_pjrt-0.1.0",
    ]
    try:
        parts.append(str(os.path.getmtime(_C._plugin_path())))
    except OSError:
        pass
    return "\n".join(parts)


def key_for(program_text, fingerprint, compile_options=b""):
    """The entry of a program compiled with `compile_options` (serialized CompileOptionsProto)."""
    h = hashlib.sha256()
    h.update(fingerprint.encode())
    h.update(b"\0")
    h.update(program_text.encode())
    h.update(b"\0")
    h.update(compile_options)
    return h.hexdigest()


def _path(directory, key):
    return os.path.join(directory, key + _SUFFIX)


def load(key, directory=None):
    """(status, payload): ("hit", bytes), ("miss", None), ("off", None) when the cache is off, or
    ("corrupt", None) for a truncated or corrupt file, which is deleted. Raises nothing."""
    directory = directory or cache_dir()
    if directory is None:
        return "off", None
    path = _path(directory, key)
    try:
        with open(path, "rb") as f:
            blob = f.read()
    except FileNotFoundError:
        return "miss", None
    except OSError:
        return "corrupt", None
    payload = _decode(blob)
    if payload is None:
        discard(key, directory)
        return "corrupt", None
    try:
        os.utime(path)  # LRU: a hit makes the entry recent
    except OSError:
        pass
    return "hit", payload


def _decode(blob):
    if len(blob) < _HEADER.size:
        return None
    magic, length, digest = _HEADER.unpack_from(blob)
    payload = blob[_HEADER.size :]
    if magic != _MAGIC.ljust(16, b"\0") or length != len(payload):
        return None
    if hashlib.sha256(payload).digest() != digest:
        return None
    return payload


def store(key, payload, directory=None):
    """Writes `payload` atomically under `key`, then evicts least recently used entries past the
    size cap. Returns False (and leaves no partial file) when the directory is not writable."""
    directory = directory or cache_dir()
    if directory is None:
        return False
    header = _HEADER.pack(_MAGIC.ljust(16, b"\0"), len(payload), hashlib.sha256(payload).digest())
    try:
        os.makedirs(directory, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-", suffix=_SUFFIX)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(header)
                f.write(payload)
            os.replace(tmp, _path(directory, key))
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise
    except OSError:
        return False
    evict(max_bytes(), directory)
    return True


def discard(key, directory=None):
    directory = directory or cache_dir()
    try:
        os.unlink(_path(directory, key))
    except OSError:
        pass


def entries(directory=None):
    """[(path, size_bytes, mtime)] of the cache's entries, most recently used first."""
    directory = directory or cache_dir()
    out = []
    if directory is None or not os.path.isdir(directory):
        return out
    for name in os.listdir(directory):
        if not name.endswith(_SUFFIX) or name.startswith(".tmp-"):
            continue
        path = os.path.join(directory, name)
        try:
            st = os.stat(path)
        except OSError:
            continue
        out.append((path, st.st_size, st.st_mtime))
    out.sort(key=lambda e: -e[2])
    return out


def evict(limit, directory=None):
    """Deletes least recently used entries until the total size is at most `limit` bytes; returns
    the number deleted."""
    items = entries(directory)
    total = sum(size for _, size, _ in items)
    removed = 0
    while items and total > limit:
        path, size, _ = items.pop()
        try:
            os.unlink(path)
            removed += 1
        except OSError:
            pass
        total -= size
    return removed


def clear(directory=None):
    """Deletes every entry (and leftover temporary files), and the AOTAutograd and Dynamo results
    of the warm start (the `aot` and `dynamo` folders); returns the number of files deleted."""
    directory = directory or cache_dir()
    if directory is None or not os.path.isdir(directory):
        return 0
    removed = 0
    for name in os.listdir(directory):
        if name.endswith(_SUFFIX):
            try:
                os.unlink(os.path.join(directory, name))
                removed += 1
            except OSError:
                pass
    for folder in ("aot", "dynamo"):
        for root, _, files in os.walk(os.path.join(directory, folder), topdown=False):
            for name in files:
                try:
                    os.unlink(os.path.join(root, name))
                    removed += 1
                except OSError:
                    pass
            with contextlib.suppress(OSError):
                os.rmdir(root)
    return removed


def _mb(n):
    return f"{n / 2**20:.2f} MiB"


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m torch_pjrt.cache",
        description="the on-disk cache of torch.compile(backend='tpu')",
    )
    parser.add_argument("command", nargs="?", default="list", choices=["list", "size", "clear"])
    args = parser.parse_args(argv)
    directory = cache_dir()
    if directory is None:
        print("the on-disk cache is off (TORCH_PJRT_CACHE_DIR=off)")
        return 0
    items = entries(directory)
    total = sum(size for _, size, _ in items)
    if args.command == "clear":
        n = clear(directory)
        print(f"{directory}: deleted {n} entries ({_mb(total)})")
    elif args.command == "size":
        cap = max_bytes()
        print(f"{directory}: {len(items)} entries, {_mb(total)} (cap {_mb(cap)})")
    else:
        print(f"{directory}: {len(items)} entries, {_mb(total)}")
        for path, size, mtime in items:
            stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(mtime))
            print(f"  {stamp}  {_mb(size):>12}  {path.rsplit('/', 1)[-1]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
