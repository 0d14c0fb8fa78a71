"""A fresh process for the compile-cache tests: `python compile_child.py STEPS SCALE MODE OPTIONS`
runs STEPS AdamW steps of the MLP, its output scaled by SCALE (a change of the model's code when
it changes), on the CPU and compiled on "tpu" with torch.compile mode MODE under the XLA options
OPTIONS (JSON); prints the losses of both and the backend's counters as JSON."""

import copy
import json
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from models import MLP

import torch_pjrt.compile as tpc

steps, scale, mode, xla_options = (
    int(sys.argv[1]), float(sys.argv[2]), sys.argv[3], json.loads(sys.argv[4])
)  # fmt: skip
torch.manual_seed(0)
model = MLP()
g = torch.Generator().manual_seed(1)
x, y = torch.randn(32, 16, generator=g), torch.randint(0, 4, (32,), generator=g)


def run(model, device, compiled):
    model = model.to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.1)
    xd, yd = x.to(device), y.to(device)

    def step():
        opt.zero_grad()
        loss = F.cross_entropy(model(xd) * scale, yd)
        loss.backward()
        opt.step()
        return loss

    if compiled:
        step = torch.compile(step, backend="tpu", mode=mode)
    with torch.tpu.compiler.custom_compiler_options(xla_options):
        return [step().item() for _ in range(steps)]


cpu = run(copy.deepcopy(model), "cpu", False)
tpu = run(model, "tpu", True)
print(json.dumps({"cpu": cpu, "tpu": tpu, "counters": tpc.counters()}))
