"""TorchTPU's launcher helpers: `set_tpu_launch_env` fills the rendezvous variables of a job in
the parent process before it starts its workers (torchrun, elastic_launch, mp.spawn), and
`python -m torch.tpu.distributed` prints them for `eval` in launch scripts. Variables already set
are never replaced.
"""

import glob
import os
import time

DEFAULT_MASTER_PORT = 29500


def local_device_count(env=None):
    """Devices on this host, counted without starting a PJRT client (which in the parent would
    hold the devices its workers need): TORCH_TPU_DEVICES_PER_HOST, else the device files of the
    plugin's kind (/dev/accel*, /dev/vfio/<n> for TPUs; /dev/nvidia<n> for GPUs), else 1 (the CPU
    plugin: one process per host)."""
    from .. import plugins

    env = os.environ if env is None else env
    if env.get("TORCH_TPU_DEVICES_PER_HOST"):
        return int(env["TORCH_TPU_DEVICES_PER_HOST"])
    kind = plugins.state["kind"]
    if kind == "tpu":
        files = glob.glob("/dev/accel*") or glob.glob("/dev/vfio/[0-9]*")
    elif kind == "cuda":
        files = glob.glob("/dev/nvidia[0-9]*")
    else:
        files = []
    return len(files) or 1


def launch_environment(env=None, *, nnodes=None, nproc_per_node=None):
    """The variables set_tpu_launch_env would add to `env` (those not in it already).

    Hosts: NNODES (nnodes, else the TPU_WORKER_HOSTNAMES count, else 1); NODE_RANK
    (JOB_COMPLETION_INDEX, the Kubernetes Indexed-Job index, else TPU_WORKER_ID, else 0);
    processes per host: nproc_per_node, else local_device_count(); WORLD_SIZE their product;
    MASTER_ADDR the first host (localhost on one host), MASTER_PORT 29500;
    TORCH_TPU_XPROF_SESSION_ID a shared profiling session id."""
    env = os.environ if env is None else env
    hosts = [h for h in env.get("TPU_WORKER_HOSTNAMES", "").split(",") if h]
    nodes = nnodes or int(env.get("NNODES") or 0) or len(hosts) or 1
    per_host = nproc_per_node or local_device_count(env)
    if nodes < 1 or per_host < 1:
        raise ValueError(f"nnodes ({nodes}) and nproc_per_node ({per_host}) must be positive")
    node_rank = env.get("JOB_COMPLETION_INDEX") or env.get("TPU_WORKER_ID") or "0"
    computed = {
        "NNODES": nodes,
        "NODE_RANK": node_rank,
        "TORCH_TPU_DEVICES_PER_HOST": per_host,
        "WORLD_SIZE": nodes * per_host,
        "MASTER_ADDR": hosts[0] if nodes > 1 and hosts else "localhost",
        "MASTER_PORT": DEFAULT_MASTER_PORT,
        "TORCH_TPU_XPROF_SESSION_ID": time.time_ns(),
    }
    return {k: str(v) for k, v in computed.items() if k not in env}


def set_tpu_launch_env(*, nnodes=None, nproc_per_node=None):
    """Fills os.environ with the job's rendezvous variables (launch_environment); idempotent,
    never replaces a variable already set. Returns the variables it added."""
    added = launch_environment(os.environ, nnodes=nnodes, nproc_per_node=nproc_per_node)
    os.environ.update(added)
    return added
