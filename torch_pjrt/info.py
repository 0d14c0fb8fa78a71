"""`python -m torch_pjrt.info`: which plugin, platform and versions torch_pjrt runs on, and what the
runtime negotiated with the plugin (struct sizes, create options, extensions)."""

import torch

import torch_pjrt

from . import _C, distributed, plugins


def info():
    _C._init()
    attrs = _C._plugin_attributes()
    major, minor = _C._api_version()
    negotiated = _C._negotiation()
    header = "{}.{}".format(*negotiated["header_api"])
    count = _C._device_count()
    stablehlo = attrs.get("stablehlo_current_version", "unknown")
    if "stablehlo_minimum_version" in attrs:
        stablehlo += f" (accepts from {attrs['stablehlo_minimum_version']})"
    sizes = [
        f"{name.removeprefix('PJRT_')} {sent}"
        + ("" if sent == header_size else f" (header {header_size})")
        for name, (sent, header_size) in negotiated["struct_sizes"].items()
    ]
    result = {
        "plugin": _C._plugin_path(),
        "kind": plugins.state["kind"] or "unknown",
        "platform": f"{_C._platform_name()} ({_C._platform_version()})",
        "pjrt_api": f"{major}.{minor} (torch_pjrt built with {header})",
        "xla_version": attrs.get("xla_version", "unknown"),
        "stablehlo": stablehlo,
        "devices": f"{count} x {_C._device_kind(_C._current_device())}" if count else "0",
        "create_options": ", ".join(negotiated["options_sent"]) or "(none)",
        "dropped": ", ".join(negotiated["options_dropped"]) or "(none)",
        "struct_sizes": ", ".join(sizes),
        "extensions": ", ".join(f"{name} ({t})" for name, t, _ in negotiated["extensions"])
        or "(none)",
        "pinned_memory": "registered with the plugin (PJRT_Client_DmaMap)"
        if _C._pinned_dma_mapped()
        else "page-aligned host memory (the plugin registers none)",
        "distributed": distributed.transport_description(),
        "torch": torch.__version__,
        "torch_pjrt": torch_pjrt.__version__,
    }
    if plugins.state["environment"]:
        result["environment"] = " ".join(
            f"{k}={v}" for k, v in plugins.state["environment"].items()
        )
    if plugins.state["launch"]:
        launch = plugins.state["launch"]
        local = _C._local_rank()
        drives = f"one device, tpu:{local}" if local >= 0 else f"{count} devices"
        result["launch"] = (
            f"rank {launch['rank']} of {launch['world_size']}, LOCAL_RANK {launch['local_rank']}"
            f" (this process drives {drives})"
        )
        result["devices"] = f"{count} x {_C._device_kind(_C._current_device())}" + (
            f" (one per process of this host; tpu:{local} is this one's)" if local >= 0 else ""
        )
    if plugins.state["preloaded"]:
        result["preloaded"] = ", ".join(p.rsplit("/", 1)[-1] for p in plugins.state["preloaded"])
    return result


def main():
    for key, value in info().items():
        print(f"{key:<14} {value}")


if __name__ == "__main__":
    main()
