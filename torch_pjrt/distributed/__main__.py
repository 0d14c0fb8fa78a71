"""`python -m torch.tpu.distributed [--nnodes N] [--nproc-per-node N]`: prints the job's
rendezvous variables as shell assignments, for `eval "$(python -m torch.tpu.distributed)"`."""

import argparse
import os
import shlex

from .launch import set_tpu_launch_env

NAMES = (
    "WORLD_SIZE",
    "NODE_RANK",
    "NNODES",
    "TORCH_TPU_DEVICES_PER_HOST",
    "MASTER_ADDR",
    "MASTER_PORT",
    "TORCH_TPU_XPROF_SESSION_ID",
)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m torch.tpu.distributed")
    parser.add_argument("--nnodes", type=int)
    parser.add_argument("--nproc-per-node", type=int)
    args = parser.parse_args(argv)
    set_tpu_launch_env(nnodes=args.nnodes, nproc_per_node=args.nproc_per_node)
    for name in NAMES:
        if name in os.environ:
            print(f"export {name}={shlex.quote(os.environ[name])}")


if __name__ == "__main__":
    main()
