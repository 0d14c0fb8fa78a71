"""Compiled optimizer steps keep their step counters on "tpu", as on CUDA.

Dynamo turns `capturable` on for an optimizer whose parameters are all on CUDA or XPU and whose
state is not made yet: the step counters are then device tensors and the whole update is one
program. For other devices it leaves them on the CPU (torch's default), so every compiled step
uploads each counter and reads it back after the in-place increment: a host round trip that waits
for the optimizer's program in the middle of each step. Here parameters on "tpu" count as such a
device too (the same choice Dynamo makes for CUDA, visible as `param_groups[i]["capturable"]`)."""

from torch._dynamo.variables.optimizer import OptimizerVariable


def _all_new_on_tpu(optimizer, group):
    params = group.get("params", [])
    return bool(params) and all(p.device.type == "tpu" and p not in optimizer.state for p in params)


def install():
    original = OptimizerVariable._set_capturable
    if getattr(original, "_torch_pjrt", False):
        return

    def _set_capturable(self, tx):
        for group in self.value.param_groups:
            if "capturable" in group and _all_new_on_tpu(self.value, group):
                group["capturable"] = True
        original(self, tx)

    _set_capturable._torch_pjrt = True
    OptimizerVariable._set_capturable = _set_capturable
