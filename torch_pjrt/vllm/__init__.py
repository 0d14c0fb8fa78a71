"""vLLM platform plugin for device "tpu".

vLLM finds `register` through the `vllm.platform_plugins` entry point when it resolves its
platform, so nothing here is imported unless vLLM is. With a "tpu" device present the platform is
`torch_pjrt.vllm.platform.TpuPlatform`: upstream vLLM's engine, scheduler, KV-cache manager and
OpenAI server run unchanged over a worker, a model runner and a paged attention backend written
in torch ops on "tpu".
"""


def register():
    """Entry point of `vllm.platform_plugins`: the platform's qualified name, or None without a
    "tpu" device (vLLM then keeps looking)."""
    import torch

    try:
        available = torch.tpu.is_available()
    except RuntimeError:  # no PJRT plugin could be loaded
        return None
    return "torch_pjrt.vllm.platform.TpuPlatform" if available else None
