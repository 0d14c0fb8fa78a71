"""The tpu_dist c10d backend: multi-process jobs under torchrun on loopback (2 and 4 ranks, world
size 1), failure behaviour, the launcher helpers, create options per plugin, and the PJRT
key-value callbacks against a real TCPStore. The per-rank checks are in dist_checks.py."""

import os
import socket
import subprocess
import sys
import threading
import time

import pytest
import torch
import torch.distributed as dist

from torch_pjrt import _C, plugins
from torch_pjrt.distributed import launch

HERE = os.path.dirname(os.path.abspath(__file__))
CHECKS = os.path.join(HERE, "dist_checks.py")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def worker_env(**extra):
    env = dict(os.environ)
    for name in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "MASTER_ADDR",
                 "MASTER_PORT", "TORCH_PJRT_CPU_DEVICE_COUNT"):  # fmt: skip
        env.pop(name, None)
    env.update(GLOO_SOCKET_IFNAME="lo", OMP_NUM_THREADS="1", **extra)
    return env


def torchrun(nproc, suites, timeout=600, **env):
    cmd = [sys.executable, "-m", "torch.distributed.run", f"--nproc-per-node={nproc}",
           "--rdzv-backend=c10d", f"--rdzv-endpoint=127.0.0.1:{free_port()}", CHECKS, suites]  # fmt: skip
    proc = subprocess.run(cmd, env=worker_env(**env), capture_output=True, text=True, check=False,
                          timeout=timeout)  # fmt: skip
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-6000:]
    for rank in range(nproc):
        assert f"rank {rank}: ok" in out, out[-3000:]
    return out


def test_two_ranks_collectives_training_dtensor_checkpoint_compile(tmp_path):
    suites = "collectives,training,dtensors,compiled,ragged,ragged_dtensor"
    torchrun(2, suites, DIST_CHECKS_TMP=str(tmp_path / "ckpt"))


def test_four_ranks_collectives_subgroups_and_rank_devices():
    torchrun(4, "collectives,subgroups,rank_devices,ragged")


@pytest.mark.parametrize("transport", ["host", "device"])
def test_world_size_one(transport):
    # The device transport runs here too: its collective programs with a group of one.
    # Named as "tpu", and by device_id (which picks the default backend, tpu_dist).
    named = (
        {"DIST_CHECKS_BACKEND": "tpu"} if transport == "device" else {"DIST_CHECKS_DEVICE_ID": "1"}
    )
    suites = "collectives,ragged" if transport == "device" else "collectives"  # host: 2, 4 ranks
    out = torchrun(1, suites, TORCH_PJRT_DIST_TRANSPORT=transport, **named)
    assert "rank 0: ok" in out


@pytest.mark.parametrize("failure, timeout_s", [("exit", 30), ("stall", 3)])
def test_lost_rank_raises_within_the_timeout(failure, timeout_s):
    # exit: Gloo sees the closed connection at once; stall: the peer is alive but never joins, so
    # the collective raises when the group's timeout runs out.
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node=2",
           "--rdzv-backend=c10d", f"--rdzv-endpoint=127.0.0.1:{free_port()}", CHECKS, "failure"]  # fmt: skip
    env = worker_env(DIST_CHECKS_FAILURE=failure, DIST_CHECKS_TIMEOUT_S=str(timeout_s))
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False, timeout=120)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-4000:]
    line = next(l for l in out.splitlines() if l.startswith("rank 0: raised in"))
    seconds = float(line.split()[4])
    assert "tpu_dist all_reduce" in line
    assert seconds < timeout_s + 5, line
    if failure == "stall":
        assert seconds >= timeout_s - 0.5, line


def test_rank_killed_mid_ddp_step():
    # Two ranks started directly: under torchrun its agent would stop rank 0 as rank 1 dies.
    port = str(free_port())
    procs = [
        subprocess.Popen(
            [sys.executable, CHECKS, "killed_mid_ddp_step"],
            env=worker_env(
                RANK=str(r),
                LOCAL_RANK=str(r),
                WORLD_SIZE="2",
                LOCAL_WORLD_SIZE="2",
                MASTER_ADDR="127.0.0.1",
                MASTER_PORT=port,
                DIST_CHECKS_TIMEOUT_S="30",
            ),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for r in range(2)
    ]
    outs = [p.communicate(timeout=300)[0] for p in procs]
    assert procs[1].returncode == -9, outs[1][-3000:]  # SIGKILL, in the middle of the backward
    assert procs[0].returncode == 0, outs[0][-3000:]
    line = next(l for l in outs[0].splitlines() if l.startswith("rank 0: raised in"))
    assert "tpu_dist all_reduce" in line
    assert float(line.split()[4]) < 30, line  # Gloo sees the closed connection well before
    assert "rank 0: ok" in outs[0]


def test_mismatched_collectives_raise_on_every_rank_in_detail_mode():
    out = torchrun(2, "mismatch", TORCH_DISTRIBUTED_DEBUG="DETAIL", DIST_CHECKS_TIMEOUT_S="30")
    assert out.count("ok mismatch raised") == 2


def names(options):
    return {name: (value, optional) for name, value, optional in options}


def test_one_process_per_device_create_options():
    env = {"RANK": "3", "LOCAL_RANK": "1", "WORLD_SIZE": "4"}
    assert plugins.distributed_launch(env) == {"rank": 3, "world_size": 4, "local_rank": 1}
    assert plugins.distributed_launch({"RANK": "0"}) is None
    with pytest.raises(ValueError, match="inconsistent launch variables"):
        plugins.distributed_launch({"RANK": "4", "LOCAL_RANK": "0", "WORLD_SIZE": "4"})
    # The CPU plugin: one device per process unless asked.
    assert names(plugins.create_options("cpu", env)) == {"cpu_device_count": (1, True)}
    # CUDA: this process's GPU, and one node per process for the plugin's topology exchange.
    cuda = names(plugins.create_options("cuda", env))
    assert cuda["visible_devices"] == ([1], False)
    assert cuda["num_nodes"] == (4, False) and cuda["node_id"] == (3, False)
    one = names(plugins.create_options("cuda", {"LOCAL_RANK": "0", "WORLD_SIZE": "1"}))
    assert "num_nodes" not in one and one["visible_devices"] == ([0], False)


def test_launch_environment():
    env = {"TPU_WORKER_HOSTNAMES": "h0,h1", "TPU_WORKER_ID": "1", "MASTER_PORT": "1234"}
    got = launch.launch_environment(env, nproc_per_node=4)
    assert got["NNODES"] == "2" and got["NODE_RANK"] == "1" and got["WORLD_SIZE"] == "8"
    assert got["MASTER_ADDR"] == "h0" and "MASTER_PORT" not in got  # never replaced
    assert launch.launch_environment({}, nproc_per_node=2)["MASTER_ADDR"] == "localhost"
    assert launch.launch_environment({"TORCH_TPU_DEVICES_PER_HOST": "3"})["WORLD_SIZE"] == "3"
    with pytest.raises(ValueError, match="must be positive"):
        launch.launch_environment({}, nnodes=1, nproc_per_node=-1)
    # torch.tpu.distributed is this module, and its command prints the variables for eval.
    assert torch.tpu.distributed.set_tpu_launch_env is launch.set_tpu_launch_env
    out = subprocess.run([sys.executable, "-m", "torch.tpu.distributed", "--nproc-per-node", "2"],
                         env=worker_env(), capture_output=True, text=True, check=True).stdout  # fmt: skip
    assert "export WORLD_SIZE=2\n" in out and "export MASTER_ADDR=localhost\n" in out


def test_key_value_callbacks_on_a_tcp_store():
    store = dist.TCPStore("127.0.0.1", free_port(), 1, is_master=True, wait_for_workers=False)
    probe = _C._KeyValueProbe(store, "torch_pjrt/test/")
    value = b"\x00binary\xff proto"
    probe.put("a", value)
    assert probe.get("a", 1000) == value
    assert store.get("torch_pjrt/test/a") == value  # prefixed in the job's store
    assert probe.try_get("missing") is None
    with pytest.raises(RuntimeError, match="DEADLINE_EXCEEDED"):
        probe.get("missing", 100)
    # A blocking get returns once another thread (another process's plugin) puts the key, and
    # does not block the store for that put.
    threading.Timer(0.3, lambda: store.set("torch_pjrt/test/late", b"v")).start()
    began = time.perf_counter()
    assert probe.get("late", 5000) == b"v"
    assert time.perf_counter() - began < 4
    assert probe.try_get("late") == b"v"


def test_transport_is_chosen_per_plugin_and_reported(monkeypatch):
    from torch_pjrt import distributed, info

    assert plugins.state["kind"] == "cpu"
    assert distributed.transport() == "host"
    assert info.info()["distributed"].startswith("host (device -> host -> Gloo -> device")
    monkeypatch.setattr(plugins, "state", dict(plugins.state, kind="cuda"))
    assert distributed.transport() == "device"
    monkeypatch.setenv("TORCH_PJRT_DIST_TRANSPORT", "host")
    assert distributed.transport() == "host"
    monkeypatch.setenv("TORCH_PJRT_DIST_TRANSPORT", "nccl")
    with pytest.raises(ValueError, match="TORCH_PJRT_DIST_TRANSPORT must be one of host, device"):
        distributed.transport()
    assert dist.Backend.default_device_backend_map["tpu"] == "tpu_dist"


def test_forked_child_cannot_use_the_device():
    import multiprocessing

    torch.ones(2, device="tpu").sum().item()  # the client exists before the fork
    ctx = multiprocessing.get_context("fork")
    parent, child = ctx.Pipe()

    def use_device(conn):
        try:
            (torch.ones(2, device="tpu") + 1).cpu()
            conn.send("no error")
        except RuntimeError as e:
            conn.send(str(e))
        conn.send(torch.tpu._is_in_bad_fork())

    proc = ctx.Process(target=use_device, args=(child,))
    proc.start()
    message, bad_fork = parent.recv(), parent.recv()
    proc.join(30)
    assert "forked" in message and "spawn" in message, message
    assert bad_fork is True
    assert torch.tpu._is_in_bad_fork() is False


def test_rank_indexed_devices_under_torchrun():
    torchrun(2, "rank_devices", DIST_CHECKS_DEVICE_ID="1")


def test_launch_variables_set_after_import_settle_the_process_model():
    code = """
import os, torch
os.environ.update(LOCAL_RANK="1", RANK="1", WORLD_SIZE="2", LOCAL_WORLD_SIZE="2")
print(torch.tpu.device_count(), torch.tpu.current_device(), torch.ones(1, device="tpu").device)
try:
    torch.ones(1, device="tpu:0")
except IndexError as e:
    print("IndexError", e)
"""
    proc = subprocess.run([sys.executable, "-c", code], env=worker_env(), capture_output=True,
                          text=True, check=False, timeout=120)  # fmt: skip
    lines = proc.stdout.splitlines()
    assert proc.returncode == 0 and lines[0] == "2 1 tpu:1", proc.stdout + proc.stderr[-2000:]
    assert lines[1].startswith("IndexError") and "belongs to another process" in lines[1], lines
    assert "(LOCAL_RANK 1) drives tpu:1" in lines[1], lines


@pytest.mark.parametrize("nprocs", [2, 4])
def test_rank_indexed_devices_and_checkpoint_under_spawn(nprocs, tmp_path):
    env = worker_env(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()),
                     DIST_CHECKS_TMP=str(tmp_path / "ckpt"))  # fmt: skip
    suites = "rank_devices,dtensors" + (",ragged" if nprocs == 2 else "")  # 4: under torchrun
    cmd = [sys.executable, CHECKS, "spawn", str(nprocs), suites]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False, timeout=600)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-4000:]
    for rank in range(nprocs):
        assert f"rank {rank}: ok" in out, out[-3000:]


def test_multiprocessing_spawn():
    env = worker_env(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()))
    proc = subprocess.run([sys.executable, CHECKS, "spawn", "2", "subgroups"], env=env,
                          capture_output=True, text=True, check=False, timeout=300)  # fmt: skip
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-4000:]
    assert "rank 0: ok" in out and "rank 1: ok" in out, out[-3000:]
