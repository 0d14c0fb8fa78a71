"""`python -m torch_pjrt.info`: which plugin, platform and versions torch_pjrt runs on."""

import torch

from . import _C


def info():
    _C._init()
    attrs = _C._plugin_attributes()
    major, minor = _C._api_version()
    return {
        "plugin": _C._plugin_path(),
        "platform": f"{_C._platform_name()} ({_C._platform_version()})",
        "pjrt_api": f"{major}.{minor}",
        "xla_version": attrs.get("xla_version", "unknown"),
        "stablehlo": attrs.get("stablehlo_current_version", "unknown"),
        "devices": f"{_C._device_count()} x {_C._device_kind(0)}",
        "torch": torch.__version__,
    }


def main():
    for key, value in info().items():
        print(f"{key:<12} {value}")


if __name__ == "__main__":
    main()
