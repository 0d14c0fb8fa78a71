"""A fresh process for the Dynamo-cache tests: `python dynamo_cache_child.py MODULE_DIR` imports
`model_source.py` from MODULE_DIR (its `Model` and `make_input()`), compiles the model's forward
with backend "tpu" under no_grad, runs it twice and prints the results, the eager CPU result,
torch's Dynamo-cache counters and the backend's counters as JSON. The parent sets
TORCH_CACHING_PRECOMPILE=1 and TORCH_PJRT_CACHE_DIR."""

import json
import sys

import torch
from torch._dynamo.utils import counters

import torch_pjrt.compile as tpc

sys.path.insert(0, sys.argv[1])
from model_source import Model, make_input

torch.manual_seed(0)
model, x = Model().eval(), make_input()
with torch.no_grad():
    cpu = model(x)
    compiled = torch.compile(model.to("tpu"), backend="tpu")
    tpu = [compiled(x.to("tpu")).cpu() for _ in range(2)]
print(
    json.dumps(
        {
            "cpu": cpu.tolist(),
            "tpu": [t.tolist() for t in tpu],
            "dynamo_cache": dict(counters["dynamo_cache"]),
            "counters": tpc.counters(),
        }
    )
)
