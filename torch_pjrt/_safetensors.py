"""safetensors onto "tpu". Its Rust `safe_open` (behind `safetensors.torch.load_file`) accepts only
the device names it knows (cpu, cuda, mps, npu, xpu, xla, mlu, musa, hpu) or an index, which PyTorch
reads as a device of the current accelerator: "tpu" here. `install()` wraps `safetensors.safe_open`
so that "tpu", "tpu:N" and torch.device("tpu", N) reach it as that index; any other device passes
through unchanged. Saving needs nothing: safetensors copies tensors to the CPU itself."""

import sys

import torch


def _device_index(device):
    if isinstance(device, str) and (device == "tpu" or device.startswith("tpu:")):
        device = torch.device(device)
    if isinstance(device, torch.device) and device.type == "tpu":
        accelerator = torch.accelerator.current_accelerator()
        if accelerator is not None and accelerator.type == "tpu":
            return torch.tpu.current_device() if device.index is None else device.index
    return device


def install():
    """Wraps safetensors.safe_open when safetensors is installed (importing it costs ~1 ms)."""
    try:
        import safetensors
    except ImportError:
        return
    rust_safe_open = safetensors.safe_open
    if getattr(rust_safe_open, "_torch_pjrt", False):
        return

    def safe_open(filename, framework, device="cpu", *args, **kwargs):
        return rust_safe_open(filename, framework, _device_index(device), *args, **kwargs)

    safe_open.__doc__ = rust_safe_open.__doc__
    safe_open._torch_pjrt = True
    safetensors.safe_open = safe_open
    loaded_torch_api = sys.modules.get("safetensors.torch")
    if loaded_torch_api is not None:
        loaded_torch_api.safe_open = safe_open
